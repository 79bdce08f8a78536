//! `Engine`: the handle the API holds. Opens storage, recovers, starts the
//! journal and checkpointer, and turns typed commands into actor messages.

use crate::actors::{
    ActorRegistry, CreatedDisbursements, MerchantActorSettings, MerchantChange, MerchantHandle, MerchantMsg,
    PostReceipt,
};
use crate::clock::SharedClock;
use crate::disbursements::actor::DisbursementMsg;
use crate::disbursements::context::PayoutContext;
use crate::disbursements::host::{DisbursementHost, WeakHost};
use crate::domain::catalog::{self, DEFAULT_ORGANIZATION_ID};
use crate::domain::{
    Bank, Catalog, Credentials, Ewallet, FeesPatch, LimitsPatch, MerchantRecord, MerchantSettings, Organization,
    SettlementBank, SettlementType,
};
use crate::error::EngineError;
use crate::ledger::{self, Account, EntryProposal, LedgerError, MerchantBook};
use crate::limits;
use crate::money::MinorUnits;
use crate::store::journal::{self, Journal};
use crate::store::record::JournalRecord;
use crate::store::{Store, StoreError};
use crate::timers::{Timers, Wake, WakeSink};
use crate::vendor::PayoutVendor;
use ractor::RpcReplyPort;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;
use uuid::Uuid;

/// Where and how the engine keeps its data.
#[derive(Clone)]
pub struct EngineConfig {
    /// Holds `journal/` and `state/`.
    pub data_dir: PathBuf,
    /// How often to checkpoint.
    pub checkpoint_interval: Duration,
    /// Actors with no message for this long stop (and are rebuilt on demand).
    pub actor_idle_timeout: Duration,
    /// Idempotency keys a merchant actor keeps in memory before it looks
    /// older ones up in storage.
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
        }
    }
}

/// A new merchant as an admin describes it (`POST /admin/v1/merchants`).
#[derive(Clone, Debug, Default)]
pub struct NewMerchant {
    /// Display name.
    pub name: String,
    /// WALLET or MANUAL.
    pub settlement_type: Option<SettlementType>,
    /// Defaults to the platform's own organization.
    pub organization_id: Option<Uuid>,
    /// Payout destination.
    pub settlement_bank: Option<SettlementBank>,
    /// Fee overrides.
    pub fees: FeesPatch,
    /// Limit overrides.
    pub limits: LimitsPatch,
    /// Webhook URL.
    pub default_notify_url: Option<String>,
    /// Makes `X-Signature` mandatory.
    pub require_signature: bool,
}

/// An admin change of a merchant, before validation.
#[derive(Clone, Debug, Default)]
pub struct MerchantPatch {
    /// Fee overrides.
    pub fees: Option<FeesPatch>,
    /// Limit overrides.
    pub limits: Option<LimitsPatch>,
    /// `Some(None)` clears it.
    pub default_notify_url: Option<Option<String>>,
    /// Activate or deactivate.
    pub is_active: Option<bool>,
    /// Require `X-Signature`.
    pub require_signature: Option<bool>,
    /// Payout destination.
    pub settlement_bank: Option<SettlementBank>,
}

/// What `verify_ledger` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerReport {
    /// No problem found and all balances sum to zero.
    pub balanced: bool,
    /// Entries checked.
    pub entries: u64,
    /// Merchants checked.
    pub merchants: u64,
    /// Every broken invariant, in words.
    pub problems: Vec<String>,
    /// Platform-wide balance of every account: a sum over merchants, which
    /// can pass what one i64 holds.
    pub accounts: BTreeMap<&'static str, i128>,
}

/// The engine handle; cheap to clone.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<EngineInner>,
}

pub(crate) struct EngineInner {
    store: Arc<Store>,
    journal: Journal,
    merchants: MerchantHandle,
    /// Every disbursement's actor, hosted per merchant.
    disbursements: DisbursementHost,
    clock: SharedClock,
    // Catalog edits are read-modify-write of shared records: one at a time.
    catalog_lock: tokio::sync::Mutex<()>,
    checkpoint_lock: tokio::sync::Mutex<()>,
    background: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    // Background tasks stop at their next safe point when this turns true;
    // aborting them could strand a blocking sled write that still holds the store.
    stopping: tokio::sync::watch::Sender<bool>,
    first_start: bool,
    actor_idle_timeout: Duration,
    ref_codes: Arc<crate::refcode::RefCodes>,
    orders: Arc<crate::orders::context::OrderContext>,
    allow_private_notify_urls: bool,
    // Attempts on one event are recorded one at a time; striped by event id.
    webhook_locks: [tokio::sync::Mutex<()>; 64],
    // Settlement runs one at a time (daily sequence numbers, no double runs).
    settlement_lock: tokio::sync::Mutex<()>,
    // One creation at a time per merchant and order id: a repeat waits and
    // is answered from the first, instead of asking the vendor again.
    order_creations: crate::keyed_locks::KeyedLocks<(Uuid, crate::domain::Source, String)>,
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
        let state_dir = config.data_dir.join("state");
        let first_start = !state_dir.exists() && !journal_dir.exists();
        std::fs::create_dir_all(&config.data_dir).map_err(StoreError::from)?;
        crate::store::check_data_format(&config.data_dir)?;
        let store = Arc::new(Store::open(&state_dir)?);
        let from_seq = store.checkpoint_seq()?;
        let outcome = journal::replay(&journal_dir, from_seq, |seq, payload| {
            store
                .apply_payload(seq, payload)
                .map_err(|e| journal::JournalError::Corrupt {
                    path: journal_dir.clone(),
                    offset: 0,
                    reason: e.to_string(),
                })
        })?;
        tracing::info!(
            checkpoint = from_seq,
            replayed = outcome.records_replayed,
            torn_bytes_cut = outcome.torn_bytes_cut,
            next_seq = outcome.next_seq,
            "recovered"
        );
        let journal = Journal::start(&journal_dir, outcome.next_seq)?;
        // Everything replayed is in the overlay now: make it the new checkpoint.
        let covered = store.checkpoint()?;
        journal.drop_segments_below(covered)?;

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
        let ref_codes = Arc::new(crate::refcode::RefCodes::starting_at(started_at));
        let merchants = MerchantHandle::new(MerchantActorSettings {
            store: store.clone(),
            journal: journal.clone(),
            clock: clock.clone(),
            idle_timeout: config.actor_idle_timeout,
            keys_in_memory: config.idempotency_keys_in_memory.max(1),
            ref_codes: ref_codes.clone(),
            created,
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
        let orders = Arc::new(crate::orders::context::OrderContext {
            store: store.clone(),
            merchants: merchants.clone(),
            actors: ActorRegistry::default(),
            sandbox_refund_delay: config.sandbox_refund_delay,
            http_client,
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
                actor_idle_timeout: config.actor_idle_timeout,
                ref_codes,
                orders,
                allow_private_notify_urls: config.allow_private_notify_urls,
                webhook_locks: std::array::from_fn(|_| tokio::sync::Mutex::new(())),
                settlement_lock: tokio::sync::Mutex::new(()),
                order_creations: Default::default(),
            }),
        };
        let _ = engine_slot.set(Arc::downgrade(&engine.inner));
        engine.track_background(timer_task);
        engine.seed_catalog().await?;
        engine.start_checkpointer(config.checkpoint_interval);
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
        Ok(engine)
    }

    /// The order creations in progress, by merchant, source and order id.
    pub(crate) fn order_creations(&self) -> &crate::keyed_locks::KeyedLocks<(Uuid, crate::domain::Source, String)> {
        &self.inner.order_creations
    }

    /// The engine's clock.
    pub fn clock(&self) -> &SharedClock {
        &self.inner.clock
    }

    async fn seed_catalog(&self) -> Result<(), EngineError> {
        let (missing_banks, missing_ewallets, missing_org) = {
            let catalog = self.inner.store.catalog();
            let banks: Vec<Bank> = catalog::seed_banks()
                .into_iter()
                .filter(|b| !catalog.banks.contains_key(&b.short_code))
                .collect();
            let ewallets: Vec<Ewallet> = catalog::seed_ewallets()
                .into_iter()
                .filter(|e| !catalog.ewallets.contains_key(&e.short_code))
                .collect();
            (
                banks,
                ewallets,
                !catalog.organizations.contains_key(&DEFAULT_ORGANIZATION_ID),
            )
        };
        // Only a first start (or a catalog never written) seeds; later admin
        // edits, such as a disabled bank, must stick.
        let catalog_never_written = missing_banks.len() == 10 && missing_ewallets.len() == 7;
        if !self.inner.first_start && !catalog_never_written {
            return Ok(());
        }
        for bank in missing_banks {
            self.write(JournalRecord::BankSaved(bank)).await?;
        }
        for ewallet in missing_ewallets {
            self.write(JournalRecord::EwalletSaved(ewallet)).await?;
        }
        if missing_org {
            let organization = Organization {
                id: DEFAULT_ORGANIZATION_ID,
                name: "Platform".into(),
                created_at_ms: self.now_ms(),
            };
            self.write(JournalRecord::OrganizationSaved(organization)).await?;
        }
        Ok(())
    }

    fn now_ms(&self) -> i64 {
        self.inner.clock.now().timestamp_millis()
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
                let due = last.elapsed() >= interval
                    || inner.store.pending_entries() >= limits::CHECKPOINT_PENDING_ENTRIES_MAX;
                if !due {
                    continue;
                }
                last = tokio::time::Instant::now();
                if let Err(error) = (Engine { inner }).checkpoint().await {
                    tracing::error!(%error, "checkpoint failed");
                }
            }
        });
        self.inner.background.lock().expect("background lock").push(task);
    }

    /// Writes the overlay of durable changes to sled, fsyncs it and drops
    /// the journal segments it covers. Returns the first sequence not covered.
    pub async fn checkpoint(&self) -> Result<u64, EngineError> {
        let _guard = self.inner.checkpoint_lock.lock().await;
        let store = self.inner.store.clone();
        let journal = self.inner.journal.clone();
        // Dropping segments unlinks files and fsyncs the directory: tens of
        // milliseconds on a busy disk, so off the runtime's two workers too.
        tokio::task::spawn_blocking(move || -> Result<u64, EngineError> {
            let covered = store.checkpoint()?;
            journal.drop_segments_below(covered)?;
            Ok(covered)
        })
        .await
        .map_err(|_| EngineError::ShuttingDown)?
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
        if final_checkpoint {
            if let Err(error) = self.checkpoint().await {
                tracing::error!(%error, "final checkpoint failed");
            }
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
    pub(crate) fn order_context(&self) -> &Arc<crate::orders::context::OrderContext> {
        &self.inner.orders
    }

    /// Platform-wide reference codes.
    pub(crate) fn ref_codes(&self) -> &crate::refcode::RefCodes {
        &self.inner.ref_codes
    }

    /// Whether notify URLs may name private hosts (sandbox mode).
    pub fn allows_private_notify_urls(&self) -> bool {
        self.inner.allow_private_notify_urls
    }

    /// Sandbox mode's refund delay; `None` in live mode.
    pub fn sandbox_refund_delay(&self) -> Option<Duration> {
        self.inner.orders.sandbox_refund_delay
    }

    /// How long actors stay without messages.
    pub(crate) fn actor_idle_timeout(&self) -> Duration {
        self.inner.actor_idle_timeout
    }

    /// A merchant by id.
    pub fn merchant(&self, merchant_id: Uuid) -> Option<Arc<MerchantRecord>> {
        self.inner.store.directory().get(&merchant_id)
    }

    /// The merchant an API key belongs to, checked in constant time.
    pub fn authenticate_api_key(&self, api_key: &str) -> Option<Arc<MerchantRecord>> {
        let hash = crate::domain::merchant::api_key_hash(api_key);
        let merchant = self.inner.store.directory().by_api_key_hash(&hash)?;
        merchant.credentials.api_key_matches(api_key).then_some(merchant)
    }

    /// The merchant a Legacy `clientId` belongs to.
    pub fn merchant_by_client_id(&self, client_id: &str) -> Option<Arc<MerchantRecord>> {
        self.inner.store.directory().by_client_id(client_id)
    }

    /// Every merchant id.
    pub fn merchant_ids(&self) -> Vec<Uuid> {
        self.inner.store.directory().ids()
    }

    /// Creates a merchant and returns it with its credentials (shown once).
    pub async fn create_merchant(&self, new: NewMerchant) -> Result<(MerchantRecord, Credentials), EngineError> {
        let name = new.name.trim().to_string();
        if name.is_empty() || name.chars().count() > limits::NAME_CHARS_MAX {
            return Err(EngineError::invalid("name", "must be 1 to 255 characters"));
        }
        let settlement_type = new
            .settlement_type
            .ok_or_else(|| EngineError::invalid("settlement_type", "must be WALLET or MANUAL"))?;
        let organization_id = new.organization_id.unwrap_or(DEFAULT_ORGANIZATION_ID);
        if !self.inner.store.catalog().organizations.contains_key(&organization_id) {
            return Err(EngineError::invalid("organization_id", "no such organization"));
        }
        if let Some(bank) = &new.settlement_bank {
            self.validate_settlement_bank(bank)?;
        }
        let fees = new
            .fees
            .apply_to(&Default::default())
            .map_err(|(f, r)| EngineError::invalid(f, r))?;
        let limits = new
            .limits
            .apply_to(&Default::default())
            .map_err(|(f, r)| EngineError::invalid(f, r))?;
        if let Some(url) = &new.default_notify_url {
            self.validate_notify_url("default_notify_url", url)?;
        }
        let credentials = loop {
            let candidate = Credentials::generate();
            if self
                .inner
                .store
                .directory()
                .by_client_id(&candidate.client_id)
                .is_none()
            {
                break candidate;
            }
        };
        let now = self.now_ms();
        let record = MerchantRecord {
            id: Uuid::new_v4(),
            organization_id,
            name,
            settlement_type,
            settlement_bank: new.settlement_bank,
            fees,
            limits,
            default_notify_url: new.default_notify_url,
            is_active: true,
            require_signature: new.require_signature,
            credentials: credentials.to_stored(),
            public_key_pem: None,
            created_at_ms: now,
            updated_at_ms: now,
        };
        self.write(JournalRecord::MerchantSaved(Box::new(record.clone())))
            .await?;
        Ok((record, credentials))
    }

    fn validate_settlement_bank(&self, bank: &SettlementBank) -> Result<(), EngineError> {
        if !self.inner.store.catalog().banks.contains_key(&bank.bank_short_code) {
            return Err(EngineError::invalid("settlement_bank.bank_short_code", "unknown bank"));
        }
        let digits = bank.account_number.chars().all(|c| c.is_ascii_digit());
        if !digits || !(5..=34).contains(&bank.account_number.len()) {
            return Err(EngineError::invalid(
                "settlement_bank.account_number",
                "must be 5 to 34 digits",
            ));
        }
        if bank.account_name.trim().is_empty() || bank.account_name.chars().count() > limits::NAME_CHARS_MAX {
            return Err(EngineError::invalid(
                "settlement_bank.account_name",
                "must be 1 to 255 characters",
            ));
        }
        Ok(())
    }

    /// Applies an admin change to a merchant's settings.
    pub async fn update_merchant(
        &self,
        merchant_id: Uuid,
        patch: MerchantPatch,
    ) -> Result<MerchantRecord, EngineError> {
        let current = self.merchant(merchant_id).ok_or(EngineError::MerchantNotFound)?;
        let fees = match &patch.fees {
            Some(p) => Some(p.apply_to(&current.fees).map_err(|(f, r)| EngineError::invalid(f, r))?),
            None => None,
        };
        // Limits are validated against the current ones here and re-applied
        // as a whole in the actor; concurrent admin PATCHes are last-writer-wins.
        let limits = match &patch.limits {
            Some(p) => Some(
                p.apply_to(&current.limits)
                    .map_err(|(f, r)| EngineError::invalid(f, r))?,
            ),
            None => None,
        };
        if let Some(Some(url)) = &patch.default_notify_url {
            self.validate_notify_url("default_notify_url", url)?;
        }
        if let Some(bank) = &patch.settlement_bank {
            self.validate_settlement_bank(bank)?;
        }
        let settings = MerchantSettings {
            fees,
            limits,
            default_notify_url: patch.default_notify_url,
            is_active: patch.is_active,
            require_signature: patch.require_signature,
            settlement_bank: patch.settlement_bank,
        };
        self.change_merchant(merchant_id, MerchantChange::Settings(settings))
            .await
    }

    async fn change_merchant(&self, merchant_id: Uuid, change: MerchantChange) -> Result<MerchantRecord, EngineError> {
        self.call_merchant(merchant_id, |reply| MerchantMsg::Change {
            change: change.clone(),
            reply,
        })
        .await?
    }

    /// Stores a merchant's RSA public key (PEM, SPKI or PKCS#1, 2048 bits or more).
    pub async fn set_public_key(&self, merchant_id: Uuid, pem: &str) -> Result<MerchantRecord, EngineError> {
        self.merchant(merchant_id).ok_or(EngineError::MerchantNotFound)?;
        crate::signing::parse_rsa_public_key(pem)?;
        self.change_merchant(merchant_id, MerchantChange::PublicKey(pem.trim().to_string()))
            .await
    }

    /// New API key and secrets; the old ones stop working at once.
    pub async fn rotate_credentials(&self, merchant_id: Uuid) -> Result<Credentials, EngineError> {
        let current = self.merchant(merchant_id).ok_or(EngineError::MerchantNotFound)?;
        let credentials = Credentials::rotate(current.credentials.client_id.clone());
        self.change_merchant(merchant_id, MerchantChange::Credentials(credentials.to_stored()))
            .await?;
        Ok(credentials)
    }

    /// Records one ledger entry for a merchant, durably.
    pub async fn post_entry(&self, merchant_id: Uuid, proposal: EntryProposal) -> Result<PostReceipt, EngineError> {
        Ok(self
            .call_merchant(merchant_id, |reply| MerchantMsg::Post {
                proposal: proposal.clone(),
                reply,
            })
            .await??)
    }

    /// Records many entries for one merchant in one message, durably.
    pub async fn post_entries(
        &self,
        merchant_id: Uuid,
        proposals: Vec<EntryProposal>,
    ) -> Result<Vec<Result<PostReceipt, LedgerError>>, EngineError> {
        if proposals.len() > limits::POST_BATCH_MAX {
            return Err(EngineError::invalid("proposals", "too many in one batch"));
        }
        self.call_merchant(merchant_id, |reply| MerchantMsg::PostBatch {
            proposals: proposals.clone(),
            reply,
        })
        .await
    }

    /// Reverses entry `seq` of a merchant, at most once.
    pub async fn reverse_entry(&self, merchant_id: Uuid, seq: u64, memo: &str) -> Result<PostReceipt, EngineError> {
        Ok(self
            .call_merchant(merchant_id, |reply| MerchantMsg::Reverse {
                seq,
                memo: memo.to_string(),
                reply,
            })
            .await??)
    }

    /// An operator credit into a WALLET merchant's wallet.
    pub async fn credit_wallet(
        &self,
        merchant_id: Uuid,
        amount: MinorUnits,
        reason: &str,
        idempotency_key: Option<String>,
    ) -> Result<PostReceipt, EngineError> {
        let merchant = self.merchant(merchant_id).ok_or(EngineError::MerchantNotFound)?;
        if merchant.settlement_type != SettlementType::Wallet {
            return Err(EngineError::NotWalletMerchant);
        }
        if !amount.is_positive() {
            return Err(EngineError::invalid("amount_minor", "must be at least 1"));
        }
        if reason.chars().count() > limits::MEMO_CHARS_MAX {
            return Err(EngineError::invalid("reason", "must be at most 1024 characters"));
        }
        if let Some(key) = &idempotency_key {
            validate_idempotency_key(key)?;
        }
        self.post_entry(
            merchant_id,
            ledger::wallet_credit(amount, reason.to_string(), idempotency_key),
        )
        .await
    }

    /// A merchant's book, as of every durable entry.
    pub async fn book(&self, merchant_id: Uuid) -> Result<MerchantBook, EngineError> {
        self.call_merchant(merchant_id, |reply| MerchantMsg::Book { reply })
            .await
    }

    /// The wallet balance of a WALLET merchant.
    pub async fn wallet_balance(&self, merchant_id: Uuid) -> Result<MinorUnits, EngineError> {
        let merchant = self.merchant(merchant_id).ok_or(EngineError::MerchantNotFound)?;
        if merchant.settlement_type != SettlementType::Wallet {
            return Err(EngineError::NotWalletMerchant);
        }
        Ok(self.book(merchant_id).await?.balance(Account::Wallet))
    }

    /// Recomputes every balance from the stored entries and checks the
    /// invariants of DESIGN.md 2 against the live books.
    pub async fn verify_ledger(&self) -> Result<LedgerReport, EngineError> {
        let mut report = LedgerReport {
            balanced: true,
            entries: 0,
            merchants: 0,
            problems: Vec::new(),
            accounts: BTreeMap::new(),
        };
        let mut totals = [0i128; 10];
        for merchant_id in self.merchant_ids() {
            report.merchants += 1;
            // The live book first: every entry it reflects is already in sled.
            let live = self.book(merchant_id).await?;
            let store = self.inner.store.clone();
            let (recomputed, count, problems) =
                tokio::task::spawn_blocking(move || recompute_book(&store, merchant_id, live.last_seq))
                    .await
                    .map_err(|_| EngineError::ShuttingDown)?;
            let durable = self.inner.store.durable_book(&merchant_id)?;
            if durable != live {
                report
                    .problems
                    .push(format!("merchant {merchant_id}: stored book differs from the live one"));
            }
            report.entries += count;
            report.problems.extend(problems);
            if recomputed != live {
                report
                    .problems
                    .push(format!("merchant {merchant_id}: live balances differ from the entries"));
            }
            for account in Account::ALL {
                totals[account.index()] += recomputed.balances[account.index()] as i128;
            }
        }
        let grand_total: i128 = totals.iter().sum();
        if grand_total != 0 {
            report
                .problems
                .push(format!("all balances sum to {grand_total}, not 0"));
        }
        for account in Account::ALL {
            report.accounts.insert(account.name(), totals[account.index()]);
        }
        report.balanced = report.problems.is_empty();
        Ok(report)
    }

    /// A bank by short code, without copying the catalog.
    pub fn bank(&self, short_code: &str) -> Option<Bank> {
        self.inner.store.catalog().banks.get(short_code).cloned()
    }

    /// An e-wallet by code, without copying the catalog.
    pub fn ewallet(&self, short_code: &str) -> Option<Ewallet> {
        self.inner.store.catalog().ewallets.get(short_code).cloned()
    }

    /// A copy of the catalog.
    pub fn catalog(&self) -> Catalog {
        self.inner.store.catalog().clone()
    }

    /// Bumped on every catalog change.
    pub fn catalog_version(&self) -> u64 {
        self.inner.store.catalog_version()
    }

    /// Creates an organization.
    pub async fn create_organization(&self, name: &str) -> Result<Organization, EngineError> {
        let name = name.trim();
        if name.is_empty() || name.chars().count() > limits::NAME_CHARS_MAX {
            return Err(EngineError::invalid("name", "must be 1 to 255 characters"));
        }
        let organization = Organization {
            id: Uuid::new_v4(),
            name: name.to_string(),
            created_at_ms: self.now_ms(),
        };
        self.write(JournalRecord::OrganizationSaved(organization.clone()))
            .await?;
        Ok(organization)
    }

    /// Enables or disables a bank, or adds one (a new code needs a name).
    pub async fn save_bank(
        &self,
        short_code: &str,
        is_enabled: bool,
        name: Option<String>,
    ) -> Result<Bank, EngineError> {
        let _guard = self.inner.catalog_lock.lock().await;
        let existing = self.inner.store.catalog().banks.get(short_code).cloned();
        let bank = match existing {
            Some(mut bank) => {
                bank.is_enabled = is_enabled;
                if let Some(name) = name {
                    bank.name = validated_name(&name)?;
                }
                bank
            }
            None => {
                validate_code(short_code)?;
                let name = name.ok_or_else(|| EngineError::invalid("name", "required for a new bank"))?;
                Bank {
                    id: catalog::catalog_id("bank", short_code),
                    name: validated_name(&name)?,
                    short_code: short_code.to_string(),
                    is_enabled,
                }
            }
        };
        self.write(JournalRecord::BankSaved(bank.clone())).await?;
        Ok(bank)
    }

    /// Enables or disables one of the seven e-wallets.
    pub async fn save_ewallet(&self, short_code: &str, is_enabled: bool) -> Result<Ewallet, EngineError> {
        let _guard = self.inner.catalog_lock.lock().await;
        let mut ewallet = self
            .inner
            .store
            .catalog()
            .ewallets
            .get(short_code)
            .cloned()
            .ok_or(EngineError::EwalletNotFound)?;
        ewallet.is_enabled = is_enabled;
        self.write(JournalRecord::EwalletSaved(ewallet.clone())).await?;
        Ok(ewallet)
    }

    /// How many merchant actors are running now.
    pub fn live_merchant_actors(&self) -> usize {
        self.inner.merchants.live_count()
    }

    /// Prometheus text for the engine's own counters.
    pub fn metrics_text(&self) -> String {
        use std::sync::atomic::Ordering::Relaxed;
        let stats = self.inner.journal.stats();
        let mut out = String::new();
        for (name, help, kind, value) in [
            (
                "paygate_journal_syncs_total",
                "Journal fdatasync calls.",
                "counter",
                stats.syncs.load(Relaxed),
            ),
            (
                "paygate_journal_records_total",
                "Journal records made durable.",
                "counter",
                stats.records.load(Relaxed),
            ),
            (
                "paygate_journal_bytes_total",
                "Journal bytes made durable.",
                "counter",
                stats.bytes.load(Relaxed),
            ),
            (
                "paygate_journal_durable_seq",
                "Highest durable journal sequence.",
                "gauge",
                self.inner.journal.durable_seq(),
            ),
            (
                "paygate_merchant_actors_live",
                "Merchant actors running.",
                "gauge",
                self.inner.merchants.live_count() as u64,
            ),
            (
                "paygate_disbursement_hosts_busy",
                "Merchants whose disbursement actors have work in hand.",
                "gauge",
                self.inner.disbursements.busy_merchants() as u64,
            ),
            (
                "paygate_disbursements_awaiting_first_step",
                "New disbursements not yet reviewed or handed to a vendor.",
                "gauge",
                self.inner.disbursements.starts_unhandled() as u64,
            ),
            (
                "paygate_merchants",
                "Merchants known.",
                "gauge",
                self.inner.store.directory().len() as u64,
            ),
        ] {
            out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"));
        }
        out
    }
}

fn recompute_book(store: &Store, merchant_id: Uuid, up_to_seq: u64) -> (MerchantBook, u64, Vec<String>) {
    let mut book = MerchantBook::new(merchant_id);
    let mut problems = Vec::new();
    let mut keys = HashSet::new();
    let mut count = 0;
    let entries = match store.entries_after(&merchant_id, 0) {
        Ok(entries) => entries,
        Err(error) => {
            problems.push(format!("merchant {merchant_id}: {error}"));
            Vec::new()
        }
    };
    for entry in entries {
        if entry.seq > up_to_seq {
            break;
        }
        count += 1;
        if let Some(key) = &entry.idempotency_key {
            if !keys.insert(key.clone()) {
                problems.push(format!(
                    "merchant {merchant_id}: idempotency key {key:?} moved money twice"
                ));
            }
        }
        if let Err(error) = book.apply(&entry) {
            problems.push(format!("merchant {merchant_id} entry {}: {error}", entry.seq));
            break;
        }
    }
    if book.last_seq != up_to_seq && problems.is_empty() {
        problems.push(format!(
            "merchant {merchant_id}: entries end at {} but the book is at {up_to_seq}",
            book.last_seq
        ));
    }
    (book, count, problems)
}

/// Checks an http(s) URL's shape and length.
pub(crate) fn validate_url(field: &str, url: &str) -> Result<(), EngineError> {
    let ok = (url.starts_with("http://") || url.starts_with("https://"))
        && url.len() <= limits::URL_CHARS_MAX
        && url.len() > "https://".len()
        && !url.chars().any(|c| c.is_whitespace() || c.is_control());
    if ok {
        Ok(())
    } else {
        Err(EngineError::invalid(field, "must be an http or https URL"))
    }
}

/// Checks an idempotency key's length and characters.
pub fn validate_idempotency_key(key: &str) -> Result<(), EngineError> {
    if key.is_empty() || key.chars().count() > limits::IDEMPOTENCY_KEY_CHARS_MAX || key.chars().any(|c| c.is_control())
    {
        return Err(EngineError::invalid(
            "idempotency_key",
            "must be 1 to 255 printable characters",
        ));
    }
    Ok(())
}

fn validate_code(code: &str) -> Result<(), EngineError> {
    let ok = !code.is_empty()
        && code.len() <= 32
        && code
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(EngineError::invalid("code", "must be 1 to 32 of A-Z, 0-9, _"))
    }
}

fn validated_name(name: &str) -> Result<String, EngineError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > limits::NAME_CHARS_MAX {
        return Err(EngineError::invalid("name", "must be 1 to 255 characters"));
    }
    Ok(name.to_string())
}
