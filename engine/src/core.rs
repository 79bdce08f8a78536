//! `Core`: what every domain handle of the engine shares: storage, the
//! journal, the merchant actors and disbursement host, the clock, storage
//! health, the locks of work that must run one at a time, and the engine's
//! settings. The handles (`Orders`, `Disbursements`, `Merchants`,
//! `PlatformCatalog`, `Webhooks`, `Operations`) each hold one and build on it;
//! `Engine::open` makes it.

use crate::actors::{MerchantHandle, MerchantMsg};
use crate::clock::SharedClock;
use crate::disbursements::context::PayoutContext;
use crate::disbursements::host::DisbursementHost;
use crate::domain::MerchantRecord;
use crate::error::EngineError;
use crate::input::HttpUrl;
use crate::storage_health::StorageHealth;
use crate::store::journal::{self, Journal};
use crate::store::record::JournalRecord;
use crate::store::Store;
use crate::timers::Timers;
use ractor::RpcReplyPort;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use uuid::Uuid;

/// The data dir's folder of storage state (sled), beside `journal/`.
pub(crate) const STATE_DIR: &str = "state";

/// Publishes an encoded platform catalog record to every shard of a
/// cluster, returning once this engine has it too, or why not.
pub(crate) type PublishCatalog = Arc<
    dyn Fn(Vec<u8>) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send>> + Send + Sync,
>;

/// The shared part of an engine (see the module docs).
pub(crate) struct Core {
    pub(crate) store: Arc<Store>,
    pub(crate) journal: Journal,
    pub(crate) merchants: MerchantHandle,
    /// Every disbursement's actor, hosted per merchant.
    pub(crate) disbursements: DisbursementHost,
    pub(crate) clock: SharedClock,
    /// The shard this engine holds, in a cluster.
    pub(crate) shard: Option<u16>,
    /// Where platform catalog changes go, in a cluster.
    pub(crate) publish_catalog: Option<PublishCatalog>,
    // Catalog edits are read-modify-write of shared records: one at a time.
    pub(crate) catalog_lock: tokio::sync::Mutex<()>,
    pub(crate) checkpoint_lock: tokio::sync::Mutex<()>,
    pub(crate) background: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    // Background tasks stop at their next safe point when this turns true;
    // aborting them could strand a blocking sled write that still holds the store.
    pub(crate) stopping: tokio::sync::watch::Sender<bool>,
    pub(crate) first_start: bool,
    pub(crate) ref_codes: Arc<crate::refcode::RefCodes>,
    pub(crate) orders: Arc<crate::orders::actor::OrderContext>,
    pub(crate) allow_private_notify_urls: bool,
    // Attempts on one event are recorded one at a time; striped by event id.
    pub(crate) webhook_locks: [tokio::sync::Mutex<()>; 64],
    // Settlement runs one at a time (daily sequence numbers, no double runs).
    pub(crate) settlement_lock: tokio::sync::Mutex<()>,
    // One creation at a time per merchant and order id: a repeat waits and
    // is answered from the first, instead of asking the vendor again.
    pub(crate) order_creations: crate::keyed_locks::KeyedLocks<(Uuid, crate::domain::Source, String)>,
    // Disbursements not yet final at most (`EngineConfig`).
    pub(crate) disbursements_open_max: usize,
    pub(crate) sled_reopen_journal_bytes: u64,
    // Holds `journal/` and `state/`; its filesystem's free space gates checkpoints.
    pub(crate) data_dir: PathBuf,
    pub(crate) storage: StorageHealth,
    // Webhook events and attempts kept (`EngineConfig`); none drops nothing
    // (an offline check moves nothing).
    pub(crate) webhook_retention: Option<Duration>,
}

impl Core {
    /// The order creations in progress, by merchant, source and order id.
    pub(crate) fn order_creations(&self) -> &crate::keyed_locks::KeyedLocks<(Uuid, crate::domain::Source, String)> {
        &self.order_creations
    }

    /// Disbursements not yet final at most (`EngineConfig`).
    pub(crate) fn disbursements_open_max(&self) -> usize {
        self.disbursements_open_max
    }

    /// Journal bytes after which the checkpointer reopens sled.
    pub(crate) fn sled_reopen_journal_bytes(&self) -> u64 {
        self.sled_reopen_journal_bytes
    }

    /// The engine's clock.
    pub(crate) fn clock(&self) -> &SharedClock {
        &self.clock
    }

    pub(crate) fn now_ms(&self) -> i64 {
        self.clock.now().timestamp_millis()
    }

    /// Webhook events and attempts from before this are past retention
    /// (`None` while nothing is dropped).
    pub(crate) fn webhook_retention_cutoff_ms(&self) -> Option<i64> {
        let retention = self.webhook_retention?;
        let retention_ms = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
        Some(self.now_ms().saturating_sub(retention_ms))
    }

    /// Runs `tick` every `interval` (at once too when `at_once`) until the
    /// engine halts or is dropped; the task holds no strong reference
    /// between ticks.
    pub(crate) fn every<F, Fut>(self: &Arc<Self>, interval: Duration, at_once: bool, mut tick: F)
    where
        F: FnMut(Arc<Core>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let weak = Arc::downgrade(self);
        let mut stopping = self.stopping.subscribe();
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
                let Some(core) = weak.upgrade() else { return };
                tick(core).await;
            }
        });
        self.track_background(task);
    }

    /// Journals a record not owned by any actor and waits until it is
    /// durable and applied.
    pub(crate) async fn write(&self, record: JournalRecord) -> Result<(), EngineError> {
        self.write_as(record, true).await
    }

    /// `write` for a record nobody waits on promptly: it may wait a few
    /// milliseconds to share another record's sync (see
    /// `Journal::queue_append`).
    pub(crate) async fn write_background(&self, record: JournalRecord) -> Result<(), EngineError> {
        self.write_as(record, false).await
    }

    async fn write_as(&self, record: JournalRecord, waited: bool) -> Result<(), EngineError> {
        let payload = record.encode();
        let store = self.store.clone();
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
        self.journal.queue_append(payload, done, waited).await?;
        told.await.map_err(|_| EngineError::ShuttingDown)
    }

    /// Where platform catalog changes go, in a cluster.
    pub(crate) fn publish_catalog(&self) -> Option<&PublishCatalog> {
        self.publish_catalog.as_ref()
    }

    /// Sends a message to a merchant's actor and waits for the reply,
    /// retrying when the actor stopped (idle) between lookup and send: such a
    /// message was never processed, so sending it again is safe.
    pub(crate) async fn call_merchant<T: Send + 'static>(
        &self,
        merchant_id: Uuid,
        build: impl Fn(RpcReplyPort<T>) -> MerchantMsg,
    ) -> Result<T, EngineError> {
        self.merchants.call(merchant_id, build).await
    }

    /// The stores behind the engine.
    pub(crate) fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The journal.
    pub(crate) fn journal(&self) -> &Journal {
        &self.journal
    }

    /// What the engine knows of its storage's health.
    pub(crate) fn storage(&self) -> &StorageHealth {
        &self.storage
    }

    /// The data directory.
    pub(crate) fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Where its storage (sled) lives: `state/` in the data dir.
    pub(crate) fn state_dir(&self) -> PathBuf {
        self.data_dir.join(STATE_DIR)
    }

    /// One checkpoint at a time.
    pub(crate) fn checkpoint_lock(&self) -> &tokio::sync::Mutex<()> {
        &self.checkpoint_lock
    }

    /// The way to merchant actors.
    pub(crate) fn merchant_handle(&self) -> &MerchantHandle {
        &self.merchants
    }

    /// Catalog edits are read-modify-write of shared records: one at a time.
    pub(crate) fn catalog_lock(&self) -> &tokio::sync::Mutex<()> {
        &self.catalog_lock
    }

    /// True when this open found an empty data directory.
    pub(crate) fn is_first_start(&self) -> bool {
        self.first_start
    }

    /// What disbursement actors and account inquiries reach the engine through.
    pub(crate) fn payouts(&self) -> &PayoutContext {
        self.disbursements.context()
    }

    /// The host of disbursement actors.
    pub(crate) fn disbursement_host(&self) -> &DisbursementHost {
        &self.disbursements
    }

    /// The timer task of vendor outcomes.
    pub(crate) fn timers(&self) -> &Timers {
        &self.payouts().timers
    }

    /// The lock serializing settlement runs.
    pub(crate) fn settlement_lock(&self) -> &tokio::sync::Mutex<()> {
        &self.settlement_lock
    }

    /// Keeps a background task to await at halt.
    pub(crate) fn track_background(&self, task: tokio::task::JoinHandle<()>) {
        self.background.lock().expect("background lock").push(task);
    }

    /// The lock serializing attempt records of one event.
    pub(crate) fn webhook_lock(&self, event_id: Uuid) -> &tokio::sync::Mutex<()> {
        &self.webhook_locks[(event_id.as_u128() % 64) as usize]
    }

    /// What order actors reach the engine through.
    pub(crate) fn order_context(&self) -> &Arc<crate::orders::actor::OrderContext> {
        &self.orders
    }

    /// Platform-wide reference codes.
    pub(crate) fn ref_codes(&self) -> &crate::refcode::RefCodes {
        &self.ref_codes
    }

    /// The shard this engine holds, in a cluster.
    pub(crate) fn shard(&self) -> Option<u16> {
        self.shard
    }

    /// Whether notify URLs may name private hosts (sandbox mode).
    pub(crate) fn allows_private_notify_urls(&self) -> bool {
        self.allow_private_notify_urls
    }

    /// Sandbox mode's refund delay; `None` in live mode.
    pub(crate) fn sandbox_refund_delay(&self) -> Option<Duration> {
        self.orders.sandbox_refund_delay
    }

    /// Whether writes are taken now: the journal's disk takes its writes
    /// and no checkpoint has failed.
    pub(crate) fn storage_writable(&self) -> bool {
        self.journal.is_writable() && !self.storage.state_store_failed()
    }

    /// Whether the shard this engine serves was taken by another node (its
    /// journal's append failed on the epoch): it writes nothing more and is
    /// to be given up.
    pub(crate) fn is_fenced(&self) -> bool {
        self.journal.is_fenced()
    }

    /// Refuses a write while storage cannot take it. Every write command
    /// calls it first, before it changes anything or asks a vendor. A write
    /// that passed just before the disk filled waits in the journal,
    /// unacknowledged, until the disk takes it.
    pub(crate) fn ensure_writable(&self) -> Result<(), EngineError> {
        if self.storage_writable() {
            Ok(())
        } else {
            Err(EngineError::StorageUnavailable)
        }
    }

    /// A merchant by id.
    pub(crate) fn merchant(&self, merchant_id: Uuid) -> Option<Arc<MerchantRecord>> {
        self.store.directory().get(&merchant_id)
    }

    /// Every merchant's id.
    pub(crate) fn merchant_ids(&self) -> Vec<Uuid> {
        self.store.directory().ids()
    }

    /// Checks that a notify URL names a public host, unless private ones
    /// are allowed (sandbox mode).
    pub(crate) fn ensure_public_notify_url(&self, field: &str, url: &HttpUrl) -> Result<(), EngineError> {
        crate::notify_url::ensure_public_notify_url(field, url, self.allow_private_notify_urls)
    }
}
