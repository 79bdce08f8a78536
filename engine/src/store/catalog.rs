//! The catalog (banks, e-wallets, organizations, payment vendors and
//! routes): its sled keys and the copy kept in memory.

use super::record::JournalRecord;
use super::Store;
use crate::domain::catalog::{PaymentVendorConfig, PayoutRouting, VendorRouting};
use crate::domain::{Bank, Catalog, Ewallet, Organization};
use std::sync::atomic::Ordering;
use std::sync::RwLockReadGuard;

impl Store {
    /// Puts a catalog record into the copy in memory.
    pub(super) fn apply_to_catalog(&self, record: JournalRecord) {
        let mut catalog = self.catalog_memory.write().expect("catalog lock");
        match record {
            JournalRecord::BankSaved(bank) => {
                catalog.banks.insert(bank.short_code.clone(), bank);
            }
            JournalRecord::EwalletSaved(ewallet) => {
                catalog.ewallets.insert(ewallet.short_code.clone(), ewallet);
            }
            JournalRecord::OrganizationSaved(organization) => {
                catalog.organizations.insert(organization.id, organization);
            }
            JournalRecord::PaymentVendorSaved(vendor) => {
                catalog.payment_vendors.insert(vendor.name.clone(), vendor);
            }
            JournalRecord::VendorRoutingSaved(routing) => {
                catalog
                    .vendor_routes
                    .insert((routing.organization_id, routing.method), routing.vendors);
            }
            JournalRecord::PayoutRoutingSaved(routing) => {
                catalog
                    .payout_routes
                    .insert((routing.organization_id, routing.channel), routing.vendors);
            }
            JournalRecord::MerchantUserSaved(user) => {
                catalog.users.insert(user.email.clone(), user);
            }
            _ => {}
        }
    }

    /// The bank, e-wallet and organization catalog.
    pub fn catalog(&self) -> RwLockReadGuard<'_, Catalog> {
        self.catalog_memory.read().expect("catalog lock")
    }

    /// Bumped on every catalog change, so caches know to rebuild.
    pub fn catalog_version(&self) -> u64 {
        self.catalog_version.load(Ordering::Acquire)
    }
}

/// The `catalog` tree's key of a catalog record.
pub(super) fn catalog_key(record: &JournalRecord) -> Vec<u8> {
    match record {
        JournalRecord::BankSaved(Bank { short_code, .. }) => format!("bank:{short_code}").into_bytes(),
        JournalRecord::EwalletSaved(Ewallet { short_code, .. }) => format!("ewallet:{short_code}").into_bytes(),
        JournalRecord::OrganizationSaved(Organization { id, .. }) => format!("org:{id}").into_bytes(),
        JournalRecord::PaymentVendorSaved(PaymentVendorConfig { name, .. }) => format!("vendor:{name}").into_bytes(),
        JournalRecord::VendorRoutingSaved(VendorRouting {
            organization_id,
            method,
            ..
        }) => format!("route:{organization_id}:{}", method.as_str()).into_bytes(),
        JournalRecord::PayoutRoutingSaved(PayoutRouting {
            organization_id,
            channel,
            ..
        }) => format!("payout-route:{organization_id}:{}", channel.as_str()).into_bytes(),
        JournalRecord::MerchantUserSaved(user) => format!("user:{}", user.email).into_bytes(),
        _ => unreachable!("only catalog records have catalog keys"),
    }
}
