//! The checkpointer, and whether the engine takes writes: checkpoints wait
//! for free space, a failed one stops writes until a restart, and writes
//! are refused up front while the journal's disk refuses them.
//!
//! Two failures, two answers:
//! - The journal's disk refuses a write (full, failing): the journal holds
//!   the records and retries until the disk takes them (`store/journal`),
//!   the engine refuses new writes meanwhile, and both recover by themselves.
//! - A checkpoint fails: sled 0.34 keeps the error of a failed log write
//!   for the life of the process, and after a failed fsync the page cache
//!   may have dropped pages a later fsync would not write again. No later
//!   checkpoint could be trusted, so none is tried, the journal keeps every
//!   segment, and writes are refused until a restart, which recovers from
//!   the last good checkpoint and the journal. To keep that rare, a
//!   checkpoint starts only with free space for what it writes
//!   (`limits::CHECKPOINT_FREE_BYTES_MIN`): short of it, only the journal
//!   grows, and it is the part that recovers by itself.

use crate::error::EngineError;
use crate::limits;
use crate::operations::Operations;
use std::sync::atomic::Ordering;

/// Logs how reopening sled after a checkpoint went (it is reopened so
/// that a start after a crash reads only what sled logged since). Returns
/// how many milliseconds readers of sled waited, if it reopened.
fn note_reopen(reopened: crate::store::SledReopen) -> Option<u64> {
    match reopened {
        Ok(Some(waited)) => {
            let waited_ms = waited.as_millis() as u64;
            tracing::info!(waited_ms, "state store reopened: a restart reads its log from here");
            Some(waited_ms)
        }
        Ok(None) => {
            tracing::debug!("state store not reopened: a handle stayed out; the next checkpoint tries again");
            None
        }
        Err(error) => {
            tracing::warn!(%error, "state store not reopened: its flush failed");
            None
        }
    }
}

impl Operations {
    /// Writes the overlay of durable changes to sled, fsyncs it and drops
    /// the journal segments it covers. Returns the first sequence not
    /// covered. After a failure no checkpoint runs again in this process
    /// and writes are refused (see the module docs).
    pub async fn checkpoint(&self) -> Result<u64, EngineError> {
        let _guard = self.core.checkpoint_lock().lock().await;
        if self.core.storage().state_store_failed() {
            return Err(EngineError::StorageUnavailable);
        }
        let store = self.core.store().clone();
        let journal = self.core.journal().clone();
        let journal_bytes = journal.stats().bytes.load(Ordering::Relaxed);
        // Dropping segments unlinks files and fsyncs the directory: tens of
        // milliseconds on a busy disk, so off the runtime's two workers too.
        let retention_cutoff_ms = self.core.webhook_retention_cutoff_ms();
        let reopen_due = self
            .core
            .storage()
            .sled_reopen_due(journal_bytes, self.core.sled_reopen_journal_bytes());
        let written = tokio::task::spawn_blocking(move || {
            let (covered, reopened) = if reopen_due {
                let (covered, reopened) = store.checkpoint_and_reopen_sled()?;
                (covered, note_reopen(reopened))
            } else {
                (store.checkpoint()?, None)
            };
            if let Some(cutoff_ms) = retention_cutoff_ms {
                // Only what a good checkpoint holds is swept; a failed sweep
                // drops nothing and the next checkpoint sweeps again.
                if let Err(error) = store.drop_webhooks_before(cutoff_ms) {
                    tracing::error!(%error, "dropping webhook events past retention failed");
                }
            }
            // Segments left behind are dropped by the next checkpoint.
            if let Err(error) = journal.drop_segments_below(covered) {
                tracing::warn!(%error, "dropping journal segments a checkpoint covers failed");
            }
            Ok::<(u64, Option<u64>), crate::store::StoreError>((covered, reopened))
        })
        .await
        .map_err(|_| EngineError::ShuttingDown)?;
        match written {
            Ok((covered, reopened)) => {
                let health = self.core.storage();
                health
                    .checkpointed_journal_bytes
                    .store(journal_bytes, Ordering::Release);
                if let Some(waited_ms) = reopened {
                    health.note_sled_reopen(journal_bytes, waited_ms);
                }
                // Whatever recovery replayed is checkpointed now, if it was not already.
                self.core.store().allow_fresh_keys();
                Ok(covered)
            }
            Err(error) => {
                if !self.core.storage().state_store_failed.swap(true, Ordering::AcqRel) {
                    tracing::error!(
                        %error,
                        "checkpoint failed: the state store cannot be trusted with another checkpoint in this \
                         process, so writes are refused until paygate is restarted (reads go on; the journal \
                         keeps every acknowledged write and the restart recovers from it)"
                    );
                }
                Err(error.into())
            }
        }
    }

    /// Whether a checkpoint may start now: the journal's disk takes writes,
    /// no checkpoint failed, and the data dir's filesystem has room for
    /// what it writes. A wait for room is logged once, and its end.
    pub(crate) fn checkpoint_has_room(&self) -> bool {
        let health = self.core.storage();
        if health.state_store_failed() || !self.core.journal().is_writable() {
            return false;
        }
        let pending = self
            .core
            .journal()
            .stats()
            .bytes
            .load(Ordering::Relaxed)
            .saturating_sub(health.checkpointed_journal_bytes.load(Ordering::Acquire));
        let wanted = limits::CHECKPOINT_FREE_BYTES_MIN
            .max(pending.saturating_mul(limits::CHECKPOINT_FREE_BYTES_PER_JOURNAL_BYTE));
        let free = match fs2::available_space(self.core.data_dir()) {
            Ok(free) => free,
            Err(error) => {
                // Without the figure, the checkpoint goes ahead as it always did.
                tracing::warn!(%error, "free space of the data dir unknown");
                return true;
            }
        };
        let room = free >= wanted;
        let was_postponed = health.checkpoint_postponed.swap(!room, Ordering::AcqRel);
        if !room && !was_postponed {
            tracing::warn!(
                free_bytes = free,
                wanted_bytes = wanted,
                "checkpoints wait for free space on the data dir; meanwhile the journal keeps every write"
            );
        } else if room && was_postponed {
            tracing::info!(free_bytes = free, "free space is back; checkpoints go on");
        }
        room
    }
}

/// The last record a checkpoint covers: it covers those below its marker.
fn last_covered(covers_below: u64) -> u64 {
    covers_below.saturating_sub(1)
}

/// Shard snapshots: what a checkpoint left, exported whole.
impl Operations {
    /// The state as of the last checkpoint and the last journal sequence
    /// it covers, for a shard snapshot; call once the engine is shut down,
    /// so nothing was written since its final checkpoint.
    pub fn export_state(&self) -> Result<(u64, Vec<u8>), EngineError> {
        let store = self.core.store();
        Ok((last_covered(store.checkpoint_seq()?), store.export_state()?))
    }

    /// A checkpoint, then the state it left and the last journal sequence
    /// it covers, for a shard snapshot of a running engine. Read under the
    /// checkpoint lock, so no checkpoint moves the state meanwhile; records
    /// applied to sled directly since (merchants, the catalog) replay over
    /// it as they do over any checkpoint.
    pub async fn snapshot_state(&self) -> Result<(u64, Vec<u8>), EngineError> {
        self.checkpoint().await?;
        let _guard = self.core.checkpoint_lock().lock().await;
        let store = self.core.store().clone();
        tokio::task::spawn_blocking(move || {
            Ok::<_, EngineError>((last_covered(store.checkpoint_seq()?), store.export_state()?))
        })
        .await
        .map_err(|_| EngineError::ShuttingDown)?
    }

    /// The last journal sequence number made durable.
    pub fn journal_seq(&self) -> u64 {
        self.core.journal().durable_seq()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::clock::SystemClock;
    use crate::domain::SettlementType;
    use crate::{Engine, EngineConfig, EngineError, MinorUnits, NewMerchant};
    use std::path::Path;
    use std::sync::Arc;
    use std::time::{Duration, Instant};
    use uuid::Uuid;

    /// With sled reopened after every checkpoint, writes and reads go on
    /// through reopens, each is counted, and all of it is there after a
    /// restart without the final checkpoint.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_checkpointer_reopens_sled_and_nothing_is_lost() {
        let dir = tempfile::tempdir().unwrap();
        let config = EngineConfig {
            sled_reopen_journal_bytes: 1,
            // Only the test's own checkpoints, one a round.
            checkpoint_interval: Duration::from_secs(3600),
            ..EngineConfig::new(dir.path())
        };
        let engine = Engine::open(config, Arc::new(SystemClock)).await.unwrap();
        let merchant_id = funded_merchant(&engine, "Toko Disk", 1_000).await;
        for round in 1..=3 {
            for _ in 0..10 {
                credit(&engine, merchant_id, 1).await.unwrap();
            }
            // The last reopen's spacing (a hundred times its wait) first.
            let not_before = *engine.core().storage().sled_reopen_not_before.lock().unwrap();
            if let Some(not_before) = not_before {
                tokio::time::sleep(not_before.saturating_duration_since(Instant::now())).await;
            }
            engine.operations().checkpoint().await.unwrap();
            assert_eq!(balance(&engine, merchant_id).await, 1_000 + 10 * round);
            assert_eq!(
                engine
                    .core()
                    .storage()
                    .sled_reopens
                    .load(std::sync::atomic::Ordering::Relaxed),
                round as u64,
                "one reopen a checkpoint"
            );
        }
        assert!(engine
            .operations()
            .metrics_text()
            .contains("paygate_state_store_reopens_total 3\n"));
        credit(&engine, merchant_id, 5).await.unwrap();
        engine.halt_without_checkpoint().await;
        drop(engine);
        let engine = open(dir.path()).await;
        assert_eq!(balance(&engine, merchant_id).await, 1_035);
        let entries = engine.core().store().entries_after(&merchant_id, 0).unwrap();
        assert_eq!(entries.len(), 32, "the funding, 30 credits and the last");
    }

    /// What a crash left to replay is checkpointed by the checkpointer's
    /// first turn once the engine is open, not an interval later; a crash
    /// before that turn replays it again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_crash_replay_is_checkpointed_right_after_the_engine_opens() {
        let dir = tempfile::tempdir().unwrap();
        let config = || EngineConfig {
            checkpoint_interval: Duration::from_secs(3600),
            ..EngineConfig::new(dir.path())
        };
        let engine = Engine::open(config(), Arc::new(SystemClock)).await.unwrap();
        let merchant_id = funded_merchant(&engine, "Toko Crash", 1_000).await;
        let written = engine.operations().journal_seq();
        assert!(engine.core().store().checkpoint_seq().unwrap() <= written);
        engine.halt_without_checkpoint().await;
        drop(engine);

        let engine = Engine::open(config(), Arc::new(SystemClock)).await.unwrap();
        assert_eq!(balance(&engine, merchant_id).await, 1_000);
        let deadline = Instant::now() + Duration::from_secs(20);
        while engine.core().store().checkpoint_seq().unwrap() <= written {
            assert!(
                Instant::now() < deadline,
                "the replayed records were never checkpointed"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        credit(&engine, merchant_id, 5).await.unwrap();
        engine.halt_without_checkpoint().await;
        drop(engine);
        let engine = open(dir.path()).await;
        assert_eq!(balance(&engine, merchant_id).await, 1_005);
    }

    async fn open(dir: &Path) -> Engine {
        Engine::open(EngineConfig::new(dir), Arc::new(SystemClock))
            .await
            .expect("engine opens")
    }

    /// A WALLET merchant named `name` with `funding` in its wallet (the
    /// shards' tests make theirs so too).
    pub(crate) async fn funded_merchant(engine: &Engine, name: &str, funding: i64) -> Uuid {
        let (merchant, _) = engine
            .merchants()
            .create_merchant(NewMerchant::new(name, SettlementType::Wallet))
            .await
            .unwrap();
        engine
            .merchants()
            .credit_wallet(merchant.id, MinorUnits::new(funding), "funding", None)
            .await
            .unwrap();
        merchant.id
    }

    async fn balance(engine: &Engine, merchant_id: Uuid) -> i64 {
        engine.merchants().wallet_balance(merchant_id).await.unwrap().get()
    }

    async fn credit(engine: &Engine, merchant_id: Uuid, amount: i64) -> Result<i64, EngineError> {
        let receipt = engine
            .merchants()
            .credit_wallet(merchant_id, MinorUnits::new(amount), "credit", None)
            .await?;
        Ok(receipt.wallet_balance.get())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn while_the_journal_is_refused_writes_are_refused_reads_go_on_and_it_recovers_by_itself() {
        let dir = tempfile::tempdir().unwrap();
        let engine = open(dir.path()).await;
        let merchant_id = funded_merchant(&engine, "Toko Disk", 1_000).await;

        engine.core().journal().refuse_writes(true);
        // Past the gate before the disk refused: held, unacknowledged.
        let held = tokio::spawn({
            let engine = engine.clone();
            async move { credit(&engine, merchant_id, 500).await }
        });
        let deadline = Instant::now() + Duration::from_secs(5);
        while engine.operations().storage_writable() {
            assert!(Instant::now() < deadline, "the journal never went down");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(matches!(
            credit(&engine, merchant_id, 1).await,
            Err(EngineError::StorageUnavailable)
        ));
        assert_eq!(
            balance(&engine, merchant_id).await,
            1_000,
            "the held credit is not shown"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!held.is_finished(), "the held credit was acknowledged");
        assert!(
            !engine.operations().checkpoint_has_room(),
            "no checkpoint while the journal is down"
        );

        engine.core().journal().refuse_writes(false);
        assert_eq!(held.await.unwrap().unwrap(), 1_500);
        assert!(engine.operations().storage_writable());
        assert_eq!(credit(&engine, merchant_id, 1).await.unwrap(), 1_501);
        engine.halt_without_checkpoint().await;
        drop(engine);

        let engine = open(dir.path()).await;
        assert_eq!(balance(&engine, merchant_id).await, 1_501);
        engine.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_checkpoint_refuses_writes_until_a_restart_and_reads_go_on() {
        let dir = tempfile::tempdir().unwrap();
        let engine = open(dir.path()).await;
        let merchant_id = funded_merchant(&engine, "Toko Disk", 1_000).await;

        engine.core().store().fail_checkpoints_after(0);
        assert!(engine.operations().checkpoint().await.is_err());
        assert!(!engine.operations().storage_writable());
        assert!(matches!(
            credit(&engine, merchant_id, 1).await,
            Err(EngineError::StorageUnavailable)
        ));
        assert_eq!(balance(&engine, merchant_id).await, 1_000);
        assert!(
            !engine.operations().checkpoint_has_room(),
            "no checkpoint is tried again"
        );
        assert!(matches!(
            engine.operations().checkpoint().await,
            Err(EngineError::StorageUnavailable)
        ));
        engine.halt_without_checkpoint().await;
        drop(engine);

        // The restart recovers from the last good checkpoint and the journal.
        let engine = open(dir.path()).await;
        assert!(engine.operations().storage_writable());
        assert_eq!(balance(&engine, merchant_id).await, 1_000);
        assert_eq!(credit(&engine, merchant_id, 1).await.unwrap(), 1_001);
        engine.shutdown().await;
    }
}
