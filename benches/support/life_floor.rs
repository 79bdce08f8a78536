//! The floor of the engine benches: what a disbursement's life costs in
//! this architecture before any of its own work. Each merchant is a ractor
//! actor; a life is the turns and durable records no implementation of it
//! can skip: the caller's call to its merchant's actor, answered once a
//! record is durable; the hand-over, a turn of that actor and a second
//! record; the vendor's settlement after `delay`, from one timer task for
//! all lives (as the engine's `timers` task), a third turn and a third
//! record. Its state must outlive the journal, so every
//! `CHECKPOINT_INTERVAL` the final records of the lives settled since the
//! last checkpoint go to sled, in values of the engine's block size, made
//! durable as the engine's checkpoints make them: less than a checkpoint
//! of the engine writes, which adds ledger entries and indexes. The actors
//! decide nothing and the records are bytes of a real record's size, so
//! the engine against this floor is the cost of its own work (validation,
//! the ledger, the store's indexes, the vendor).

use paygate_engine::limits::CHECKPOINT_INTERVAL;
use paygate_engine::store::blocks::BLOCK_BYTES;
use paygate_engine::store::journal::{self, Continuation, Journal};
use paygate_engine::store::{fsync_tree, open_sled};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// A merchant actor that only journals.
struct FloorMerchant;

/// What a floor merchant is asked.
enum FloorMsg {
    /// A caller's creation: answered once its record is durable.
    Create(RpcReplyPort<()>),
    /// The hand-over of a created life (no caller waits).
    HandOver,
    /// The vendor's settlement (no caller waits).
    Settle,
}

/// What every floor merchant shares.
#[derive(Clone)]
struct Shared {
    journal: Arc<Journal>,
    record_bytes: usize,
    /// The vendor's settlement delay.
    delay: Duration,
    /// Lives created and not yet settled.
    open: Arc<AtomicUsize>,
    /// The timer task: settles each merchant's life at its instant.
    settlements: mpsc::UnboundedSender<(Instant, ActorRef<FloorMsg>)>,
    /// The final records durable since the last checkpoint took them.
    uncheckpointed: Arc<Mutex<Vec<u8>>>,
}

impl Actor for FloorMerchant {
    type Msg = FloorMsg;
    type State = Shared;
    type Arguments = Shared;

    async fn pre_start(&self, _: ActorRef<FloorMsg>, shared: Shared) -> Result<Shared, ActorProcessingErr> {
        Ok(shared)
    }

    async fn handle(
        &self,
        myself: ActorRef<FloorMsg>,
        message: FloorMsg,
        shared: &mut Shared,
    ) -> Result<(), ActorProcessingErr> {
        let settles = matches!(message, FloorMsg::Settle);
        let (then, waited): (Continuation, bool) = match message {
            FloorMsg::Create(reply) => {
                shared.open.fetch_add(1, Ordering::Relaxed);
                let then = Box::new(move || {
                    let _ = reply.send(());
                    let _ = myself.cast(FloorMsg::HandOver);
                });
                (then, true)
            }
            FloorMsg::HandOver => {
                let (settlements, delay) = (shared.settlements.clone(), shared.delay);
                let then = Box::new(move || {
                    let _ = settlements.send((Instant::now() + delay, myself));
                });
                (then, false)
            }
            FloorMsg::Settle => {
                let open = shared.open.clone();
                let then = Box::new(move || {
                    open.fetch_sub(1, Ordering::Relaxed);
                });
                (then, false)
            }
        };
        // A final record stays in memory until a checkpoint writes it, as
        // the engine's applier keeps a version in its overlay.
        let uncheckpointed = settles.then(|| shared.uncheckpointed.clone());
        let done: journal::Completion = Box::new(move |_, record| {
            if let Some(uncheckpointed) = uncheckpointed {
                uncheckpointed
                    .lock()
                    .expect("floor checkpoint lock")
                    .extend_from_slice(record);
            }
            Some(then)
        });
        shared
            .journal
            .queue_append(vec![7u8; shared.record_bytes], done, waited)
            .await?;
        Ok(())
    }
}

/// The floor's merchants and their journal, started in `dir`.
pub struct LifeFloor {
    merchants: Vec<ActorRef<FloorMsg>>,
    shared: Shared,
    /// The checkpoint task, and what tells it to end.
    checkpoints: (tokio::task::JoinHandle<()>, oneshot::Sender<()>),
}

impl LifeFloor {
    /// Starts `merchants` floor merchants over a new journal in `dir`.
    pub async fn start(dir: &std::path::Path, merchants: usize, record_bytes: usize, delay: Duration) -> LifeFloor {
        let outcome = journal::replay(dir, 0, |_, _| Ok(())).unwrap();
        let (settlements, mut due) = mpsc::unbounded_channel::<(Instant, ActorRef<FloorMsg>)>();
        // One delay for every life, so they fall due in the order they were
        // handed over: a queue, not a heap.
        tokio::spawn(async move {
            while let Some((at, merchant)) = due.recv().await {
                tokio::time::sleep_until(at.into()).await;
                let _ = merchant.cast(FloorMsg::Settle);
            }
        });
        let shared = Shared {
            journal: Arc::new(Journal::start(dir, outcome.next_seq).unwrap()),
            record_bytes,
            delay,
            open: Arc::new(AtomicUsize::new(0)),
            settlements,
            uncheckpointed: Arc::new(Mutex::new(Vec::new())),
        };
        let (end_checkpoints, ended) = oneshot::channel();
        let checkpoints = tokio::spawn(checkpoint_every_interval(
            dir.join("state"),
            shared.uncheckpointed.clone(),
            ended,
        ));
        let mut refs = Vec::with_capacity(merchants);
        for _ in 0..merchants {
            let (actor, _) = Actor::spawn(None, FloorMerchant, shared.clone()).await.unwrap();
            refs.push(actor);
        }
        LifeFloor {
            merchants: refs,
            shared,
            checkpoints: (checkpoints, end_checkpoints),
        }
    }

    /// `count` lives from `support::CALLERS` concurrent callers, spread over
    /// the merchants as `support::from_callers` spreads them; returns once
    /// every life is settled.
    pub async fn lives(&self, count: usize) -> Duration {
        let started = Instant::now();
        let next = Arc::new(AtomicU64::new(0));
        let mut tasks = Vec::with_capacity(crate::support::CALLERS);
        for _ in 0..crate::support::CALLERS {
            let (merchants, next) = (self.merchants.clone(), next.clone());
            tasks.push(tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                    if i >= count {
                        break;
                    }
                    let merchant = &merchants[i % merchants.len()];
                    let answer = merchant.call(FloorMsg::Create, None).await.unwrap();
                    assert!(matches!(answer, ractor::rpc::CallResult::Success(())));
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        while self.shared.open.load(Ordering::Relaxed) > 0 {
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        started.elapsed()
    }

    /// Stops the checkpoints (after the one under way), the merchants and
    /// the journal (the timer task ends with the last merchant's sender).
    pub async fn stop(self) {
        let (checkpoints, end) = self.checkpoints;
        let _ = end.send(());
        checkpoints.await.unwrap();
        for merchant in &self.merchants {
            merchant.stop(None);
        }
        self.shared.journal.shutdown().await;
    }
}

/// Every `CHECKPOINT_INTERVAL` until `ended`, writes the final records
/// taken from `uncheckpointed` to a sled database at `path` and makes them
/// durable, off the runtime's workers, as the engine's checkpointer does.
async fn checkpoint_every_interval(
    path: PathBuf,
    uncheckpointed: Arc<Mutex<Vec<u8>>>,
    mut ended: oneshot::Receiver<()>,
) {
    let db = open_sled(&path).unwrap();
    let mut interval = tokio::time::interval(CHECKPOINT_INTERVAL);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut next_key = 0u64;
    loop {
        tokio::select! {
            _ = interval.tick() => {}
            _ = &mut ended => break,
        }
        let records = std::mem::take(&mut *uncheckpointed.lock().expect("floor checkpoint lock"));
        if records.is_empty() {
            continue;
        }
        let (db, path) = (db.clone(), path.clone());
        next_key = tokio::task::spawn_blocking(move || {
            let mut batch = sled::Batch::default();
            for value in records.chunks(BLOCK_BYTES) {
                batch.insert(&next_key.to_be_bytes(), value);
                next_key += 1;
            }
            db.apply_batch(batch).unwrap();
            db.flush().unwrap();
            fsync_tree(&path).unwrap();
            next_key
        })
        .await
        .unwrap();
    }
}
