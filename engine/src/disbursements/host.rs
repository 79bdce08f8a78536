//! The host of disbursement actors, the way a silo hosts grains: each
//! merchant with disbursement work in hand has one runner task, which
//! activates an actor for each message, runs the actors of that merchant
//! side by side and each one's messages one at a time, in order, and drops
//! an actor as soon as its mailbox is empty, and ends when the merchant has
//! no work left. The moves its actors ask for reach the merchant's actor in
//! batches (`MoveRecorder`, shared by the merchant's actors), which the
//! runner sends. No task per disbursement, and merchants never wait on
//! each other: a merchant whose vendor hangs holds up only its own
//! hand-overs, for at most the vendor's timeout.

use super::actor::{DisbursementActor, DisbursementMsg};
use super::context::PayoutContext;
use super::hosting::Hosting;
use crate::domain::Disbursement;
use foldhash::{HashMap, HashMapExt};
use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::FutureExt;
use std::collections::hash_map::Entry;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;
use tokio::sync::Notify;
use uuid::Uuid;

/// How long a stopping engine waits for the messages being handled (a
/// merchant actor call gives up after 15 s; a vendor call may hang longer).
pub const HOST_STOP_WAIT: Duration = Duration::from_secs(30);

/// The mailboxes of one merchant's actors; an actor has one exactly while
/// a message of it is ready, in hand or waiting. An actor's first message
/// goes straight to the ready list, so the common actor with one message
/// never fills its queue (an empty `VecDeque` allocates nothing).
#[derive(Default)]
struct Mailboxes {
    /// Each active actor's messages after the one ready or in hand.
    by_actor: HashMap<Uuid, VecDeque<DisbursementMsg>>,
    /// The next message of each actor with no message in hand, in arrival order.
    ready: Vec<(Uuid, DisbursementMsg)>,
}

impl Mailboxes {
    fn post(&mut self, id: Uuid, message: DisbursementMsg) {
        match self.by_actor.entry(id) {
            Entry::Occupied(mut active) => active.get_mut().push_back(message),
            Entry::Vacant(idle) => {
                idle.insert(VecDeque::new());
                self.ready.push((id, message));
            }
        }
    }

    /// The next message of every ready actor, whose actors are then in hand.
    fn take_ready(&mut self) -> Vec<(Uuid, DisbursementMsg)> {
        std::mem::take(&mut self.ready)
    }

    /// An actor handled its message: its next one is ready, or it is
    /// dropped (passivated).
    fn handled(&mut self, id: Uuid) {
        if let Entry::Occupied(mut active) = self.by_actor.entry(id) {
            match active.get_mut().pop_front() {
                Some(next) => self.ready.push((id, next)),
                None => {
                    active.remove();
                }
            }
        }
    }

    /// `Start` messages not yet handled.
    fn starts(&self) -> usize {
        let waiting = self.by_actor.values().flatten();
        let ready = self.ready.iter().map(|(_, m)| m);
        waiting.chain(ready).filter(|m| m.is_start()).count()
    }

    /// Empties it, keeping what it allocated.
    fn clear(&mut self) {
        self.by_actor.clear();
        self.ready.clear();
    }

    fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    fn is_idle(&self) -> bool {
        self.by_actor.is_empty()
    }
}

/// How many merchants' mailboxes are kept, empty, after their runner ends,
/// so a merchant that has work again soon reuses them instead of allocating
/// them afresh; past it, an idle merchant's are dropped.
const IDLE_MERCHANTS_KEPT: usize = 4096;

/// Shards of the host's map of merchants.
const HOST_SHARDS: usize = 16;

/// One merchant's hosted actors.
struct MerchantActors {
    mail: Mutex<Mailboxes>,
    posted: Notify,
    hosting: Arc<Hosting>,
}

/// A merchant's actors, and whether its runner is running.
struct Hosted {
    actors: Arc<MerchantActors>,
    running: bool,
}

struct HostInner {
    ctx: Arc<PayoutContext>,
    /// Where runners run: mail also comes from threads outside the runtime
    /// (the journal's applier releases a creation's first message).
    runtime: tokio::runtime::Handle,
    /// Merchants with a runner, and some idle ones (`IDLE_MERCHANTS_KEPT`).
    /// `running` changes only under this lock, so mail is never left
    /// without a runner.
    /// Split in shards by merchant, so deliveries for different merchants
    /// seldom wait on one lock.
    merchants: Box<[Mutex<HashMap<Uuid, Hosted>>]>,
    stopping: AtomicBool,
    runners: AtomicUsize,
    runners_done: Notify,
    /// `Start` messages not yet handled.
    starts_unhandled: AtomicUsize,
}

impl HostInner {
    fn shard(&self, merchant_id: Uuid) -> &Mutex<HashMap<Uuid, Hosted>> {
        &self.merchants[(merchant_id.as_u128() % HOST_SHARDS as u128) as usize]
    }
}

/// Delivers messages to disbursement actors; cheap to clone.
#[derive(Clone)]
pub struct DisbursementHost {
    inner: Arc<HostInner>,
}

impl DisbursementHost {
    /// A host whose actors reach the engine through `ctx`; it must be made
    /// within the runtime its actors will run on.
    pub fn new(ctx: Arc<PayoutContext>) -> DisbursementHost {
        DisbursementHost {
            inner: Arc::new(HostInner {
                ctx,
                runtime: tokio::runtime::Handle::current(),
                merchants: (0..HOST_SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
                stopping: AtomicBool::new(false),
                runners: AtomicUsize::new(0),
                runners_done: Notify::new(),
                starts_unhandled: AtomicUsize::new(0),
            }),
        }
    }

    /// What the actors reach the engine through.
    pub fn context(&self) -> &Arc<PayoutContext> {
        &self.inner.ctx
    }

    /// A created disbursement's first message.
    pub fn start(&self, disbursement: Arc<Disbursement>) {
        let (merchant_id, id) = (disbursement.merchant_id, disbursement.id);
        self.deliver(merchant_id, id, DisbursementMsg::Start(disbursement));
    }

    /// Queues `message` for disbursement `id`'s actor. While stopping it is
    /// dropped: what it was for is durable and taken up at the next start,
    /// and a caller waiting for an answer hears `ShuttingDown`.
    pub fn deliver(&self, merchant_id: Uuid, id: Uuid, message: DisbursementMsg) {
        let inner = &self.inner;
        if inner.stopping.load(Ordering::Acquire) {
            return;
        }
        if message.is_start() {
            inner.starts_unhandled.fetch_add(1, Ordering::AcqRel);
        }
        let mut merchants = inner.shard(merchant_id).lock().expect("host lock");
        let hosted = merchants.entry(merchant_id).or_insert_with(|| Hosted {
            actors: Arc::new(MerchantActors {
                mail: Mutex::new(Mailboxes::default()),
                posted: Notify::new(),
                hosting: Arc::new(Hosting::new(inner.ctx.clone(), merchant_id)),
            }),
            running: false,
        });
        // Posted under the host lock: a runner retires only under it, after
        // seeing its mail empty.
        hosted.actors.mail.lock().expect("mailbox lock").post(id, message);
        let new = !hosted.running;
        hosted.running = true;
        let actors = hosted.actors.clone();
        drop(merchants);
        if new {
            inner.runners.fetch_add(1, Ordering::AcqRel);
            inner.runtime.spawn(run(inner.clone(), merchant_id, actors));
        } else {
            actors.posted.notify_one();
        }
    }

    /// New disbursements whose first message is not yet handled.
    pub fn starts_unhandled(&self) -> usize {
        self.inner.starts_unhandled.load(Ordering::Acquire)
    }

    /// Merchants with disbursement work in hand.
    pub fn busy_merchants(&self) -> usize {
        self.inner.runners.load(Ordering::Acquire)
    }

    /// Stops taking messages, lets the ones being handled finish (at most
    /// `HOST_STOP_WAIT`) and drops the rest: they are durable and taken up
    /// at the next start.
    pub async fn stop(&self) {
        let inner = &self.inner;
        inner.stopping.store(true, Ordering::Release);
        let runners: Vec<Arc<MerchantActors>> = inner
            .merchants
            .iter()
            .flat_map(|shard| {
                let hosted = shard.lock().expect("host lock");
                let running = hosted.values().filter(|hosted| hosted.running);
                running.map(|hosted| hosted.actors.clone()).collect::<Vec<_>>()
            })
            .collect();
        for actors in runners {
            actors.posted.notify_one();
        }
        let all_done = async {
            while inner.runners.load(Ordering::Acquire) > 0 {
                let done = inner.runners_done.notified();
                if inner.runners.load(Ordering::Acquire) == 0 {
                    break;
                }
                done.await;
            }
        };
        let finished = tokio::time::timeout(HOST_STOP_WAIT, all_done).await;
        // The idle merchants' mailboxes hold what their actors reach the
        // engine through (its store among it): dropped with the engine's stop.
        for shard in inner.merchants.iter() {
            shard.lock().expect("host lock").retain(|_, hosted| hosted.running);
        }
        if finished.is_err() {
            tracing::warn!(
                merchants = inner.runners.load(Ordering::Acquire),
                "disbursement messages still being handled at shutdown; their disbursements resume at the next start"
            );
        }
    }
}

/// The one message of moves in flight to the merchant's actor.
type Sending = Pin<Box<dyn Future<Output = ()> + Send>>;

/// What a runner woke for.
enum Woken {
    /// An actor handled its message: its id, and whether it was a `Start`.
    Handled(Uuid, bool),
    /// The message of moves in flight was answered.
    Sent,
    /// Mail came.
    Posted,
}

/// A merchant's runner: until the merchant has no work left, hands each
/// ready actor its next message, and sends the moves its actors ask for:
/// once it has polled every actor in hand, all that they asked for goes as
/// one message, and while it is in flight the next gathers.
async fn run(host: Arc<HostInner>, merchant_id: Uuid, actors: Arc<MerchantActors>) {
    // Of `handle`'s one future type, so no box per message.
    let mut handling = FuturesUnordered::new();
    let mut sending: Option<Sending> = None;
    loop {
        let stopping = host.stopping.load(Ordering::Acquire);
        let ready = if stopping {
            Vec::new()
        } else {
            actors.mail.lock().expect("mailbox lock").take_ready()
        };
        for (id, message) in ready {
            handling.push(handle(actors.hosting.clone(), merchant_id, id, message));
        }
        // No actor in hand, so none waits for a move.
        if handling.is_empty() && sending.is_none() {
            // Under load the next message is usually a moment away: one
            // yield spares retiring and spawning the runner again for it.
            tokio::task::yield_now().await;
            // While stopping, mail is left for the next start, not taken.
            if !stopping && actors.mail.lock().expect("mailbox lock").has_ready() {
                continue;
            }
            if retire(&host, merchant_id, &actors, stopping) {
                break;
            }
        }
        let posted = actors.posted.notified();
        tokio::pin!(posted);
        let woken = std::future::poll_fn(|cx| {
            if let Poll::Ready(Some((id, was_start))) = handling.poll_next_unpin(cx) {
                return Poll::Ready(Woken::Handled(id, was_start));
            }
            // Every actor in hand has been polled: what they asked for goes together.
            if sending.is_none() {
                if let Some(asked) = actors.hosting.recorder.take_asked() {
                    let hosting = actors.hosting.clone();
                    sending = Some(Box::pin(async move { hosting.recorder.send(asked).await }));
                }
            }
            if let Some(send) = sending.as_mut() {
                if send.as_mut().poll(cx).is_ready() {
                    sending = None;
                    return Poll::Ready(Woken::Sent);
                }
            }
            if posted.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Woken::Posted);
            }
            Poll::Pending
        })
        .await;
        if let Woken::Handled(id, was_start) = woken {
            if was_start {
                host.starts_unhandled.fetch_sub(1, Ordering::AcqRel);
            }
            actors.mail.lock().expect("mailbox lock").handled(id);
        }
    }
    if host.runners.fetch_sub(1, Ordering::AcqRel) == 1 {
        host.runners_done.notify_waiters();
    }
}

/// Ends the runner if its merchant has no mail (or the host is stopping,
/// when the mail left is dropped); false when mail came meanwhile.
fn retire(host: &HostInner, merchant_id: Uuid, actors: &MerchantActors, stopping: bool) -> bool {
    let mut merchants = host.shard(merchant_id).lock().expect("host lock");
    let mut mail = actors.mail.lock().expect("mailbox lock");
    if !mail.is_idle() && !stopping {
        return false;
    }
    let dropped_starts = mail.starts();
    host.starts_unhandled.fetch_sub(dropped_starts, Ordering::AcqRel);
    mail.clear();
    drop(mail);
    if merchants.len() > IDLE_MERCHANTS_KEPT / HOST_SHARDS || stopping {
        merchants.remove(&merchant_id);
    } else if let Some(hosted) = merchants.get_mut(&merchant_id) {
        hosted.running = false;
    }
    true
}

/// Activates disbursement `id`'s actor for `message`. A panic (a vendor's,
/// say) ends only this message: the actor is taken up again later, each
/// time later than the last while it keeps panicking.
async fn handle(hosting: Arc<Hosting>, merchant_id: Uuid, id: Uuid, message: DisbursementMsg) -> (Uuid, bool) {
    let was_start = message.is_start();
    let actor = DisbursementActor {
        id,
        merchant_id,
        hosting: hosting.clone(),
        waited: message.is_waited(),
    };
    if std::panic::AssertUnwindSafe(actor.handle(message))
        .catch_unwind()
        .await
        .is_err()
    {
        let panics = hosting.panicked(id);
        let actor = DisbursementActor {
            id,
            merchant_id,
            hosting,
            waited: false,
        };
        actor.take_up_after_panic(panics);
    } else {
        hosting.handled_cleanly(id);
    }
    (id, was_start)
}
