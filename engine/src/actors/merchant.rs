//! `MerchantActor`: one per merchant, the only writer of that merchant's
//! money and settings. It validates against its in-memory book, queues the
//! journal record and moves on; the reply is released by the journal's
//! applier once the record is synced and applied to sled.

use crate::actors::registry::ActorRegistry;
use crate::bloom::GrowingBloom;
use crate::clock::SharedClock;
use crate::domain::disbursement::lifecycle::DisbursementEvent;
use crate::domain::{Beneficiary, Disbursement, DisbursementRequest, MerchantRecord, StoredCredentials};
use crate::error::EngineError;
use crate::ledger::{Entry, EntryKind, EntryProposal, LedgerError, MerchantBook};
use crate::limits;
use crate::money::MinorUnits;
use crate::refcode::RefCodes;
use crate::store::journal::Journal;
use crate::store::record::JournalRecord;
use crate::store::{OrderLookup, Store, StoreError};
use foldhash::{HashMap, HashMapExt};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;
use uuid::Uuid;

mod batches;
mod beneficiaries;
mod disbursements;
mod journaling;
mod orders;
mod refunds;
mod settlements;

pub use batches::{BatchDraft, BatchOutcome};
pub use beneficiaries::BeneficiaryChange;
pub use orders::{OrderCommand, OrderOutcome};
pub use settlements::SettlementDraft;

/// What a durable ledger entry looks like to its caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostReceipt {
    /// The entry's per-merchant sequence number.
    pub seq: u64,
    /// The wallet balance right after this entry.
    pub wallet_balance: MinorUnits,
}

/// Settings changes, checked before they reach the actor: applying them
/// to the record as the actor holds it cannot fail.
pub trait SettingsChange: std::fmt::Debug + Send + Sync {
    /// Writes the changes into `record`.
    fn apply_to(&self, record: &mut MerchantRecord);
}

/// A change of a merchant's record.
#[derive(Clone, Debug)]
pub enum MerchantChange {
    /// Fees, limits, flags, URLs.
    Settings(Arc<dyn SettingsChange>),
    /// A validated PEM public key.
    PublicKey(String),
    /// New credentials (rotation).
    Credentials(StoredCredentials),
}

/// Messages a merchant actor handles, one at a time.
pub enum MerchantMsg {
    /// Record one entry.
    Post {
        proposal: EntryProposal,
        reply: RpcReplyPort<Result<PostReceipt, LedgerError>>,
    },
    /// Record many entries; replies once all are durable.
    PostBatch {
        proposals: Vec<EntryProposal>,
        reply: RpcReplyPort<Vec<Result<PostReceipt, LedgerError>>>,
    },
    /// Reverse entry `seq` (at most once).
    Reverse {
        seq: u64,
        memo: String,
        reply: RpcReplyPort<Result<PostReceipt, LedgerError>>,
    },
    /// The book as of every durable entry so far.
    Book { reply: RpcReplyPort<MerchantBook> },
    /// Change the merchant's record.
    Change {
        change: MerchantChange,
        reply: RpcReplyPort<Result<MerchantRecord, EngineError>>,
    },
    /// Create, verify or delete a beneficiary.
    ChangeBeneficiary {
        change: BeneficiaryChange,
        reply: RpcReplyPort<Result<Beneficiary, EngineError>>,
    },
    /// Create a disbursement and debit the wallet, in one journal record.
    CreateDisbursement {
        request: DisbursementRequest,
        reply: RpcReplyPort<Result<Arc<Disbursement>, EngineError>>,
    },
    /// Create a batch's disbursements, each on its own (a refusal stops
    /// only its item), in one journal record with the batch; or answer
    /// with the batch its key made before. Replies once durable.
    CreateDisbursements {
        draft: BatchDraft,
        reply: RpcReplyPort<Result<BatchOutcome, EngineError>>,
    },
    /// Move disbursements, each to its next status; FAILED and REJECTED give
    /// the full amount back. Replies once every move is durable, with each
    /// disbursement after its move or why it could not move.
    MoveDisbursements {
        /// The moves, in order.
        moves: Vec<DisbursementMove>,
        /// One result per move.
        reply: RpcReplyPort<Vec<Result<Arc<Disbursement>, EngineError>>>,
    },
    /// Create, pay, expire or fail an order; create or settle a refund.
    Order {
        /// What to do.
        command: OrderCommand,
        /// The result, once durable.
        reply: RpcReplyPort<Result<OrderOutcome, EngineError>>,
    },
    /// Stop if idle for long enough.
    IdleCheck,
}

/// An event of one disbursement, as asked of its merchant's actor (the
/// transitions are in `domain::disbursement::lifecycle`).
#[derive(Clone, Debug)]
pub struct DisbursementMove {
    /// Which.
    pub id: Uuid,
    /// What happened to it.
    pub event: DisbursementEvent,
    /// Whether a caller waits on it promptly (an approval, a sandbox
    /// completion, a vendor's callback). The rest (a hand-over, an inquiry's
    /// answer, the sandbox vendor's own outcome) are background records
    /// that may wait a few milliseconds to share a sync
    /// (`Journal::queue_append`).
    pub waited: bool,
}

/// Every key of one kind a merchant ever used, as a Bloom filter of their
/// hashes while there are at most `cap` (`complete`): a key it has never
/// seen is new without a storage read (which a checkpoint can stall). Past
/// the cap it gives up, and every lookup reads storage.
pub(crate) struct KnownKeys {
    filter: GrowingBloom,
    complete: bool,
    cap: usize,
}

impl KnownKeys {
    fn loaded(loaded: Option<impl IntoIterator<Item = u128>>, cap: usize) -> KnownKeys {
        KnownKeys {
            complete: loaded.is_some(),
            filter: loaded.map(|hashes| hashes.into_iter().collect()).unwrap_or_default(),
            cap,
        }
    }

    /// False only when the key was certainly never used.
    pub(crate) fn may_contain(&self, hash: u128) -> bool {
        !self.complete || self.filter.may_contain(hash)
    }

    pub(crate) fn insert(&mut self, hash: u128) {
        if !self.complete {
            return;
        }
        if self.filter.len() >= self.cap {
            self.complete = false;
            self.filter = GrowingBloom::new();
        } else {
            self.filter.insert(hash);
        }
    }
}

/// The actor behaviour; state lives in `MerchantState`.
pub struct MerchantActor;

/// Where a created disbursement goes once it is durable: its own actor's
/// first message.
pub type CreatedDisbursements = Arc<dyn Fn(Arc<Disbursement>) + Send + Sync>;

/// What a merchant actor needs to start.
pub struct MerchantArgs {
    /// Whose actor.
    pub merchant_id: Uuid,
    /// sled state.
    pub store: Arc<Store>,
    /// The journal.
    pub journal: Journal,
    /// Time.
    pub clock: SharedClock,
    /// Where to deregister on idle stop.
    pub registry: Arc<ActorRegistry<MerchantMsg>>,
    /// Stop after this long without a message.
    pub idle_timeout: std::time::Duration,
    /// Idempotency keys kept in memory.
    pub keys_in_memory: usize,
    /// Platform-wide reference codes.
    pub ref_codes: Arc<RefCodes>,
    /// Where a created disbursement goes once durable: its own actor.
    pub created: CreatedDisbursements,
    /// The cluster shard the engine serves, which new disbursement ids fall in.
    pub shard: Option<u16>,
}

/// A merchant actor's state.
pub struct MerchantState {
    args: MerchantArgs,
    profile: MerchantRecord,
    book: MerchantBook,
    /// Entry idempotency key hashes (see `Store::key_hash`) with their
    /// entries, for the entries storage may not hold yet: forgotten with the
    /// recent entries, once nothing is in flight.
    recent_keys: HashMap<u128, u64>,
    /// Every entry idempotency key hash this merchant ever used, while they fit.
    known_entry_keys: KnownKeys,
    recent_entries: VecDeque<Arc<Entry>>,
    in_flight: Arc<AtomicUsize>,
    last_activity: Instant,
    /// Disbursements written recently, by id and by key hash: authoritative
    /// while their records may still be in flight, and forgotten once
    /// storage holds them all (`forget_what_storage_has`).
    disbursements: HashMap<Uuid, Arc<Disbursement>>,
    disbursement_keys: HashMap<u128, Uuid>,
    /// The WIB day and its running sum of request amounts not reversed.
    daily_total: Option<(i64, MinorUnits)>,
    /// Every disbursement idempotency key hash, while they fit: a key not
    /// in it is new without a storage read (which a checkpoint can stall).
    known_disbursement_keys: KnownKeys,
    /// The same for order ids (`Store::order_id_hash`) and order
    /// `Idempotency-Key`s (`Store::key_hash`).
    known_order_ids: KnownKeys,
    known_order_keys: KnownKeys,
    /// Orders and refunds written recently, forgotten the same way.
    orders: orders::RecentOrders,
    /// Batches made recently, by batch key hash, forgotten the same way.
    recent_batches: HashMap<u128, Arc<crate::domain::DisbursementBatch>>,
}

impl Actor for MerchantActor {
    type Msg = MerchantMsg;
    type State = MerchantState;
    type Arguments = MerchantArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<MerchantMsg>,
        args: MerchantArgs,
    ) -> Result<MerchantState, ActorProcessingErr> {
        let profile = args
            .store
            .directory()
            .get(&args.merchant_id)
            .ok_or("merchant not found")?;
        let book = args.store.durable_book(&args.merchant_id)?;
        let cap = args.keys_in_memory / 2;
        let known_entry_keys = KnownKeys::loaded(
            args.store
                .idempotency_index(&args.merchant_id, cap)?
                .map(|index| index.into_keys()),
            cap,
        );
        let load = |lookup: OrderLookup| -> Result<KnownKeys, StoreError> {
            Ok(KnownKeys::loaded(
                args.store.merchant_order_hashes(lookup, &args.merchant_id, cap)?,
                cap,
            ))
        };
        let known_disbursement_keys =
            KnownKeys::loaded(args.store.disbursement_key_hashes(&args.merchant_id, cap), cap);
        let (known_order_ids, known_order_keys) = (load(OrderLookup::OrderId)?, load(OrderLookup::IdempotencyKey)?);
        myself.send_interval(args.idle_timeout / 4, || MerchantMsg::IdleCheck);
        Ok(MerchantState {
            profile: (*profile).clone(),
            book,
            args,
            recent_keys: HashMap::new(),
            known_entry_keys,
            recent_entries: VecDeque::new(),
            in_flight: Arc::new(AtomicUsize::new(0)),
            last_activity: Instant::now(),
            disbursements: HashMap::new(),
            disbursement_keys: HashMap::new(),
            daily_total: None,
            orders: Default::default(),
            recent_batches: HashMap::new(),
            known_disbursement_keys,
            known_order_ids,
            known_order_keys,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<MerchantMsg>,
        message: MerchantMsg,
        state: &mut MerchantState,
    ) -> Result<(), ActorProcessingErr> {
        // ractor moves a message's handler future several times (into its
        // signal select, into its loop's future), and this one is kilobytes:
        // boxed, each move is a pointer.
        Box::pin(handle_message(myself, message, state)).await
    }
}

/// `MerchantActor::handle`'s body.
async fn handle_message(
    myself: ActorRef<MerchantMsg>,
    message: MerchantMsg,
    state: &mut MerchantState,
) -> Result<(), ActorProcessingErr> {
    if !matches!(message, MerchantMsg::IdleCheck) {
        state.last_activity = Instant::now();
        // Between messages everything an earlier one changed is queued, so
        // what storage holds may be forgotten here, and only here.
        state.forget_what_storage_has().await?;
    }
    match message {
        MerchantMsg::Post { proposal, reply } => {
            state.wait_for_room().await?;
            match state.record_entry(proposal) {
                Ok((entry, receipt)) => {
                    state
                        .journal_entry(entry, Box::new(move || drop(reply.send(Ok(receipt)))))
                        .await?;
                }
                Err(refusal) => state.reply_when_durable(reply, Err(refusal)).await?,
            }
        }
        MerchantMsg::PostBatch { proposals, reply } => {
            let mut results = Vec::with_capacity(proposals.len());
            for proposal in proposals.into_iter().take(limits::POST_BATCH_MAX) {
                state.wait_for_room().await?;
                match state.record_entry(proposal) {
                    Ok((entry, receipt)) => {
                        state.journal_entry(entry, Box::new(|| {})).await?;
                        results.push(Ok(receipt));
                    }
                    Err(refusal) => results.push(Err(refusal)),
                }
            }
            state.reply_when_durable(reply, results).await?;
        }
        MerchantMsg::Reverse { seq, memo, reply } => {
            state.wait_for_room().await?;
            let proposal = state.reversal_of(seq, memo);
            match proposal.and_then(|p| state.record_entry(p)) {
                Ok((entry, receipt)) => {
                    state
                        .journal_entry(entry, Box::new(move || drop(reply.send(Ok(receipt)))))
                        .await?;
                }
                Err(refusal) => state.reply_when_durable(reply, Err(refusal)).await?,
            }
        }
        MerchantMsg::Book { reply } => {
            if state.in_flight.load(Ordering::Acquire) > 0 && !state.args.journal.is_writable() {
                // The disk refuses the journal, so what is in flight may wait
                // there long: reads are answered now with the book as of the
                // durable entries, which reveals nothing a crash could lose.
                let _ = reply.send(state.args.store.durable_book(&state.args.merchant_id)?);
            } else {
                let book = state.book.clone();
                state.reply_when_durable(reply, book).await?;
            }
        }
        MerchantMsg::Change { change, reply } => {
            let mut next = state.profile.clone();
            match change {
                MerchantChange::Settings(changes) => changes.apply_to(&mut next),
                MerchantChange::PublicKey(pem) => next.public_key_pem = Some(pem),
                MerchantChange::Credentials(credentials) => next.credentials = credentials,
            }
            next.updated_at_ms = state.args.clock.now().timestamp_millis();
            state.profile = next.clone();
            let record = JournalRecord::MerchantSaved(Box::new(next.clone()));
            state
                .journal_record(record, Box::new(move || drop(reply.send(Ok(next)))))
                .await?;
        }
        MerchantMsg::ChangeBeneficiary { change, reply } => {
            // Beneficiary changes read the stored ones: let earlier writes land first.
            if state.in_flight.load(Ordering::Acquire) > 0 {
                state.args.journal.sync_point().await?;
            }
            match state.change_beneficiary(change) {
                Ok((changed, records)) => {
                    let record = JournalRecord::BeneficiariesSaved(records);
                    state
                        .journal_record(record, Box::new(move || drop(reply.send(Ok(changed)))))
                        .await?;
                }
                Err(refusal) => state.reply_when_durable(reply, Err(refusal)).await?,
            }
        }
        MerchantMsg::CreateDisbursement { request, reply } => {
            state.wait_for_room().await?;
            match state.create_disbursement(request) {
                Ok((disbursement, entry)) => {
                    let record = JournalRecord::DisbursementCreated {
                        disbursement: disbursement.clone(),
                        entry: (*entry).clone(),
                    };
                    // Sent to its own actor here, once durable, not by the
                    // caller: a caller that gives up waiting must not strand it.
                    let (to_actor, created) = (state.args.created.clone(), disbursement.clone());
                    let then = move || {
                        to_actor(created);
                        drop(reply.send(Ok(disbursement)));
                    };
                    state.journal_record(record, Box::new(then)).await?;
                }
                Err(refusal) => state.reply_when_durable(reply, Err(refusal)).await?,
            }
        }
        MerchantMsg::CreateDisbursements { draft, reply } => {
            state.create_disbursement_batch(draft, reply).await?;
        }
        MerchantMsg::MoveDisbursements { moves, reply } => {
            state.wait_for_room().await?;
            state.move_disbursements(moves, reply).await?;
        }
        MerchantMsg::Order { command, reply } => {
            state.wait_for_room().await?;
            // A settlement reads the stored unsettled orders: let earlier writes land first.
            if matches!(command, OrderCommand::Settle(_)) && state.in_flight.load(Ordering::Acquire) > 0 {
                state.args.journal.sync_point().await?;
            }
            let check = matches!(command, OrderCommand::Check(_));
            match state.order_command(command) {
                Ok((outcome, Some(record))) => {
                    state
                        .journal_record(record, Box::new(move || drop(reply.send(Ok(outcome)))))
                        .await?;
                }
                // "Not taken" reveals nothing that is not yet durable: no need to wait.
                Ok((outcome @ OrderOutcome::Order(_), None)) if check => drop(reply.send(Ok(outcome))),
                Ok((outcome, None)) => state.reply_when_durable(reply, Ok(outcome)).await?,
                Err(refusal) => state.reply_when_durable(reply, Err(refusal)).await?,
            }
        }
        MerchantMsg::IdleCheck => {
            state.forget_if_settled();
            let idle = state.last_activity.elapsed() >= state.args.idle_timeout;
            if idle && state.in_flight.load(Ordering::Acquire) == 0 {
                // Nothing is in flight, so the store's durable book equals this one.
                state.args.registry.remove(&state.args.merchant_id, myself.get_id());
                myself.stop(Some("idle".into()));
            }
        }
    }
    Ok(())
}

impl MerchantState {
    /// Validates a proposal and applies it to the in-memory book.
    fn record_entry(&mut self, proposal: EntryProposal) -> Result<(Arc<Entry>, PostReceipt), LedgerError> {
        let key_hash = proposal
            .idempotency_key
            .as_deref()
            .map(|key| self.args.store.key_hash(key));
        if let Some(hash) = key_hash {
            if let Some(seq) = self.find_idempotency_key(hash)? {
                return Err(LedgerError::DuplicateIdempotencyKey(seq));
            }
        }
        let entry = Arc::new(self.book.prepare(proposal, self.args.clock.now().timestamp_millis())?);
        self.book.apply(&entry)?;
        assert!(
            self.book.total() == 0,
            "a merchant book must sum to zero after every entry"
        );
        if let Some(hash) = key_hash {
            self.remember_key(hash, entry.seq);
        }
        if self.recent_entries.len() >= limits::RECENT_ENTRIES_MAX {
            self.recent_entries.pop_front();
        }
        self.recent_entries.push_back(entry.clone());
        let receipt = PostReceipt {
            seq: entry.seq,
            wallet_balance: self.book.balance(crate::ledger::Account::Wallet),
        };
        Ok((entry, receipt))
    }

    /// The entry that used key `hash`, if any. A storage error is an error,
    /// never a guess: "used" would refuse a new request as a duplicate, and
    /// "unused" could move money twice.
    fn find_idempotency_key(&mut self, hash: u128) -> Result<Option<u64>, LedgerError> {
        if let Some(seq) = self.recent_keys.get(&hash) {
            return Ok(Some(*seq));
        }
        if !self.known_entry_keys.may_contain(hash) {
            return Ok(None);
        }
        let store = &self.args.store;
        if let Some(seq) = store.overlay_key_lookup(&self.args.merchant_id, hash) {
            return Ok(Some(seq));
        }
        store
            .checkpointed_key_lookup(&self.args.merchant_id, hash)
            .map_err(|error| {
                tracing::error!(%error, "idempotency index unreadable");
                LedgerError::IndexUnreadable(error.to_string())
            })
    }

    fn remember_key(&mut self, key: u128, seq: u64) {
        self.recent_keys.insert(key, seq);
        self.known_entry_keys.insert(key);
    }

    fn reversal_of(&self, seq: u64, memo: String) -> Result<EntryProposal, LedgerError> {
        if seq == 0 || seq > self.book.last_seq {
            return Err(LedgerError::EntryNotFound(seq));
        }
        let original = match self.recent_entries.iter().find(|e| e.seq == seq) {
            Some(entry) => (**entry).clone(),
            None => self
                .args
                .store
                .entry(&self.args.merchant_id, seq)
                .ok()
                .flatten()
                .ok_or(LedgerError::EntryNotFound(seq))?,
        };
        if original.kind == EntryKind::Reversal {
            return Err(LedgerError::ReversalOfReversal(seq));
        }
        Ok(original.reversal(memo))
    }
}

/// Empties a map of recent records. One that grew past `RECENT_ROOM_KEPT`
/// is let go, so an idle merchant does not keep the room of its busiest
/// moment; a smaller one keeps its room for the next records.
pub(super) fn forget_all<K, V>(map: &mut HashMap<K, V>) {
    if map.capacity() > limits::RECENT_ROOM_KEPT {
        *map = HashMap::new();
    } else {
        map.clear();
    }
}

/// Empties the recent entries the same way.
pub(super) fn forget_entries(entries: &mut VecDeque<Arc<Entry>>) {
    if entries.capacity() > limits::RECENT_ROOM_KEPT {
        *entries = VecDeque::new();
    } else {
        entries.clear();
    }
}
