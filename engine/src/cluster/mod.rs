//! Past one node: the state a cluster of paygate nodes shares in
//! PostgreSQL. Merchants fall into `SHARDS` shards by a stable hash of
//! their id; each shard is owned by one node at a time through a lease the
//! database's clock judges (`leases.rs`), kept by a background task on every
//! node (`keeper.rs`); each shard's journal of record is a table whose
//! every append checks, in its own transaction, that the writer's lease
//! epoch is still the shard's (`records.rs`), beside its snapshots. The
//! catalog (merchants, credentials, vendors, users) is shared by every node,
//! each following its changes (`catalog.rs`).
//!
//! Nothing here is consensus of our own: PostgreSQL decides who owns what,
//! and the epoch check makes a node that lost a lease unable to write.

mod catalog;
mod database;
#[cfg(test)]
mod engine_tests;
mod keeper;
mod leases;
mod records;
#[cfg(any(test, feature = "test-postgres"))]
pub mod test_postgres;
#[cfg(test)]
mod tests;

pub use catalog::{CatalogEntry, CatalogFollower, SharedCatalog};
pub use database::Database;
pub use keeper::{KeeperHandle, Owned, OwnerFuture, ShardOwner};
pub use leases::{ClusterStatus, Leases, NodeStatus, ShardStatus};
pub use records::{Append, ShardRecord, ShardRecords};

use std::time::Duration;
use uuid::Uuid;

/// Shards merchants are spread over. Part of the data format: a merchant's
/// shard never changes.
pub const SHARDS: u16 = 64;
/// How long a lease lasts after it was taken or renewed, by the database's
/// clock.
pub const LEASE: Duration = Duration::from_secs(5);
/// How often a node renews its leases and says it is alive.
pub const RENEW_EVERY: Duration = Duration::from_secs(1);
/// A node whose last heartbeat is older than this is not counted when the
/// shards are spread.
pub const NODE_ALIVE: Duration = Duration::from_secs(5);
/// A node stops acting on a shard this long before its lease could have
/// expired: the lease was renewed at the database no sooner than the
/// renewal was sent, so the node's own clock, started at the send, runs
/// ahead of the lease by at least this margin.
pub const LEASE_MARGIN: Duration = Duration::from_secs(1);

/// The shard of a merchant: the low bits of the XXH3 hash of its id's
/// bytes (XXH3 is specified, so the mapping is the same on every node and
/// build).
pub fn shard_of(merchant_id: Uuid) -> u16 {
    (xxhash_rust::xxh3::xxh3_64(merchant_id.as_bytes()) % SHARDS as u64) as u16
}

/// The shard a credential (an API key, a Legacy client id) routes to: a
/// node that receives a request finds its owner from the credential alone,
/// because credentials are made to fall in their merchant's shard
/// (`in_shard`).
pub fn shard_of_credential(credential: &str) -> u16 {
    (xxhash_rust::xxh3::xxh3_64(credential.as_bytes()) % SHARDS as u64) as u16
}

/// The first value `make` returns that `shard_of_value` puts in `shard`, or
/// the first value at all without a shard (one node). One value in
/// `SHARDS` falls in a given shard, so this takes 64 tries on average.
pub fn in_shard<T>(shard: Option<u16>, mut make: impl FnMut() -> T, shard_of_value: impl Fn(&T) -> u16) -> T {
    loop {
        let value = make();
        if shard.is_none_or(|shard| shard_of_value(&value) == shard) {
            return value;
        }
    }
}

/// A new random id in `shard` (any id without one): resources a request
/// may name without a credential (orders on the checkout page,
/// disbursements an operator approves) carry their shard in their id.
pub fn new_id_in(shard: Option<u16>) -> Uuid {
    in_shard(shard, Uuid::new_v4, |id| shard_of(*id))
}

/// What went wrong talking to the cluster's database.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The database could not be reached or refused a statement.
    #[error("cluster database: {0}")]
    Database(String),
    /// The schema could not be brought up to date.
    #[error("cluster schema migration failed: {0}")]
    Migration(String),
    /// An append named shards whose epoch is no longer the writer's: another
    /// node has taken them, and nothing of the batch was written.
    #[error("shards {0:?} are owned under a newer epoch: nothing was written")]
    Fenced(Vec<u16>),
    /// A database call took longer than it may.
    #[error("cluster database did not answer within {0:?}")]
    Timeout(Duration),
}

impl From<tokio_postgres::Error> for ClusterError {
    fn from(error: tokio_postgres::Error) -> Self {
        // The driver's own message is terse ("error connecting to server"):
        // the cause beneath it says what to fix.
        match std::error::Error::source(&error) {
            Some(cause) => ClusterError::Database(format!("{error}: {cause}")),
            None => ClusterError::Database(error.to_string()),
        }
    }
}

impl From<deadpool_postgres::PoolError> for ClusterError {
    fn from(error: deadpool_postgres::PoolError) -> Self {
        ClusterError::Database(error.to_string())
    }
}
