//! The platform catalog (organizations, banks, e-wallets, payment vendors
//! and routes) in a cluster, the same in every shard. A change made through
//! any shard's engine is written once to the cluster's catalog table, under
//! its next version, then applied to every shard a node holds, in version
//! order, and journaled there as the shard's own record: the shard that
//! made it before its request is answered, the others when the node's
//! follower is woken (at once by `NOTIFY`, or within `POLL_EVERY`). A shard
//! taken later catches up from the table before it serves. The table keeps
//! each entry's latest version only, which is all a catch-up needs.

use crate::catalog::PlatformCatalog;
use crate::cluster::{CatalogEntry, CatalogFollower, ClusterError, SharedCatalog};
use crate::engine::CatalogPublisher;
use crate::store::record::JournalRecord;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The catalog table's kind of platform catalog entries.
const PLATFORM: &str = "platform";
/// Entries read at a time in a catch-up.
const PAGE: i64 = 500;

/// The entry a catalog record is kept under: one per bank, e-wallet,
/// organization, vendor and route, so a later change replaces an earlier.
fn entry_id(record: &JournalRecord) -> Option<String> {
    Some(match record {
        JournalRecord::OrganizationSaved(organization) => format!("organization/{}", organization.id),
        JournalRecord::BankSaved(bank) => format!("bank/{}", bank.short_code),
        JournalRecord::EwalletSaved(ewallet) => format!("ewallet/{}", ewallet.short_code),
        JournalRecord::PaymentVendorSaved(vendor) => format!("vendor/{}", vendor.name),
        JournalRecord::VendorRoutingSaved(routing) => {
            format!("vendor-route/{}/{}", routing.organization_id, routing.method.as_str())
        }
        JournalRecord::PayoutRoutingSaved(routing) => {
            format!("payout-route/{}/{}", routing.organization_id, routing.channel.as_str())
        }
        _ => return None,
    })
}

/// A node's copy of the platform catalog in each shard it holds.
pub struct CatalogSync {
    catalog: SharedCatalog,
    /// The version through which each held shard's engine has applied the
    /// table, each behind its own lock, so applies to one shard never
    /// interleave and different shards catch up at once.
    applied: std::sync::Mutex<BTreeMap<u16, Arc<tokio::sync::Mutex<i64>>>>,
}

impl CatalogSync {
    pub fn new(catalog: SharedCatalog) -> Arc<CatalogSync> {
        Arc::new(CatalogSync {
            catalog,
            applied: std::sync::Mutex::new(BTreeMap::new()),
        })
    }

    /// Follows the catalog table, calling `changed` for every platform
    /// change (several may come as one call's worth of work).
    pub fn follower(&self, changed: impl Fn() + Send + 'static) -> CatalogFollower {
        self.catalog.follow(0, move |entry| {
            if entry.kind == PLATFORM {
                changed();
            }
        })
    }

    /// Forgets what `shard` applied: its engine is new (taken again) and
    /// catches up from the start.
    pub fn forget(&self, shard: u16) {
        self.applied.lock().expect("applied lock").remove(&shard);
    }

    fn slot(&self, shard: u16) -> Arc<tokio::sync::Mutex<i64>> {
        self.applied
            .lock()
            .expect("applied lock")
            .entry(shard)
            .or_default()
            .clone()
    }

    /// Applies every platform entry after what `catalog` (of `shard`'s
    /// engine) has,
    /// in version order.
    pub async fn catch_up(&self, shard: u16, catalog: &PlatformCatalog) -> Result<(), String> {
        let slot = self.slot(shard);
        let mut through = slot.lock().await;
        loop {
            let page: Vec<CatalogEntry> = self
                .catalog
                .changes_after(*through, PAGE)
                .await
                .map_err(|error| error.to_string())?;
            let done = (page.len() as i64) < PAGE;
            for entry in page {
                if entry.kind == PLATFORM {
                    if let Some(body) = &entry.body {
                        catalog
                            .apply_catalog_record(body)
                            .await
                            .map_err(|error| format!("shard {shard}: {error}"))?;
                    }
                }
                *through = entry.version;
            }
            if done {
                return Ok(());
            }
        }
    }

    /// What a shard engine publishes its catalog changes through.
    pub fn publisher(self: &Arc<Self>) -> CatalogPublisher {
        let sync = self.clone();
        Arc::new(move |catalog, record| {
            let sync = sync.clone();
            Box::pin(async move { sync.publish(&catalog, record).await })
        })
    }

    /// Writes `record` to the table, then brings `catalog`, the shard it
    /// came from, up to it.
    async fn publish(&self, catalog: &PlatformCatalog, record: Vec<u8>) -> Result<(), String> {
        let decoded = JournalRecord::decode(&record).map_err(|error| error.to_string())?;
        let id = entry_id(&decoded).ok_or("not a platform catalog record")?;
        self.catalog
            .put(PLATFORM, &id, &record)
            .await
            .map_err(|error: ClusterError| error.to_string())?;
        let shard = catalog.shard().ok_or("a publishing engine serves a shard")?;
        self.catch_up(shard, catalog).await
    }
}
