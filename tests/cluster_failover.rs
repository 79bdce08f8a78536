//! A node of a three-node cluster killed with SIGKILL under mixed load:
//! its shards are served by the others within 10 s, every
//! change any node acknowledged is found through any node, the payout
//! vendor is asked to take each payout at most once, every wallet is what
//! its ledger says, every final event is delivered; restarted, the node
//! takes its share back.

mod payout_double;
mod support;

use paygate_engine::cluster::test_postgres::TestPostgres;
use payout_double::PayoutDouble;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::cluster::{node_args, start_cluster, wait_until_spread, NODE_IDS};
use support::load::{final_event, paid_event, post_json, start_receiver};
use support::TestServer;

/// Merchants under load: enough that every node owns some of them.
const MERCHANTS: usize = 9;
/// The default organization, whose payout routing every merchant uses.
const DEFAULT_ORGANIZATION: &str = "00000000-0000-4000-8000-000000000001";

/// What some node answered 201 (or 200 for a payment) to.
#[derive(Default)]
struct Acknowledged {
    /// (merchant index, disbursement id)
    disbursements: Vec<(usize, String)>,
    /// (merchant index, order reference)
    orders: Vec<(usize, String)>,
    paid: Vec<(usize, String)>,
    /// (merchant index, order reference, refund id)
    refunds: Vec<(usize, String, String)>,
}

async fn post(client: &reqwest::Client, base: &str, key: &str, path: &str, body: Value) -> Option<(StatusCode, Value)> {
    post_json(client, base, key, path, body, Duration::from_secs(10)).await
}

/// One merchant's load until `stop`, each request to the next node in
/// turn: disbursements, and orders paid, one in three refunded. A node
/// that is down or a shard changing owner costs the request, nothing more.
async fn load(bases: Vec<String>, merchant: usize, key: String, stop: Arc<AtomicBool>, seen: Arc<Mutex<Acknowledged>>) {
    let client = reqwest::Client::new();
    let turn = AtomicUsize::new(merchant);
    let base = || bases[turn.fetch_add(1, Ordering::Relaxed) % bases.len()].clone();
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let body = json!({
            "idempotency_key": format!("m{merchant}-d{n}"), "channel": "BANK", "bank_short_code": "BCA",
            "account_number": "1234567890", "account_name": "Budi", "amount_minor": 10_000 + n,
        });
        if let Some((StatusCode::CREATED, reply)) = post(&client, &base(), &key, "/v1/disbursements", body).await {
            let id = reply["data"]["id"].as_str().unwrap().to_string();
            seen.lock().unwrap().disbursements.push((merchant, id));
        }
        let body = json!({ "merchant_order_id": format!("m{merchant}-o{n}"), "amount_minor": 500_000, "payment_method": "QRIS" });
        let Some((StatusCode::CREATED, order)) = post(&client, &base(), &key, "/v1/orders", body).await else {
            continue;
        };
        let reference = order["data"]["ref_code"].as_str().unwrap().to_string();
        seen.lock().unwrap().orders.push((merchant, reference.clone()));
        let path = format!("/v1/sandbox/orders/{reference}/pay");
        if !matches!(
            post(&client, &base(), &key, &path, json!({})).await,
            Some((StatusCode::OK, _))
        ) {
            continue;
        }
        seen.lock().unwrap().paid.push((merchant, reference.clone()));
        if n % 3 == 0 {
            let body = json!({ "amount_minor": 50_000, "idempotency_key": format!("m{merchant}-r{n}") });
            let path = format!("/v1/orders/{reference}/refund");
            if let Some((StatusCode::CREATED, refund)) = post(&client, &base(), &key, &path, body).await {
                let id = refund["data"]["id"].as_str().unwrap().to_string();
                seen.lock().unwrap().refunds.push((merchant, reference, id));
            }
        }
    }
}

async fn get(node: &TestServer, key: &str, path: &str) -> support::Reply {
    node.call(Method::GET, path, Some(key), None).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_killed_under_load_loses_nothing_pays_nothing_twice_and_its_shards_move() {
    let Some(pg) = TestPostgres::start() else { return };
    let (hook, receiver) = start_receiver(false).await;
    let acme = PayoutDouble::start("acme", "/acme/api").await;
    let settler = acme.spawn_settler(0xC1A5, Duration::from_millis(150), 0.5);
    let extra = ["--webhook-retry-scale", "0.001", "--vendor-retry-scale", "0.02"];
    let mut nodes = start_cluster(&pg, &extra);
    wait_until_spread(&nodes.iter().collect::<Vec<_>>(), Duration::from_secs(30)).await;
    acme.set_callback_target(Some(nodes[0].base.clone()));

    // The platform's payout vendor, told to every shard through one node.
    let vendor = json!({ "url": acme.url, "secret": acme.secret, "timeout_ms": 2_000, "payouts": true });
    let reply = nodes[1]
        .admin(Method::PUT, "/admin/v1/vendors/acme", Some(vendor))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    // Routed through another node, whose shards learn of the vendor within
    // a second.
    let path = format!("/admin/v1/organizations/{DEFAULT_ORGANIZATION}/payout-vendors/BANK");
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let reply = nodes[2]
            .admin(Method::PUT, &path, Some(json!({ "vendors": ["acme"] })))
            .await;
        if reply.status == StatusCode::OK {
            break;
        }
        assert!(Instant::now() < deadline, "{}", reply.body);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // And every shard learns of the route within a second.
    tokio::time::sleep(Duration::from_secs(1)).await;

    let limits = json!({ "rate_limit_per_second": 100_000, "rate_limit_burst": 100_000 });
    let victim = 2;
    let victim_shards = support::cluster::shards_of(&nodes[victim]).await;
    let on_victim = |merchant: &support::TestMerchant| {
        victim_shards.contains(&paygate_engine::cluster::shard_of(merchant.id.parse().unwrap()))
    };
    // A merchant's shard follows from its random id, not from the node that
    // made it: more are made, past MERCHANTS, until one is the victim's
    // (each has about a third of a chance).
    let mut merchants = Vec::new();
    let mut index = 0;
    while merchants.len() < MERCHANTS || !merchants.iter().any(on_victim) {
        assert!(index < 64, "no merchant on the node to be killed");
        let node = &nodes[index % 3];
        let merchant = node
            .create_merchant_with("WALLET", json!({ "default_notify_url": hook, "limits": limits }))
            .await;
        assert_eq!(node.credit(&merchant.id, 1_000_000_000_000).await, 1_000_000_000_000);
        merchants.push(merchant);
        index += 1;
    }

    let bases: Vec<String> = nodes.iter().map(|node| node.base.clone()).collect();
    let seen = Arc::new(Mutex::new(Acknowledged::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let loads: Vec<_> = merchants
        .iter()
        .enumerate()
        .map(|(index, merchant)| {
            tokio::spawn(load(
                bases.clone(),
                index,
                merchant.api_key.clone(),
                stop.clone(),
                seen.clone(),
            ))
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(3)).await;
    nodes[victim].kill();
    let killed_at = Instant::now();
    let took = wait_until_spread(&[&nodes[0], &nodes[1]], Duration::from_secs(10)).await;
    eprintln!("the killed node's shards were served again after {took:?}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::Relaxed);
    for load in loads {
        load.await.unwrap();
    }
    eprintln!("load stopped {:?} after the kill", killed_at.elapsed());

    let seen = std::mem::take(&mut *seen.lock().unwrap());
    eprintln!(
        "acknowledged: {} disbursements, {} orders, {} paid, {} refunds",
        seen.disbursements.len(),
        seen.orders.len(),
        seen.paid.len(),
        seen.refunds.len()
    );
    assert!(
        seen.disbursements.len() > 20 && seen.paid.len() > 20 && !seen.refunds.is_empty(),
        "the load hardly ran: {} disbursements, {} paid, {} refunds",
        seen.disbursements.len(),
        seen.paid.len(),
        seen.refunds.len()
    );
    let live = [&nodes[0], &nodes[1]];
    let key = |merchant: usize| merchants[merchant].api_key.as_str();

    // Every acknowledged change, through either live node.
    for (n, (merchant, reference)) in seen.orders.iter().enumerate() {
        let reply = get(live[n % 2], key(*merchant), &format!("/v1/orders/{reference}")).await;
        assert_eq!(reply.status, StatusCode::OK, "order {reference} lost: {}", reply.body);
    }
    for (n, (merchant, reference)) in seen.paid.iter().enumerate() {
        let reply = get(live[n % 2], key(*merchant), &format!("/v1/orders/{reference}")).await;
        assert_ne!(
            reply.body["data"]["status"],
            json!("PENDING"),
            "payment of {reference} lost"
        );
    }
    for (n, (merchant, reference, id)) in seen.refunds.iter().enumerate() {
        let reply = get(live[n % 2], key(*merchant), &format!("/v1/orders/{reference}/refunds")).await;
        let listed = reply.body["data"].as_array().unwrap();
        assert!(listed.iter().any(|r| r["id"] == json!(id)), "refund {id} lost");
    }

    // Every payout ends final, each taken by the vendor at most once.
    let mut wanted: HashSet<(String, String)> = HashSet::new();
    let deadline = Instant::now() + Duration::from_secs(90);
    for (n, (merchant, id)) in seen.disbursements.iter().enumerate() {
        wanted.insert(final_event(live[n % 2], key(*merchant), id, deadline).await);
    }
    settler.abort();
    acme.assert_protocol_kept();
    for (merchant, reference) in &seen.paid {
        wanted.insert(paid_event(live[0], key(*merchant), reference).await);
    }

    // Every final event reaches the receiver.
    receiver.wait_for(&wanted, deadline).await;

    // Every wallet is what its ledger says, the same through both nodes.
    for merchant in &merchants {
        let statement = live[0].statement(&merchant.api_key).await;
        assert!(!statement.is_empty());
        assert_eq!(
            live[0].balance(&merchant.api_key).await,
            live[1].balance(&merchant.api_key).await
        );
    }
    let verified = live[1].verify().await;
    assert_eq!(verified["balanced"], json!(true), "{verified}");
    assert_eq!(verified["merchants"], json!(merchants.len()), "{verified}");

    // Back again, the node takes its share.
    let args = node_args(&pg, NODE_IDS[victim], &extra);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    nodes[victim].restart_with(&args);
    wait_until_spread(&nodes.iter().collect::<Vec<_>>(), Duration::from_secs(30)).await;
    let verified = nodes[victim].verify().await;
    assert_eq!(verified["balanced"], json!(true), "{verified}");
}
