//! The engine's beneficiary operations: create with per-channel
//! validation, verification by the vendor's account inquiry, list, soft delete.

use crate::actors::{BeneficiaryChange, MerchantMsg};
use crate::disbursements::context::bounded;
use crate::disbursements::Disbursements;
use crate::domain::{Beneficiary, VerificationStatus};
use crate::error::EngineError;
use crate::input::{AccountNumber, CatalogCode, EwalletPhone, HolderName};
use crate::limits;
use crate::vendor::AccountCheck;
use std::time::Duration;
use uuid::Uuid;

/// A beneficiary a caller asks to save, every value already checked
/// (`input`); the catalog is checked at creation.
#[derive(Clone, Debug)]
pub struct NewBeneficiary {
    /// The account.
    pub account: SavedAccount,
    /// Friendly name, at most `NAME_CHARS_MAX` characters.
    pub label: Option<Label>,
    /// Becomes the merchant's default.
    pub is_default: bool,
}

/// The account a beneficiary saves.
#[derive(Clone, Debug)]
pub enum SavedAccount {
    /// A bank account; the holder's name is optional (the vendor's account
    /// inquiry may supply it).
    Bank {
        /// A bank of the catalog.
        bank_short_code: CatalogCode,
        /// The account.
        account_number: AccountNumber,
        /// The holder, when given.
        account_name: Option<HolderName>,
    },
    /// An e-wallet account.
    Ewallet {
        /// An e-wallet of the catalog.
        provider: CatalogCode,
        /// The account's phone.
        phone: EwalletPhone,
    },
}

/// A beneficiary's label: at most `NAME_CHARS_MAX` characters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label(String);

impl Label {
    /// The label, if `raw` is one.
    pub fn parse(raw: String) -> Result<Label, EngineError> {
        if raw.chars().count() > limits::NAME_CHARS_MAX {
            return Err(EngineError::invalid("label", "must be at most 255 characters"));
        }
        Ok(Label(raw))
    }
}

impl Disbursements {
    /// Saves a beneficiary (verification PENDING) and starts its account inquiry.
    pub async fn create_beneficiary(&self, merchant_id: Uuid, new: NewBeneficiary) -> Result<Beneficiary, EngineError> {
        self.core.ensure_writable()?;
        let merchant = self.core.merchant(merchant_id).ok_or(EngineError::MerchantNotFound)?;
        let destination = match &new.account {
            SavedAccount::Bank {
                bank_short_code,
                account_number,
                account_name,
            } => self.catalog().bank_account(
                bank_short_code.as_str(),
                account_number.as_str(),
                account_name.as_ref().map_or("", HolderName::as_str),
            )?,
            SavedAccount::Ewallet { provider, phone } => self.catalog().ewallet_account(provider.as_str(), phone)?,
        };
        let now = self.core.clock().now().timestamp_millis();
        let beneficiary = Beneficiary {
            id: Uuid::new_v4(),
            organization_id: merchant.organization_id,
            merchant_id,
            label: new.label.map(|label| label.0),
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
