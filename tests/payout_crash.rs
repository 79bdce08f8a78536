//! Payouts through SIGKILLs: paygate is killed again and again
//! while concurrent disbursements are handed to a vendor double answering at
//! random. Afterwards no payout was taken twice, every acknowledged
//! disbursement exists, each ends in the vendor's final status, and the
//! wallet and the ledger agree.

mod payout_double;
mod support;

use futures::StreamExt;
use payout_double::{Answer, Event, Final, PayoutDouble};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};
use support::*;

/// Kill-and-restart rounds.
const CYCLES: u64 = 20;
/// Concurrent disbursement senders per round.
const WORKERS: u64 = 8;
/// Bound on the disbursements one sender makes in one round.
const PER_WORKER_MAX: u64 = 40;
/// A round lasts this long (ms, chosen at random) before SIGKILL.
const ROUND_MS: std::ops::RangeInclusive<u64> = 100..=800;
/// The merchant's wallet before the first disbursement: never the limit.
const FUNDING: i64 = 1_000_000_000_000;
/// How long every disbursement may take to be final after the last start.
const FINAL_TIMEOUT: Duration = Duration::from_secs(60);
/// Live mode, the inquiry schedule a hundred times faster.
const ARGS: &[&str] = &["--mode", "live", "--vendor-retry-scale", "0.01"];
/// paygate's per-request timeout at the double; its hangs last longer.
const VENDOR_TIMEOUT_MS: u64 = 300;

/// How often the double answers each way while paygate is being killed.
const ANSWERS: [(Answer, u32); 9] = [
    (Answer::Accept, 35),
    (Answer::Succeed, 25),
    (Answer::Fail, 8),
    (Answer::Refuse, 8),
    (Answer::ErrorUntaken, 6),
    (Answer::ErrorTaken, 6),
    (Answer::HangTaken, 4),
    (Answer::HangUntaken, 4),
    (Answer::GarbageTaken, 4),
];

/// A disbursement paygate answered 201 for.
struct Acknowledged {
    id: String,
    key: String,
    request_minor: i64,
    fee_minor: i64,
    final_minor: i64,
}

/// What one sender saw in one round.
#[derive(Default)]
struct Sent {
    acknowledged: Vec<Acknowledged>,
    /// Answers other than 201 or a dead server.
    unexpected: Vec<String>,
}

/// Sends disbursements one after another until the server dies or the bound.
async fn send_disbursements(base: String, api_key: String, cycle: u64, worker: u64, seed: u64) -> Sent {
    let client = reqwest::Client::new();
    let mut rng = StdRng::seed_from_u64(seed ^ (cycle << 16) ^ worker);
    let mut sent = Sent::default();
    for n in 0..PER_WORKER_MAX {
        let key = format!("crash-{cycle}-{worker}-{n}");
        let amount: i64 = rng.gen_range(100_000..1_000_000);
        let body = if rng.gen_bool(0.75) {
            json!({
                "idempotency_key": key, "channel": "BANK", "bank_short_code": "BNI",
                "account_number": format!("77{:08}", rng.gen_range(0..100_000_000u32)),
                "account_name": "Sari Dewi", "amount_minor": amount,
            })
        } else {
            json!({
                "idempotency_key": key, "channel": "EWALLET", "ewallet_provider": "OVO",
                "ewallet_phone": "081298765432", "amount_minor": amount,
            })
        };
        let url = format!("{base}/v1/disbursements");
        let response = support::load::post_as(&client, url, &api_key, &body, Duration::from_secs(5)).await;
        let Ok(response) = response else {
            return sent; // killed
        };
        let status = response.status();
        let Ok(bytes) = response.bytes().await else {
            return sent; // killed while answering
        };
        let reply: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if status != StatusCode::CREATED {
            sent.unexpected.push(format!("{key}: {status} {reply}"));
            continue;
        }
        let data = &reply["data"];
        if data["request_amount_minor"] != json!(amount) {
            sent.unexpected.push(format!("{key}: asked {amount}, answered {reply}"));
        }
        sent.acknowledged.push(Acknowledged {
            id: data["id"].as_str().unwrap_or_default().to_string(),
            key,
            request_minor: data["request_amount_minor"].as_i64().unwrap_or(-1),
            fee_minor: data["fee_minor"].as_i64().unwrap_or(-1),
            final_minor: data["final_amount_minor"].as_i64().unwrap_or(-1),
        });
    }
    sent
}

/// The number of the merchant's disbursements in `status`.
async fn count_in(server: &TestServer, api_key: &str, status: &str) -> u64 {
    let path = format!("/v1/disbursements?status={status}&limit=1");
    let reply = server.call(Method::GET, &path, Some(api_key), None).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body["meta"]["total"].as_u64().expect("meta.total")
}

/// Every disbursement of the merchant, page by page.
async fn all_disbursements(server: &TestServer, api_key: &str) -> Vec<Value> {
    let mut all = Vec::new();
    for page in 1.. {
        let path = format!("/v1/disbursements?limit=50&page={page}");
        let reply = server.call(Method::GET, &path, Some(api_key), None).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        all.extend(reply.body["data"].as_array().expect("a page").iter().cloned());
        if page >= reply.body["meta"]["total_pages"].as_u64().expect("total_pages") {
            return all;
        }
    }
    unreachable!()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payouts_through_sigkills_are_taken_at_most_once_and_end_in_the_vendors_status() {
    let seed: u64 = std::env::var("PAYGATE_PAYOUT_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_2026);
    eprintln!("payout crash seed {seed} (PAYGATE_PAYOUT_CRASH_SEED)");
    let acme = PayoutDouble::start("acme", "/acme/api").await;
    acme.set_random(seed, &ANSWERS, 0.8);
    acme.set_hang(Duration::from_millis(VENDOR_TIMEOUT_MS * 3));
    let settler = acme.spawn_settler(seed ^ 0xCA11, Duration::from_millis(150), 0.3);
    let mut rng = StdRng::seed_from_u64(seed ^ 0xC1C1E);

    let mut server = TestServer::start_with(ARGS);
    let organization = server.create_organization("Crash Org").await;
    let limits = json!({ "rate_limit_per_second": 100_000, "rate_limit_burst": 100_000 });
    let merchant = server
        .create_merchant_with("WALLET", json!({ "organization_id": organization, "limits": limits }))
        .await;
    assert_eq!(server.credit(&merchant.id, FUNDING).await, FUNDING);
    let vendor = json!({ "url": acme.url, "secret": acme.secret, "timeout_ms": VENDOR_TIMEOUT_MS, "payouts": true });
    let reply = server.admin(Method::PUT, "/admin/v1/vendors/acme", Some(vendor)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    for channel in ["BANK", "EWALLET"] {
        let reply = server
            .admin_put(
                &format!("/admin/v1/organizations/{organization}/payout-vendors/{channel}"),
                json!({ "vendors": ["acme"] }),
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    }

    let mut acknowledged: Vec<Acknowledged> = Vec::new();
    let mut unexpected: Vec<String> = Vec::new();
    let started = Instant::now();
    for cycle in 0..CYCLES {
        if cycle > 0 {
            server.restart();
        }
        acme.set_callback_target(Some(server.base.clone()));
        let senders: Vec<_> = (0..WORKERS)
            .map(|worker| {
                let (base, api_key) = (server.base.clone(), merchant.api_key.clone());
                tokio::spawn(send_disbursements(base, api_key, cycle, worker, seed))
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(rng.gen_range(ROUND_MS))).await;
        server.kill();
        for sender in senders {
            let sent = sender.await.expect("sender finished");
            acknowledged.extend(sent.acknowledged);
            unexpected.extend(sent.unexpected);
        }
    }
    eprintln!(
        "{CYCLES} kills in {:?}: {} disbursements acknowledged",
        started.elapsed(),
        acknowledged.len()
    );

    // The vendor heals: every payout it holds becomes final, new ones succeed.
    settler.abort();
    acme.set_callback_target(None);
    acme.make_healthy();
    server.restart();
    let deadline = Instant::now() + FINAL_TIMEOUT;
    loop {
        let mut open = 0;
        for status in ["PENDING", "IN_REVIEW", "ON_PROCESS"] {
            open += count_in(&server, &merchant.api_key, status).await;
        }
        if open == 0 {
            break;
        }
        if Instant::now() >= deadline {
            let stuck: Vec<String> = all_disbursements(&server, &merchant.api_key)
                .await
                .iter()
                .filter(|d| !matches!(d["status"].as_str(), Some("SUCCESS" | "FAILED")))
                .take(10)
                .map(|d| {
                    let id = d["id"].as_str().unwrap_or_default();
                    format!("{id} {} vendor {:?}", d["status"], acme.payout(id))
                })
                .collect();
            panic!("{open} disbursements still open after {FINAL_TIMEOUT:?}: {stuck:#?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!(
        "all final {:?} after the last start",
        FINAL_TIMEOUT - (deadline - Instant::now())
    );

    // The protocol: signatures, paths, and no payout taken twice.
    acme.assert_protocol_kept();
    assert_eq!(unexpected, Vec::<String>::new(), "answers other than 201");
    assert!(
        acknowledged.len() as u64 >= CYCLES,
        "the load hardly ran: {} acknowledged",
        acknowledged.len()
    );
    let callbacks = acme.settler_callbacks();
    let refused_callbacks: Vec<_> = callbacks
        .iter()
        .filter(|(_, _, status)| matches!(status, Some(401 | 409)))
        .collect();
    assert!(
        refused_callbacks.is_empty(),
        "callbacks refused for their signature or against paygate's status: {refused_callbacks:?}"
    );

    // Every acknowledged disbursement exists with the amounts of its 201.
    let lookups = futures::stream::iter(acknowledged.iter().map(|ack| {
        let path = format!("/v1/disbursements/{}", ack.id);
        let (server, api_key) = (&server, &merchant.api_key);
        async move { (ack, server.call(Method::GET, &path, Some(api_key), None).await) }
    }))
    .buffer_unordered(8)
    .collect::<Vec<_>>()
    .await;
    for (ack, reply) in lookups {
        assert_eq!(
            reply.status,
            StatusCode::OK,
            "acknowledged {} ({}) is gone: {}",
            ack.id,
            ack.key,
            reply.body
        );
        let data = &reply.body["data"];
        assert_eq!(data["idempotency_key"], json!(ack.key));
        assert_eq!(data["request_amount_minor"], json!(ack.request_minor), "{data}");
        assert_eq!(data["fee_minor"], json!(ack.fee_minor), "{data}");
        assert_eq!(data["final_amount_minor"], json!(ack.final_minor), "{data}");
        assert_eq!(ack.final_minor, ack.request_minor + ack.fee_minor);
    }

    // Each disbursement ends as the vendor says; the vendor was asked only
    // for disbursements paygate holds, for their request amounts.
    let all = all_disbursements(&server, &merchant.api_key).await;
    let acknowledged_ids: HashSet<&str> = acknowledged.iter().map(|ack| ack.id.as_str()).collect();
    let listed_ids: HashSet<&str> = all.iter().filter_map(|d| d["id"].as_str()).collect();
    let missing: Vec<&&str> = acknowledged_ids.difference(&listed_ids).collect();
    assert!(missing.is_empty(), "acknowledged but not listed: {missing:?}");
    let payouts = acme.payouts();
    let mut mismatches = Vec::new();
    let mut spent = 0i64;
    let mut finals: HashMap<String, usize> = HashMap::new();
    for disbursement in &all {
        let id = disbursement["id"].as_str().expect("id");
        let status = disbursement["status"].as_str().expect("status");
        *finals.entry(status.to_string()).or_default() += 1;
        let payout = payouts.get(id).cloned().unwrap_or_default();
        let expected = payout.expected_final().map(Final::as_str);
        if expected != Some(status) {
            mismatches.push(format!("{id}: paygate {status}, vendor {expected:?}: {payout:?}"));
        }
        for body in &payout.bodies {
            if body["amount_minor"] != disbursement["request_amount_minor"]
                || body["ref_code"] != disbursement["ref_code"]
            {
                mismatches.push(format!("{id}: submitted {body}, holds {disbursement}"));
            }
        }
        if status == "SUCCESS" {
            spent += disbursement["final_amount_minor"].as_i64().expect("final amount");
        }
    }
    for (id, payout) in &payouts {
        if payout.posts > 0 && !listed_ids.contains(id.as_str()) {
            mismatches.push(format!(
                "{id}: submitted to the vendor but unknown to paygate: {payout:?}"
            ));
        }
    }
    let answers = acme
        .events()
        .iter()
        .fold(HashMap::<String, usize>::new(), |mut counts, event| {
            let name = match event {
                Event::Post {
                    answer: Some(answer), ..
                } => format!("POST {answer:?}"),
                Event::Post { answer: None, .. } => "POST again after taken".to_string(),
                Event::Get { status, .. } => format!("GET {status}"),
            };
            *counts.entry(name).or_default() += 1;
            counts
        });
    eprintln!("vendor saw {answers:?}; paygate ended {finals:?}");
    assert!(
        mismatches.is_empty(),
        "{} disagreements, first ones: {:#?}",
        mismatches.len(),
        &mismatches[..mismatches.len().min(20)]
    );

    // Money: only SUCCESS payouts left the wallet; the ledger balances.
    assert_eq!(server.balance(&merchant.api_key).await, FUNDING - spent);
    let verify = server.verify().await;
    assert_eq!(verify["balanced"], json!(true), "{verify}");
    assert_eq!(verify["problems"], json!([]), "{verify}");
}
