//! Three paygate nodes on one PostgreSQL started by the test,
//! and what the cluster tests ask of them.

use super::TestServer;
use paygate_engine::cluster::test_postgres::TestPostgres;
use reqwest::{Method, StatusCode};
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// The secret the test nodes share.
pub const SECRET: &str = "cluster-secret-for-tests";

/// The nodes' ids, in start order.
pub const NODE_IDS: [&str; 3] = ["node-a", "node-b", "node-c"];

/// The flags of node `node_id` on `pg`, then `extra`.
pub fn node_args(pg: &TestPostgres, node_id: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "--cluster-url",
        &pg.url(),
        "--node-id",
        node_id,
        "--cluster-secret",
        SECRET,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// Three nodes on `pg`, each with its own data dir and `extra` flags.
pub fn start_cluster(pg: &TestPostgres, extra: &[&str]) -> Vec<TestServer> {
    NODE_IDS
        .iter()
        .map(|node| {
            let args = node_args(pg, node, extra);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            TestServer::start_with(&args)
        })
        .collect()
}

/// `/healthz` of a node.
pub async fn health(node: &TestServer) -> Value {
    let reply = node.call(Method::GET, "/healthz", None, None).await;
    assert_eq!(reply.status, StatusCode::OK);
    reply.body
}

/// The shards a node serves now.
pub async fn shards_of(node: &TestServer) -> Vec<u16> {
    serde_json::from_value(health(node).await["shards"].clone()).expect("shards")
}

/// Waits until `nodes` serve all 64 shards between them, each its even
/// share, and every node knows who serves what; how long the spread took.
pub async fn wait_until_spread(nodes: &[&TestServer], within: Duration) -> Duration {
    let started = Instant::now();
    let (low, high) = (64 / nodes.len(), 64_usize.div_ceil(nodes.len()));
    let mut spread = Vec::new();
    while started.elapsed() < within {
        spread.clear();
        for node in nodes {
            spread.push(shards_of(node).await);
        }
        let all: BTreeSet<u16> = spread.iter().flatten().copied().collect();
        let counts: Vec<usize> = spread.iter().map(Vec::len).collect();
        if all.len() == 64 && counts.iter().sum::<usize>() == 64 && counts.iter().all(|n| (low..=high).contains(n)) {
            let spread_after = started.elapsed();
            // Each node reads who owns the others' shards every 250 ms.
            tokio::time::sleep(Duration::from_millis(500)).await;
            return spread_after;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "the shards did not spread over {} nodes within {within:?}: {spread:?}",
        nodes.len()
    );
}

/// Which of `nodes` serves `shard` now.
pub async fn owner_of(nodes: &[TestServer], shard: u16) -> usize {
    for (index, node) in nodes.iter().enumerate() {
        if shards_of(node).await.contains(&shard) {
            return index;
        }
    }
    panic!("no node serves shard {shard}");
}

/// A node's `/metrics` text.
pub async fn metrics(node: &TestServer) -> String {
    let response = node
        .client
        .get(format!("{}/metrics", node.base))
        .send()
        .await
        .expect("metrics answered");
    assert_eq!(response.status(), StatusCode::OK);
    response.text().await.expect("metrics read")
}
