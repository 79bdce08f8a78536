//! The cluster's shared state against a real PostgreSQL: leases judged by
//! the database, fenced appends, and keepers that spread the shards, take
//! over a dead node's and stop acting before a lease they cannot renew
//! expires.

use super::keeper::share;
use super::test_postgres::TestPostgres;
use super::*;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a keeper asked of its node, in order: (`take` / `release` / `lost`, shard).
#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<(&'static str, u16)>>,
    /// The shards loaded and not yet released or lost, as a node's engines.
    loaded: Mutex<std::collections::BTreeSet<u16>>,
    /// How long the first `take` takes, and who hears that it started.
    slow_first_take: Option<(Duration, Mutex<Option<tokio::sync::oneshot::Sender<()>>>)>,
}

impl Recorder {
    fn count(&self, what: &str) -> usize {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter(|(kind, _)| *kind == what)
            .count()
    }
}

impl ShardOwner for Recorder {
    fn take(&self, shard: u16, _epoch: i64) -> keeper::OwnerFuture<'_, Result<(), String>> {
        self.events.lock().unwrap().push(("take", shard));
        let slow = self.slow_first_take.as_ref().and_then(|(delay, started)| {
            let started = started.lock().unwrap().take()?;
            let _ = started.send(());
            Some(*delay)
        });
        Box::pin(async move {
            if let Some(delay) = slow {
                tokio::time::sleep(delay).await;
            }
            self.loaded.lock().unwrap().insert(shard);
            Ok(())
        })
    }
    fn release(&self, shard: u16) -> keeper::OwnerFuture<'_, ()> {
        self.events.lock().unwrap().push(("release", shard));
        self.loaded.lock().unwrap().remove(&shard);
        Box::pin(async {})
    }
    fn lost(&self, shard: u16) {
        self.events.lock().unwrap().push(("lost", shard));
        self.loaded.lock().unwrap().remove(&shard);
    }
}

async fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "not done within {limit:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    started.elapsed()
}

async fn expire(database: &Database, shard: u16) {
    let client = database.client().await.unwrap();
    client
        .execute(
            "UPDATE shard_leases SET expires_at = now() - interval '1 second' WHERE shard = $1",
            &[&(shard as i32)],
        )
        .await
        .unwrap();
}

#[test]
fn merchants_map_to_shards_stably_and_evenly() {
    let id = Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
    assert_eq!(shard_of(id), shard_of(id));
    // Pinned: the mapping is part of the data format.
    assert_eq!(shard_of(id), (xxhash_rust::xxh3::xxh3_64(id.as_bytes()) % 64) as u16);
    let mut counts = [0usize; SHARDS as usize];
    for n in 0..64_000u128 {
        counts[shard_of(Uuid::from_u128(n.wrapping_mul(0x9e37_79b9_7f4a_7c15))) as usize] += 1;
    }
    assert!(counts.iter().all(|&count| (800..1200).contains(&count)), "{counts:?}");
    // Shares add up to every shard, differing by at most one.
    for live in 1..=7 {
        let shares: Vec<usize> = (0..live).map(|rank| share(live, rank)).collect();
        assert_eq!(shares.iter().sum::<usize>(), SHARDS as usize);
        assert!(shares.iter().max().unwrap() - shares.iter().min().unwrap() <= 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_are_taken_once_renewed_by_their_holder_and_released_for_others() {
    let Some(pg) = TestPostgres::start() else { return };
    let database = Database::connect(&pg.url()).await.unwrap();
    // A second connect finds the schema migrated and leaves it as it is.
    let database_b = Database::connect(&pg.url()).await.unwrap();
    let a = Leases::new(database.clone(), "node-a");
    let b = Leases::new(database_b, "node-b");

    assert_eq!(a.acquire(&[1, 2]).await.unwrap(), vec![(1, 1), (2, 1)]);
    assert_eq!(
        b.acquire(&[2, 3]).await.unwrap(),
        vec![(3, 1)],
        "a held lease is not taken"
    );
    assert_eq!(a.renew(&[(1, 1), (2, 1)]).await.unwrap(), vec![1, 2]);
    assert_eq!(
        b.renew(&[(1, 1)]).await.unwrap(),
        Vec::<u16>::new(),
        "only the holder renews"
    );

    a.release(&[(1, 1)]).await.unwrap();
    assert_eq!(b.acquire(&[1]).await.unwrap(), vec![(1, 2)], "taking bumps the epoch");
    assert_eq!(
        a.renew(&[(1, 1)]).await.unwrap(),
        Vec::<u16>::new(),
        "a lost lease is not renewed"
    );

    // An expired lease is never renewed, even by its holder: it is taken
    // again under a new epoch.
    expire(&database, 2).await;
    assert_eq!(a.renew(&[(2, 1)]).await.unwrap(), Vec::<u16>::new());
    assert_eq!(a.acquire(&[2]).await.unwrap(), vec![(2, 2)]);

    a.heartbeat("http://127.0.0.1:1").await.unwrap();
    let status = a.status().await.unwrap();
    assert_eq!(status.shards.len(), SHARDS as usize);
    let shard_1 = &status.shards[1];
    assert_eq!((shard_1.node_id.as_deref(), shard_1.epoch), (Some("node-b"), 2));
    assert!(shard_1.expires_in_s > 3.0 && shard_1.expires_in_s <= 5.0, "{shard_1:?}");
    assert_eq!(status.shards[9].node_id, None);
    assert!(status.shards[9].expires_in_s < 0.0);
    assert_eq!(status.nodes.len(), 1);
    assert_eq!(status.nodes[0].advertise_url, "http://127.0.0.1:1");
    assert_eq!(a.live_nodes().await.unwrap(), vec!["node-a".to_string()]);
    a.leave().await.unwrap();
    assert!(a.live_nodes().await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_under_a_lost_epoch_writes_nothing_and_the_check_is_what_stops_it() {
    let Some(pg) = TestPostgres::start() else { return };
    let database = Database::connect(&pg.url()).await.unwrap();
    let (leases_a, leases_b) = (Leases::new(database.clone(), "a"), Leases::new(database.clone(), "b"));
    let (records_a, records_b) = (
        ShardRecords::new(database.clone(), "a"),
        ShardRecords::new(database.clone(), "b"),
    );
    let append = |shard, epoch, seq, byte: u8| Append {
        shard,
        epoch,
        seq,
        record: vec![byte; 3],
    };
    assert_eq!(leases_a.acquire(&[5, 6]).await.unwrap(), vec![(5, 1), (6, 1)]);
    records_a
        .append(&[append(5, 1, 1, 1), append(5, 1, 2, 2), append(6, 1, 1, 9)])
        .await
        .unwrap();

    // The same batch again (a retry after a commit the writer did not see)
    // is taken as written; other records under those numbers are not.
    records_a.append(&[append(6, 1, 1, 9)]).await.unwrap();
    let clash = records_a.append(&[append(6, 1, 1, 8)]).await;
    assert!(matches!(clash, Err(ClusterError::Database(_))), "{clash:?}");
    assert_eq!(records_a.read_after(6, 0, 10).await.unwrap()[0].record, vec![9; 3]);

    // a pauses past its lease on shard 5; b takes it and writes.
    expire(&database, 5).await;
    assert_eq!(leases_b.acquire(&[5]).await.unwrap(), vec![(5, 2)]);
    let stale = records_a.append(&[append(5, 1, 3, 66), append(6, 1, 2, 66)]).await;
    assert!(
        matches!(stale, Err(ClusterError::Fenced(ref shards)) if shards == &vec![5]),
        "{stale:?}"
    );
    assert_eq!(
        records_a.last_seq(6).await.unwrap(),
        1,
        "nothing of a fenced batch is written"
    );
    records_b.append(&[append(5, 2, 3, 3)]).await.unwrap();

    let read: Vec<(i64, i64, u8)> = records_b
        .read_after(5, 0, 100)
        .await
        .unwrap()
        .iter()
        .map(|record| (record.seq, record.epoch, record.record[0]))
        .collect();
    assert_eq!(read, vec![(1, 1, 1), (2, 1, 2), (3, 2, 3)]);
    assert_eq!(records_b.read_after(5, 2, 100).await.unwrap().len(), 1);
    assert_eq!(records_b.last_seq(5).await.unwrap(), 3);

    // Without the check, the same stale append lands beside b's records:
    // the check, not anything else, is what kept it out.
    let mut unchecked = records_a.clone();
    unchecked.unfenced = true;
    unchecked.append(&[append(5, 1, 4, 66)]).await.unwrap();
    assert_eq!(records_b.last_seq(5).await.unwrap(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keepers_spread_the_shards_and_take_over_a_dead_nodes_and_a_stopped_nodes_at_once() {
    let Some(pg) = TestPostgres::start() else { return };
    let database = Database::connect(&pg.url()).await.unwrap();
    let keeper = |node: &str, owner: Arc<Recorder>| {
        KeeperHandle::start(
            Leases::new(database.clone(), node),
            format!("http://{node}.test"),
            owner,
        )
    };
    let owner_a = Arc::new(Recorder::default());
    let a = keeper("node-a", owner_a.clone());
    wait_until(Duration::from_secs(10), || a.serving().len() == 64).await;

    // A second node: the shards spread 32 and 32, b holding the odd ones.
    let owner_b = Arc::new(Recorder::default());
    let b = keeper("node-b", owner_b.clone());
    wait_until(Duration::from_secs(15), || {
        a.serving().len() == 32 && b.serving().len() == 32
    })
    .await;
    assert!(b.serving().keys().all(|shard| shard % 2 == 1), "{:?}", b.serving());
    assert_eq!(owner_a.count("release"), 32, "a released what b took, writing first");
    assert_eq!(owner_a.count("lost"), 0);
    let b_epochs: BTreeMap<u16, i64> = b.serving();

    // b dies (nothing released): a takes its shards once their leases run
    // out, each under a new epoch.
    b.abandon().await;
    let took = wait_until(Duration::from_secs(15), || a.serving().len() == 64).await;
    assert!(took >= Duration::from_secs(2), "a took live leases after {took:?}");
    let serving = a.serving();
    for (shard, epoch) in &b_epochs {
        assert!(
            serving[shard] > *epoch,
            "shard {shard} taken under epoch {}",
            serving[shard]
        );
    }

    // A clean stop releases at once: c joins, takes half, then stops, and a
    // holds everything again well within a lease.
    let owner_c = Arc::new(Recorder::default());
    let c = keeper("node-c", owner_c.clone());
    wait_until(Duration::from_secs(15), || c.serving().len() == 32).await;
    c.shutdown().await;
    assert_eq!(owner_c.count("release"), 32);
    let took = wait_until(Duration::from_secs(4), || a.serving().len() == 64).await;
    assert!(took < LEASE, "{took:?}");
    let (renewals, losses) = a.counts();
    assert!(renewals > 0);
    assert_eq!(losses, 0);
    a.shutdown().await;
    assert!(Leases::new(database, "x").live_nodes().await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cut_off_from_the_database_stops_acting_before_its_lease_expires_and_recovers_by_itself() {
    let Some(pg) = TestPostgres::start() else { return };
    let database = Database::connect(&pg.url()).await.unwrap();
    let owner = Arc::new(Recorder::default());
    let a = KeeperHandle::start(
        Leases::new(database.clone(), "a"),
        "http://a.test".into(),
        owner.clone(),
    );
    wait_until(Duration::from_secs(10), || a.serving().len() == 64).await;
    let epochs = a.serving();

    let cut = Instant::now();
    pg.stop();
    wait_until(Duration::from_secs(10), || a.serving().is_empty()).await;
    // A lease renewed just before the cut expires LEASE after it, by the
    // database's clock: a let every lease go before that.
    assert!(cut.elapsed() < LEASE, "gave up after {:?}", cut.elapsed());
    assert_eq!(owner.count("lost"), 64);

    pg.start_again();
    wait_until(Duration::from_secs(20), || a.serving().len() == 64).await;
    let again = a.serving();
    assert!(
        epochs.iter().all(|(shard, epoch)| again[shard] > *epoch),
        "retaken under new epochs"
    );
    a.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_covers_the_records_before_it_and_a_stale_owner_cannot_write_one() {
    let Some(pg) = TestPostgres::start() else { return };
    let database = Database::connect(&pg.url()).await.unwrap();
    let (leases_a, leases_b) = (Leases::new(database.clone(), "a"), Leases::new(database.clone(), "b"));
    let (records_a, records_b) = (
        ShardRecords::new(database.clone(), "a"),
        ShardRecords::new(database.clone(), "b"),
    );
    assert_eq!(leases_a.acquire(&[7]).await.unwrap(), vec![(7, 1)]);
    let batch: Vec<Append> = (1..=5)
        .map(|seq| Append {
            shard: 7,
            epoch: 1,
            seq,
            record: vec![seq as u8],
        })
        .collect();
    records_a.append(&batch).await.unwrap();
    assert_eq!(records_a.latest_snapshot(7).await.unwrap(), None);

    records_a.write_snapshot(7, 1, 3, b"state through 3").await.unwrap();
    assert_eq!(
        records_a.latest_snapshot(7).await.unwrap(),
        Some((3, b"state through 3".to_vec()))
    );
    let after: Vec<i64> = records_a
        .read_after(7, 0, 100)
        .await
        .unwrap()
        .iter()
        .map(|r| r.seq)
        .collect();
    assert_eq!(after, vec![4, 5], "the records a snapshot covers are dropped");
    assert_eq!(records_a.last_seq(7).await.unwrap(), 5);

    records_a.write_snapshot(7, 1, 5, b"state through 5").await.unwrap();
    assert!(records_a.read_after(7, 0, 100).await.unwrap().is_empty());
    assert_eq!(
        records_a.last_seq(7).await.unwrap(),
        5,
        "a snapshot keeps the sequence going"
    );

    expire(&database, 7).await;
    assert_eq!(leases_b.acquire(&[7]).await.unwrap(), vec![(7, 2)]);
    let stale = records_a.write_snapshot(7, 1, 6, b"stale").await;
    assert!(
        matches!(stale, Err(ClusterError::Fenced(ref shards)) if shards == &vec![7]),
        "{stale:?}"
    );
    assert_eq!(
        records_b.latest_snapshot(7).await.unwrap(),
        Some((5, b"state through 5".to_vec()))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalog_changes_reach_every_follower_in_order_within_a_second_and_after_a_database_restart() {
    let Some(pg) = TestPostgres::start() else { return };
    let node_a = SharedCatalog::new(Database::connect(&pg.url()).await.unwrap());
    let node_b = SharedCatalog::new(Database::connect(&pg.url()).await.unwrap());
    let seen: Arc<Mutex<BTreeMap<String, Option<Vec<u8>>>>> = Arc::default();
    let log: Arc<Mutex<Vec<i64>>> = Arc::default();
    let follower = {
        let (seen, log) = (seen.clone(), log.clone());
        node_b.follow(0, move |change| {
            log.lock().unwrap().push(change.version);
            seen.lock()
                .unwrap()
                .insert(format!("{}/{}", change.kind, change.id), change.body);
        })
    };
    let key = "merchant-key/m1";
    let v1 = node_a.put("merchant-key", "m1", b"key one").await.unwrap();
    let v2 = node_a.put("vendor", "v1", b"vendor").await.unwrap();
    assert!(v2 > v1);
    wait_until(Duration::from_secs(1), || follower.applied_through() >= v2).await;
    assert_eq!(seen.lock().unwrap()[key], Some(b"key one".to_vec()));

    // A rotation: node b sees the new key, never the old one again, within
    // a second of the write.
    let written = Instant::now();
    let v3 = node_a.put("merchant-key", "m1", b"key two").await.unwrap();
    wait_until(Duration::from_secs(1), || follower.applied_through() >= v3).await;
    assert!(written.elapsed() < Duration::from_secs(1));
    assert_eq!(seen.lock().unwrap()[key], Some(b"key two".to_vec()));

    let v4 = node_a.delete("vendor", "v1").await.unwrap();
    wait_until(Duration::from_secs(1), || follower.applied_through() >= v4).await;
    assert_eq!(seen.lock().unwrap()["vendor/v1"], None, "a deletion reaches followers");
    assert_eq!(node_a.get("vendor", "v1").await.unwrap().unwrap().body, None);
    assert_eq!(
        node_a
            .changes_after(v2, 10)
            .await
            .unwrap()
            .iter()
            .map(|c| c.version)
            .collect::<Vec<_>>(),
        vec![v3, v4],
        "an entry is listed once, at its newest version"
    );

    // The database restarts: the follower catches up by itself.
    pg.stop();
    pg.start_again();
    let v5 = node_a.put("merchant-key", "m1", b"key three").await.unwrap();
    wait_until(Duration::from_secs(5), || follower.applied_through() >= v5).await;
    assert_eq!(seen.lock().unwrap()[key], Some(b"key three".to_vec()));
    let log = log.lock().unwrap().clone();
    assert!(
        log.windows(2).all(|pair| pair[0] < pair[1]),
        "applied in version order: {log:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_lost_while_it_was_being_loaded_is_dropped_once_loaded() {
    let Some(pg) = TestPostgres::start() else { return };
    let database = Database::connect(&pg.url()).await.unwrap();
    let (started, heard) = tokio::sync::oneshot::channel();
    let owner = Arc::new(Recorder {
        events: Mutex::default(),
        loaded: Mutex::default(),
        slow_first_take: Some((LEASE + Duration::from_secs(1), Mutex::new(Some(started)))),
    });
    let a = KeeperHandle::start(
        Leases::new(database.clone(), "a"),
        "http://a.test".into(),
        owner.clone(),
    );
    heard.await.unwrap();
    // The database goes away while the first shard loads: every lease is
    // given up before the load ends.
    pg.stop();
    wait_until(Duration::from_secs(20), || {
        let events = owner.events.lock().unwrap();
        events.iter().filter(|(kind, _)| *kind == "take").count() == 64
            && events.iter().filter(|(kind, _)| *kind == "lost").count() >= 64
    })
    .await;
    // Every take has returned: nothing loaded is left for a shard the node
    // no longer holds, the slow one included.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(a.serving().is_empty(), "{:?}", a.serving());
    assert!(
        owner.loaded.lock().unwrap().is_empty(),
        "{:?}",
        owner.loaded.lock().unwrap()
    );
    a.abandon().await;
}
