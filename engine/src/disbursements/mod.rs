//! Disbursements: the engine's operations (validation against the catalog
//! and merchant settings, creation through the merchant actor, alone or in
//! batches (`batch`), queries, payout routes) and the disbursement actors that own each one's life
//! once it exists (`actor`), hosted per merchant (`host`, with what a
//! merchant's actors share in `hosting`), reaching the rest of the engine
//! only through `context`.

use crate::actors::MerchantMsg;
use crate::core::Core;
use crate::domain::catalog::PayoutRouting;
use crate::domain::disbursement::lifecycle;
use crate::domain::MerchantRecord;
use crate::domain::{
    Channel, Destination, Disbursement, DisbursementRequest, DisbursementStatus, SettlementType, Source,
};
use crate::error::EngineError;
use crate::input::{AccountNumber, CatalogCode, EwalletPhone, HolderName, HttpUrl, IdempotencyKey, PositiveAmount};
use crate::store::record::JournalRecord;
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

/// A disbursement a caller asks for, every value already checked
/// (`input`); what needs the engine's state is checked at creation.
#[derive(Clone, Debug)]
pub struct NewDisbursement {
    /// Unique per merchant across both APIs.
    pub idempotency_key: IdempotencyKey,
    /// What the recipient gets; the fee is debited on top.
    pub amount: PositiveAmount,
    /// Who is paid.
    pub payee: Payee,
    /// Status webhooks, else the merchant's default.
    pub notify_url: Option<HttpUrl>,
    /// V1 or Legacy.
    pub source: Source,
}

impl NewDisbursement {
    /// A V1 payout to a bank account from plain values, each checked as
    /// the API checks it (for callers that hold no request body).
    pub fn to_bank(
        idempotency_key: impl Into<String>,
        bank_short_code: &str,
        account_number: &str,
        account_name: &str,
        amount_minor: i64,
    ) -> Result<NewDisbursement, EngineError> {
        let missing = || EngineError::MissingBankInfo("bank_short_code and account_name are required for BANK".into());
        Ok(NewDisbursement {
            idempotency_key: IdempotencyKey::parse(idempotency_key)?,
            amount: PositiveAmount::parse(amount_minor)?,
            payee: Payee::Bank {
                bank_short_code: CatalogCode::parse(bank_short_code).ok_or_else(missing)?,
                account_number: AccountNumber::parse(account_number)?,
                account_name: HolderName::parse(account_name)?.ok_or_else(missing)?,
            },
            notify_url: None,
            source: Source::Api,
        })
    }
}

/// Who a disbursement pays.
#[derive(Clone, Debug)]
pub enum Payee {
    /// A bank account, its holder named.
    Bank {
        /// A bank of the catalog.
        bank_short_code: CatalogCode,
        /// The account.
        account_number: AccountNumber,
        /// The holder.
        account_name: HolderName,
    },
    /// An e-wallet account.
    Ewallet {
        /// An e-wallet of the catalog.
        provider: CatalogCode,
        /// The account's phone.
        phone: EwalletPhone,
    },
    /// A saved beneficiary, which supplies the channel and account.
    Beneficiary {
        /// The beneficiary.
        id: Uuid,
        /// When sent, it must be the beneficiary's.
        channel: Option<Channel>,
        /// The holder's name, used only when the beneficiary has none.
        account_name: Option<HolderName>,
    },
}

/// Filters of `GET /v1/disbursements`.
pub type DisbursementFilter = crate::input::ListFilter<DisbursementStatus>;

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

    /// Whether the merchant may disburse now: storage takes writes and the
    /// merchant is WALLET. The API asks this before it reads the body, so
    /// that a merchant that may not disburse hears so whatever it sent.
    pub fn ensure_may_disburse(&self, merchant_id: Uuid) -> Result<(), EngineError> {
        self.core.ensure_writable()?;
        self.wallet_merchant(merchant_id).map(drop)
    }

    fn wallet_merchant(&self, merchant_id: Uuid) -> Result<Arc<MerchantRecord>, EngineError> {
        let merchant = self.core.merchant(merchant_id).ok_or(EngineError::MerchantNotFound)?;
        if merchant.settlement_type != SettlementType::Wallet {
            return Err(EngineError::NotWalletMerchant);
        }
        Ok(merchant)
    }

    /// The checks a disbursement's values cannot make alone: the merchant,
    /// the beneficiary, the catalog, the DANA minimum, the notify URL's
    /// address and a vendor for the channel.
    fn validate_disbursement(
        &self,
        merchant_id: Uuid,
        new: NewDisbursement,
    ) -> Result<DisbursementRequest, EngineError> {
        let merchant = self.wallet_merchant(merchant_id)?;
        let amount = new.amount.minor();
        let (destination, beneficiary_id) = match &new.payee {
            Payee::Beneficiary {
                id,
                channel,
                account_name,
            } => (
                self.beneficiary_destination(merchant_id, *id, *channel, account_name.as_ref())?,
                Some(*id),
            ),
            Payee::Bank {
                bank_short_code,
                account_number,
                account_name,
            } => (
                self.catalog().bank_account(
                    bank_short_code.as_str(),
                    account_number.as_str(),
                    account_name.as_str(),
                )?,
                None,
            ),
            Payee::Ewallet { provider, phone } => (self.catalog().ewallet_account(provider.as_str(), phone)?, None),
        };
        if matches!(&destination, Destination::Ewallet { provider, .. } if provider == "DANA")
            && amount.get() < DANA_MINIMUM_MINOR
        {
            return Err(EngineError::AmountBelowMinimum("IDR 20,000 for DANA".into()));
        }
        if let Some(url) = &new.notify_url {
            self.core.ensure_public_notify_url("notify_url", url)?;
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
            idempotency_key: new.idempotency_key.into_string(),
            destination: Arc::new(destination),
            request_amount: amount,
            notify_url: new.notify_url.map(HttpUrl::into_string),
            source: new.source,
            beneficiary_id,
        })
    }

    /// A disbursement naming a beneficiary takes its channel and account
    /// from the beneficiary (checked against the catalog again: a bank may
    /// have been disabled since); a `channel` sent along must match it.
    fn beneficiary_destination(
        &self,
        merchant_id: Uuid,
        beneficiary_id: Uuid,
        channel: Option<Channel>,
        account_name: Option<&HolderName>,
    ) -> Result<Destination, EngineError> {
        let beneficiary = self.beneficiary_for(merchant_id, beneficiary_id)?;
        if channel.is_some_and(|sent| sent != beneficiary.destination.channel()) {
            return Err(EngineError::invalid("channel", "does not match the beneficiary"));
        }
        match &beneficiary.destination {
            Destination::Bank {
                bank_short_code,
                account_number,
                account_name: saved_name,
                ..
            } => {
                // The saved or verified name; the request's only when the
                // beneficiary has neither (a name is optional on creation).
                let name = Some(saved_name.as_str())
                    .filter(|n| !n.trim().is_empty())
                    .or(beneficiary.verified_name.as_deref().filter(|n| !n.trim().is_empty()))
                    .or(account_name.map(HolderName::as_str))
                    .ok_or_else(|| {
                        EngineError::MissingBankInfo(
                            "account_name is required: the beneficiary has no account name".into(),
                        )
                    })?;
                self.catalog()
                    .bank_account(bank_short_code, account_number, name.trim())
            }
            Destination::Ewallet { provider, phone } => {
                let phone = EwalletPhone::parse(phone)?;
                self.catalog().ewallet_account(provider, &phone)
            }
        }
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
        let (from, to) = filter.created.half_open();
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
