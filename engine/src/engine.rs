//! `Engine`: the handle the API holds. Opens storage, recovers, starts the
//! journal and checkpointer, and turns typed commands into actor messages.

use crate::actors::{ActorRegistry, CreatedDisbursements, MerchantActorSettings, MerchantHandle, MerchantMsg};
use crate::checkpoints::StorageHealth;
use crate::clock::SharedClock;
use crate::disbursements::actor::DisbursementMsg;
use crate::disbursements::context::PayoutContext;
use crate::disbursements::host::{DisbursementHost, WeakHost};
use crate::error::EngineError;
use crate::limits;
use crate::store::journal::{self, Journal};
use crate::store::record::JournalRecord;
use crate::store::{Store, StoreError};
use crate::timers::{Timers, Wake, WakeSink};
use crate::vendor::PayoutVendor;
use ractor::RpcReplyPort;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;
use uuid::Uuid;

/// The data dir's folder of storage state (sled), beside `journal/`.
const STATE_DIR: &str = "state";

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
/// the engine it was made in to every shard, returning once that engine
/// has it, or why not.
pub type CatalogPublisher = Arc<
    dyn Fn(Engine, Vec<u8>) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send>>
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

/// The engine handle; cheap to clone.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<EngineInner>,
}

struct EngineInner {
    store: Arc<Store>,
    journal: Journal,
    merchants: MerchantHandle,
    /// Every disbursement's actor, hosted per merchant.
    disbursements: DisbursementHost,
    clock: SharedClock,
    /// The shard this engine holds, in a cluster.
    shard: Option<u16>,
    /// Where platform catalog changes go, in a cluster.
    catalog_publisher: Option<CatalogPublisher>,
    // Catalog edits are read-modify-write of shared records: one at a time.
    catalog_lock: tokio::sync::Mutex<()>,
    checkpoint_lock: tokio::sync::Mutex<()>,
    background: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    // Background tasks stop at their next safe point when this turns true;
    // aborting them could strand a blocking sled write that still holds the store.
    stopping: tokio::sync::watch::Sender<bool>,
    first_start: bool,
    ref_codes: Arc<crate::refcode::RefCodes>,
    orders: Arc<crate::orders::actor::OrderContext>,
    allow_private_notify_urls: bool,
    // Attempts on one event are recorded one at a time; striped by event id.
    webhook_locks: [tokio::sync::Mutex<()>; 64],
    // Settlement runs one at a time (daily sequence numbers, no double runs).
    settlement_lock: tokio::sync::Mutex<()>,
    // One creation at a time per merchant and order id: a repeat waits and
    // is answered from the first, instead of asking the vendor again.
    order_creations: crate::keyed_locks::KeyedLocks<(Uuid, crate::domain::Source, String)>,
    // Disbursements not yet final at most (`EngineConfig`).
    disbursements_open_max: usize,
    sled_reopen_journal_bytes: u64,
    // Holds `journal/` and `state/`; its filesystem's free space gates checkpoints.
    data_dir: PathBuf,
    storage: StorageHealth,
    // Webhook events and attempts kept (`EngineConfig`); none drops nothing
    // (an offline check moves nothing).
    webhook_retention: Option<Duration>,
}

/// Where the timer task's wake-ups go: a disbursement's to its actor, an
/// account inquiry's to a task of its own. Both are reached weakly, so the
/// timers keep neither alive.
fn wake_sink(host: Arc<OnceLock<WeakHost>>, engine: Arc<OnceLock<Weak<EngineInner>>>) -> WakeSink {
    Arc::new(move |wake| match wake {
        Wake::Disbursement { merchant_id, id, due } => {
            if let Some(host) = host.get().and_then(WeakHost::upgrade) {
                host.deliver(merchant_id, id, DisbursementMsg::of_due(due));
            }
        }
        Wake::CheckAccount { merchant_id, id } => {
            if let Some(inner) = engine.get().and_then(Weak::upgrade) {
                let engine = Engine { inner };
                tokio::spawn(async move { engine.check_account(merchant_id, id).await });
            }
        }
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
        // Everything replayed is in the overlay now: make it the new
        // checkpoint. With nothing replayed (a clean stop) sled already is
        // the last checkpoint, and the checkpointer's own turn does the rest.
        if outcome.records_replayed > 0 || format != crate::store::DATA_FORMAT {
            let checkpointing = std::time::Instant::now();
            let covered = store.checkpoint()?;
            journal.drop_segments_below(covered)?;
            tracing::info!(
                elapsed_ms = checkpointing.elapsed().as_millis() as u64,
                "recovery checkpoint written"
            );
        }
        store.allow_fresh_keys();
        // Opening the store brought an older layout to this one, durably.
        if format != crate::store::DATA_FORMAT {
            crate::store::mark_data_format(&config.data_dir)?;
            tracing::info!(from = format, to = crate::store::DATA_FORMAT, "data dir upgraded");
        }

        let started_at = clock.now();
        let stopping = tokio::sync::watch::channel(false).0;
        // The timers and merchant actors hand work to disbursement actors,
        // whose host holds them in turn: they reach it weakly, once it exists.
        let host_slot: Arc<OnceLock<WeakHost>> = Arc::default();
        let engine_slot: Arc<OnceLock<Weak<EngineInner>>> = Arc::default();
        let (timers, timer_task) =
            Timers::start(wake_sink(host_slot.clone(), engine_slot.clone()), stopping.subscribe());
        let created: CreatedDisbursements = {
            let host_slot = host_slot.clone();
            Arc::new(move |disbursement| {
                if let Some(host) = host_slot.get().and_then(WeakHost::upgrade) {
                    host.start(disbursement);
                }
            })
        };
        let ref_codes = Arc::new(
            crate::refcode::RefCodes::starting_at(started_at)
                .in_shard(config.shard_journal.as_ref().map(|journal| journal.shard)),
        );
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
        let _ = host_slot.set(disbursements.downgrade());
        let orders = Arc::new(crate::orders::actor::OrderContext {
            store: store.clone(),
            merchants: merchants.clone(),
            actors: ActorRegistry::default(),
            sandbox_refund_delay: config.sandbox_refund_delay,
            http_client,
            live_max: config.order_actors_live_max,
        });
        let engine = Engine {
            inner: Arc::new(EngineInner {
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
                catalog_publisher: config.catalog_publisher.clone(),
                webhook_locks: std::array::from_fn(|_| tokio::sync::Mutex::new(())),
                settlement_lock: tokio::sync::Mutex::new(()),
                order_creations: Default::default(),
                disbursements_open_max: config.disbursements_open_max,
                sled_reopen_journal_bytes: config.sled_reopen_journal_bytes,
                data_dir: config.data_dir.clone(),
                storage: StorageHealth::default(),
                webhook_retention: config.resume_work.then_some(config.webhook_retention),
            }),
        };
        let _ = engine_slot.set(Arc::downgrade(&engine.inner));
        engine.track_background(timer_task);
        engine.seed_catalog().await?;
        engine.start_checkpointer(config.checkpoint_interval);
        if !config.resume_work {
            return Ok(engine);
        }
        let resumed = engine.resume_disbursements()?;
        if resumed > 0 {
            tracing::info!(resumed, "resumed disbursements in flight");
        }
        let unverified = engine.resume_account_checks()?;
        if unverified > 0 {
            tracing::info!(unverified, "asking again about beneficiaries' accounts");
        }
        let expired = engine.expire_due_orders().await?;
        if expired > 0 {
            tracing::info!(expired, "expired orders that fell due while stopped");
        }
        let resumed = engine.resume_refunds().await?;
        if resumed > 0 {
            tracing::info!(resumed, "resumed pending refunds");
        }
        engine.start_expiry_sweep();
        engine.resume_settlements()?;
        engine.start_daily_settlements();
        tracing::info!(
            elapsed_ms = opening.elapsed().as_millis() as u64,
            "engine open, its work resumed"
        );
        Ok(engine)
    }

    /// The order creations in progress, by merchant, source and order id.
    pub(crate) fn order_creations(&self) -> &crate::keyed_locks::KeyedLocks<(Uuid, crate::domain::Source, String)> {
        &self.inner.order_creations
    }

    /// Disbursements not yet final at most (`EngineConfig`).
    pub(crate) fn disbursements_open_max(&self) -> usize {
        self.inner.disbursements_open_max
    }

    /// Journal bytes after which the checkpointer reopens sled.
    pub(crate) fn sled_reopen_journal_bytes(&self) -> u64 {
        self.inner.sled_reopen_journal_bytes
    }

    /// The engine's clock.
    pub fn clock(&self) -> &SharedClock {
        &self.inner.clock
    }

    pub(crate) fn now_ms(&self) -> i64 {
        self.inner.clock.now().timestamp_millis()
    }

    /// Webhook events and attempts from before this are past retention
    /// (`None` while nothing is dropped).
    pub(crate) fn webhook_retention_cutoff_ms(&self) -> Option<i64> {
        let retention = self.inner.webhook_retention?;
        let retention_ms = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
        Some(self.now_ms().saturating_sub(retention_ms))
    }

    fn start_expiry_sweep(&self) {
        self.every(limits::ORDER_EXPIRY_SWEEP_INTERVAL, false, |engine| async move {
            if let Err(error) = engine.expire_due_orders().await {
                tracing::error!(%error, "order expiry sweep failed");
            }
        });
    }

    /// Runs `tick` every `interval` (at once too when `at_once`) until the
    /// engine halts or is dropped; the task holds no strong reference between ticks.
    pub(crate) fn every<F, Fut>(&self, interval: Duration, at_once: bool, mut tick: F)
    where
        F: FnMut(Engine) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let weak = Arc::downgrade(&self.inner);
        let mut stopping = self.inner.stopping.subscribe();
        let task = tokio::spawn(async move {
            let mut first = at_once;
            loop {
                if !first {
                    tokio::select! {
                        _ = tokio::time::sleep(interval) => {}
                        _ = stopping.changed() => return,
                    }
                }
                first = false;
                let Some(inner) = weak.upgrade() else { return };
                tick(Engine { inner }).await;
            }
        });
        self.track_background(task);
    }

    /// Journals a record not owned by any actor and waits until it is durable and applied.
    pub(crate) async fn write(&self, record: JournalRecord) -> Result<(), EngineError> {
        let payload = record.encode();
        let store = self.inner.store.clone();
        let (tell, told) = tokio::sync::oneshot::channel();
        let done: journal::Completion = Box::new(move |seq, payload| {
            if let Err(error) = store.apply(seq, &record, payload) {
                tracing::error!(%error, "applying a durable record failed; aborting (the journal will replay it)");
                std::process::abort();
            }
            Some(Box::new(move || {
                let _ = tell.send(());
            }))
        });
        self.inner.journal.append(payload, done).await?;
        told.await.map_err(|_| EngineError::ShuttingDown)
    }

    /// Where platform catalog changes go, in a cluster.
    pub(crate) fn catalog_publisher(&self) -> Option<&CatalogPublisher> {
        self.inner.catalog_publisher.as_ref()
    }

    fn start_checkpointer(&self, interval: Duration) {
        let weak = Arc::downgrade(&self.inner);
        let mut stopping = self.inner.stopping.subscribe();
        let task = tokio::spawn(async move {
            let mut last = tokio::time::Instant::now();
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(limits::CHECKPOINT_POLL_INTERVAL.min(interval)) => {}
                    _ = stopping.changed() => return,
                }
                let Some(inner) = weak.upgrade() else { return };
                let engine = Engine { inner };
                let due = last.elapsed() >= interval
                    || engine.store().pending_entries() >= limits::CHECKPOINT_PENDING_ENTRIES_MAX;
                // Postponed for room, it stays due: the room is looked at every poll.
                if !due || !engine.checkpoint_has_room() {
                    continue;
                }
                last = tokio::time::Instant::now();
                if let Err(error) = engine.checkpoint().await {
                    tracing::error!(%error, "checkpoint failed");
                }
            }
        });
        self.inner.background.lock().expect("background lock").push(task);
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
        self.inner.stopping.send_replace(true);
        self.inner.disbursements.stop().await;
        let tasks = std::mem::take(&mut *self.inner.background.lock().expect("background lock"));
        for task in tasks {
            let _ = task.await;
        }
        if final_checkpoint && self.checkpoint_has_room() {
            if let Err(error) = self.checkpoint().await {
                tracing::error!(%error, "final checkpoint failed");
            }
        } else if final_checkpoint {
            tracing::warn!("no final checkpoint (storage cannot take one now); the next start replays the journal");
        }
        for actor in self.inner.orders.actors.drain() {
            let _ = actor
                .stop_and_wait(Some("shutdown".into()), Some(Duration::from_secs(5)))
                .await;
        }
        for actor in self.inner.merchants.drain() {
            let _ = actor
                .stop_and_wait(Some("shutdown".into()), Some(Duration::from_secs(5)))
                .await;
        }
        self.inner.journal.shutdown().await;
        let _ = self.inner.store.flush();
    }

    /// Sends a message to a merchant's actor and waits for the reply,
    /// retrying when the actor stopped (idle) between lookup and send: such a
    /// message was never processed, so sending it again is safe.
    pub(crate) async fn call_merchant<T: Send + 'static>(
        &self,
        merchant_id: Uuid,
        build: impl Fn(RpcReplyPort<T>) -> MerchantMsg,
    ) -> Result<T, EngineError> {
        self.inner.merchants.call(merchant_id, build).await
    }

    /// The stores behind the engine.
    pub(crate) fn store(&self) -> &Arc<Store> {
        &self.inner.store
    }

    /// The journal.
    pub(crate) fn journal(&self) -> &Journal {
        &self.inner.journal
    }

    /// What the engine knows of its storage's health.
    pub(crate) fn storage(&self) -> &StorageHealth {
        &self.inner.storage
    }

    /// The data directory.
    pub(crate) fn data_dir(&self) -> &std::path::Path {
        &self.inner.data_dir
    }

    /// Where its storage (sled) lives: `state/` in the data dir.
    pub fn state_dir(&self) -> PathBuf {
        self.inner.data_dir.join(STATE_DIR)
    }

    /// One checkpoint at a time.
    pub(crate) fn checkpoint_lock(&self) -> &tokio::sync::Mutex<()> {
        &self.inner.checkpoint_lock
    }

    /// The way to merchant actors.
    pub(crate) fn merchant_handle(&self) -> &MerchantHandle {
        &self.inner.merchants
    }

    /// Catalog edits are read-modify-write of shared records: one at a time.
    pub(crate) fn catalog_lock(&self) -> &tokio::sync::Mutex<()> {
        &self.inner.catalog_lock
    }

    /// True when this open found an empty data directory.
    pub(crate) fn is_first_start(&self) -> bool {
        self.inner.first_start
    }

    /// What disbursement actors and account inquiries reach the engine through.
    pub(crate) fn payouts(&self) -> &PayoutContext {
        self.inner.disbursements.context()
    }

    /// The host of disbursement actors.
    pub(crate) fn disbursement_host(&self) -> &DisbursementHost {
        &self.inner.disbursements
    }

    /// The timer task of vendor outcomes.
    pub(crate) fn timers(&self) -> &Timers {
        &self.payouts().timers
    }

    /// The lock serializing settlement runs.
    pub(crate) fn settlement_lock(&self) -> &tokio::sync::Mutex<()> {
        &self.inner.settlement_lock
    }

    /// Keeps a background task to await at halt.
    pub(crate) fn track_background(&self, task: tokio::task::JoinHandle<()>) {
        self.inner.background.lock().expect("background lock").push(task);
    }

    /// The lock serializing attempt records of one event.
    pub(crate) fn webhook_lock(&self, event_id: Uuid) -> &tokio::sync::Mutex<()> {
        &self.inner.webhook_locks[(event_id.as_u128() % 64) as usize]
    }

    /// What order actors reach the engine through.
    pub(crate) fn order_context(&self) -> &Arc<crate::orders::actor::OrderContext> {
        &self.inner.orders
    }

    /// Platform-wide reference codes.
    pub(crate) fn ref_codes(&self) -> &crate::refcode::RefCodes {
        &self.inner.ref_codes
    }

    /// The shard this engine holds, in a cluster.
    pub fn shard(&self) -> Option<u16> {
        self.inner.shard
    }

    /// Whether notify URLs may name private hosts (sandbox mode).
    pub fn allows_private_notify_urls(&self) -> bool {
        self.inner.allow_private_notify_urls
    }

    /// Sandbox mode's refund delay; `None` in live mode.
    pub fn sandbox_refund_delay(&self) -> Option<Duration> {
        self.inner.orders.sandbox_refund_delay
    }
}
