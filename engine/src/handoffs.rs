//! New disbursements on their way to the payout vendor, handed over in
//! batches. One task takes every disbursement created since its last round,
//! decides each one's next step (review at the threshold, else the vendor's
//! answer) and records each merchant's moves in one message to that
//! merchant's actor, so one journal record. A spawned actor, a message and a
//! record per disbursement were a third of the engine's CPU under load.
//! Later steps of one disbursement (its vendor outcome, a resume after a
//! restart) go to its `DisbursementActor`.

use crate::actors::merchant::DisbursementMove;
use crate::domain::{Disbursement, DisbursementStatus};
use crate::engine::{Engine, EngineInner};
use crate::error::EngineError;
use crate::vendor::PayoutVendor;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::Notify;
use uuid::Uuid;

/// Moves of one merchant recorded together, at most.
pub const HANDOFF_BATCH_MAX: usize = 1024;

/// How long after a failed round its disbursements are looked at again.
pub const HANDOFF_RETRY_AFTER: Duration = Duration::from_secs(10);

/// Where new disbursements wait for the next round.
#[derive(Default)]
struct Queue {
    pending: Mutex<Vec<Arc<Disbursement>>>,
    wake: Notify,
    // Queued or in a round not yet finished.
    unfinished: AtomicUsize,
}

/// Queues disbursements for the hand-off task.
#[derive(Clone)]
pub struct HandOffs {
    queue: Arc<Queue>,
}

impl HandOffs {
    /// Starts the task; it stops when the engine is dropped or `stopping`
    /// turns true. Disbursements still queued then are durable as PENDING
    /// and are handed over at the next start.
    pub(crate) fn start(
        engine: Weak<EngineInner>,
        mut stopping: tokio::sync::watch::Receiver<bool>,
    ) -> (HandOffs, tokio::task::JoinHandle<()>) {
        let queue = Arc::new(Queue::default());
        let waiting = queue.clone();
        let task = tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = waiting.wake.notified() => {}
                    _ = stopping.changed() => return,
                }
                // While a round waits for its records to be durable, the
                // next one gathers: the busier it is, the bigger the batch.
                let batch = std::mem::take(&mut *waiting.pending.lock().expect("hand-off queue lock"));
                let Some(inner) = engine.upgrade() else { return };
                let engine = Engine::from_inner(inner);
                let ids: Vec<Uuid> = batch.iter().map(|d| d.id).collect();
                // A panic in a round (a vendor's, say) must not end the task:
                // every later disbursement would wait for the next start.
                let round = std::panic::AssertUnwindSafe(engine.hand_off(batch));
                if futures_util::FutureExt::catch_unwind(round).await.is_err() {
                    tracing::error!(
                        count = ids.len(),
                        "a hand-off round panicked; its disbursements are taken up again shortly"
                    );
                    engine.take_up_again_later(ids.clone());
                }
                waiting.unfinished.fetch_sub(ids.len(), Ordering::AcqRel);
            }
        });
        (HandOffs { queue }, task)
    }

    /// Queues a disbursement just created (durable, PENDING).
    pub(crate) fn push(&self, disbursement: Arc<Disbursement>) {
        self.queue.unfinished.fetch_add(1, Ordering::AcqRel);
        let mut pending = self.queue.pending.lock().expect("hand-off queue lock");
        let was_empty = pending.is_empty();
        pending.push(disbursement);
        drop(pending);
        // A permit is kept when the task is busy, so no push is missed; a
        // non-empty queue already has one.
        if was_empty {
            self.queue.wake.notify_one();
        }
    }
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

    /// After a failed round: each disbursement still PENDING is queued again,
    /// each ON_PROCESS one asks the vendor when it settles (a round that timed
    /// out may have moved it without its outcome timer).
    async fn take_up_again(&self, ids: Vec<Uuid>) {
        for id in ids {
            if self.is_stopping() {
                return; // the next start resumes what is open
            }
            match self.store().disbursement(&id) {
                Ok(Some(disbursement)) if !disbursement.status.is_terminal() => self.take_up(disbursement).await,
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

    /// Hands a round of new disbursements over, each merchant's together.
    async fn hand_off(&self, batch: Vec<Arc<Disbursement>>) {
        let mut by_merchant: foldhash::HashMap<Uuid, Vec<Arc<Disbursement>>> = Default::default();
        for disbursement in batch {
            by_merchant
                .entry(disbursement.merchant_id)
                .or_default()
                .push(disbursement);
        }
        let mut rounds = Vec::with_capacity(by_merchant.len());
        for (merchant_id, mut disbursements) in by_merchant {
            while !disbursements.is_empty() {
                let rest = disbursements.split_off(disbursements.len().min(HANDOFF_BATCH_MAX));
                rounds.push(self.hand_off_merchant(merchant_id, disbursements));
                disbursements = rest;
            }
        }
        futures_util::future::join_all(rounds).await;
    }

    /// The next step of each of one merchant's PENDING disbursements: IN_REVIEW
    /// at or above the review threshold, else to the vendor, ON_PROCESS if it
    /// took it or FAILED (money back) if it refused.
    async fn hand_off_merchant(&self, merchant_id: Uuid, disbursements: Vec<Arc<Disbursement>>) {
        let threshold = self.merchant(merchant_id).map(|m| m.limits.review_threshold_minor);
        let vendor = self.payout_vendor();
        let steps: Vec<Step> = disbursements
            .iter()
            .filter_map(|disbursement| {
                if threshold.is_some_and(|t| disbursement.request_amount.get() >= t) {
                    let review = DisbursementMove {
                        id: disbursement.id,
                        to: DisbursementStatus::InReview,
                        vendor_disbursement_id: None,
                        reason: None,
                    };
                    return Some((review, None));
                }
                // No vendor: it stays PENDING (creation refuses new ones meanwhile).
                Some(vendor_step(vendor.as_deref()?, disbursement))
            })
            .collect();
        if steps.is_empty() {
            return;
        }
        let (moves, settles): (Vec<_>, Vec<_>) = steps.into_iter().unzip();
        let ids: Vec<Uuid> = moves.iter().map(|step| step.id).collect();
        let results = match self.move_disbursements(merchant_id, moves).await {
            Ok(results) => results,
            Err(error) => {
                // A timed-out call may still be carried out later; either way
                // nobody waits on these now. Looked at again once things settle.
                tracing::error!(%error, %merchant_id, count = ids.len(), "disbursements not handed over; taken up again shortly");
                self.take_up_again_later(ids);
                return;
            }
        };
        for (result, settles) in results.into_iter().zip(settles) {
            match result {
                // The timer task brings the outcome back; nothing waits meanwhile.
                Ok(moved) => {
                    if let Some((delay, outcome)) = settles {
                        self.timers().disbursement_outcome_after(moved.id, delay, outcome);
                    }
                }
                // Moved first by an operator or the sandbox: not this round's to move.
                Err(EngineError::InvalidStatus(_)) | Err(EngineError::DisbursementNotFound) => {}
                Err(error) => tracing::error!(%error, %merchant_id, "a disbursement was not handed over"),
            }
        }
    }
}

/// One disbursement's next step and, for a hand-over, when the vendor settles.
pub(crate) type Step = (DisbursementMove, Option<(Duration, DisbursementStatus)>);

/// The move the vendor's answer to a hand-over makes: ON_PROCESS with its
/// reference and when it settles, or FAILED (money back) with its reason.
pub(crate) fn vendor_step(vendor: &dyn PayoutVendor, disbursement: &Disbursement) -> Step {
    let (to, vendor_disbursement_id, reason, settles) = match vendor.submit(disbursement) {
        Ok(submission) => (
            DisbursementStatus::OnProcess,
            Some(submission.vendor_disbursement_id),
            None,
            submission.settles,
        ),
        Err(reason) => (DisbursementStatus::Failed, None, Some(reason), None),
    };
    let step = DisbursementMove {
        id: disbursement.id,
        to,
        vendor_disbursement_id,
        reason,
    };
    (step, settles)
}
