//! A cluster node's engines: one per shard it holds, each recovering from
//! and writing to its shard's journal of record (`EngineConfig::shard_journal`),
//! opened when the lease keeper takes the shard and shut down when it
//! releases or loses it. Merchants are found by their shard.
//!
//! A shard's engine starts on an empty directory every time it is taken:
//! what this node held of it before may be stale, and the database has
//! everything: the shard's latest snapshot and its records after it. A
//! shard released (the node's share shrank, or it stops) leaves a snapshot
//! of its final checkpoint, so the next owner replays nothing before it;
//! a running shard's engine leaves one now and then (`SnapshotPolicy`), so a
//! node that dies leaves its successor a short replay.

use crate::clock::SharedClock;
use crate::cluster::{shard_of, OwnerFuture, ShardOwner, ShardRecords, SharedCatalog};
use crate::shard_catalog::CatalogSync;
use crate::{Engine, EngineConfig, ShardJournal};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// Builds the configuration of a shard's engine for its directory.
pub type ShardConfig = Arc<dyn Fn(&Path) -> EngineConfig + Send + Sync>;

/// When a running shard's engine leaves a snapshot: looked at every
/// `every`, it does once `records` records were written since its last, or
/// once any was and `idle_after` has passed since. A snapshot holds the
/// whole state, so it is not taken for every few records.
#[derive(Clone, Copy, Debug)]
pub struct SnapshotPolicy {
    pub every: Duration,
    pub records: u64,
    pub idle_after: Duration,
}

impl Default for SnapshotPolicy {
    fn default() -> Self {
        SnapshotPolicy {
            every: Duration::from_secs(30),
            records: 50_000,
            idle_after: Duration::from_secs(600),
        }
    }
}

/// Where a shard's snapshots stand on this node.
#[derive(Clone, Copy)]
struct LastSnapshot {
    seq: u64,
    at: Instant,
}

/// How often a node's shards catch up with the platform catalog besides
/// when it changes.
const CATALOG_RETRY_EVERY: Duration = Duration::from_secs(5);

/// The engines of the shards this node holds.
pub struct ShardHost {
    /// Each shard's engine works in `<dir>/shard-NN`.
    dir: PathBuf,
    records: ShardRecords,
    config: ShardConfig,
    clock: SharedClock,
    /// Each held shard's engine and the lease epoch it writes under.
    engines: RwLock<BTreeMap<u16, (i64, Engine)>>,
    /// The last snapshot this node wrote or opened from, per held shard.
    snapshots: Mutex<BTreeMap<u16, LastSnapshot>>,
    /// The platform catalog every shard keeps the same, in a cluster node.
    catalog: Option<Arc<CatalogSync>>,
}

impl ShardHost {
    /// A host keeping its shards' engines under `dir`, writing through
    /// `records` (this node's), each configured by `config`.
    pub fn new(dir: impl Into<PathBuf>, records: ShardRecords, config: ShardConfig, clock: SharedClock) -> ShardHost {
        ShardHost {
            dir: dir.into(),
            records,
            config,
            clock,
            engines: RwLock::new(BTreeMap::new()),
            snapshots: Mutex::new(BTreeMap::new()),
            catalog: None,
        }
    }

    /// The same host, keeping the platform catalog of its shards' engines
    /// the same as every other shard's through `catalog`.
    pub fn with_shared_catalog(self, catalog: SharedCatalog) -> ShardHost {
        ShardHost {
            catalog: Some(CatalogSync::new(catalog)),
            ..self
        }
    }

    /// Applies the platform catalog's changes to every held shard as they
    /// come, until the host is dropped.
    pub fn start_catalog_follower(self: &Arc<Self>) -> Option<tokio::task::JoinHandle<()>> {
        let sync = self.catalog.clone()?;
        let host = Arc::downgrade(self);
        let (wake, mut woken) = tokio::sync::mpsc::unbounded_channel();
        let follower = sync.follower(move || {
            let _ = wake.send(());
        });
        Some(tokio::spawn(async move {
            let _follower = follower;
            // Besides every change, now and then: a shard whose catch-up
            // failed (the database away) is not left behind until the next.
            let mut retry = tokio::time::interval(CATALOG_RETRY_EVERY);
            loop {
                tokio::select! {
                    woke = woken.recv() => if woke.is_none() { return },
                    _ = retry.tick() => {}
                }
                while woken.try_recv().is_ok() {}
                let Some(host) = host.upgrade() else { return };
                let mut catch_ups = tokio::task::JoinSet::new();
                for (shard, (_, engine)) in host.held() {
                    let sync = sync.clone();
                    catch_ups.spawn(async move { sync.catch_up(shard, engine.catalog()).await });
                }
                drop(host);
                while let Some(done) = catch_ups.join_next().await {
                    if let Ok(Err(error)) = done {
                        tracing::warn!(%error, "a platform catalog change is not applied yet; tried again on the next");
                    }
                }
            }
        }))
    }

    /// Leaves snapshots of the running shards' engines under `policy`,
    /// until the host is dropped.
    pub fn start_snapshots(self: &Arc<Self>, policy: SnapshotPolicy) -> tokio::task::JoinHandle<()> {
        let host = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(policy.every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(host) = host.upgrade() else { return };
                host.snapshot_due(policy).await;
            }
        })
    }

    /// Snapshots every held shard whose policy says so.
    async fn snapshot_due(&self, policy: SnapshotPolicy) {
        let held: Vec<(u16, i64, Engine)> = {
            let engines = self.engines.read().expect("engines lock");
            engines
                .iter()
                .map(|(&shard, (epoch, engine))| (shard, *epoch, engine.clone()))
                .collect()
        };
        for (shard, epoch, engine) in held {
            let last = self.snapshots.lock().expect("snapshots lock").get(&shard).copied();
            let written_since = engine
                .operations()
                .journal_seq()
                .saturating_sub(last.map_or(0, |last| last.seq));
            let idle = last.is_none_or(|last| last.at.elapsed() >= policy.idle_after);
            if written_since == 0 || (written_since < policy.records && !idle) {
                continue;
            }
            if let Some(seq) = self
                .write_snapshot(shard, epoch, engine.operations().snapshot_state().await)
                .await
            {
                self.snapshots.lock().expect("snapshots lock").insert(
                    shard,
                    LastSnapshot {
                        seq,
                        at: Instant::now(),
                    },
                );
            }
        }
    }

    /// The engine of `shard`, if this node holds it now.
    pub fn engine(&self, shard: u16) -> Option<Engine> {
        self.engines
            .read()
            .expect("engines lock")
            .get(&shard)
            .map(|(_, engine)| engine.clone())
    }

    /// Every held shard's lease epoch and engine.
    pub fn held(&self) -> BTreeMap<u16, (i64, Engine)> {
        self.engines.read().expect("engines lock").clone()
    }

    /// The lease epoch `shard`'s engine writes under, if this node holds it now.
    pub fn epoch(&self, shard: u16) -> Option<i64> {
        self.engines
            .read()
            .expect("engines lock")
            .get(&shard)
            .map(|(epoch, _)| *epoch)
    }

    /// The engine holding `merchant_id`, if this node holds its shard now.
    pub fn engine_for(&self, merchant_id: Uuid) -> Option<Engine> {
        self.engine(shard_of(merchant_id))
    }

    /// The shards this node has an engine for.
    pub fn shards(&self) -> Vec<u16> {
        self.engines.read().expect("engines lock").keys().copied().collect()
    }

    /// Shuts every engine down (the keeper released or lost their shards
    /// first, or the node is going away).
    pub async fn shutdown(&self) {
        let engines = std::mem::take(&mut *self.engines.write().expect("engines lock"));
        for (_, engine) in engines.into_values() {
            engine.shutdown().await;
        }
    }

    fn shard_dir(&self, shard: u16) -> PathBuf {
        self.dir.join(format!("shard-{shard:02}"))
    }

    async fn open(&self, shard: u16, epoch: i64) -> Result<(), String> {
        let dir = self.shard_dir(shard);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|error| format!("clearing {}: {error}", dir.display()))?;
        }
        let mut config = (self.config)(&dir);
        config.shard_journal = Some(ShardJournal {
            records: self.records.clone(),
            shard,
            epoch,
        });
        config.catalog_publisher = self.catalog.as_ref().map(CatalogSync::publisher);
        let engine = Engine::open(config, self.clock.clone())
            .await
            .map_err(|error| error.to_string())?;
        // A shard serves only once its platform catalog is the cluster's.
        if let Some(sync) = &self.catalog {
            sync.forget(shard);
            if let Err(error) = sync.catch_up(shard, engine.catalog()).await {
                engine.shutdown().await;
                return Err(format!("catching up with the platform catalog: {error}"));
            }
        }
        // What it opened from counts as its last snapshot.
        self.snapshots.lock().expect("snapshots lock").insert(
            shard,
            LastSnapshot {
                seq: engine.operations().journal_seq(),
                at: Instant::now(),
            },
        );
        let previous = self
            .engines
            .write()
            .expect("engines lock")
            .insert(shard, (epoch, engine));
        if let Some((_, previous)) = previous {
            previous.shutdown().await;
        }
        Ok(())
    }

    fn remove(&self, shard: u16) -> Option<(i64, Engine)> {
        self.snapshots.lock().expect("snapshots lock").remove(&shard);
        self.engines.write().expect("engines lock").remove(&shard)
    }

    /// Shuts `shard`'s engine down and writes the snapshot of its final
    /// checkpoint.
    async fn release_with_snapshot(&self, shard: u16) {
        let Some((epoch, engine)) = self.remove(shard) else {
            return;
        };
        engine.shutdown().await;
        self.write_snapshot(shard, epoch, engine.operations().export_state())
            .await;
    }

    /// Writes an engine's exported state as `shard`'s snapshot under
    /// `epoch`; the last record it covers, or `None` (logged) when it was
    /// not written, which only costs the next owner a longer replay.
    async fn write_snapshot(
        &self,
        shard: u16,
        epoch: i64,
        exported: Result<(u64, Vec<u8>), crate::EngineError>,
    ) -> Option<u64> {
        let written = match exported {
            Ok((seq, state)) => self
                .records
                .write_snapshot(shard, epoch, seq as i64, &state)
                .await
                .map(|()| (seq, state.len()))
                .map_err(|error| error.to_string()),
            Err(error) => Err(error.to_string()),
        };
        match written {
            Ok((seq, bytes)) => {
                tracing::info!(shard, epoch, seq, bytes, "shard snapshot written");
                Some(seq)
            }
            Err(error) => {
                tracing::warn!(shard, epoch, %error, "no shard snapshot; the next owner replays more");
                None
            }
        }
    }
}

impl ShardOwner for ShardHost {
    fn take(&self, shard: u16, epoch: i64) -> OwnerFuture<'_, Result<(), String>> {
        Box::pin(self.open(shard, epoch))
    }

    fn release(&self, shard: u16) -> OwnerFuture<'_, ()> {
        Box::pin(self.release_with_snapshot(shard))
    }

    fn lost(&self, shard: u16) {
        // Out of the map at once, so nothing more is routed to it; its
        // journal is fenced or about to be, so it can write nothing more.
        if let Some((_, engine)) = self.remove(shard) {
            tokio::spawn(async move { engine.shutdown().await });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoints::tests::funded_merchant;
    use crate::clock::SystemClock;
    use crate::cluster::test_postgres::TestPostgres;
    use crate::cluster::{Database, KeeperHandle, Leases};
    use crate::MinorUnits;
    use std::time::{Duration, Instant};

    struct Node {
        host: Arc<ShardHost>,
        keeper: KeeperHandle,
    }

    fn start_node(database: &Database, name: &str, dir: &Path) -> Node {
        let config: ShardConfig = Arc::new(|dir: &Path| EngineConfig::new(dir));
        let host = Arc::new(ShardHost::new(
            dir,
            ShardRecords::new(database.clone(), name),
            config,
            Arc::new(SystemClock),
        ));
        let keeper = KeeperHandle::start(
            Leases::new(database.clone(), name),
            format!("http://{name}.test"),
            host.clone(),
        );
        Node { host, keeper }
    }

    async fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) {
        let started = Instant::now();
        while !done() {
            assert!(started.elapsed() < limit, "not done within {limit:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn balance(host: &ShardHost, merchant_id: Uuid) -> i64 {
        let engine = host.engine_for(merchant_id).expect("the shard's engine is here");
        engine.merchants().wallet_balance(merchant_id).await.unwrap().get()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_catalog_change_reaches_every_shard_and_a_shard_taken_later_catches_up() {
        let Some(pg) = TestPostgres::start() else { return };
        let database = Database::connect(&pg.url()).await.unwrap();
        let config: ShardConfig = Arc::new(|dir: &Path| EngineConfig::new(dir));
        let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let host = |dir: &Path, name: &str| {
            let records = ShardRecords::new(database.clone(), name);
            let host = ShardHost::new(dir, records, config.clone(), Arc::new(SystemClock));
            Arc::new(host.with_shared_catalog(SharedCatalog::new(database.clone())))
        };
        let (a, b) = (host(dir_a.path(), "a"), host(dir_b.path(), "b"));
        let _following = (a.start_catalog_follower(), b.start_catalog_follower());
        assert_eq!(
            Leases::new(database.clone(), "a").acquire(&[1]).await.unwrap(),
            vec![(1, 1)]
        );
        assert_eq!(
            Leases::new(database.clone(), "b").acquire(&[2, 3]).await.unwrap(),
            vec![(2, 1), (3, 1)]
        );
        a.take(1, 1).await.unwrap();
        b.take(2, 1).await.unwrap();

        // Made through shard 1: there at once, on the other node's shard
        // within a second.
        let one = a.engine(1).unwrap();
        assert!(one.catalog().bank("BCA").unwrap().is_enabled);
        one.catalog().save_bank("BCA", false, None).await.unwrap();
        assert!(!one.catalog().bank("BCA").unwrap().is_enabled);
        let two = b.engine(2).unwrap();
        wait_until(Duration::from_secs(1), || {
            !two.catalog().bank("BCA").unwrap().is_enabled
        })
        .await;

        // Shard 3 opens seeded with the defaults and serves only once it has
        // caught up.
        b.take(3, 1).await.unwrap();
        assert!(!b.engine(3).unwrap().catalog().bank("BCA").unwrap().is_enabled);
        a.shutdown().await;
        b.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_running_shard_leaves_snapshots_so_a_dead_nodes_successor_replays_only_what_followed() {
        let Some(pg) = TestPostgres::start() else { return };
        let database = Database::connect(&pg.url()).await.unwrap();
        let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let a = start_node(&database, "node-a", dir_a.path());
        let snapshots = a.host.start_snapshots(SnapshotPolicy {
            every: Duration::from_millis(200),
            records: 3,
            idle_after: Duration::from_secs(3600),
        });
        wait_until(Duration::from_secs(60), || a.host.shards().len() == 64).await;
        let engine = a.host.engine(5).unwrap();
        let merchant = funded_merchant(&engine, "busy", 100).await;
        for n in 1..=5 {
            engine
                .merchants()
                .credit_wallet(merchant, MinorUnits::new(n), "more", None)
                .await
                .unwrap();
        }
        let records = ShardRecords::new(database.clone(), "reader");
        let written = engine.operations().journal_seq() as i64;
        let started = Instant::now();
        loop {
            if let Some((seq, _)) = records.latest_snapshot(5).await.unwrap() {
                if seq >= written - 2 {
                    break;
                }
            }
            assert!(started.elapsed() < Duration::from_secs(10), "no snapshot of shard 5");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Shards with nothing written leave none.
        assert!(records.latest_snapshot(6).await.unwrap().is_none());
        engine
            .merchants()
            .credit_wallet(merchant, MinorUnits::new(1_000), "after the snapshot", None)
            .await
            .unwrap();

        // a dies without releasing anything; b takes every shard.
        snapshots.abort();
        a.keeper.abandon().await;
        a.host.shutdown().await;
        let b = start_node(&database, "node-b", dir_b.path());
        wait_until(Duration::from_secs(30), || b.host.shards().len() == 64).await;
        assert_eq!(balance(&b.host, merchant).await, 100 + 15 + 1_000);
        b.keeper.shutdown().await;
        b.host.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn nodes_share_the_shards_and_a_survivor_serves_a_dead_nodes_merchants_with_all_they_had() {
        let Some(pg) = TestPostgres::start() else { return };
        let database = Database::connect(&pg.url()).await.unwrap();
        let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let a = start_node(&database, "node-a", dir_a.path());
        wait_until(Duration::from_secs(60), || a.host.shards().len() == 64).await;

        // Merchants in shards 2 (stays with a) and 3 (moves to b): each id
        // falls in the shard of the engine that made it.
        let even = funded_merchant(&a.host.engine(2).unwrap(), "even", 1_000).await;
        let odd = funded_merchant(&a.host.engine(3).unwrap(), "odd", 2_000).await;
        assert_eq!((shard_of(even), shard_of(odd)), (2, 3));

        let b = start_node(&database, "node-b", dir_b.path());
        wait_until(Duration::from_secs(60), || {
            a.host.shards().len() == 32 && b.host.shards().len() == 32
        })
        .await;
        assert!(a.host.engine_for(odd).is_none(), "a released the odd shards");
        // Each release left a snapshot, and b replayed nothing before it.
        let records = ShardRecords::new(database.clone(), "reader");
        let (snapshot_seq, _) = records.latest_snapshot(3).await.unwrap().expect("shard 3's snapshot");
        assert!(snapshot_seq >= 2, "the merchant and its credit are in it");
        assert!(records
            .read_after(3, 0, 10)
            .await
            .unwrap()
            .iter()
            .all(|r| r.seq > snapshot_seq));
        assert!(records.latest_snapshot(2).await.unwrap().is_none(), "a kept shard 2");
        assert_eq!(balance(&b.host, odd).await, 2_000, "b recovered what a wrote");
        b.host
            .engine_for(odd)
            .unwrap()
            .merchants()
            .credit_wallet(odd, MinorUnits::new(5), "written on b", None)
            .await
            .unwrap();

        // b dies: its leases run out, and a takes its shards back with
        // everything b acknowledged.
        b.keeper.abandon().await;
        b.host.shutdown().await;
        wait_until(Duration::from_secs(30), || a.host.shards().len() == 64).await;
        assert_eq!(balance(&a.host, odd).await, 2_005);
        assert_eq!(balance(&a.host, even).await, 1_000);
        let engine = a.host.engine_for(odd).unwrap();
        assert!(engine.merchants().verify_ledger().await.unwrap().balanced);
        a.keeper.shutdown().await;
        a.host.shutdown().await;
    }
}
