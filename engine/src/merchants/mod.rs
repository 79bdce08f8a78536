//! Merchants: creation, settings, keys and credentials (each change through
//! the merchant's actor), and lookups by id, API key and Legacy client id.
//! Their money is `books`.

use crate::actors::{MerchantChange, MerchantMsg};
use crate::core::Core;
use crate::domain::catalog::DEFAULT_ORGANIZATION_ID;
use crate::domain::{Credentials, MerchantRecord, SettlementBank, SettlementType};
use crate::error::EngineError;
use crate::input::HttpUrl;
use crate::limits;
use crate::store::record::JournalRecord;
use std::sync::Arc;
use uuid::Uuid;

mod books;
mod history;
mod settings;
mod users;

pub use books::LedgerReport;
pub use history::{HistoryPage, HistoryQuery, HISTORY_LIMIT_MAX};
pub use settings::{FeeField, FeeOverrides, LimitField, LimitOverrides, SettingChange};

/// A new merchant as an admin describes it (`POST /admin/v1/merchants`).
#[derive(Clone, Debug)]
pub struct NewMerchant {
    /// Display name.
    pub name: String,
    /// WALLET or MANUAL.
    pub settlement_type: SettlementType,
    /// Defaults to the platform's own organization.
    pub organization_id: Option<Uuid>,
    /// Payout destination.
    pub settlement_bank: Option<SettlementBank>,
    /// Fees other than the defaults.
    pub fees: FeeOverrides,
    /// Limits other than the defaults.
    pub limits: LimitOverrides,
    /// Webhook URL.
    pub default_notify_url: Option<HttpUrl>,
    /// Makes `X-Signature` mandatory.
    pub require_signature: bool,
}

impl NewMerchant {
    /// A merchant of the default organization with the default fees and
    /// limits, no payout destination and no webhook URL.
    pub fn new(name: impl Into<String>, settlement_type: SettlementType) -> NewMerchant {
        NewMerchant {
            name: name.into(),
            settlement_type,
            organization_id: None,
            settlement_bank: None,
            fees: FeeOverrides::default(),
            limits: LimitOverrides::default(),
            default_notify_url: None,
            require_signature: false,
        }
    }
}

/// The merchants handle: merchants, their money, history and users; cheap to clone.
#[derive(Clone)]
pub struct Merchants {
    pub(crate) core: Arc<Core>,
}

impl Merchants {
    pub(crate) fn new(core: Arc<Core>) -> Merchants {
        Merchants { core }
    }
}

impl Merchants {
    /// A merchant by id.
    pub fn merchant(&self, merchant_id: Uuid) -> Option<Arc<MerchantRecord>> {
        self.core.merchant(merchant_id)
    }

    /// The merchant an API key belongs to, checked in constant time.
    pub fn authenticate_api_key(&self, api_key: &str) -> Option<Arc<MerchantRecord>> {
        let hash = crate::domain::merchant::api_key_hash(api_key);
        let merchant = self.core.store().directory().by_api_key_hash(&hash)?;
        merchant.credentials.api_key_matches(api_key).then_some(merchant)
    }

    /// The merchant a Legacy `clientId` belongs to.
    pub fn merchant_by_client_id(&self, client_id: &str) -> Option<Arc<MerchantRecord>> {
        self.core.store().directory().by_client_id(client_id)
    }

    /// Every merchant id.
    pub fn merchant_ids(&self) -> Vec<Uuid> {
        self.core.merchant_ids()
    }

    /// Creates a merchant and returns it with its credentials (shown once).
    pub async fn create_merchant(&self, new: NewMerchant) -> Result<(MerchantRecord, Credentials), EngineError> {
        self.core.ensure_writable()?;
        let name = new.name.trim().to_string();
        if name.is_empty() || name.chars().count() > limits::NAME_CHARS_MAX {
            return Err(EngineError::invalid("name", "must be 1 to 255 characters"));
        }
        let organization_id = new.organization_id.unwrap_or(DEFAULT_ORGANIZATION_ID);
        if !self.core.store().catalog().organizations.contains_key(&organization_id) {
            return Err(EngineError::invalid("organization_id", "no such organization"));
        }
        if let Some(bank) = &new.settlement_bank {
            self.validate_settlement_bank(bank)?;
        }
        if let Some(url) = &new.default_notify_url {
            self.core.ensure_public_notify_url("default_notify_url", url)?;
        }
        // In a cluster a merchant's id decides its shard, and its API key
        // and client id route to it: all three fall in this engine's shard.
        let credentials = loop {
            let candidate = Credentials::generate_in(self.core.shard());
            if self
                .core
                .store()
                .directory()
                .by_client_id(&candidate.client_id)
                .is_none()
            {
                break candidate;
            }
        };
        let now = self.core.now_ms();
        let id = crate::cluster::new_id_in(self.core.shard());
        let record = MerchantRecord {
            id,
            organization_id,
            name,
            settlement_type: new.settlement_type,
            settlement_bank: new.settlement_bank,
            fees: new.fees.applied_to(&Default::default()),
            limits: new.limits.applied_to(&Default::default()),
            default_notify_url: new.default_notify_url.map(HttpUrl::into_string),
            is_active: true,
            require_signature: new.require_signature,
            credentials: credentials.to_stored(),
            public_key_pem: None,
            created_at_ms: now,
            updated_at_ms: now,
        };
        self.core
            .write(JournalRecord::MerchantSaved(Box::new(record.clone())))
            .await?;
        Ok((record, credentials))
    }

    fn validate_settlement_bank(&self, bank: &SettlementBank) -> Result<(), EngineError> {
        if !self.core.store().catalog().banks.contains_key(&bank.bank_short_code) {
            return Err(EngineError::invalid("settlement_bank.bank_short_code", "unknown bank"));
        }
        let digits = bank.account_number.chars().all(|c| c.is_ascii_digit());
        if !digits || !(5..=34).contains(&bank.account_number.len()) {
            return Err(EngineError::invalid(
                "settlement_bank.account_number",
                "must be 5 to 34 digits",
            ));
        }
        if bank.account_name.trim().is_empty() || bank.account_name.chars().count() > limits::NAME_CHARS_MAX {
            return Err(EngineError::invalid(
                "settlement_bank.account_name",
                "must be 1 to 255 characters",
            ));
        }
        Ok(())
    }

    /// Applies changes to a merchant's settings, all or none; what no
    /// change names keeps its value.
    pub async fn update_merchant(
        &self,
        merchant_id: Uuid,
        changes: Vec<SettingChange>,
    ) -> Result<MerchantRecord, EngineError> {
        self.core.ensure_writable()?;
        self.core.merchant(merchant_id).ok_or(EngineError::MerchantNotFound)?;
        for change in &changes {
            match change {
                SettingChange::DefaultNotifyUrl(Some(url)) => {
                    self.core.ensure_public_notify_url("default_notify_url", url)?
                }
                SettingChange::SettlementBank(bank) => self.validate_settlement_bank(bank)?,
                _ => {}
            }
        }
        self.change_merchant(
            merchant_id,
            MerchantChange::Settings(Arc::new(settings::SettingChanges(changes))),
        )
        .await
    }

    async fn change_merchant(&self, merchant_id: Uuid, change: MerchantChange) -> Result<MerchantRecord, EngineError> {
        self.core
            .call_merchant(merchant_id, |reply| MerchantMsg::Change {
                change: change.clone(),
                reply,
            })
            .await?
    }

    /// Stores a merchant's RSA public key (PEM, SPKI or PKCS#1, 2048 bits or more).
    pub async fn set_public_key(&self, merchant_id: Uuid, pem: &str) -> Result<MerchantRecord, EngineError> {
        self.core.ensure_writable()?;
        self.core.merchant(merchant_id).ok_or(EngineError::MerchantNotFound)?;
        crate::signing::parse_rsa_public_key(pem)?;
        self.change_merchant(merchant_id, MerchantChange::PublicKey(pem.trim().to_string()))
            .await
    }

    /// New API key and secrets; the old ones stop working at once.
    pub async fn rotate_credentials(&self, merchant_id: Uuid) -> Result<Credentials, EngineError> {
        self.core.ensure_writable()?;
        let current = self.core.merchant(merchant_id).ok_or(EngineError::MerchantNotFound)?;
        let credentials = Credentials::rotate_in(current.credentials.client_id.clone(), self.core.shard());
        self.change_merchant(merchant_id, MerchantChange::Credentials(credentials.to_stored()))
            .await?;
        Ok(credentials)
    }
}
