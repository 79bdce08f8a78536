//! One timer task for everything that waits on a payout vendor: the
//! sandbox's own settlements, inquiries of payouts still open at a vendor,
//! and account inquiries asked again. A heap of deadlines instead of a task
//! or an actor kept alive per item, so memory stays small while thousands
//! wait. Timers are not durable: after a restart the engine inquires every
//! payout still open and asks every account still unverified. The task
//! knows nothing of what it wakes: due items go to a sink the engine gives it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::time::{Duration, Instant};
use uuid::Uuid;

/// What falls due for a disbursement's actor.
#[derive(PartialEq, Eq, PartialOrd, Ord, Clone, Copy, Debug)]
pub enum DisbursementDue {
    /// The sandbox vendor settles it: SUCCESS when true, else FAILED.
    SandboxSettles { success: bool },
    /// Ask the vendor holding it what became of it.
    Inquiry,
    /// A turn failed: look again at where it stands.
    TakeUp,
}

/// What falls due.
#[derive(PartialEq, Eq, PartialOrd, Ord, Clone, Copy, Debug)]
pub enum Wake {
    /// A message for disbursement `id`'s actor.
    Disbursement {
        merchant_id: Uuid,
        id: Uuid,
        due: DisbursementDue,
    },
    /// Ask the vendor about beneficiary `id`'s account again.
    CheckAccount { merchant_id: Uuid, id: Uuid },
}

/// Where wake-ups go when due; it must not block (it hands them on).
pub type WakeSink = Arc<dyn Fn(Wake) + Send + Sync>;

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
    /// Wake-ups sent and not yet due: one or two per open disbursement, so
    /// it is bounded by `limits::DISBURSEMENTS_OPEN_MAX`. For `/metrics`.
    pending: Arc<std::sync::atomic::AtomicUsize>,
}

impl Timers {
    /// Starts the task; it stops when every `Timers` is dropped or
    /// `stopping` turns true. Wake-ups due go to `sink`.
    pub(crate) fn start(
        sink: WakeSink,
        mut stopping: tokio::sync::watch::Receiver<bool>,
    ) -> (Timers, tokio::task::JoinHandle<()>) {
        let (sender, mut receiver) = mpsc::unbounded_channel::<Due>();
        let pending = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let due_count = pending.clone();
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
                        let now = Instant::now();
                        while heap.peek().is_some_and(|Reverse(due)| due.at <= now) {
                            let Reverse(due) = heap.pop().expect("peeked");
                            due_count.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                            sink(due.wake);
                        }
                    }
                    _ = stopping.changed() => return,
                }
            }
        });
        (Timers { sender, pending }, task)
    }

    /// `wake` falls due after `delay`.
    pub fn after(&self, delay: Duration, wake: Wake) {
        let due = Due {
            at: Instant::now() + delay,
            wake,
        };
        // Fails only while shutting down; the next start takes it up again.
        // Counted before it can fall due, so the count never dips below zero.
        self.pending.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if self.sender.send(due).is_err() {
            self.pending.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Wake-ups not yet due.
    pub fn pending(&self) -> usize {
        self.pending.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Disbursement `id`'s actor gets `due` after `delay`.
    pub fn disbursement_after(&self, merchant_id: Uuid, id: Uuid, delay: Duration, due: DisbursementDue) {
        self.after(delay, Wake::Disbursement { merchant_id, id, due });
    }

    /// Beneficiary `id`'s account is asked about after `delay`.
    pub fn check_account_after(&self, merchant_id: Uuid, id: Uuid, delay: Duration) {
        self.after(delay, Wake::CheckAccount { merchant_id, id });
    }
}
