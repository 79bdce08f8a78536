//! One timer task for every disbursement waiting on its vendor: a heap of
//! deadlines instead of an actor kept alive per disbursement, so memory
//! stays small while thousands wait. Timers are not durable: after a restart
//! the disbursements still ON_PROCESS are resumed and ask the vendor again.

use crate::actors::disbursement::DisbursementMsg;
use crate::domain::DisbursementStatus;
use crate::engine::EngineInner;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Weak;
use tokio::sync::mpsc;
use tokio::time::{Duration, Instant};
use uuid::Uuid;

/// A vendor outcome due at a time.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Due {
    at: Instant,
    id: Uuid,
    outcome: Outcome,
}

/// `DisbursementStatus` ordered for the heap.
#[derive(PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
struct Outcome(u8);

impl From<DisbursementStatus> for Outcome {
    fn from(status: DisbursementStatus) -> Self {
        Outcome(if status == DisbursementStatus::Success { 1 } else { 0 })
    }
}

impl Outcome {
    fn status(self) -> DisbursementStatus {
        if self.0 == 1 {
            DisbursementStatus::Success
        } else {
            DisbursementStatus::Failed
        }
    }
}

/// Sends deadlines to the timer task.
#[derive(Clone)]
pub struct Timers {
    sender: mpsc::UnboundedSender<Due>,
}

impl Timers {
    /// Starts the task; it stops when the engine is dropped or `stopping` turns true.
    pub(crate) fn start(
        engine: Weak<EngineInner>,
        mut stopping: tokio::sync::watch::Receiver<bool>,
    ) -> (Timers, tokio::task::JoinHandle<()>) {
        let (sender, mut receiver) = mpsc::unbounded_channel::<Due>();
        let task = tokio::spawn(async move {
            let mut heap: BinaryHeap<Reverse<Due>> = BinaryHeap::new();
            loop {
                let next = heap
                    .peek()
                    .map(|Reverse(due)| due.at)
                    .unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
                tokio::select! {
                    received = receiver.recv() => match received {
                        Some(due) => heap.push(Reverse(due)),
                        None => return,
                    },
                    _ = tokio::time::sleep_until(next) => {
                        let Some(inner) = engine.upgrade() else { return };
                        let engine = crate::engine::Engine::from_inner(inner);
                        let now = Instant::now();
                        while heap.peek().is_some_and(|Reverse(due)| due.at <= now) {
                            let Reverse(due) = heap.pop().expect("peeked");
                            engine
                                .start_disbursement_actor(due.id, DisbursementMsg::Settle(due.outcome.status()))
                                .await;
                        }
                    }
                    _ = stopping.changed() => return,
                }
            }
        });
        (Timers { sender }, task)
    }

    /// The vendor's `outcome` for disbursement `id` arrives after `delay`.
    pub fn disbursement_outcome_after(&self, id: Uuid, delay: Duration, outcome: DisbursementStatus) {
        let due = Due {
            at: Instant::now() + delay,
            id,
            outcome: outcome.into(),
        };
        // Fails only while shutting down; the disbursement resumes at the next start.
        let _ = self.sender.send(due);
    }
}
