//! Banks, e-wallets and organizations: the reference data disbursements and
//! merchants point at. Seeded on first start; admins enable and disable.

use crate::domain::disbursement::Channel;
use crate::domain::order::PaymentMethod;
use std::collections::BTreeMap;
use uuid::Uuid;

/// Namespace for the stable UUIDs of seeded banks and e-wallets: the same
/// code gets the same id on every installation and after every restart.
const CATALOG_NAMESPACE: Uuid = Uuid::from_u128(0x6f1c_2a4e_9d3b_4c55_8e21_7a0b_3c9d_5e10);

/// A bank that disbursements can pay into.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bank {
    /// Stable id.
    pub id: Uuid,
    /// Full name.
    pub name: String,
    /// Short code (`BCA`, ...).
    pub short_code: String,
    /// Disabled banks are hidden and refused.
    pub is_enabled: bool,
}

/// An e-wallet that disbursements can pay into.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ewallet {
    /// Stable id.
    pub id: Uuid,
    /// Display name.
    pub name: String,
    /// One of the seven codes of `seed_ewallets`.
    pub short_code: String,
    /// Disabled e-wallets are hidden and refused.
    pub is_enabled: bool,
    /// Display order.
    pub sort_order: i64,
}

/// A white-label aggregator owning merchants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Organization {
    /// Id.
    pub id: Uuid,
    /// Name.
    pub name: String,
    /// Creation time, Unix ms.
    pub created_at_ms: i64,
}

/// How the platform reaches a vendor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VendorKind {
    /// The in-process sandbox vendor (sandbox mode only).
    Sandbox,
    /// A vendor over HTTP: payments and refunds are POSTed to `url`, signed
    /// with `secret`, and its callbacks come signed with the same secret.
    Http {
        /// Base URL; `/payments` and `/refunds` are appended.
        url: String,
        /// HMAC-SHA256 key of requests and callbacks.
        secret: String,
        /// Per-request timeout.
        timeout_ms: u64,
    },
}

/// A vendor the platform can route orders (and, with `payouts`,
/// disbursements) to, by unique name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaymentVendorConfig {
    /// Unique, URL-safe; callbacks arrive at `/callbacks/{name}`.
    pub name: String,
    /// How to reach it.
    pub kind: VendorKind,
    /// Whether it can refund orders it took.
    pub supports_refund: bool,
    /// Whether it pays disbursements out.
    pub payouts: bool,
}

/// The vendors an organization's orders of one payment method go to, tried in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VendorRouting {
    /// Whose.
    pub organization_id: Uuid,
    /// Which method.
    pub method: PaymentMethod,
    /// Vendor names, first tried first; empty means none (503 `NO_VENDOR`).
    pub vendors: Vec<String>,
}

/// The payout vendors an organization's disbursements on one channel go to, tried in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PayoutRouting {
    /// Whose.
    pub organization_id: Uuid,
    /// Which channel.
    pub channel: Channel,
    /// Vendor names, first tried first; empty means none (503 `NO_VENDOR`).
    pub vendors: Vec<String>,
}

/// The name of the built-in sandbox vendor.
pub const SANDBOX_VENDOR: &str = "sandbox";

/// The id of the organization every merchant belongs to unless told otherwise.
pub const DEFAULT_ORGANIZATION_ID: Uuid = Uuid::from_u128(0x0000_0000_0000_4000_8000_0000_0000_0001);

/// The stable id of a catalog item of `kind` with `code`.
pub fn catalog_id(kind: &str, code: &str) -> Uuid {
    Uuid::new_v5(&CATALOG_NAMESPACE, format!("{kind}:{code}").as_bytes())
}

/// The banks the catalog is seeded with on a first start, all enabled.
pub fn seed_banks() -> Vec<Bank> {
    [
        ("BCA", "Bank Central Asia"),
        ("MANDIRI", "Bank Mandiri"),
        ("BNI", "Bank Negara Indonesia"),
        ("BRI", "Bank Rakyat Indonesia"),
        ("CIMB", "CIMB Niaga"),
        ("PERMATA", "Bank Permata"),
        ("BTN", "Bank Tabungan Negara"),
        ("DANAMON", "Bank Danamon"),
        ("PANIN", "Panin Bank"),
        ("MAYBANK", "Maybank Indonesia"),
    ]
    .into_iter()
    .map(|(code, name)| Bank {
        id: catalog_id("bank", code),
        name: name.into(),
        short_code: code.into(),
        is_enabled: true,
    })
    .collect()
}

/// The e-wallets the catalog is seeded with on a first start, all enabled.
pub fn seed_ewallets() -> Vec<Ewallet> {
    [
        ("GOPAY", "GoPay"),
        ("GOPAYDRIVER", "GoPay Driver"),
        ("OVO", "OVO"),
        ("SHOPEEPAY", "ShopeePay"),
        ("LINKAJA", "LinkAja"),
        ("DANA", "DANA"),
        ("KASPRO", "KasPro"),
    ]
    .into_iter()
    .enumerate()
    .map(|(index, (code, name))| Ewallet {
        id: catalog_id("ewallet", code),
        name: name.into(),
        short_code: code.into(),
        is_enabled: true,
        sort_order: index as i64 + 1,
    })
    .collect()
}

/// The reference data held in memory, keyed by short code / id.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    /// Banks by short code.
    pub banks: BTreeMap<String, Bank>,
    /// E-wallets by short code.
    pub ewallets: BTreeMap<String, Ewallet>,
    /// Organizations by id.
    pub organizations: BTreeMap<Uuid, Organization>,
    /// Payment vendors by name.
    pub payment_vendors: BTreeMap<String, PaymentVendorConfig>,
    /// Configured routes; a route never configured falls back to the default.
    pub vendor_routes: BTreeMap<(Uuid, PaymentMethod), Vec<String>>,
    /// Configured payout routes; likewise.
    pub payout_routes: BTreeMap<(Uuid, Channel), Vec<String>>,
    /// Dashboard users by lower-cased email.
    pub users: BTreeMap<String, super::MerchantUser>,
}

impl Catalog {
    /// Enabled banks, by short code.
    pub fn enabled_banks(&self) -> Vec<Bank> {
        self.banks.values().filter(|b| b.is_enabled).cloned().collect()
    }

    /// Enabled e-wallets, by sort order.
    pub fn enabled_ewallets(&self) -> Vec<Ewallet> {
        let mut list: Vec<Ewallet> = self.ewallets.values().filter(|e| e.is_enabled).cloned().collect();
        list.sort_by_key(|e| (e.sort_order, e.short_code.clone()));
        list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_ids_are_stable_and_distinct() {
        let banks = seed_banks();
        assert_eq!(banks.len(), 10);
        assert_eq!(banks[0].id, seed_banks()[0].id);
        let mut ids: Vec<Uuid> = banks.iter().map(|b| b.id).collect();
        ids.extend(seed_ewallets().iter().map(|e| e.id));
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 17);
    }
}
