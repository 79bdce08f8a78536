//! A three-node cluster through faults: a node paused past
//! its lease writes nothing when it wakes and gives its shards up; the
//! database restarted under load costs 503s while it is down, loses nothing
//! acknowledged, and service resumes by itself; a key rotated through one
//! node is refused by every node at once.
//!
//! The tests run one at a time: each runs three nodes and a PostgreSQL, and
//! two of them at once on a small machine would starve the lease renewals
//! they measure.

mod support;

use paygate_engine::cluster::test_postgres::TestPostgres;
use paygate_engine::cluster::{shard_of, Database, Leases, ShardRecords};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::cluster::{metrics, owner_of, shards_of, start_cluster, wait_until_spread, NODE_IDS};
use support::{TestMerchant, TestServer};

static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn spread_cluster(pg: &TestPostgres) -> Vec<TestServer> {
    let nodes = start_cluster(pg, &[]);
    wait_until_spread(&nodes.iter().collect::<Vec<_>>(), Duration::from_secs(30)).await;
    nodes
}

/// The lease epoch of `shard` now.
async fn epoch_of(leases: &Leases, shard: u16) -> (Option<String>, i64) {
    let status = leases.status().await.unwrap();
    let lease = &status.shards[usize::from(shard)];
    (lease.node_id.clone(), lease.epoch)
}

async fn credit(node: &TestServer, merchant: &TestMerchant, amount: i64) -> support::Reply {
    node.admin_post(
        &format!("/admin/v1/merchants/{}/wallet/credit", merchant.id),
        json!({ "amount_minor": amount, "reason": "fault test" }),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_paused_past_its_lease_writes_nothing_and_gives_its_shards_up() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(pg) = TestPostgres::start() else { return };
    let nodes = spread_cluster(&pg).await;
    let leases = Leases::new(Database::connect(&pg.url()).await.unwrap(), "");
    let merchant = nodes[0].create_wallet_merchant().await;
    let shard = shard_of(merchant.id.parse().unwrap());
    let victim = owner_of(&nodes, shard).await;
    let other = (victim + 1) % 3;
    assert_eq!(nodes[other].credit(&merchant.id, 10_000).await, 10_000);
    let (owner, old_epoch) = epoch_of(&leases, shard).await;
    assert_eq!(owner.as_deref(), Some(NODE_IDS[victim]));

    // Paused past its lease: another node takes the shard under a new epoch
    // and writes to it.
    nodes[victim].signal(libc::SIGSTOP);
    let deadline = Instant::now() + Duration::from_secs(20);
    let new_epoch = loop {
        let (owner, epoch) = epoch_of(&leases, shard).await;
        if epoch > old_epoch && owner.as_deref() != Some(NODE_IDS[victim]) {
            break epoch;
        }
        assert!(
            Instant::now() < deadline,
            "nobody took shard {shard} from the paused node"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let taken = loop {
        let reply = credit(&nodes[other], &merchant, 1_000).await;
        if reply.status == StatusCode::OK {
            break reply.body["data"]["balance_minor"].as_i64().unwrap();
        }
        assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE, "{}", reply.body);
        assert!(Instant::now() < deadline, "the new owner never served shard {shard}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(taken, 11_000);
    let records = ShardRecords::new(Database::connect(&pg.url()).await.unwrap(), "");
    let written_before_wake = records.last_seq(shard).await.unwrap();

    // A write sent to the paused node waits in its socket; on waking it is
    // either refused (the append fails on the epoch) or sent on to the new
    // owner, never written under the old epoch.
    let stale = {
        let client = nodes[victim].client.clone();
        let url = format!(
            "{}/admin/v1/merchants/{}/wallet/credit",
            nodes[victim].base, merchant.id
        );
        tokio::spawn(async move {
            client
                .post(url)
                .bearer_auth(support::ADMIN_TOKEN)
                .json(&json!({ "amount_minor": 777, "reason": "sent to the paused node" }))
                .send()
                .await
                .map(|response| response.status())
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    nodes[victim].signal(libc::SIGCONT);
    let stale = stale.await.unwrap().expect("the woken node answers");
    assert!(
        stale == StatusCode::OK || stale == StatusCode::SERVICE_UNAVAILABLE,
        "{stale}"
    );
    eprintln!("the write sent to the paused node was answered {stale} on waking");
    let expected = if stale == StatusCode::OK { 11_777 } else { 11_000 };

    // Nothing of the shard after the takeover is under the old epoch.
    let after = records.read_after(shard, written_before_wake - 5, 1_000).await.unwrap();
    assert!(!after.is_empty());
    for record in &after {
        if record.seq > written_before_wake {
            assert_eq!(
                record.epoch, new_epoch,
                "seq {} written under epoch {}",
                record.seq, record.epoch
            );
        }
    }

    // The woken node gave the shards up: it counts the losses, and every node
    // answers the merchant as the new owner does.
    let mut lost = false;
    for _ in 0..100 {
        if metrics(&nodes[victim])
            .await
            .lines()
            .any(|line| line.starts_with("paygate_cluster_lease_losses_total ") && !line.ends_with(" 0"))
        {
            lost = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(lost, "the woken node never counted its lost leases");
    wait_until_spread(&nodes.iter().collect::<Vec<_>>(), Duration::from_secs(30)).await;
    for node in &nodes {
        assert_eq!(node.balance(&merchant.api_key).await, expected);
    }
    let statement = nodes[victim].statement(&merchant.api_key).await;
    assert_eq!(statement.len(), if expected == 11_777 { 3 } else { 2 });
    assert_eq!(nodes[victim].verify().await["balanced"], json!(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_restart_under_load_costs_503s_loses_nothing_and_heals_by_itself() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(pg) = TestPostgres::start() else { return };
    let nodes = spread_cluster(&pg).await;
    let mut merchants = Vec::new();
    for index in 0..6 {
        merchants.push(nodes[index % 3].create_wallet_merchant().await);
    }
    let bases: Vec<String> = nodes.iter().map(|node| node.base.clone()).collect();
    let acknowledged: Arc<Mutex<Vec<(usize, i64, i64)>>> = Arc::default();
    let refused: Arc<Mutex<Vec<Value>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let loads: Vec<_> = (0..merchants.len())
        .map(|index| {
            let (bases, id, stop) = (bases.clone(), merchants[index].id.clone(), stop.clone());
            let (acknowledged, refused) = (acknowledged.clone(), refused.clone());
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                let mut n = 0i64;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let url = format!("{}/admin/v1/merchants/{id}/wallet/credit", bases[n as usize % 3]);
                    let body = json!({ "amount_minor": n, "reason": "load" });
                    let sent = support::load::post_as_admin(&client, url, &body, Duration::from_secs(20)).await;
                    let Ok(response) = sent else { continue };
                    let status = response.status();
                    let body: Value = response.json().await.unwrap_or(Value::Null);
                    if status == StatusCode::OK {
                        let balance = body["data"]["balance_minor"].as_i64().unwrap();
                        acknowledged.lock().unwrap().push((index, n, balance));
                    } else {
                        refused
                            .lock()
                            .unwrap()
                            .push(json!({"status": status.as_u16(), "body": body}));
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before_outage = acknowledged.lock().unwrap().len();
    pg.stop();
    let outage = Instant::now();
    // Reads of owned shards go on while it is down (well inside the leases
    // the nodes renewed last), through every node.
    for (index, merchant) in merchants.iter().enumerate() {
        let reply = nodes[index % 3]
            .call(Method::GET, "/v1/balance", Some(&merchant.api_key), None)
            .await;
        assert_eq!(
            reply.status,
            StatusCode::OK,
            "a read while the database is down: {}",
            reply.body
        );
    }
    assert!(
        outage.elapsed() < Duration::from_secs(2),
        "the reads took {:?}",
        outage.elapsed()
    );
    // Down for 3 s, and longer (up to 20 s) until a write has met the
    // outage: under load, the writes in flight when it began may take that
    // long to be refused.
    while outage.elapsed() < Duration::from_secs(3)
        || (refused.lock().unwrap().is_empty() && outage.elapsed() < Duration::from_secs(20))
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    pg.start_again();
    // Service resumes by itself: writes are taken again through every node.
    let resumed_at = Instant::now();
    loop {
        let count = acknowledged.lock().unwrap().len();
        tokio::time::sleep(Duration::from_secs(1)).await;
        if acknowledged.lock().unwrap().len() > count + 20 {
            break;
        }
        assert!(
            resumed_at.elapsed() < Duration::from_secs(60),
            "writes did not resume after the database came back"
        );
    }
    eprintln!("writes resumed {:?} after the database restarted", resumed_at.elapsed());
    stop.store(true, Ordering::Relaxed);
    for load in loads {
        load.await.unwrap();
    }
    assert!(before_outage > 10, "the load hardly ran before the outage");

    // While it was down, writes were refused with 503 UNAVAILABLE and
    // nothing else.
    let refused = refused.lock().unwrap().clone();
    assert!(!refused.is_empty(), "no write was refused while the database was down");
    for refusal in &refused {
        assert_eq!(refusal["status"], 503, "{refusal}");
        assert_eq!(refusal["body"]["error"]["code"], "UNAVAILABLE", "{refusal}");
    }

    // Every acknowledged credit is in its merchant's wallet, through any node,
    // once every shard has an owner again (leases that ran out while the
    // database was away are taken anew, with 503s meanwhile) and every node
    // has read who that is.
    wait_until_spread(&nodes.iter().collect::<Vec<_>>(), Duration::from_secs(30)).await;
    let acknowledged = acknowledged.lock().unwrap().clone();
    for (index, merchant) in merchants.iter().enumerate() {
        let credited: Vec<i64> = acknowledged
            .iter()
            .filter(|(m, _, _)| *m == index)
            .map(|(_, amount, _)| *amount)
            .collect();
        let statement = nodes[index % 3].statement(&merchant.api_key).await;
        let lines: Vec<i64> = statement
            .iter()
            .map(|line| line["amount_minor"].as_i64().unwrap())
            .collect();
        for amount in &credited {
            assert!(
                lines.contains(amount),
                "merchant {index}: acknowledged credit {amount} lost"
            );
        }
        let highest = acknowledged
            .iter()
            .filter(|(m, _, _)| *m == index)
            .map(|(_, _, balance)| *balance)
            .max()
            .unwrap_or(0);
        assert!(nodes[(index + 1) % 3].balance(&merchant.api_key).await >= highest);
    }
    assert_eq!(nodes[2].verify().await["balanced"], json!(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_rotated_through_one_node_is_refused_by_every_node_at_once() {
    let _one = ONE_AT_A_TIME.lock().await;
    let Some(pg) = TestPostgres::start() else { return };
    let nodes = spread_cluster(&pg).await;
    let merchant = nodes[0].create_wallet_merchant().await;
    let owner = owner_of(&nodes, shard_of(merchant.id.parse().unwrap())).await;
    let through = (owner + 1) % 3;
    for node in &nodes {
        assert_eq!(node.balance(&merchant.api_key).await, 0);
    }
    let reply = nodes[through].rotate_credentials(&merchant.id).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let rotated_at = Instant::now();
    let new_key = reply.body["data"]["api_key"].as_str().unwrap().to_string();
    for node in &nodes {
        let old = node
            .call(Method::GET, "/v1/balance", Some(&merchant.api_key), None)
            .await;
        support::assert_v1_error(&old, 401, "INVALID_API_KEY");
        assert_eq!(node.balance(&new_key).await, 0);
    }
    assert!(
        rotated_at.elapsed() < Duration::from_secs(1),
        "{:?}",
        rotated_at.elapsed()
    );
    assert!(shards_of(&nodes[owner])
        .await
        .contains(&shard_of(merchant.id.parse().unwrap())));
}
