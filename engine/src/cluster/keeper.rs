//! The lease keeper: a node's background tasks that hold its shards.
//!
//! - Every `RENEW_EVERY` it says it is alive and renews the leases it holds.
//!   A lease is acted on only until `LEASE - LEASE_MARGIN` after the send
//!   of its last renewal that succeeded, by the node's own monotonic clock:
//!   the database set the expiry no sooner than that send, so the node stops
//!   before the lease can expire, even when the database is unreachable.
//! - Every `RENEW_EVERY` it also spreads the shards: with `n` live nodes
//!   sorted by id, the node of rank `r` holds `64 / n` shards, one more when
//!   `r < 64 % n`, preferring shards `s` with `s % n == r`, so nodes agree
//!   without talking to each other. A node over its share releases shards
//!   (after its owner wrote what it holds), one under takes free ones.
//! - A stop releases every shard the same way and removes the node's
//!   heartbeat, so the others take its shards at once.

use super::{ClusterError, Leases, LEASE, LEASE_MARGIN, RENEW_EVERY, SHARDS};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A boxed future the owner's calls return.
pub type OwnerFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a node does as its shards come and go.
pub trait ShardOwner: Send + Sync + 'static {
    /// The node now holds `shard` under `epoch`: load its state and resume
    /// its work. An error gives the lease back.
    fn take(&self, shard: u16, epoch: i64) -> OwnerFuture<'_, Result<(), String>>;
    /// The node gives `shard` up (its share shrank, or it stops): stop
    /// taking changes for it and write what it holds. The lease is released
    /// after this returns.
    fn release(&self, shard: u16) -> OwnerFuture<'_, ()>;
    /// The lease is gone, or may be: stop acting on `shard` at once.
    fn lost(&self, shard: u16);
}

/// A shard this node holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owned {
    /// The lease epoch every append for the shard is written under.
    pub epoch: i64,
    /// Until when, by this node's clock, it may act on the shard.
    pub until: Instant,
    /// Whether its owner has loaded it (`ShardOwner::take` returned).
    pub ready: bool,
}

/// How long a database call of the keeper may take: a renewal answered
/// later than this could not be acted on anyway.
const CALL_TIMEOUT: Duration = Duration::from_secs(2);
/// How often leases past their own-clock deadline are looked for.
const EXPIRY_CHECK: Duration = Duration::from_millis(100);

struct Shared {
    leases: Leases,
    owner: Arc<dyn ShardOwner>,
    held: Mutex<BTreeMap<u16, Owned>>,
    /// The shards ready to serve, with their epochs.
    serving: watch::Sender<BTreeMap<u16, i64>>,
    renewals: AtomicU64,
    losses: AtomicU64,
}

impl Shared {
    /// Every shard held, with its epoch.
    fn held_epochs(&self) -> Vec<(u16, i64)> {
        let held = self.held.lock().expect("held lock");
        held.iter().map(|(&shard, owned)| (shard, owned.epoch)).collect()
    }

    fn publish(&self) {
        let serving: BTreeMap<u16, i64> = self
            .held
            .lock()
            .expect("held lock")
            .iter()
            .filter(|(_, owned)| owned.ready)
            .map(|(&shard, owned)| (shard, owned.epoch))
            .collect();
        self.serving.send_if_modified(|current| {
            let changed = *current != serving;
            *current = serving;
            changed
        });
    }

    /// Drops `shard` as lost, if it is still held under `epoch`.
    fn lose(&self, shard: u16, epoch: i64, why: &str) {
        let removed = {
            let mut held = self.held.lock().expect("held lock");
            match held.get(&shard) {
                Some(owned) if owned.epoch == epoch => held.remove(&shard).is_some(),
                _ => false,
            }
        };
        if removed {
            self.losses.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(shard, epoch, why, "shard lease lost: no longer acting on it");
            self.owner.lost(shard);
            self.publish();
        }
    }
}

async fn timed<T>(call: impl Future<Output = Result<T, ClusterError>>) -> Result<T, ClusterError> {
    tokio::time::timeout(CALL_TIMEOUT, call)
        .await
        .unwrap_or(Err(ClusterError::Timeout(CALL_TIMEOUT)))
}

/// A running keeper.
pub struct KeeperHandle {
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl KeeperHandle {
    /// Starts holding shards for the node of `leases`, reached by the others
    /// at `advertise_url`.
    pub fn start(leases: Leases, advertise_url: String, owner: Arc<dyn ShardOwner>) -> KeeperHandle {
        let shared = Arc::new(Shared {
            leases,
            owner,
            held: Mutex::new(BTreeMap::new()),
            serving: watch::channel(BTreeMap::new()).0,
            renewals: AtomicU64::new(0),
            losses: AtomicU64::new(0),
        });
        let (stop, stopped) = watch::channel(false);
        let tasks = vec![
            tokio::spawn(renew_loop(shared.clone(), advertise_url, stopped.clone())),
            tokio::spawn(expiry_loop(shared.clone(), stopped.clone())),
            tokio::spawn(balance_loop(shared.clone(), stopped)),
        ];
        KeeperHandle { shared, stop, tasks }
    }

    /// The shards ready to serve now, with their epochs.
    pub fn serving(&self) -> BTreeMap<u16, i64> {
        self.shared.serving.borrow().clone()
    }

    /// Follows the shards ready to serve as they change.
    pub fn subscribe(&self) -> watch::Receiver<BTreeMap<u16, i64>> {
        self.shared.serving.subscribe()
    }

    /// Lease renewals that succeeded, and leases lost, since the start.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.shared.renewals.load(Ordering::Relaxed),
            self.shared.losses.load(Ordering::Relaxed),
        )
    }

    /// Reads the same counts as `counts`, for as long as it is kept.
    pub fn counts_reader(&self) -> impl Fn() -> (u64, u64) + Send + Sync + 'static {
        let shared = self.shared.clone();
        move || {
            (
                shared.renewals.load(Ordering::Relaxed),
                shared.losses.load(Ordering::Relaxed),
            )
        }
    }

    /// Stops cleanly: every shard released after its owner wrote what it
    /// holds, and the node's heartbeat removed.
    pub async fn shutdown(mut self) {
        self.stop_tasks().await;
        let held = self.shared.held_epochs();
        for &(shard, epoch) in &held {
            release(&self.shared, shard, epoch).await;
        }
        if let Err(error) = timed(self.shared.leases.leave()).await {
            tracing::warn!(%error, "could not remove this node's heartbeat; the others wait for it to age");
        }
    }

    /// Stops without releasing anything, as a node that died would: its
    /// leases run out on their own.
    pub async fn abandon(mut self) {
        self.stop_tasks().await;
    }

    async fn stop_tasks(&mut self) {
        let _ = self.stop.send(true);
        for task in self.tasks.drain(..) {
            let _ = task.await;
        }
    }
}

impl Drop for KeeperHandle {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Releases `shard` held under `epoch`: the owner writes what it holds,
/// then the lease goes.
async fn release(shared: &Shared, shard: u16, epoch: i64) {
    shared.owner.release(shard).await;
    let released = timed(shared.leases.release(&[(shard, epoch)])).await;
    shared.held.lock().expect("held lock").remove(&shard);
    shared.publish();
    match released {
        Ok(()) => tracing::info!(shard, epoch, "shard released"),
        Err(error) => tracing::warn!(shard, epoch, %error, "shard given up; its lease runs out on its own"),
    }
}

/// A background task's beat: a tick every period until the keeper stops.
struct Ticks {
    interval: tokio::time::Interval,
    stopped: watch::Receiver<bool>,
}

impl Ticks {
    /// A tick every `period`, the first at once. A tick missed while a step
    /// ran late is not made up in a burst: each step looks at the state as
    /// it is then, so one catches up for all.
    fn every(period: Duration, stopped: watch::Receiver<bool>) -> Ticks {
        let mut interval = tokio::time::interval(period);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Ticks { interval, stopped }
    }

    /// Waits for the next tick: false once the keeper stops.
    async fn next(&mut self) -> bool {
        tokio::select! {
            _ = self.interval.tick() => true,
            _ = self.stopped.changed() => false,
        }
    }
}

async fn renew_loop(shared: Arc<Shared>, advertise_url: String, stopped: watch::Receiver<bool>) {
    let mut ticks = Ticks::every(RENEW_EVERY, stopped);
    while ticks.next().await {
        let sent = Instant::now();
        if let Err(error) = timed(shared.leases.heartbeat(&advertise_url)).await {
            tracing::warn!(%error, "cluster heartbeat failed");
        }
        let held = shared.held_epochs();
        if held.is_empty() {
            continue;
        }
        match timed(shared.leases.renew(&held)).await {
            Ok(renewed) => {
                shared.renewals.fetch_add(renewed.len() as u64, Ordering::Relaxed);
                {
                    let mut owned = shared.held.lock().expect("held lock");
                    for &(shard, epoch) in &held {
                        if renewed.binary_search(&shard).is_ok() {
                            if let Some(entry) = owned.get_mut(&shard).filter(|entry| entry.epoch == epoch) {
                                entry.until = sent + LEASE - LEASE_MARGIN;
                            }
                        }
                    }
                }
                for &(shard, epoch) in &held {
                    if renewed.binary_search(&shard).is_err() {
                        shared.lose(shard, epoch, "not renewed: taken by another node or expired");
                    }
                }
            }
            Err(error) => tracing::warn!(%error, shards = held.len(), "lease renewal failed"),
        }
    }
}

async fn expiry_loop(shared: Arc<Shared>, stopped: watch::Receiver<bool>) {
    let mut ticks = Ticks::every(EXPIRY_CHECK, stopped);
    while ticks.next().await {
        let now = Instant::now();
        let expired: Vec<(u16, i64)> = {
            let held = shared.held.lock().expect("held lock");
            held.iter()
                .filter(|(_, owned)| owned.until <= now)
                .map(|(&shard, owned)| (shard, owned.epoch))
                .collect()
        };
        for (shard, epoch) in expired {
            shared.lose(shard, epoch, "not renewed in time");
        }
    }
}

/// How many shards the node of `rank` among `live` nodes holds.
pub(super) fn share(live: usize, rank: usize) -> usize {
    let shards = SHARDS as usize;
    shards / live + usize::from(rank < shards % live)
}

/// Whether the node of `rank` among `live` nodes prefers `shard`.
fn prefers(shard: u16, live: usize, rank: usize) -> bool {
    shard as usize % live == rank
}

async fn balance_loop(shared: Arc<Shared>, stopped: watch::Receiver<bool>) {
    let mut ticks = Ticks::every(RENEW_EVERY, stopped);
    while ticks.next().await {
        if let Err(error) = balance(&shared).await {
            tracing::warn!(%error, "spreading the shards failed; trying again");
        }
    }
}

/// One step of spreading the shards: release those over this node's share,
/// or take free ones up to it.
async fn balance(shared: &Shared) -> Result<(), ClusterError> {
    let me = shared.leases.node_id().to_string();
    let mut live = timed(shared.leases.live_nodes()).await?;
    if !live.contains(&me) {
        live.push(me.clone());
        live.sort();
    }
    let rank = live.iter().position(|node| *node == me).expect("this node was added");
    let target = share(live.len(), rank);
    let held = shared.held_epochs();
    if held.len() > target {
        // Shards it does not prefer go first, the highest numbers first.
        let mut extras = held.clone();
        extras.sort_by_key(|&(shard, _)| (prefers(shard, live.len(), rank), std::cmp::Reverse(shard)));
        for &(shard, epoch) in extras.iter().take(held.len() - target) {
            release(shared, shard, epoch).await;
        }
        return Ok(());
    }
    if held.len() == target {
        return Ok(());
    }
    let mut free = timed(shared.leases.free_shards()).await?;
    free.sort_by_key(|&shard| (!prefers(shard, live.len(), rank), shard));
    free.truncate(target - held.len());
    if free.is_empty() {
        return Ok(());
    }
    let sent = Instant::now();
    let taken = timed(shared.leases.acquire(&free)).await?;
    {
        let mut owned = shared.held.lock().expect("held lock");
        for &(shard, epoch) in &taken {
            owned.insert(
                shard,
                Owned {
                    epoch,
                    until: sent + LEASE - LEASE_MARGIN,
                    ready: false,
                },
            );
        }
    }
    for (shard, epoch) in taken {
        match shared.owner.take(shard, epoch).await {
            Ok(()) => {
                let ready = {
                    let mut held = shared.held.lock().expect("held lock");
                    match held.get_mut(&shard).filter(|owned| owned.epoch == epoch) {
                        Some(owned) => {
                            owned.ready = true;
                            true
                        }
                        None => false,
                    }
                };
                if ready {
                    tracing::info!(shard, epoch, "shard taken");
                    shared.publish();
                } else {
                    // Lost while it was being loaded: what was loaded goes too.
                    shared.owner.lost(shard);
                }
            }
            Err(error) => {
                tracing::error!(shard, epoch, %error, "loading a shard failed; giving it back");
                release(shared, shard, epoch).await;
            }
        }
    }
    Ok(())
}
