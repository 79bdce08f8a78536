//! `paygate cluster`: a cluster's shared state, read from its database.

use crate::config::ClusterCommand;
use paygate_engine::cluster::{ClusterStatus, Database, Leases};
use std::fmt::Write;

/// Runs a `paygate cluster` subcommand.
pub async fn run(command: ClusterCommand) -> anyhow::Result<()> {
    match command {
        ClusterCommand::Status(args) => {
            let database = Database::connect(&args.cluster_url).await?;
            let status = Leases::new(database, "").status().await?;
            print!("{}", render(&status));
            Ok(())
        }
    }
}

/// The status as `paygate cluster status` prints it: one line per shard,
/// then one per node.
fn render(status: &ClusterStatus) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{:<6} {:<24} {:>6}  lease", "shard", "owner", "epoch");
    for shard in &status.shards {
        let (owner, lease) = match &shard.node_id {
            Some(node) if shard.expires_in_s > 0.0 => {
                (node.as_str(), format!("expires in {:.1} s", shard.expires_in_s))
            }
            Some(node) => (node.as_str(), "expired".to_string()),
            None => ("-", "free".to_string()),
        };
        let _ = writeln!(out, "{:<6} {:<24} {:>6}  {lease}", shard.shard, owner, shard.epoch);
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "{:<24} {:<40} last heartbeat", "node", "advertise URL");
    for node in &status.nodes {
        let _ = writeln!(
            out,
            "{:<24} {:<40} {:.1} s ago",
            node.node_id, node.advertise_url, node.heartbeat_age_s
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use paygate_engine::cluster::{NodeStatus, ShardStatus};

    #[test]
    fn the_status_names_each_shards_owner_and_lease_and_each_nodes_heartbeat() {
        let status = ClusterStatus {
            shards: vec![
                ShardStatus {
                    shard: 0,
                    node_id: Some("node-a".into()),
                    epoch: 3,
                    expires_in_s: 4.25,
                },
                ShardStatus {
                    shard: 1,
                    node_id: Some("node-b".into()),
                    epoch: 7,
                    expires_in_s: -2.0,
                },
                ShardStatus {
                    shard: 2,
                    node_id: None,
                    epoch: 0,
                    expires_in_s: -1e9,
                },
            ],
            nodes: vec![NodeStatus {
                node_id: "node-a".into(),
                advertise_url: "http://10.0.0.1:8080".into(),
                heartbeat_age_s: 0.42,
            }],
        };
        let lines: Vec<String> = render(&status)
            .lines()
            .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        assert_eq!(
            lines,
            [
                "shard owner epoch lease",
                "0 node-a 3 expires in 4.2 s",
                "1 node-b 7 expired",
                "2 - 0 free",
                "",
                "node advertise URL last heartbeat",
                "node-a http://10.0.0.1:8080 0.4 s ago",
            ]
        );
    }
}
