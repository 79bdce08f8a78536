//! A cluster of three paygate nodes on one PostgreSQL: the
//! shards spread over the nodes, any node answers any request exactly as
//! the owner of the merchant's shard does (idempotent replays included),
//! and a request with a forged forwarding signature is refused.

mod support;

use paygate_engine::cluster::test_postgres::TestPostgres;
use paygate_engine::cluster::{shard_of, shard_of_credential, Database, Leases};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;
use support::cluster::{health, owner_of, start_cluster, wait_until_spread, NODE_IDS};
use support::TestServer;

/// Sends `request` as it is built: the raw answer, checked against nothing.
async fn raw(request: reqwest::RequestBuilder) -> reqwest::Response {
    request.send().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_node_answers_as_the_owner_does_and_forged_forwarding_is_refused() {
    let Some(pg) = TestPostgres::start() else { return };
    let nodes = start_cluster(&pg, &[]);
    wait_until_spread(&nodes.iter().collect::<Vec<_>>(), Duration::from_secs(30)).await;
    let body = health(&nodes[1]).await;
    assert_eq!(body["status"], "ok");
    assert_eq!(body["storage"], "writable");
    assert_eq!(body["node"], "node-b");

    // A merchant made through one node lands in some shard; its id, key and
    // client id all route there.
    let merchant = nodes[0].create_wallet_merchant().await;
    let merchant_id: uuid::Uuid = merchant.id.parse().unwrap();
    let shard = shard_of(merchant_id);
    assert_eq!(shard_of_credential(&merchant.api_key), shard);
    assert_eq!(shard_of_credential(&merchant.client_id), shard);
    let owner = owner_of(&nodes, shard).await;
    let other = (owner + 1) % 3;
    assert_eq!(nodes[other].credit(&merchant.id, 5_000_000).await, 5_000_000);

    // The same reads through every node.
    let mut balances = Vec::new();
    for node in &nodes {
        let reply = node
            .call(Method::GET, "/v1/balance", Some(&merchant.api_key), None)
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        balances.push(reply.body);
    }
    assert!(balances.windows(2).all(|pair| pair[0] == pair[1]), "{balances:?}");

    // An order created through a non-owner, replayed through the owner and
    // the third node: the first answer each time.
    let order = json!({"merchant_order_id": "routed-1", "amount_minor": 150_000, "payment_method": "QRIS"});
    let create = |node: &TestServer| {
        node.client
            .post(format!("{}/v1/orders", node.base))
            .header("X-API-Key", &merchant.api_key)
            .header("Idempotency-Key", "route-key-1")
            .json(&order)
            .send()
    };
    let first = create(&nodes[other]).await.unwrap();
    assert_eq!(first.status(), StatusCode::CREATED);
    let first: Value = first.json().await.unwrap();
    for node in [&nodes[owner], &nodes[(owner + 2) % 3]] {
        let replay = create(node).await.unwrap();
        assert_eq!(replay.status(), StatusCode::CREATED);
        assert_eq!(replay.json::<Value>().await.unwrap(), first);
    }
    let order_id = first["data"]["id"].as_str().unwrap().to_string();
    assert_eq!(shard_of(order_id.parse().unwrap()), shard);

    // The checkout page, which names only the order, from every node.
    for node in &nodes {
        let page = raw(node.request(Method::GET, &format!("/checkout/{order_id}"))).await;
        assert_eq!(page.status(), StatusCode::OK);
    }

    // An error answers the same through a non-owner: an unknown key, and a
    // Legacy query for an order that does not exist.
    let unknown = nodes[other]
        .call(Method::GET, "/v1/balance", Some(&"0".repeat(64)), None)
        .await;
    support::assert_v1_error(&unknown, 401, "INVALID_API_KEY");
    let query = json!({"clientId": merchant.client_id, "orderId": "nope", "signature": "x"});
    let legacy = raw(nodes[other].request(Method::POST, "/api/order/query").json(&query)).await;
    let through_owner = raw(nodes[owner].request(Method::POST, "/api/order/query").json(&query)).await;
    assert_eq!(legacy.status(), through_owner.status());
    assert_eq!(legacy.text().await.unwrap(), through_owner.text().await.unwrap());

    // A forwarded request whose signature is not the cluster's is refused,
    // and one signed long ago too.
    for forged in [
        format!(
            "v1;shard={shard};node=node-a;client=-;t={};sig={}",
            now(),
            "00".repeat(32)
        ),
        "v1;shard=0;node=node-a;client=-;t=1;sig=00".to_string(),
        "nonsense".to_string(),
    ] {
        let reply = nodes[owner]
            .client
            .get(format!("{}/v1/balance", nodes[owner].base))
            .header("X-API-Key", &merchant.api_key)
            .header("X-Paygate-Forwarded", forged)
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), StatusCode::UNAUTHORIZED);
        let body: Value = reply.json().await.unwrap();
        assert_eq!(body["error"]["code"], "INVALID_SIGNATURE");
    }

    // The ledger check through any node covers every shard.
    let check = nodes[2].verify().await;
    assert_eq!(check["balanced"], true, "{check}");
    assert_eq!(check["merchants"], 1, "{check}");

    // The nodes' own metrics name their leases.
    let metrics = support::cluster::metrics(&nodes[0]).await;
    let owned = metrics
        .lines()
        .find_map(|line| line.strip_prefix("paygate_cluster_shards_owned "))
        .expect("shards owned");
    assert!(owned == "21" || owned == "22", "{metrics}");
    assert!(
        metrics.contains("paygate_journal_sync_microseconds_total{shard="),
        "{metrics}"
    );

    // An organization made through one node exists in every shard: merchants
    // of it are made wherever they land.
    let organization = nodes[1].create_organization("Grup Nusantara").await;
    // A catalog change reaches every shard of every node within a second.
    let created_at = std::time::Instant::now();
    let mut shards = std::collections::BTreeSet::new();
    let mut n = 0;
    while shards.len() < 4 {
        n += 1;
        let body = json!({ "name": "Anggota", "settlement_type": "WALLET", "organization_id": organization });
        let reply = nodes[n % 3]
            .admin(Method::POST, "/admin/v1/merchants", Some(body))
            .await;
        if reply.status == StatusCode::CREATED {
            shards.insert(shard_of(
                reply.body["data"]["merchant"]["id"].as_str().unwrap().parse().unwrap(),
            ));
            continue;
        }
        support::assert_v1_error(&reply, 400, "INVALID_BODY");
        assert!(
            created_at.elapsed() < Duration::from_secs(1),
            "a shard still did not know the organization after {:?}: {}",
            created_at.elapsed(),
            reply.body
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // A dashboard user made through a non-owner; its email is the platform's
    // once: another merchant, in another shard, cannot take it.
    let reply = user(&nodes[other], &merchant.id, "Kasir@Toko.id").await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    let elsewhere = loop {
        let candidate = nodes[0].create_wallet_merchant().await;
        if shard_of(candidate.id.parse().unwrap()) != shard {
            break candidate;
        }
    };
    let taken = user(&nodes[owner], &elsewhere.id, "kasir@toko.id").await;
    support::assert_v1_error(&taken, 409, "EMAIL_TAKEN");
    let bad = user(&nodes[owner], &elsewhere.id, "not-an-email").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.body);
    let unauthorized = nodes[owner]
        .client
        .post(format!(
            "{}/admin/v1/merchants/{}/users",
            nodes[owner].base, elsewhere.id
        ))
        .json(&json!({ "email": "free@toko.id", "password": "a long enough password" }))
        .send()
        .await
        .unwrap();
    assert_eq!(unauthorized.status(), StatusCode::UNAUTHORIZED);
    let reply = user(&nodes[2], &elsewhere.id, "free@toko.id").await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);

    // The user signs in through every node, and the session works through
    // every node.
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    for node in &nodes {
        let page = browser
            .get(format!("{}/dashboard/sign-in", node.base))
            .send()
            .await
            .unwrap();
        assert_eq!(page.status(), StatusCode::OK);
        let form_cookie = set_cookie_pair(page.headers(), "paygate_sign_in");
        let html = page.text().await.unwrap();
        let at = html.find("name=\"csrf\" value=\"").unwrap() + "name=\"csrf\" value=\"".len();
        let csrf = html[at..].split('"').next().unwrap().to_string();
        let signed_in = browser
            .post(format!("{}/dashboard/sign-in", node.base))
            .header("Cookie", form_cookie)
            .form(&[
                ("email", "kasir@toko.id"),
                ("password", "a long enough password"),
                ("csrf", &csrf),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(signed_in.status(), StatusCode::SEE_OTHER);
        let session = set_cookie_pair(signed_in.headers(), "paygate_session");
        for other_node in &nodes {
            let page = browser
                .get(format!("{}/dashboard", other_node.base))
                .header("Cookie", &session)
                .send()
                .await
                .unwrap();
            assert_eq!(page.status(), StatusCode::OK);
            assert!(page.text().await.unwrap().contains("kasir@toko.id"));
        }
    }

    // A node that stops gives its shards back, and the others take them.
    let database = Database::connect(&pg.url()).await.unwrap();
    let mut nodes = nodes;
    nodes[owner].stop();
    let live: Vec<&TestServer> = nodes
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != owner)
        .map(|(_, n)| n)
        .collect();
    let status = Leases::new(database, "");
    let mut served = false;
    for _ in 0..150 {
        let reply = live[0]
            .call(Method::GET, "/v1/balance", Some(&merchant.api_key), None)
            .await;
        if reply.status == StatusCode::OK {
            assert_eq!(reply.body, balances[0]);
            served = true;
            break;
        }
        assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE, "{}", reply.body);
        assert_eq!(reply.headers["retry-after"], "1");
        assert_eq!(reply.body["error"]["code"], "UNAVAILABLE");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(served, "the merchant was not served again after its owner stopped");
    let stopped = NODE_IDS[owner];
    let leases = status.status().await.unwrap();
    assert!(leases
        .shards
        .iter()
        .all(|s| s.node_id.as_deref() != Some(stopped) || s.expires_in_s <= 0.0));
    assert!(leases.nodes.iter().all(|n| n.node_id != stopped), "{:?}", leases.nodes);
}

/// Creates a dashboard user of `merchant_id` through `node`.
async fn user(node: &TestServer, merchant_id: &str, email: &str) -> support::Reply {
    node.admin_post(
        &format!("/admin/v1/merchants/{merchant_id}/users"),
        json!({ "email": email, "password": "a long enough password" }),
    )
    .await
}

/// The `name=value` of cookie `name` set in `headers`.
fn set_cookie_pair(headers: &reqwest::header::HeaderMap, name: &str) -> String {
    headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find(|value| value.starts_with(&format!("{name}=")))
        .and_then(|value| value.split(';').next())
        .unwrap_or_else(|| panic!("no {name} cookie set"))
        .to_string()
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}
