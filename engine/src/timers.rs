//! One timer task for everything that waits on a payout vendor: the
//! sandbox's own settlements, inquiries of payouts still open at a vendor,
//! and account inquiries asked again. A heap of deadlines instead of a task
//! or an actor kept alive per item, so memory stays small while thousands
//! wait. Timers are not durable: after a restart the engine inquires every
//! payout still open and asks every account still unverified.

use crate::domain::DisbursementStatus;
use crate::engine::EngineInner;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Weak;
use tokio::sync::mpsc;
use tokio::time::{Duration, Instant};
use uuid::Uuid;

/// What falls due.
#[derive(PartialEq, Eq, PartialOrd, Ord, Clone, Copy, Debug)]
enum Wake {
    /// The sandbox vendor settles disbursement `id`: SUCCESS when true, else FAILED.
    Settle { id: Uuid, success: bool },
    /// Ask the vendor holding disbursement `id` what became of it.
    InquirePayout { id: Uuid },
    /// Ask the vendor about beneficiary `id`'s account again.
    CheckAccount { merchant_id: Uuid, id: Uuid },
}

/// A wake-up due at a time.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Due {
    at: Instant,
    wake: Wake,
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
                            // Each runs on its own: a vendor call must not hold up the heap.
                            let engine = engine.clone();
                            tokio::spawn(async move {
                                match due.wake {
                                    Wake::Settle { id, success } => {
                                        let outcome = if success {
                                            DisbursementStatus::Success
                                        } else {
                                            DisbursementStatus::Failed
                                        };
                                        engine.settle_payout(id, outcome).await
                                    }
                                    Wake::InquirePayout { id } => engine.inquire_payout(id).await,
                                    Wake::CheckAccount { merchant_id, id } => {
                                        engine.check_account(merchant_id, id).await
                                    }
                                }
                            });
                        }
                    }
                    _ = stopping.changed() => return,
                }
            }
        });
        (Timers { sender }, task)
    }

    fn after(&self, delay: Duration, wake: Wake) {
        let due = Due {
            at: Instant::now() + delay,
            wake,
        };
        // Fails only while shutting down; the next start takes it up again.
        let _ = self.sender.send(due);
    }

    /// The sandbox vendor's `outcome` for disbursement `id` arrives after `delay`.
    pub fn settle_after(&self, id: Uuid, delay: Duration, outcome: DisbursementStatus) {
        let success = outcome == DisbursementStatus::Success;
        self.after(delay, Wake::Settle { id, success });
    }

    /// Disbursement `id`'s vendor is asked about it after `delay`.
    pub fn inquire_after(&self, id: Uuid, delay: Duration) {
        self.after(delay, Wake::InquirePayout { id });
    }

    /// Beneficiary `id`'s account is asked about after `delay`.
    pub fn check_account_after(&self, merchant_id: Uuid, id: Uuid, delay: Duration) {
        self.after(delay, Wake::CheckAccount { merchant_id, id });
    }
}
