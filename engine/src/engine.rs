//! `Engine`: opens storage, recovers, wires the shared core and starts the
//! background work, then hands out the handles the API calls by domain:
//! `orders()`, `disbursements()`, `merchants()`, `catalog()`, `webhooks()`
//! and `operations()`. It is the one place that knows them all; none of them
//! knows it.

use crate::actors::{ActorRegistry, CreatedDisbursements, MerchantActorSettings, MerchantHandle};
use crate::catalog::PlatformCatalog;
use crate::clock::SharedClock;
use crate::core::{Core, PublishCatalog, STATE_DIR};
use crate::disbursements::actor::DisbursementMsg;
use crate::disbursements::context::PayoutContext;
use crate::disbursements::host::DisbursementHost;
use crate::disbursements::Disbursements;
use crate::error::EngineError;
use crate::limits;
use crate::merchants::Merchants;
use crate::operations::Operations;
use crate::orders::actor::OrderContext;
use crate::orders::Orders;
use crate::storage_health::StorageHealth;
use crate::store::journal::{self, Journal};
use crate::store::{Store, StoreError};
use crate::timers::{Timers, Wake, WakeSink};
use crate::vendor::PayoutVendor;
use crate::webhooks::Webhooks;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// Where and how the engine keeps its data.
#[derive(Clone)]
pub struct EngineConfig {
    /// Holds `journal/` and `state/`.
    pub data_dir: PathBuf,
    /// How often to checkpoint.
    pub checkpoint_interval: Duration,
    /// Actors with no message for this long stop (and are rebuilt on demand).
    pub actor_idle_timeout: Duration,
    /// Idempotency keys a merchant actor knows are new from memory before it
    /// looks every key up in storage (`limits::IDEMPOTENCY_KEYS_IN_MEMORY_MAX`).
    pub idempotency_keys_in_memory: usize,
    /// The built-in payout vendor (the sandbox's, in sandbox mode): where
    /// disbursements go when their organization has no payout route
    /// configured, and a name routes may list. None in live mode.
    pub payout_vendor: Option<Arc<dyn PayoutVendor>>,
    /// Multiplier of the payout inquiry schedule (tests shorten it).
    pub vendor_retry_scale: f64,
    /// Sandbox mode: the built-in sandbox payment vendor exists (the default
    /// for every organization) and settles refunds after this long.
    pub sandbox_refund_delay: Option<Duration>,
    /// Sandbox mode: notify URLs may name loopback and private hosts.
    pub allow_private_notify_urls: bool,
    /// Take up the work in flight at open (payouts, account checks, refunds,
    /// expiries, settlements) and keep doing it. Off for an offline check
    /// (`paygate verify`), which must move nothing: recovery only.
    pub resume_work: bool,
    /// Disbursements not yet final at most; then creation is `Busy`.
    pub disbursements_open_max: usize,
    /// Order actors live at most; then work needing a new one is `Busy`.
    pub order_actors_live_max: usize,
    /// Webhook events delivered (or given up) and delivery attempts are
    /// kept this long, then dropped at checkpoints.
    pub webhook_retention: Duration,
    /// Journal bytes after which the checkpointer reopens sled
    /// (`limits::SLED_REOPEN_JOURNAL_BYTES`).
    pub sled_reopen_journal_bytes: u64,
    /// In a cluster: the shard whose journal of record, in the cluster's
    /// database, this engine recovers from and writes to, instead of the
    /// journal files of `data_dir`.
    pub shard_journal: Option<ShardJournal>,
    /// In a cluster: where platform catalog changes go, so every shard
    /// keeps the same catalog (`shard_catalog`).
    pub catalog_publisher: Option<CatalogPublisher>,
}

/// Publishes a platform catalog change (an encoded catalog record) from
/// the engine it was made in (given as its catalog) to every shard,
/// returning once that engine has it, or why not.
pub type CatalogPublisher = Arc<
    dyn Fn(PlatformCatalog, Vec<u8>) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send>>
        + Send
        + Sync,
>;

/// A shard's journal of record an engine holds under a lease epoch.
#[derive(Clone)]
pub struct ShardJournal {
    pub records: crate::cluster::ShardRecords,
    pub shard: u16,
    pub epoch: i64,
}

impl EngineConfig {
    /// Defaults for `data_dir`.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        EngineConfig {
            data_dir: data_dir.into(),
            checkpoint_interval: limits::CHECKPOINT_INTERVAL,
            actor_idle_timeout: limits::ACTOR_IDLE_TIMEOUT,
            idempotency_keys_in_memory: limits::IDEMPOTENCY_KEYS_IN_MEMORY_MAX,
            payout_vendor: None,
            vendor_retry_scale: 1.0,
            sandbox_refund_delay: None,
            allow_private_notify_urls: false,
            resume_work: true,
            disbursements_open_max: limits::DISBURSEMENTS_OPEN_MAX,
            order_actors_live_max: limits::ORDER_ACTORS_LIVE_MAX,
            webhook_retention: limits::WEBHOOK_RETENTION,
            sled_reopen_journal_bytes: limits::SLED_REOPEN_JOURNAL_BYTES,
            shard_journal: None,
            catalog_publisher: None,
        }
    }
}

/// The engine; cheap to clone (one reference count).
#[derive(Clone)]
pub struct Engine {
    handles: Arc<Handles>,
}

/// The engine's core and the handle of each domain over it.
struct Handles {
    core: Arc<Core>,
    orders: Orders,
    disbursements: Disbursements,
    merchants: Merchants,
    catalog: PlatformCatalog,
    webhooks: Webhooks,
    operations: Operations,
}

/// Where the timer task's wake-ups go: a disbursement's to its actor, an
/// account inquiry's to a task of its own.
fn wake_sink(core: Weak<Core>) -> WakeSink {
    Arc::new(move |wake| {
        let Some(core) = core.upgrade() else { return };
        match wake {
            Wake::Disbursement { merchant_id, id, due } => {
                core.disbursement_host()
                    .deliver(merchant_id, id, DisbursementMsg::of_due(due));
            }
            Wake::CheckAccount { merchant_id, id } => {
                let disbursements = Disbursements::new(core);
                tokio::spawn(async move { disbursements.check_account(merchant_id, id).await });
            }
        }
    })
}

/// `publisher` as the core calls it: with this engine's catalog.
fn publish_catalog(publisher: CatalogPublisher, core: Weak<Core>) -> PublishCatalog {
    Arc::new(move |record| match core.upgrade() {
        Some(core) => publisher(PlatformCatalog::new(core), record),
        None => Box::pin(async { Err("the engine has stopped".to_string()) }),
    })
}

impl Engine {
    /// Opens the data directory, recovers (sled checkpoint + journal replay),
    /// seeds the catalog on first start and starts the checkpointer.
    pub async fn open(config: EngineConfig, clock: SharedClock) -> Result<Engine, EngineError> {
        let journal_dir = config.data_dir.join("journal");
        let state_dir = config.data_dir.join(STATE_DIR);
        let first_start = !state_dir.exists() && !journal_dir.exists();
        std::fs::create_dir_all(&config.data_dir).map_err(StoreError::from)?;
        let format = crate::store::check_data_format(&config.data_dir)?;
        let opening = std::time::Instant::now();
        if let Some(shard) = config.shard_journal.as_ref().filter(|_| !state_dir.exists()) {
            let snapshot = shard
                .records
                .latest_snapshot(shard.shard)
                .await
                .map_err(|error| StoreError::Snapshot(error.to_string()))?;
            if let Some((seq, state)) = snapshot {
                crate::store::snapshot::restore_state(&state_dir, &state)?;
                tracing::info!(shard = shard.shard, seq, bytes = state.len(), "shard snapshot restored");
            }
        }
        let store = Arc::new(Store::open(&state_dir)?);
        let store_open_ms = opening.elapsed().as_millis() as u64;
        let from_seq = store.checkpoint_seq()?;
        let replaying = std::time::Instant::now();
        let apply = |seq: u64, payload: &[u8]| {
            store
                .apply_payload(seq, payload)
                .map_err(|e| journal::JournalError::Corrupt {
                    path: journal_dir.clone(),
                    offset: 0,
                    reason: e.to_string(),
                })
        };
        let outcome = match &config.shard_journal {
            None => journal::replay(&journal_dir, from_seq, apply)?,
            // The checkpoint covers the records below `from_seq`.
            Some(shard) => {
                journal::replay_shard(&shard.records, shard.shard, from_seq.saturating_sub(1), apply).await?
            }
        };
        tracing::info!(
            checkpoint = from_seq,
            replayed = outcome.records_replayed,
            torn_bytes_cut = outcome.torn_bytes_cut,
            next_seq = outcome.next_seq,
            store_open_ms,
            replay_ms = replaying.elapsed().as_millis() as u64,
            "recovered"
        );
        let (journal, first_start) = match &config.shard_journal {
            None => (Journal::start(&journal_dir, outcome.next_seq)?, first_start),
            Some(shard) => (
                Journal::start_on_shard(
                    shard.records.clone(),
                    shard.shard,
                    shard.epoch,
                    outcome.next_seq,
                    tokio::runtime::Handle::current(),
                )?,
                // A shard starts once, whichever node holds it.
                from_seq == 0 && outcome.records_replayed == 0,
            ),
        };
        // Everything replayed is in the overlay now and must reach a
        // checkpoint; with nothing replayed (a clean stop) sled already is
        // the last one. An older layout is checkpointed here, before its
        // upgrade is marked, and so is a cluster shard's replay. A single
        // node's replay after a crash is the checkpointer's first turn
        // instead, once the engine is open: sled's first flush after its own
        // crash recovery takes longer the larger its file (seconds at
        // millions of items), and the server listens meanwhile. The journal
        // keeps the replayed records until that checkpoint covers them, so
        // a crash before it replays them again.
        let replayed = outcome.records_replayed > 0;
        let upgraded = format != crate::store::DATA_FORMAT;
        let recovery_checkpoint_deferred = replayed && !upgraded && config.shard_journal.is_none();
        if (replayed || upgraded) && !recovery_checkpoint_deferred {
            let checkpointing = std::time::Instant::now();
            let covered = store.checkpoint()?;
            journal.drop_segments_below(covered)?;
            tracing::info!(
                elapsed_ms = checkpointing.elapsed().as_millis() as u64,
                "recovery checkpoint written"
            );
        }
        if !recovery_checkpoint_deferred {
            store.allow_fresh_keys();
        }
        // Opening the store brought an older layout to this one, durably.
        if format != crate::store::DATA_FORMAT {
            crate::store::mark_data_format(&config.data_dir)?;
            tracing::info!(from = format, to = crate::store::DATA_FORMAT, "data dir upgraded");
        }

        let started_at = clock.now();
        let stopping = tokio::sync::watch::channel(false).0;
        let ref_codes = Arc::new(
            crate::refcode::RefCodes::starting_at(started_at)
                .in_shard(config.shard_journal.as_ref().map(|journal| journal.shard)),
        );
        // The timers and merchant actors hand work to the disbursement
        // actors the core hosts, and the catalog publisher hands this
        // engine's catalog on: each reaches the core weakly, so none keeps
        // it alive.
        let mut timer_task = None;
        let core = Arc::new_cyclic(|weak: &Weak<Core>| {
            let (timers, task) = Timers::start(wake_sink(weak.clone()), stopping.subscribe());
            timer_task = Some(task);
            let created: CreatedDisbursements = {
                let weak = weak.clone();
                Arc::new(move |disbursement| {
                    if let Some(core) = weak.upgrade() {
                        core.disbursement_host().start(disbursement);
                    }
                })
            };
            let merchants = MerchantHandle::new(MerchantActorSettings {
                store: store.clone(),
                journal: journal.clone(),
                clock: clock.clone(),
                idle_timeout: config.actor_idle_timeout,
                keys_in_memory: config.idempotency_keys_in_memory.max(1),
                ref_codes: ref_codes.clone(),
                created,
                shard: config.shard_journal.as_ref().map(|journal| journal.shard),
            });
            let http_client = reqwest::Client::new();
            let disbursements = DisbursementHost::new(Arc::new(PayoutContext {
                store: store.clone(),
                merchants: merchants.clone(),
                timers,
                clock: clock.clone(),
                builtin_vendor: config.payout_vendor.clone(),
                http_client: http_client.clone(),
                retry_scale: if config.vendor_retry_scale > 0.0 {
                    config.vendor_retry_scale
                } else {
                    1.0
                },
            }));
            let orders = Arc::new(OrderContext {
                store: store.clone(),
                merchants: merchants.clone(),
                actors: ActorRegistry::default(),
                sandbox_refund_delay: config.sandbox_refund_delay,
                http_client,
                live_max: config.order_actors_live_max,
            });
            Core {
                store,
                journal,
                merchants,
                disbursements,
                clock,
                catalog_lock: tokio::sync::Mutex::new(()),
                checkpoint_lock: tokio::sync::Mutex::new(()),
                background: Mutex::new(Vec::new()),
                stopping,
                first_start,
                ref_codes,
                orders,
                allow_private_notify_urls: config.allow_private_notify_urls,
                shard: config.shard_journal.as_ref().map(|journal| journal.shard),
                publish_catalog: config
                    .catalog_publisher
                    .clone()
                    .map(|publisher| publish_catalog(publisher, weak.clone())),
                webhook_locks: std::array::from_fn(|_| tokio::sync::Mutex::new(())),
                settlement_lock: tokio::sync::Mutex::new(()),
                order_creations: Default::default(),
                disbursements_open_max: config.disbursements_open_max,
                sled_reopen_journal_bytes: config.sled_reopen_journal_bytes,
                data_dir: config.data_dir.clone(),
                storage: StorageHealth::default(),
                webhook_retention: config.resume_work.then_some(config.webhook_retention),
            }
        });
        let engine = Engine {
            handles: Arc::new(Handles {
                orders: Orders::new(core.clone()),
                disbursements: Disbursements::new(core.clone()),
                merchants: Merchants::new(core.clone()),
                catalog: PlatformCatalog::new(core.clone()),
                webhooks: Webhooks::new(core.clone()),
                operations: Operations::new(core.clone()),
                core,
            }),
        };
        if let Some(task) = timer_task {
            engine.handles.core.track_background(task);
        }
        engine.catalog().seed_catalog().await?;
        engine.start_checkpointer(config.checkpoint_interval, recovery_checkpoint_deferred);
        if !config.resume_work {
            return Ok(engine);
        }
        let resumed = engine.disbursements().resume_disbursements()?;
        if resumed > 0 {
            tracing::info!(resumed, "resumed disbursements in flight");
        }
        let unverified = engine.disbursements().resume_account_checks()?;
        if unverified > 0 {
            tracing::info!(unverified, "asking again about beneficiaries' accounts");
        }
        let expired = engine.orders().expire_due_orders().await?;
        if expired > 0 {
            tracing::info!(expired, "expired orders that fell due while stopped");
        }
        let resumed = engine.orders().resume_refunds().await?;
        if resumed > 0 {
            tracing::info!(resumed, "resumed pending refunds");
        }
        engine.start_expiry_sweep();
        engine.orders().resume_settlements()?;
        engine.orders().start_daily_settlements();
        tracing::info!(
            elapsed_ms = opening.elapsed().as_millis() as u64,
            "engine open, its work resumed"
        );
        Ok(engine)
    }

    /// The shared core, for the engine's own tests.
    #[cfg(test)]
    pub(crate) fn core(&self) -> &Arc<Core> {
        &self.handles.core
    }

    /// Orders, refunds, payment vendors and settlements.
    pub fn orders(&self) -> &Orders {
        &self.handles.orders
    }

    /// Disbursements, batches and beneficiaries.
    pub fn disbursements(&self) -> &Disbursements {
        &self.handles.disbursements
    }

    /// Merchants, their money, history and users.
    pub fn merchants(&self) -> &Merchants {
        &self.handles.merchants
    }

    /// Banks, e-wallets and organizations.
    pub fn catalog(&self) -> &PlatformCatalog {
        &self.handles.catalog
    }

    /// The outbox of webhook events and their delivery attempts.
    pub fn webhooks(&self) -> &Webhooks {
        &self.handles.webhooks
    }

    /// Storage health, checkpoints, snapshots, metrics and settings.
    pub fn operations(&self) -> &Operations {
        &self.handles.operations
    }

    fn start_expiry_sweep(&self) {
        self.handles
            .core
            .every(limits::ORDER_EXPIRY_SWEEP_INTERVAL, false, |core| async move {
                if let Err(error) = Orders::new(core).expire_due_orders().await {
                    tracing::error!(%error, "order expiry sweep failed");
                }
            });
    }

    /// Checkpoints every `interval`, or sooner when entries pile up; with
    /// `recovery_pending`, at once first, for the records a crash left to
    /// replay.
    fn start_checkpointer(&self, interval: Duration, mut recovery_pending: bool) {
        let weak = Arc::downgrade(&self.handles.core);
        let mut stopping = self.handles.core.stopping.subscribe();
        let task = tokio::spawn(async move {
            let mut last = tokio::time::Instant::now();
            // A pending recovery is looked at once before the first wait.
            let mut wait = !recovery_pending;
            loop {
                if wait {
                    tokio::select! {
                        _ = tokio::time::sleep(limits::CHECKPOINT_POLL_INTERVAL.min(interval)) => {}
                        _ = stopping.changed() => return,
                    }
                }
                wait = true;
                let Some(core) = weak.upgrade() else { return };
                let due = recovery_pending
                    || last.elapsed() >= interval
                    || core.store().pending_entries() >= limits::CHECKPOINT_PENDING_ENTRIES_MAX;
                let operations = Operations::new(core);
                // Postponed for room, it stays due: the room is looked at every poll.
                if !due || !operations.checkpoint_has_room() {
                    continue;
                }
                last = tokio::time::Instant::now();
                match operations.checkpoint().await {
                    Ok(_) if recovery_pending => tracing::info!(
                        elapsed_ms = last.elapsed().as_millis() as u64,
                        "recovery checkpoint written"
                    ),
                    Ok(_) => {}
                    Err(error) => tracing::error!(%error, "checkpoint failed"),
                }
                recovery_pending = false;
            }
        });
        self.handles.core.track_background(task);
    }

    /// Stops actors and the checkpointer, takes a final checkpoint and
    /// closes the journal. The data directory can be opened again after.
    pub async fn shutdown(&self) {
        self.halt(true).await;
    }

    /// Like `shutdown` but without the final checkpoint, so the next open
    /// must replay the journal (tests use it to exercise recovery).
    pub async fn halt_without_checkpoint(&self) {
        self.halt(false).await;
    }

    async fn halt(&self, final_checkpoint: bool) {
        let core = &self.handles.core;
        core.stopping.send_replace(true);
        core.disbursements.stop().await;
        let tasks = std::mem::take(&mut *core.background.lock().expect("background lock"));
        for task in tasks {
            let _ = task.await;
        }
        let operations = self.operations();
        if final_checkpoint && operations.checkpoint_has_room() {
            if let Err(error) = operations.checkpoint().await {
                tracing::error!(%error, "final checkpoint failed");
            }
        } else if final_checkpoint {
            tracing::warn!("no final checkpoint (storage cannot take one now); the next start replays the journal");
        }
        for actor in core.orders.actors.drain() {
            let _ = actor
                .stop_and_wait(Some("shutdown".into()), Some(Duration::from_secs(5)))
                .await;
        }
        for actor in core.merchants.drain() {
            let _ = actor
                .stop_and_wait(Some("shutdown".into()), Some(Duration::from_secs(5)))
                .await;
        }
        core.journal.shutdown().await;
        let _ = core.store.flush();
        if final_checkpoint {
            snapshot_storage(core.store.clone()).await;
        }
    }
}

/// Closes and reopens sled once the last write is in, which writes the
/// snapshot its next open starts from: sled 0.34 snapshots only as it
/// opens, and an open reads everything logged since the last snapshot
/// (after a long run, seconds). Paid here, while nothing waits, instead of
/// at the next start. It runs inside the store's slot, so a clone of the
/// store still held elsewhere does not keep it from closing sled.
async fn snapshot_storage(store: Arc<crate::store::Store>) {
    let started = std::time::Instant::now();
    match tokio::task::spawn_blocking(move || store.reopen_sled()).await {
        Ok(Ok(Some(_))) => tracing::info!(
            elapsed_ms = started.elapsed().as_millis() as u64,
            "storage snapshot written: the next start reads no storage log"
        ),
        Ok(Ok(None)) => tracing::warn!("no storage snapshot (a read still held sled); the next start reads its log"),
        Ok(Err(error)) => tracing::warn!(%error, "no storage snapshot; the next start reads the storage log"),
        Err(error) => tracing::warn!(%error, "storage snapshot task failed"),
    }
}
