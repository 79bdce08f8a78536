//! `paygate cluster status` against a real PostgreSQL: each shard's owner,
//! epoch and lease, and each node's heartbeat, as the database has them.

use paygate_engine::cluster::test_postgres::TestPostgres;
use paygate_engine::cluster::{Database, Leases};
use std::process::Command;

fn status(url: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_paygate"))
        .args(["cluster", "status", "--cluster-url", url])
        .output()
        .expect("paygate runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_status_prints_each_shards_lease_and_each_nodes_heartbeat() {
    let Some(pg) = TestPostgres::start() else { return };
    let database = Database::connect(&pg.url()).await.unwrap();
    let node = Leases::new(database, "node-a");
    node.heartbeat("http://10.0.0.1:8080").await.unwrap();
    assert_eq!(node.acquire(&[0, 5]).await.unwrap(), vec![(0, 1), (5, 1)]);

    let output = status(&pg.url());
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<Vec<&str>> = text.lines().map(|line| line.split_whitespace().collect()).collect();
    assert_eq!(lines[0], ["shard", "owner", "epoch", "lease"]);
    assert_eq!(lines.len(), 1 + 64 + 1 + 1 + 1, "{text}");
    assert_eq!(lines[1][..4], ["0", "node-a", "1", "expires"]);
    assert_eq!(lines[2], ["1", "-", "0", "free"]);
    assert_eq!(lines[6][..3], ["5", "node-a", "1"]);
    assert_eq!(lines[66], ["node", "advertise", "URL", "last", "heartbeat"]);
    assert_eq!(lines[67][..2], ["node-a", "http://10.0.0.1:8080"]);
}

#[test]
fn cluster_status_without_a_reachable_database_fails_with_the_reason() {
    let unused = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = unused.local_addr().unwrap().port();
    drop(unused);
    let output = status(&format!("postgres://paygate@127.0.0.1:{port}/postgres"));
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cluster database"), "{stderr}");

    let output = status("mysql://nowhere");
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("cluster URL"));
}
