//! The catalog every node reads (merchants, credentials, vendors, users):
//! entries by kind and id in the database, each write under the next
//! version, and a follower per node that applies every change in version
//! order, woken by `NOTIFY` at once and polling besides, so a change
//! reaches every node within `POLL_EVERY` even when a notification is lost.
//!
//! Writes take one advisory lock for their transaction, so versions commit
//! in the order they are taken: a follower that has applied version `v`
//! has missed nothing below it.

use super::{ClusterError, Database};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

/// The channel writes notify on.
const CHANNEL: &str = "paygate_catalog";
/// The advisory lock every catalog write holds for its transaction.
const WRITE_LOCK: i64 = 0x7061_7967_6174_6532; // "paygate2"
/// How often a follower reads the changes whether or not it was notified.
pub const POLL_EVERY: Duration = Duration::from_millis(500);
/// Changes read at a time.
const PAGE: i64 = 500;

/// One catalog entry as of its version; `body` is `None` once deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogEntry {
    pub kind: String,
    pub id: String,
    pub version: i64,
    pub body: Option<Vec<u8>>,
}

/// The catalog's statements.
#[derive(Clone)]
pub struct SharedCatalog {
    database: Database,
}

impl SharedCatalog {
    pub fn new(database: Database) -> SharedCatalog {
        SharedCatalog { database }
    }

    /// Writes `body` as entry `kind`/`id` (`None`: deletes it) under the
    /// next version, unless `keep_live` and a live entry stands there:
    /// `Ok(version)` when written, else `Err` with the standing body.
    async fn write_entry(
        &self,
        kind: &str,
        id: &str,
        body: Option<&[u8]>,
        keep_live: bool,
    ) -> Result<Result<i64, Vec<u8>>, ClusterError> {
        let mut client = self.database.client().await?;
        let transaction = client.transaction().await?;
        transaction
            .execute("SELECT pg_advisory_xact_lock($1)", &[&WRITE_LOCK])
            .await?;
        if keep_live {
            let standing = transaction
                .query_opt(
                    "SELECT body FROM catalog_entries WHERE kind = $1 AND id = $2 AND body IS NOT NULL",
                    &[&kind, &id],
                )
                .await?;
            if let Some(row) = standing {
                return Ok(Err(row.get(0)));
            }
        }
        let row = transaction
            .query_one(
                "INSERT INTO catalog_entries (kind, id, version, body)
                 VALUES ($1, $2, nextval('catalog_versions'), $3)
                 ON CONFLICT (kind, id) DO UPDATE SET version = EXCLUDED.version, body = EXCLUDED.body
                 RETURNING version",
                &[&kind, &id, &body],
            )
            .await?;
        let version: i64 = row.get(0);
        transaction
            .execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &version.to_string()])
            .await?;
        transaction.commit().await?;
        Ok(Ok(version))
    }

    /// Writes `body` as entry `kind`/`id` (`None`: deletes it); its version.
    async fn write(&self, kind: &str, id: &str, body: Option<&[u8]>) -> Result<i64, ClusterError> {
        Ok(self
            .write_entry(kind, id, body, false)
            .await?
            .expect("an unconditional write is written"))
    }

    /// Writes `body` as entry `kind`/`id` unless a live entry stands
    /// there: `None` when written, else the standing entry's body. Two
    /// nodes claiming one id at once: one writes, the other sees its body.
    pub async fn claim(&self, kind: &str, id: &str, body: &[u8]) -> Result<Option<Vec<u8>>, ClusterError> {
        Ok(self.write_entry(kind, id, Some(body), true).await?.err())
    }

    /// Writes entry `kind`/`id`; its version.
    pub async fn put(&self, kind: &str, id: &str, body: &[u8]) -> Result<i64, ClusterError> {
        self.write(kind, id, Some(body)).await
    }

    /// Deletes entry `kind`/`id`, leaving a tombstone followers see; its version.
    pub async fn delete(&self, kind: &str, id: &str) -> Result<i64, ClusterError> {
        self.write(kind, id, None).await
    }

    /// Entry `kind`/`id` as it stands, tombstone included.
    pub async fn get(&self, kind: &str, id: &str) -> Result<Option<CatalogEntry>, ClusterError> {
        let client = self.database.client().await?;
        let row = client
            .query_opt(
                "SELECT kind, id, version, body FROM catalog_entries WHERE kind = $1 AND id = $2",
                &[&kind, &id],
            )
            .await?;
        Ok(row.map(|row| entry(&row)))
    }

    /// Up to `limit` entries written after `version`, in version order.
    pub async fn changes_after(&self, version: i64, limit: i64) -> Result<Vec<CatalogEntry>, ClusterError> {
        let client = self.database.client().await?;
        let rows = client
            .query(
                "SELECT kind, id, version, body FROM catalog_entries
                 WHERE version > $1 ORDER BY version LIMIT $2",
                &[&version, &limit],
            )
            .await?;
        Ok(rows.iter().map(entry).collect())
    }

    /// Applies every change after `version` with `apply`, in order, until
    /// the follower is dropped.
    pub fn follow(&self, version: i64, apply: impl FnMut(CatalogEntry) + Send + 'static) -> CatalogFollower {
        let (applied, applied_through) = watch::channel(version);
        let task = tokio::spawn(follow(self.clone(), version, apply, applied));
        CatalogFollower { task, applied_through }
    }
}

fn entry(row: &tokio_postgres::Row) -> CatalogEntry {
    CatalogEntry {
        kind: row.get(0),
        id: row.get(1),
        version: row.get(2),
        body: row.get(3),
    }
}

/// A running follower; stops when dropped.
pub struct CatalogFollower {
    task: JoinHandle<()>,
    applied_through: watch::Receiver<i64>,
}

impl CatalogFollower {
    /// The version every change through which has been applied.
    pub fn applied_through(&self) -> i64 {
        *self.applied_through.borrow()
    }
}

impl Drop for CatalogFollower {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn follow(
    catalog: SharedCatalog,
    mut version: i64,
    mut apply: impl FnMut(CatalogEntry) + Send,
    applied: watch::Sender<i64>,
) {
    let (notify, mut notified) = mpsc::unbounded_channel();
    // The LISTEN connection, while it lasts; reopened by the polls after.
    let mut listening: Option<(tokio_postgres::Client, JoinHandle<()>)> = None;
    let mut poll = tokio::time::interval(POLL_EVERY);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        if listening.as_ref().is_none_or(|(client, _)| client.is_closed()) {
            listening = match catalog.database.listener(notify.clone()).await {
                Ok((client, driver)) => match client.batch_execute(&format!("LISTEN {CHANNEL}")).await {
                    Ok(()) => Some((client, driver)),
                    Err(_) => None,
                },
                Err(_) => None,
            };
        }
        loop {
            match catalog.changes_after(version, PAGE).await {
                Ok(changes) => {
                    let full = changes.len() as i64 == PAGE;
                    for change in changes {
                        version = change.version;
                        apply(change);
                    }
                    applied.send_replace(version);
                    if !full {
                        break;
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "reading catalog changes failed; trying again");
                    break;
                }
            }
        }
        tokio::select! {
            _ = poll.tick() => {}
            Some(_) = notified.recv() => {
                while notified.try_recv().is_ok() {}
            }
        }
    }
}
