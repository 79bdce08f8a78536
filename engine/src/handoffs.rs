//! New disbursements on their way to the payout vendor, handed over in
//! batches. Each merchant has at most one round in flight: a round takes
//! every disbursement of that merchant queued since its last round, decides
//! each one's next step (review at the threshold, else the vendor's answer)
//! and records the moves in one message to the merchant's actor, so one
//! journal record. While a round waits for durability the next one gathers,
//! so rounds grow with the load; and merchants never wait on each other (a
//! merchant whose actor or vendor call is stuck holds up only itself). A
//! spawned actor, a message and a record per disbursement were a third of
//! the engine's CPU under load. The vendor conversation itself, and every
//! later step, is `payouts.rs`.

use crate::actors::merchant::DisbursementMove;
use crate::domain::disbursement::lifecycle::DisbursementEvent;
use crate::domain::{Channel, Disbursement};
use crate::engine::{Engine, EngineInner};
use crate::payouts::Attempt;
use crate::vendor::PayoutVendor;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::task::JoinSet;
use uuid::Uuid;

/// Moves of one merchant recorded together, at most.
pub const HANDOFF_BATCH_MAX: usize = 1024;

/// How long after a failed round its disbursements are looked at again.
pub const HANDOFF_RETRY_AFTER: Duration = Duration::from_secs(10);

/// How long a stopping engine waits for the rounds in flight (a merchant
/// actor call gives up after 15 s; a vendor call may hang longer).
pub const HANDOFF_STOP_WAIT: Duration = Duration::from_secs(30);

/// Disbursements waiting for their merchant's next round.
#[derive(Default)]
struct Waiting {
    by_merchant: HashMap<Uuid, Vec<Arc<Disbursement>>>,
    /// Merchants whose queue was empty before their latest push, not yet
    /// seen by the task.
    fresh: Vec<Uuid>,
}

/// Where new disbursements wait.
#[derive(Default)]
struct Queue {
    waiting: Mutex<Waiting>,
    wake: Notify,
    // Queued or in a round not yet finished.
    unfinished: AtomicUsize,
}

impl Queue {
    /// Takes the next round of `merchant_id` (at most `HANDOFF_BATCH_MAX`), if it has one.
    fn take_round(&self, merchant_id: &Uuid) -> Option<Vec<Arc<Disbursement>>> {
        let mut waiting = self.waiting.lock().expect("hand-off queue lock");
        let queued = waiting.by_merchant.get_mut(merchant_id)?;
        if queued.len() > HANDOFF_BATCH_MAX {
            let rest = queued.split_off(HANDOFF_BATCH_MAX);
            return Some(std::mem::replace(queued, rest));
        }
        waiting.by_merchant.remove(merchant_id)
    }
}

/// Queues disbursements for the hand-off task.
#[derive(Clone)]
pub struct HandOffs {
    queue: Arc<Queue>,
}

impl HandOffs {
    /// Starts the task; it stops when the engine is dropped or `stopping`
    /// turns true, once the rounds in flight have finished. Disbursements
    /// still queued then are durable as PENDING and are handed over at the
    /// next start.
    pub(crate) fn start(
        engine: Weak<EngineInner>,
        mut stopping: tokio::sync::watch::Receiver<bool>,
    ) -> (HandOffs, tokio::task::JoinHandle<()>) {
        let queue = Arc::new(Queue::default());
        let task_queue = queue.clone();
        let task = tokio::spawn(async move {
            let queue = task_queue;
            // Each round ends with its merchant's id.
            let mut rounds: JoinSet<Uuid> = JoinSet::new();
            let mut busy: HashSet<Uuid> = HashSet::new();
            loop {
                // Merchants that may have a round to start now.
                let candidates: Vec<Uuid> = tokio::select! {
                    _ = queue.wake.notified() => {
                        std::mem::take(&mut queue.waiting.lock().expect("hand-off queue lock").fresh)
                    }
                    Some(finished) = rounds.join_next(), if !rounds.is_empty() => {
                        // Rounds catch their own panics, so an error is a round
                        // cancelled: only the runtime itself stopping does that.
                        let Ok(merchant_id) = finished else { return };
                        busy.remove(&merchant_id);
                        vec![merchant_id]
                    }
                    _ = stopping.changed() => {
                        let all_finished = async { while rounds.join_next().await.is_some() {} };
                        if tokio::time::timeout(HANDOFF_STOP_WAIT, all_finished).await.is_err() {
                            tracing::warn!(
                                rounds = rounds.len(),
                                "hand-off rounds still waiting at shutdown; their disbursements resume at the next start"
                            );
                        }
                        return;
                    }
                };
                let Some(inner) = engine.upgrade() else { return };
                let engine = Engine::from_inner(inner);
                for merchant_id in candidates {
                    if busy.contains(&merchant_id) {
                        continue; // its round's end starts the next one
                    }
                    let Some(batch) = queue.take_round(&merchant_id) else {
                        continue;
                    };
                    busy.insert(merchant_id);
                    rounds.spawn(round(engine.clone(), queue.clone(), merchant_id, batch));
                }
            }
        });
        (HandOffs { queue }, task)
    }

    /// Queues a disbursement just created (durable, PENDING).
    pub(crate) fn push(&self, disbursement: Arc<Disbursement>) {
        self.queue.unfinished.fetch_add(1, Ordering::AcqRel);
        let mut waiting = self.queue.waiting.lock().expect("hand-off queue lock");
        let merchant_id = disbursement.merchant_id;
        let queued = waiting.by_merchant.entry(merchant_id).or_default();
        let first = queued.is_empty();
        queued.push(disbursement);
        // A merchant with disbursements already queued is in `fresh` or has a
        // round in flight, whose end takes them.
        let wake = first && {
            let none_fresh = waiting.fresh.is_empty();
            waiting.fresh.push(merchant_id);
            none_fresh
        };
        drop(waiting);
        // A permit is kept when the task is busy, so no push is missed.
        if wake {
            self.queue.wake.notify_one();
        }
    }
}

/// One merchant's round; returns the merchant once its moves are durable
/// (or have failed), so the next round of that merchant may start.
async fn round(engine: Engine, queue: Arc<Queue>, merchant_id: Uuid, batch: Vec<Arc<Disbursement>>) -> Uuid {
    let ids: Vec<Uuid> = batch.iter().map(|d| d.id).collect();
    // A panic in a round (a vendor's, say) must not end the task: every
    // later disbursement would wait for the next start.
    let moved = std::panic::AssertUnwindSafe(engine.hand_off_merchant(merchant_id, batch));
    if futures_util::FutureExt::catch_unwind(moved).await.is_err() {
        tracing::error!(
            count = ids.len(),
            %merchant_id,
            "a hand-off round panicked; its disbursements are taken up again shortly"
        );
        engine.take_up_again_later(ids.clone());
    }
    queue.unfinished.fetch_sub(ids.len(), Ordering::AcqRel);
    merchant_id
}

impl Engine {
    /// Takes `ids` up again after `HANDOFF_RETRY_AFTER`, once whatever went
    /// wrong had time to settle.
    fn take_up_again_later(&self, ids: Vec<Uuid>) {
        let engine = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(HANDOFF_RETRY_AFTER).await;
            engine.take_up_again(ids).await;
        });
    }

    /// After a failed round: each disbursement not yet final is taken up
    /// again (`take_up`): queued again if never handed over, else inquired
    /// (a round that failed may have moved it without scheduling what follows).
    async fn take_up_again(&self, ids: Vec<Uuid>) {
        for id in ids {
            if self.is_stopping() {
                return; // the next start resumes what is open
            }
            match self.store().disbursement(&id) {
                Ok(Some(disbursement)) if !disbursement.status.is_terminal() => self.take_up(disbursement),
                Ok(_) => {}
                Err(error) => tracing::error!(%error, %id, "disbursement unreadable; resumed at the next start"),
            }
        }
    }

    /// New disbursements not yet through their hand-off round (queued, or
    /// in a round waiting for its record).
    pub fn disbursements_awaiting_handoff(&self) -> usize {
        self.handoffs().queue.unfinished.load(Ordering::Acquire)
    }

    /// The next step of each of one merchant's PENDING disbursements: IN_REVIEW
    /// at or above the review threshold, else to the first vendor of its
    /// route (`payouts.rs`: ON_PROCESS if it took it, FAILED with the money
    /// back if every vendor refused). With no vendor on its route it stays
    /// PENDING (creation refuses new ones meanwhile).
    async fn hand_off_merchant(&self, merchant_id: Uuid, disbursements: Vec<Arc<Disbursement>>) {
        let Some(merchant) = self.merchant(merchant_id) else {
            return;
        };
        let threshold = merchant.limits.review_threshold_minor;
        let mut reviews = Vec::new();
        let mut attempts = Vec::with_capacity(disbursements.len());
        let mut routes: Vec<(Channel, Vec<Arc<dyn PayoutVendor>>)> = Vec::with_capacity(2);
        for disbursement in disbursements {
            if disbursement.request_amount.get() >= threshold {
                reviews.push(DisbursementMove {
                    id: disbursement.id,
                    event: DisbursementEvent::HeldForReview,
                });
                continue;
            }
            // Looked up once per channel a round, not once per disbursement.
            let channel = disbursement.destination.channel();
            let vendors = match routes.iter().find(|(c, _)| *c == channel) {
                Some((_, vendors)) => vendors.clone(),
                None => {
                    let vendors = self.payout_route(merchant.organization_id, channel);
                    routes.push((channel, vendors.clone()));
                    vendors
                }
            };
            if vendors.is_empty() {
                continue;
            }
            attempts.push(Attempt {
                disbursement,
                vendors,
                refusals: Vec::new(),
            });
        }
        // A conversation with a vendor that pays for real is the
        // disbursement's only one: an inquiry waits for it.
        let mut conversations = Vec::new();
        for attempt in attempts.iter().filter(|a| a.vendors[0].pays_out_for_real()) {
            conversations.push(self.payout_conversations().lock(&attempt.disbursement.id).await);
        }
        let ids: Vec<Uuid> = reviews
            .iter()
            .map(|step| step.id)
            .chain(attempts.iter().map(|a| a.disbursement.id))
            .collect();
        if let Err(error) = self.hand_over(merchant_id, reviews, attempts).await {
            // A timed-out call may still be carried out later; either way
            // nobody waits on these now. Looked at again once things settle.
            tracing::error!(%error, %merchant_id, count = ids.len(), "disbursements not handed over; taken up again shortly");
            drop(conversations);
            self.take_up_again_later(ids);
        }
    }
}
