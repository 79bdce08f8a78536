//! paygate's engine: money, the double-entry ledger, actors and durable storage.
//!
//! - `money`: `MinorUnits`, the only money type.
//! - `limits`: every bound and default, with its reason.
//! - `clock`: injectable time.
//! - `ledger`: pure double-entry domain (accounts, entries, a merchant's book).
//! - `domain`: merchants, credentials, organizations, banks and e-wallets.
//! - `store`: the group-committed journal and the sled state built from it;
//!   public only with the `internals` feature (benches, fuzz targets, tests).
//! - `actors`: `MerchantActor`, the registry that spawns actors on demand, and
//!   `MerchantHandle`, the narrow way to them.
//! - `signing`: RSA key parsing for Legacy signatures.
//! - `refcode`: unique `ORD-`/`DSB-` reference codes.
//! - `keyed_locks`: async locks by key, for work that must not run twice at once.
//! - `timers`: one task holding every vendor deadline.
//! - `vendor`: payment and payout vendors (sandbox and HTTP).
//! - `engine`: `Engine`, which opens, recovers, wires and shuts down, and
//!   hands the HTTP layer one handle per domain: `Orders` (`orders`,
//!   `settlements`), `Disbursements` (`disbursements`, `beneficiaries`),
//!   `Merchants` (`merchants`: records, credentials, money and the ledger
//!   check), `PlatformCatalog` (`catalog`, `destinations`), `Webhooks`
//!   (`webhooks`) and `Operations` (`operations`, `checkpoints`, `metrics`).
//!   Each holds the shared `core` and none knows `Engine`;
//!   `storage_health` says whether storage takes writes (a full or failing
//!   disk); `input` holds the values callers send, each checked where it
//!   is made, and `notify_url` guards merchants' URLs.
//! - `disbursements`: the disbursement operations and the disbursement
//!   actors that own each one's life, paid out exactly once through their
//!   route's vendors; `beneficiaries`: saved payout accounts.
//! - `orders`: orders, payments, expiry and refunds, and the order actors;
//!   `qris`: QRIS strings and PNGs.
//! - `settlements`: MANUAL merchants' daily and on-demand settlements.
//! - `webhooks`: the outbox of events and the record of delivery attempts.
//! - `error`: `EngineError`.

mod actors;
pub mod beneficiaries;
mod bloom;
mod catalog;
mod checkpoints;
pub mod clock;
pub mod cluster;
mod core;
mod destinations;
pub mod disbursements;
pub mod domain;
mod engine;
mod error;
mod keyed_locks;
pub mod ledger;
pub mod limits;
mod merchants;
mod metrics;
pub mod money;
pub mod notify_url;
mod operations;
pub mod orders;
pub mod qris;
mod refcode;
pub mod settlements;
mod shard_catalog;
mod sharded;
pub mod shards;
pub mod signing;
mod storage_health;
#[cfg(feature = "internals")]
pub mod store;
// Without `internals`, what only the benches and tests call goes unused;
// with it (every test and bench build) the store is linted as public.
pub mod input;
#[cfg(not(feature = "internals"))]
#[allow(dead_code, unused_imports)]
mod store;
mod timers;
pub mod vendor;
pub mod webhooks;

pub use actors::PostReceipt;
pub use catalog::PlatformCatalog;
pub use disbursements::Disbursements;
pub use engine::{CatalogPublisher, Engine, EngineConfig, ShardJournal};
pub use error::EngineError;
pub use merchants::Merchants;
pub use merchants::{
    FeeField, FeeOverrides, HistoryPage, HistoryQuery, LedgerReport, LimitField, LimitOverrides, NewMerchant,
    SettingChange, HISTORY_LIMIT_MAX,
};
pub use money::MinorUnits;
pub use operations::Operations;
pub use orders::Orders;
pub use store::journal::list_segments;
pub use webhooks::Webhooks;
