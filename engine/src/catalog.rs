//! The catalog: banks, e-wallets and organizations, seeded on a first start
//! and edited by admins, one edit at a time.

use crate::core::Core;
use crate::domain::catalog::{self, DEFAULT_ORGANIZATION_ID};
use crate::domain::{Bank, Catalog, Ewallet, Organization};
use crate::error::EngineError;
use crate::limits;
use crate::store::record::JournalRecord;
use std::sync::Arc;
use uuid::Uuid;

/// The catalog handle: banks, e-wallets, organizations; cheap to clone.
#[derive(Clone)]
pub struct PlatformCatalog {
    pub(crate) core: Arc<Core>,
}

impl PlatformCatalog {
    pub(crate) fn new(core: Arc<Core>) -> PlatformCatalog {
        PlatformCatalog { core }
    }

    /// The shard whose engine this catalog is, in a cluster.
    pub fn shard(&self) -> Option<u16> {
        self.core.shard()
    }
}

impl PlatformCatalog {
    pub(crate) async fn seed_catalog(&self) -> Result<(), EngineError> {
        let (missing_banks, missing_ewallets, missing_org) = {
            let catalog = self.core.store().catalog();
            let banks: Vec<Bank> = catalog::seed_banks()
                .into_iter()
                .filter(|b| !catalog.banks.contains_key(&b.short_code))
                .collect();
            let ewallets: Vec<Ewallet> = catalog::seed_ewallets()
                .into_iter()
                .filter(|e| !catalog.ewallets.contains_key(&e.short_code))
                .collect();
            (
                banks,
                ewallets,
                !catalog.organizations.contains_key(&DEFAULT_ORGANIZATION_ID),
            )
        };
        // Only a first start (or a catalog never written) seeds; later admin
        // edits, such as a disabled bank, must stick.
        let catalog_never_written = missing_banks.len() == 10 && missing_ewallets.len() == 7;
        if !self.core.is_first_start() && !catalog_never_written {
            return Ok(());
        }
        for bank in missing_banks {
            self.core.write(JournalRecord::BankSaved(bank)).await?;
        }
        for ewallet in missing_ewallets {
            self.core.write(JournalRecord::EwalletSaved(ewallet)).await?;
        }
        if missing_org {
            let organization = Organization {
                id: DEFAULT_ORGANIZATION_ID,
                name: "Platform".into(),
                created_at_ms: self.core.now_ms(),
            };
            self.core.write(JournalRecord::OrganizationSaved(organization)).await?;
        }
        Ok(())
    }

    /// Journals a platform catalog change: in a cluster it is published to
    /// every shard (this one included, before this returns); else written
    /// here.
    pub(crate) async fn write_catalog(&self, record: JournalRecord) -> Result<(), EngineError> {
        match self.core.publish_catalog() {
            Some(publish) => publish(record.encode()).await.map_err(|error| {
                tracing::warn!(%error, "a catalog change could not be published to the cluster");
                EngineError::StorageUnavailable
            }),
            None => self.core.write(record).await,
        }
    }

    /// Applies a platform catalog change another shard published (a record
    /// `write_catalog` encoded), journaled here as this shard's own.
    pub async fn apply_catalog_record(&self, bytes: &[u8]) -> Result<(), EngineError> {
        let record = JournalRecord::decode(bytes).map_err(|error| EngineError::Internal(error.to_string()))?;
        match record {
            JournalRecord::OrganizationSaved(_)
            | JournalRecord::BankSaved(_)
            | JournalRecord::EwalletSaved(_)
            | JournalRecord::PaymentVendorSaved(_)
            | JournalRecord::VendorRoutingSaved(_)
            | JournalRecord::PayoutRoutingSaved(_) => self.core.write(record).await,
            _ => Err(EngineError::Internal("not a platform catalog record".into())),
        }
    }

    /// A bank by short code, without copying the catalog.
    pub fn bank(&self, short_code: &str) -> Option<Bank> {
        self.core.store().catalog().banks.get(short_code).cloned()
    }

    /// An e-wallet by code, without copying the catalog.
    pub fn ewallet(&self, short_code: &str) -> Option<Ewallet> {
        self.core.store().catalog().ewallets.get(short_code).cloned()
    }

    /// A copy of the catalog.
    pub fn catalog(&self) -> Catalog {
        self.core.store().catalog().clone()
    }

    /// Bumped on every catalog change.
    pub fn catalog_version(&self) -> u64 {
        self.core.store().catalog_version()
    }

    /// Creates an organization.
    pub async fn create_organization(&self, name: &str) -> Result<Organization, EngineError> {
        self.core.ensure_writable()?;
        let name = name.trim();
        if name.is_empty() || name.chars().count() > limits::NAME_CHARS_MAX {
            return Err(EngineError::invalid("name", "must be 1 to 255 characters"));
        }
        let organization = Organization {
            id: Uuid::new_v4(),
            name: name.to_string(),
            created_at_ms: self.core.now_ms(),
        };
        self.write_catalog(JournalRecord::OrganizationSaved(organization.clone()))
            .await?;
        Ok(organization)
    }

    /// Enables or disables a bank, or adds one (a new code needs a name).
    pub async fn save_bank(
        &self,
        short_code: &str,
        is_enabled: bool,
        name: Option<String>,
    ) -> Result<Bank, EngineError> {
        self.core.ensure_writable()?;
        let _guard = self.core.catalog_lock().lock().await;
        let existing = self.core.store().catalog().banks.get(short_code).cloned();
        let bank = match existing {
            Some(mut bank) => {
                bank.is_enabled = is_enabled;
                if let Some(name) = name {
                    bank.name = validated_name(&name)?;
                }
                bank
            }
            None => {
                validate_code(short_code)?;
                let name = name.ok_or_else(|| EngineError::invalid("name", "required for a new bank"))?;
                Bank {
                    id: catalog::catalog_id("bank", short_code),
                    name: validated_name(&name)?,
                    short_code: short_code.to_string(),
                    is_enabled,
                }
            }
        };
        self.write_catalog(JournalRecord::BankSaved(bank.clone())).await?;
        Ok(bank)
    }

    /// Enables or disables one of the seven e-wallets.
    pub async fn save_ewallet(&self, short_code: &str, is_enabled: bool) -> Result<Ewallet, EngineError> {
        self.core.ensure_writable()?;
        let _guard = self.core.catalog_lock().lock().await;
        let mut ewallet = self
            .core
            .store()
            .catalog()
            .ewallets
            .get(short_code)
            .cloned()
            .ok_or(EngineError::EwalletNotFound)?;
        ewallet.is_enabled = is_enabled;
        self.write_catalog(JournalRecord::EwalletSaved(ewallet.clone())).await?;
        Ok(ewallet)
    }
}

fn validate_code(code: &str) -> Result<(), EngineError> {
    let ok = !code.is_empty()
        && code.len() <= 32
        && code
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(EngineError::invalid("code", "must be 1 to 32 of A-Z, 0-9, _"))
    }
}

fn validated_name(name: &str) -> Result<String, EngineError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > limits::NAME_CHARS_MAX {
        return Err(EngineError::invalid("name", "must be 1 to 255 characters"));
    }
    Ok(name.to_string())
}
