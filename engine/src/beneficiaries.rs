//! The engine's beneficiary operations: create with per-channel
//! validation, verification by the vendor's account inquiry, list, soft delete.

use crate::actors::{BeneficiaryChange, MerchantMsg};
use crate::destinations::present;
use crate::disbursements::context::bounded;
use crate::disbursements::Disbursements;
use crate::domain::{Beneficiary, VerificationStatus};
use crate::error::EngineError;
use crate::limits;
use crate::vendor::AccountCheck;
use std::time::Duration;
use uuid::Uuid;

/// A beneficiary as a caller describes it, before validation.
#[derive(Clone, Debug, Default)]
pub struct NewBeneficiary {
    /// `BANK` or `EWALLET`.
    pub channel: Option<String>,
    /// Friendly name.
    pub label: Option<String>,
    /// BANK: required.
    pub bank_short_code: Option<String>,
    /// BANK: required.
    pub account_number: Option<String>,
    /// BANK: optional.
    pub account_name: Option<String>,
    /// EWALLET: required.
    pub ewallet_provider: Option<String>,
    /// EWALLET: required.
    pub ewallet_phone: Option<String>,
    /// Becomes the merchant's default.
    pub is_default: bool,
}

impl Disbursements {
    /// Saves a beneficiary (verification PENDING) and starts its account inquiry.
    pub async fn create_beneficiary(&self, merchant_id: Uuid, new: NewBeneficiary) -> Result<Beneficiary, EngineError> {
        self.core.ensure_writable()?;
        let merchant = self.core.merchant(merchant_id).ok_or(EngineError::MerchantNotFound)?;
        let destination = match new.channel.as_deref() {
            Some("BANK") => {
                let (Some(code), Some(number)) = (present(&new.bank_short_code), present(&new.account_number)) else {
                    return Err(EngineError::MissingBankInfo(
                        "bank_short_code and account_number are required for BANK".into(),
                    ));
                };
                // The holder's name is optional here; empty stands for "not given".
                self.catalog()
                    .bank_account(code, number, present(&new.account_name).unwrap_or_default())?
            }
            Some("EWALLET") => {
                let (Some(code), Some(raw_phone)) = (present(&new.ewallet_provider), present(&new.ewallet_phone))
                else {
                    return Err(EngineError::MissingEwalletInfo);
                };
                self.catalog().ewallet_account(code, raw_phone)?
            }
            Some(_) => return Err(EngineError::invalid("channel", "must be BANK or EWALLET")),
            None => return Err(EngineError::invalid("channel", "is required")),
        };
        if new
            .label
            .as_deref()
            .is_some_and(|l| l.chars().count() > limits::NAME_CHARS_MAX)
        {
            return Err(EngineError::invalid("label", "must be at most 255 characters"));
        }
        let now = self.core.clock().now().timestamp_millis();
        let beneficiary = Beneficiary {
            id: Uuid::new_v4(),
            organization_id: merchant.organization_id,
            merchant_id,
            label: new.label,
            destination,
            verification_status: VerificationStatus::Pending,
            verified_name: None,
            is_default: new.is_default,
            is_enabled: true,
            deleted_at_ms: None,
            created_at_ms: now,
            updated_at_ms: now,
        };
        let change = BeneficiaryChange::Create(Box::new(beneficiary));
        let created = self.change_beneficiary(merchant_id, change).await?;
        self.start_account_inquiry(&created);
        Ok(created)
    }

    /// Asks the first vendor of the channel's route about a beneficiary's
    /// account (`POST {url}/account-inquiries`), in the background.
    fn start_account_inquiry(&self, beneficiary: &Beneficiary) {
        let engine = self.clone();
        let (merchant_id, id) = (beneficiary.merchant_id, beneficiary.id);
        tokio::spawn(async move { engine.check_account(merchant_id, id).await });
    }

    /// Asks about beneficiary `id`'s account, if still unverified: the holder's
    /// name verifies it, "no such account" fails it, and anything else
    /// (no vendor, no usable answer) leaves it PENDING and asks again 10 s
    /// later, then on the payout schedule counted from its creation.
    pub(crate) async fn check_account(&self, merchant_id: Uuid, id: Uuid) {
        let beneficiary = match self.beneficiary_for(merchant_id, id) {
            Ok(b) if b.verification_status == VerificationStatus::Pending => b,
            Ok(_) | Err(EngineError::BeneficiaryNotFound) => return,
            Err(error) => {
                tracing::error!(%error, %id, "beneficiary unreadable; asked about again later");
                self.core.timers().check_account_after(
                    merchant_id,
                    id,
                    self.core.payouts().scaled(limits::PAYOUT_UNKNOWN_INQUIRY_AFTER),
                );
                return;
            }
        };
        let Some(merchant) = self.core.merchant(merchant_id) else {
            return;
        };
        let vendor = self
            .payout_route(merchant.organization_id, beneficiary.destination.channel())
            .into_iter()
            .next();
        let answer = match &vendor {
            Some(vendor) => {
                let call = vendor.check_account(&beneficiary.destination);
                bounded(vendor.as_ref(), call, AccountCheck::Unknown).await
            }
            None => AccountCheck::Unknown("no payout vendor for this channel".into()),
        };
        let result = match answer {
            AccountCheck::Holder(name) => Ok(name),
            AccountCheck::NotFound(reason) => Err(reason),
            AccountCheck::Unknown(reason) => {
                let first_try = self.core.clock().now().timestamp_millis() - beneficiary.created_at_ms
                    < self
                        .core
                        .payouts()
                        .scaled(limits::PAYOUT_UNKNOWN_INQUIRY_AFTER)
                        .as_millis() as i64;
                let delay = if first_try {
                    self.core.payouts().scaled(limits::PAYOUT_UNKNOWN_INQUIRY_AFTER)
                } else {
                    self.core.payouts().next_on_schedule(beneficiary.created_at_ms)
                };
                tracing::warn!(%id, %reason, ?delay, "account inquiry unanswered; asked again later");
                self.core.timers().check_account_after(merchant_id, id, delay);
                return;
            }
        };
        // Not recorded while storage cannot take writes: the merchant's actor
        // would wait in this change, its reads behind it, until the disk
        // takes the journal's writes again. Asked again later instead.
        let recorded = match self.core.ensure_writable() {
            Ok(()) => {
                self.change_beneficiary(merchant_id, BeneficiaryChange::Verify { id, result })
                    .await
            }
            Err(refused) => Err(refused),
        };
        match recorded {
            Ok(_) | Err(EngineError::BeneficiaryNotFound) => {}
            Err(error) => {
                tracing::error!(%error, %id, "recording a beneficiary verification failed; asked again later");
                self.core.timers().check_account_after(
                    merchant_id,
                    id,
                    self.core.payouts().scaled(limits::PAYOUT_UNKNOWN_INQUIRY_AFTER),
                );
            }
        }
    }

    /// After a restart: every beneficiary still unverified is asked about
    /// again. Returns how many.
    pub(crate) fn resume_account_checks(&self) -> Result<usize, EngineError> {
        let mut count = 0;
        for merchant_id in self.core.merchant_ids() {
            for beneficiary in self.beneficiaries(merchant_id)? {
                if beneficiary.verification_status == VerificationStatus::Pending {
                    self.core
                        .timers()
                        .check_account_after(merchant_id, beneficiary.id, Duration::ZERO);
                    count += 1;
                }
            }
        }
        Ok(count)
    }

    async fn change_beneficiary(
        &self,
        merchant_id: Uuid,
        change: BeneficiaryChange,
    ) -> Result<Beneficiary, EngineError> {
        self.core
            .call_merchant(merchant_id, |reply| MerchantMsg::ChangeBeneficiary {
                change: change.clone(),
                reply,
            })
            .await?
    }

    /// A merchant's beneficiaries, newest first, deleted ones left out.
    pub fn beneficiaries(&self, merchant_id: Uuid) -> Result<Vec<Beneficiary>, EngineError> {
        let all = self.core.store().merchant_beneficiaries(&merchant_id)?;
        Ok(all.into_iter().filter(|b| b.deleted_at_ms.is_none()).collect())
    }

    /// One of a merchant's beneficiaries, unless deleted.
    pub fn beneficiary_for(&self, merchant_id: Uuid, id: Uuid) -> Result<Beneficiary, EngineError> {
        self.core
            .store()
            .beneficiary(&id)?
            .filter(|b| b.merchant_id == merchant_id && b.deleted_at_ms.is_none())
            .ok_or(EngineError::BeneficiaryNotFound)
    }

    /// Soft-deletes a beneficiary; disbursements that used it are kept.
    pub async fn delete_beneficiary(&self, merchant_id: Uuid, id: Uuid) -> Result<(), EngineError> {
        self.core.ensure_writable()?;
        self.change_beneficiary(merchant_id, BeneficiaryChange::Delete { id })
            .await
            .map(|_| ())
    }
}
