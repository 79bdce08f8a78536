//! Disbursements: the engine's operations (validation against the catalog
//! and merchant settings, creation through the merchant actor, alone or in
//! batches (`batch`), queries, payout routes) and the disbursement actors that own each one's life
//! once it exists (`actor`), hosted per merchant (`host`, with what a
//! merchant's actors share in `hosting`), reaching the rest of the engine
//! only through `context`.

use crate::actors::MerchantMsg;
use crate::core::Core;
use crate::destinations::present;
use crate::domain::catalog::PayoutRouting;
use crate::domain::disbursement::lifecycle;
use crate::domain::{
    Channel, Destination, Disbursement, DisbursementRequest, DisbursementStatus, SettlementType, Source,
};
use crate::error::EngineError;
use crate::money::MinorUnits;
use crate::store::record::JournalRecord;
use crate::validation::validate_idempotency_key;
use crate::vendor::payout::fits_vendor_text;
use crate::vendor::{PayoutReport, PayoutStatus, PayoutVendor};
use actor::DisbursementMsg;
use std::sync::Arc;
use uuid::Uuid;

pub use batch::{BatchAnswer, BatchSummary, StatusTotal};

pub(crate) mod actor;
mod batch;
pub(crate) mod context;
pub(crate) mod host;
mod hosting;
mod recorder;

/// DANA's smallest payout, V1 and Legacy: IDR 20,000.
pub const DANA_MINIMUM_MINOR: i64 = 2_000_000;

/// A disbursement as a caller describes it, before validation.
#[derive(Clone, Debug, Default)]
pub struct NewDisbursement {
    /// Required.
    pub idempotency_key: Option<String>,
    /// `BANK` or `EWALLET`.
    pub channel: Option<String>,
    /// BANK.
    pub bank_short_code: Option<String>,
    /// BANK.
    pub account_number: Option<String>,
    /// BANK.
    pub account_name: Option<String>,
    /// EWALLET.
    pub ewallet_provider: Option<String>,
    /// EWALLET.
    pub ewallet_phone: Option<String>,
    /// Excluding the fee; required.
    pub amount_minor: Option<i64>,
    /// Status webhook URL.
    pub notify_url: Option<String>,
    /// V1 or Legacy.
    pub source: Option<Source>,
    /// A saved beneficiary supplying the channel and account.
    pub beneficiary_id: Option<Uuid>,
}

/// Filters of `GET /v1/disbursements`.
#[derive(Clone, Debug, Default)]
pub struct DisbursementFilter {
    /// Only this status.
    pub status: Option<DisbursementStatus>,
    /// Created at or after, Unix ms.
    pub created_from_ms: Option<i64>,
    /// Created at or before, Unix ms.
    pub created_to_ms: Option<i64>,
}

/// The disbursements handle: disbursements, batches and beneficiaries; cheap to clone.
#[derive(Clone)]
pub struct Disbursements {
    pub(crate) core: Arc<Core>,
}

impl Disbursements {
    pub(crate) fn new(core: Arc<Core>) -> Disbursements {
        Disbursements { core }
    }

    /// The catalog of this engine, where payouts find banks and e-wallets.
    pub(crate) fn catalog(&self) -> crate::catalog::PlatformCatalog {
        crate::catalog::PlatformCatalog::new(self.core.clone())
    }
}

impl Disbursements {
    /// Validates and creates a disbursement: the wallet is debited by
    /// request + fee in the same journal record. 409-style duplicates come
    /// back as `DuplicateDisbursement` with the existing one.
    pub async fn create_disbursement(
        &self,
        merchant_id: Uuid,
        new: NewDisbursement,
    ) -> Result<Arc<Disbursement>, EngineError> {
        self.core.ensure_writable()?;
        let request = self.validate_disbursement(merchant_id, new)?;
        self.room_for_disbursements(1)?;
        let created = self
            .core
            .call_merchant(merchant_id, |reply| MerchantMsg::CreateDisbursement {
                request: request.clone(),
                reply,
            })
            .await??;
        // The merchant actor queued it for its hand-over once it was durable.
        Ok(created)
    }

    fn validate_disbursement(
        &self,
        merchant_id: Uuid,
        new: NewDisbursement,
    ) -> Result<DisbursementRequest, EngineError> {
        let merchant = self.core.merchant(merchant_id).ok_or(EngineError::MerchantNotFound)?;
        if merchant.settlement_type != SettlementType::Wallet {
            return Err(EngineError::NotWalletMerchant);
        }
        let idempotency_key = new
            .idempotency_key
            .clone()
            .ok_or_else(|| EngineError::invalid("idempotency_key", "is required"))?;
        validate_idempotency_key(&idempotency_key)?;
        let amount = new
            .amount_minor
            .ok_or_else(|| EngineError::invalid("amount_minor", "is required"))?;
        if amount < 1 {
            return Err(EngineError::invalid("amount_minor", "must be at least 1"));
        }
        let destination = match new.beneficiary_id {
            Some(beneficiary_id) => self.beneficiary_destination(merchant_id, beneficiary_id, &new, amount)?,
            None => self.channel_destination(&new, amount)?,
        };
        if let Some(url) = &new.notify_url {
            self.core.validate_notify_url("notify_url", url)?;
        }
        // Nothing is debited for a disbursement no vendor could pay.
        if !self
            .core
            .payouts()
            .has_route(merchant.organization_id, destination.channel())
        {
            return Err(EngineError::NoVendor);
        }
        Ok(DisbursementRequest {
            idempotency_key,
            destination,
            request_amount: MinorUnits::new(amount),
            notify_url: new.notify_url,
            source: new.source.unwrap_or(crate::domain::Source::Api),
            beneficiary_id: new.beneficiary_id,
        })
    }

    /// A disbursement naming a beneficiary takes its channel and account
    /// from the beneficiary; a `channel` sent along must match it.
    fn beneficiary_destination(
        &self,
        merchant_id: Uuid,
        beneficiary_id: Uuid,
        new: &NewDisbursement,
        amount: i64,
    ) -> Result<Destination, EngineError> {
        let beneficiary = self.beneficiary_for(merchant_id, beneficiary_id)?;
        let channel = beneficiary.destination.channel().as_str();
        if new.channel.as_deref().is_some_and(|sent| sent != channel) {
            return Err(EngineError::invalid("channel", "does not match the beneficiary"));
        }
        let mut from_beneficiary = NewDisbursement {
            channel: Some(channel.to_string()),
            ..new.clone()
        };
        match &beneficiary.destination {
            Destination::Bank {
                bank_short_code,
                account_number,
                account_name,
                ..
            } => {
                from_beneficiary.bank_short_code = Some(bank_short_code.clone());
                from_beneficiary.account_number = Some(account_number.clone());
                // The saved or verified name; the request's only when the
                // beneficiary has neither (a name is optional on creation).
                from_beneficiary.account_name = Some(account_name.clone())
                    .filter(|n| !n.is_empty())
                    .or(beneficiary.verified_name.clone())
                    .or(new.account_name.clone());
                if present(&from_beneficiary.account_name).is_none() {
                    return Err(EngineError::MissingBankInfo(
                        "account_name is required: the beneficiary has no account name".into(),
                    ));
                }
            }
            Destination::Ewallet { provider, phone } => {
                from_beneficiary.ewallet_provider = Some(provider.clone());
                from_beneficiary.ewallet_phone = Some(phone.clone());
            }
        }
        self.channel_destination(&from_beneficiary, amount)
    }

    fn channel_destination(&self, new: &NewDisbursement, amount: i64) -> Result<Destination, EngineError> {
        Ok(match new.channel.as_deref() {
            Some("BANK") => self.bank_destination(new)?,
            Some("EWALLET") => self.ewallet_destination(new, amount)?,
            Some(_) => return Err(EngineError::invalid("channel", "must be BANK or EWALLET")),
            None => return Err(EngineError::invalid("channel", "is required")),
        })
    }

    fn bank_destination(&self, new: &NewDisbursement) -> Result<Destination, EngineError> {
        let (Some(code), Some(number), Some(name)) = (
            present(&new.bank_short_code),
            present(&new.account_number),
            present(&new.account_name),
        ) else {
            return Err(EngineError::MissingBankInfo(
                "bank_short_code, account_number and account_name are required for BANK".into(),
            ));
        };
        self.catalog().bank_account(code, number, name)
    }

    fn ewallet_destination(&self, new: &NewDisbursement, amount: i64) -> Result<Destination, EngineError> {
        let (Some(code), Some(raw_phone)) = (present(&new.ewallet_provider), present(&new.ewallet_phone)) else {
            return Err(EngineError::MissingEwalletInfo);
        };
        let destination = self.catalog().ewallet_account(code, raw_phone)?;
        if matches!(&destination, Destination::Ewallet { provider, .. } if provider == "DANA")
            && amount < DANA_MINIMUM_MINOR
        {
            return Err(EngineError::AmountBelowMinimum("IDR 20,000 for DANA".into()));
        }
        Ok(destination)
    }

    /// A merchant's disbursement by UUID or ref code.
    pub fn disbursement_for(&self, merchant_id: Uuid, id_or_ref: &str) -> Result<Disbursement, EngineError> {
        let found = match Uuid::parse_str(id_or_ref) {
            Ok(id) => self.core.store().disbursement(&id)?,
            Err(_) => self.core.store().disbursement_by_ref(id_or_ref)?,
        };
        found
            .filter(|d| d.merchant_id == merchant_id)
            .ok_or(EngineError::DisbursementNotFound)
    }

    /// A merchant's disbursement by its idempotency key (a Legacy `orderId`).
    pub fn disbursement_by_idempotency_key(
        &self,
        merchant_id: Uuid,
        key: &str,
    ) -> Result<Option<Disbursement>, EngineError> {
        Ok(self.core.store().disbursement_by_key(&merchant_id, key)?)
    }

    /// A page of a merchant's disbursements, newest first, and the total.
    pub fn list_disbursements(
        &self,
        merchant_id: Uuid,
        filter: &DisbursementFilter,
        page: usize,
        limit: usize,
    ) -> Result<(Vec<Disbursement>, usize), EngineError> {
        let from = filter.created_from_ms.unwrap_or(0);
        let to = filter.created_to_ms.map_or(i64::MAX, |t| t.saturating_add(1));
        let offset = page.saturating_sub(1).saturating_mul(limit);
        let status = filter.status;
        Ok(self.core.store().merchant_disbursements(
            &merchant_id,
            from,
            to,
            |d| status.is_none_or(|s| d.status == s),
            offset,
            limit,
        )?)
    }

    /// Sends disbursement `id` a message that answers, and waits for it.
    async fn ask<T>(
        &self,
        merchant_id: Uuid,
        id: Uuid,
        message: impl FnOnce(actor::Reply<T>) -> DisbursementMsg,
    ) -> Result<T, EngineError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.core.disbursement_host().deliver(merchant_id, id, message(reply));
        answer.await.map_err(|_| EngineError::ShuttingDown)?
    }

    /// Operator approval of a disbursement IN_REVIEW: it goes to its route's
    /// vendors now, and comes back as they left it (ON_PROCESS, or final).
    pub async fn approve_disbursement(&self, id: Uuid) -> Result<Disbursement, EngineError> {
        self.core.ensure_writable()?;
        let current = self
            .core
            .store()
            .disbursement(&id)?
            .ok_or(EngineError::DisbursementNotFound)?;
        self.ask(current.merchant_id, id, DisbursementMsg::Approve).await
    }

    /// Operator rejection of a PENDING or IN_REVIEW disbursement not yet
    /// handed to a vendor: the full amount goes back to the wallet.
    pub async fn reject_disbursement(&self, id: Uuid, reason: Option<String>) -> Result<Disbursement, EngineError> {
        self.core.ensure_writable()?;
        let reason = reason.unwrap_or_else(|| "rejected by the platform".into());
        let current = self
            .core
            .store()
            .disbursement(&id)?
            .ok_or(EngineError::DisbursementNotFound)?;
        self.ask(current.merchant_id, id, |reply| DisbursementMsg::Reject {
            reason,
            reply,
        })
        .await
    }

    /// Sandbox: forces the vendor's outcome (SUCCESS or FAILED) now.
    pub async fn complete_disbursement(
        &self,
        merchant_id: Uuid,
        id_or_ref: &str,
        outcome: DisbursementStatus,
    ) -> Result<Disbursement, EngineError> {
        self.core.ensure_writable()?;
        if !matches!(outcome, DisbursementStatus::Success | DisbursementStatus::Failed) {
            return Err(EngineError::invalid("status", "must be SUCCESS or FAILED"));
        }
        let current = self.disbursement_for(merchant_id, id_or_ref)?;
        self.ask(merchant_id, current.id, |reply| DisbursementMsg::SandboxComplete {
            outcome,
            reply,
        })
        .await
    }

    /// A vendor's signed callback about a payout: `status` SUCCESS or
    /// FAILED. Returns the status after it; a repeat changes nothing, the
    /// opposite of a final status is `StatusConflict`.
    pub(crate) async fn payout_callback(
        &self,
        vendor: &str,
        payout_id: Uuid,
        status: &str,
        reference: Option<String>,
        failure_reason: Option<String>,
    ) -> Result<String, EngineError> {
        let status = match status {
            "SUCCESS" => PayoutStatus::Success,
            "FAILED" => PayoutStatus::Failed,
            _ => return Err(EngineError::invalid("status", "must be SUCCESS or FAILED")),
        };
        if !fits_vendor_text(&reference) {
            return Err(EngineError::invalid("reference", "must be 1 to 255 characters"));
        }
        if !fits_vendor_text(&failure_reason) {
            return Err(EngineError::invalid("failure_reason", "must be 1 to 255 characters"));
        }
        let report = PayoutReport {
            status,
            reference,
            failure_reason,
            settles: None,
        };
        let current = self
            .core
            .store()
            .disbursement(&payout_id)?
            .ok_or(EngineError::DisbursementNotFound)?;
        let vendor = vendor.to_string();
        self.ask(current.merchant_id, payout_id, |reply| DisbursementMsg::Callback {
            vendor,
            report,
            reply,
        })
        .await
    }

    /// The vendors a disbursement of `organization_id` on `channel` goes to.
    pub(crate) fn payout_route(&self, organization_id: Uuid, channel: Channel) -> Vec<Arc<dyn PayoutVendor>> {
        self.core.payouts().route(organization_id, channel)
    }

    /// Sets the vendors an organization's disbursements on one channel go
    /// to, in order (an unknown vendor, or one without `payouts`, is refused).
    pub async fn set_payout_routing(&self, routing: PayoutRouting) -> Result<PayoutRouting, EngineError> {
        self.core.ensure_writable()?;
        if !self
            .core
            .store()
            .catalog()
            .organizations
            .contains_key(&routing.organization_id)
        {
            return Err(EngineError::invalid("organization_id", "no such organization"));
        }
        if let Some(name) = routing
            .vendors
            .iter()
            .find(|name| !self.core.payouts().may_route_to(name))
        {
            return Err(EngineError::invalid(
                "vendors",
                format!("no payout vendor named {name} (a vendor needs payouts: true)"),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(twice) = routing.vendors.iter().find(|name| !seen.insert(name.as_str())) {
            return Err(EngineError::invalid("vendors", format!("{twice} is listed twice")));
        }
        self.catalog()
            .write_catalog(JournalRecord::PayoutRoutingSaved(routing.clone()))
            .await?;
        Ok(routing)
    }

    /// New disbursements whose first step (review, or the vendor) is not
    /// yet taken.
    pub fn disbursements_awaiting_handoff(&self) -> usize {
        self.core.disbursement_host().starts_unhandled()
    }

    /// `Busy` unless `count` more disbursements fit: the open ones and the
    /// ones waiting for their first step each have a bound (`limits`), so
    /// work that outruns the vendors pushes back on callers (503 with
    /// `Retry-After`) instead of growing memory without end.
    pub(crate) fn room_for_disbursements(&self, count: usize) -> Result<(), EngineError> {
        let open = self.open_disbursement_count().saturating_add(count);
        let unstarted = self.disbursements_awaiting_handoff().saturating_add(count);
        if open > self.core.disbursements_open_max() || unstarted > crate::limits::DISBURSEMENTS_UNSTARTED_MAX {
            return Err(EngineError::Busy);
        }
        Ok(())
    }

    /// Durable disbursements not yet in a final status (SUCCESS, FAILED,
    /// REJECTED): work still open, at a vendor, in review or not yet handed.
    pub fn open_disbursement_count(&self) -> usize {
        self.core.store().open_disbursement_count()
    }

    /// Takes up every disbursement not yet final (after a restart): one
    /// never handed over goes to its vendors; one that may be at a vendor is
    /// inquired at once (never sent again blindly); one IN_REVIEW waits for
    /// an operator.
    pub(crate) fn resume_disbursements(&self) -> Result<usize, EngineError> {
        let open = self.core.store().open_disbursements()?;
        let count = open.len();
        let host = self.core.disbursement_host();
        for disbursement in open {
            let handed = lifecycle::is_handed(&disbursement);
            match disbursement.status {
                DisbursementStatus::Pending if !handed => host.start(Arc::new(disbursement)),
                DisbursementStatus::InReview if !handed => {}
                _ => host.deliver(disbursement.merchant_id, disbursement.id, DisbursementMsg::TakeUp),
            }
        }
        Ok(count)
    }
}
