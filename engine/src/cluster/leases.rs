//! The lease table's statements: taking, renewing and releasing shards,
//! the nodes' heartbeats, and the status `paygate cluster status` prints.
//! Every time is the database's `now()`, never a node's clock.

use super::{ClusterError, Database, LEASE, NODE_ALIVE};

/// One node's statements on the lease table.
#[derive(Clone)]
pub struct Leases {
    database: Database,
    node_id: String,
}

/// A shard's lease as the database has it.
#[derive(Clone, Debug, PartialEq)]
pub struct ShardStatus {
    pub shard: u16,
    /// The node holding the lease, if any (it may have expired).
    pub node_id: Option<String>,
    pub epoch: i64,
    /// Seconds until the lease expires, negative once it has.
    pub expires_in_s: f64,
}

/// A node as the database has it.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeStatus {
    pub node_id: String,
    pub advertise_url: String,
    /// Seconds since its last heartbeat.
    pub heartbeat_age_s: f64,
}

/// Every shard's lease and every node's heartbeat.
#[derive(Clone, Debug)]
pub struct ClusterStatus {
    pub shards: Vec<ShardStatus>,
    pub nodes: Vec<NodeStatus>,
}

fn interval(duration: std::time::Duration) -> String {
    format!("{} milliseconds", duration.as_millis())
}

fn shard_numbers(shards: &[u16]) -> Vec<i32> {
    shards.iter().map(|&shard| shard as i32).collect()
}

impl Leases {
    /// The lease statements of node `node_id`.
    pub fn new(database: Database, node_id: impl Into<String>) -> Leases {
        Leases {
            database,
            node_id: node_id.into(),
        }
    }

    /// This node's id.
    pub fn node_id(&self) -> &str {
        &self.node_id
    }

    /// Says this node is alive and how it is reached.
    pub async fn heartbeat(&self, advertise_url: &str) -> Result<(), ClusterError> {
        let client = self.database.client().await?;
        client
            .execute(
                "INSERT INTO cluster_nodes (node_id, advertise_url) VALUES ($1, $2)
                 ON CONFLICT (node_id) DO UPDATE
                 SET advertise_url = EXCLUDED.advertise_url, heartbeat_at = now()",
                &[&self.node_id, &advertise_url],
            )
            .await?;
        Ok(())
    }

    /// Forgets this node's heartbeat, so the others count it gone at once.
    pub async fn leave(&self) -> Result<(), ClusterError> {
        let client = self.database.client().await?;
        client
            .execute("DELETE FROM cluster_nodes WHERE node_id = $1", &[&self.node_id])
            .await?;
        Ok(())
    }

    /// The ids of the nodes alive now, sorted.
    pub async fn live_nodes(&self) -> Result<Vec<String>, ClusterError> {
        let client = self.database.client().await?;
        let rows = client
            .query(
                "SELECT node_id FROM cluster_nodes
                 WHERE heartbeat_at > now() - $1::text::interval ORDER BY node_id",
                &[&interval(NODE_ALIVE)],
            )
            .await?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }

    /// The shards no live lease holds (never taken, released, or expired).
    pub async fn free_shards(&self) -> Result<Vec<u16>, ClusterError> {
        let client = self.database.client().await?;
        let rows = client
            .query(
                "SELECT shard FROM shard_leases
                 WHERE node_id IS NULL OR expires_at <= now() ORDER BY shard",
                &[],
            )
            .await?;
        Ok(rows.iter().map(|row| row.get::<_, i32>(0) as u16).collect())
    }

    /// Takes those of `shards` no live lease holds, each under a new epoch;
    /// the ones taken, with their epochs. A shard this node held once and
    /// let expire is taken again under a new epoch too: what it held under
    /// the old one may be stale.
    pub async fn acquire(&self, shards: &[u16]) -> Result<Vec<(u16, i64)>, ClusterError> {
        let client = self.database.client().await?;
        let rows = client
            .query(
                "UPDATE shard_leases
                 SET node_id = $1, epoch = epoch + 1, expires_at = now() + $2::text::interval
                 WHERE shard = ANY($3) AND (node_id IS NULL OR expires_at <= now())
                 RETURNING shard, epoch",
                &[&self.node_id, &interval(LEASE), &shard_numbers(shards)],
            )
            .await?;
        let mut taken: Vec<(u16, i64)> = rows
            .iter()
            .map(|row| (row.get::<_, i32>(0) as u16, row.get(1)))
            .collect();
        taken.sort_unstable();
        Ok(taken)
    }

    /// Extends the leases of `held` (shard, epoch) that are still this
    /// node's under that epoch and not yet expired; the shards renewed. A
    /// lease not renewed is lost: never assumed.
    pub async fn renew(&self, held: &[(u16, i64)]) -> Result<Vec<u16>, ClusterError> {
        if held.is_empty() {
            return Ok(Vec::new());
        }
        let shards: Vec<i32> = held.iter().map(|&(shard, _)| shard as i32).collect();
        let epochs: Vec<i64> = held.iter().map(|&(_, epoch)| epoch).collect();
        let client = self.database.client().await?;
        let rows = client
            .query(
                "UPDATE shard_leases AS lease SET expires_at = now() + $2::text::interval
                 FROM UNNEST($3::integer[], $4::bigint[]) AS held(shard, epoch)
                 WHERE lease.shard = held.shard AND lease.epoch = held.epoch
                   AND lease.node_id = $1 AND lease.expires_at > now()
                 RETURNING lease.shard",
                &[&self.node_id, &interval(LEASE), &shards, &epochs],
            )
            .await?;
        let mut renewed: Vec<u16> = rows.iter().map(|row| row.get::<_, i32>(0) as u16).collect();
        renewed.sort_unstable();
        Ok(renewed)
    }

    /// Gives up `held` (shard, epoch) leases that are still this node's, so
    /// another node may take them at once.
    pub async fn release(&self, held: &[(u16, i64)]) -> Result<(), ClusterError> {
        if held.is_empty() {
            return Ok(());
        }
        let shards: Vec<i32> = held.iter().map(|&(shard, _)| shard as i32).collect();
        let epochs: Vec<i64> = held.iter().map(|&(_, epoch)| epoch).collect();
        let client = self.database.client().await?;
        client
            .execute(
                "UPDATE shard_leases AS lease SET node_id = NULL, expires_at = '-infinity'
                 FROM UNNEST($2::integer[], $3::bigint[]) AS held(shard, epoch)
                 WHERE lease.shard = held.shard AND lease.epoch = held.epoch AND lease.node_id = $1",
                &[&self.node_id, &shards, &epochs],
            )
            .await?;
        Ok(())
    }

    /// Every shard's lease and every node's heartbeat.
    pub async fn status(&self) -> Result<ClusterStatus, ClusterError> {
        status(&self.database).await
    }
}

/// Every shard's lease and every node's heartbeat, as the database has them.
pub async fn status(database: &Database) -> Result<ClusterStatus, ClusterError> {
    let client = database.client().await?;
    let shards = client
        .query(
            "SELECT shard, node_id, epoch,
                    CASE WHEN expires_at = '-infinity' THEN -1e9
                         ELSE EXTRACT(EPOCH FROM (expires_at - now())) END::float8
             FROM shard_leases ORDER BY shard",
            &[],
        )
        .await?
        .iter()
        .map(|row| ShardStatus {
            shard: row.get::<_, i32>(0) as u16,
            node_id: row.get(1),
            epoch: row.get(2),
            expires_in_s: row.get(3),
        })
        .collect();
    let nodes = client
        .query(
            "SELECT node_id, advertise_url, EXTRACT(EPOCH FROM (now() - heartbeat_at))::float8
             FROM cluster_nodes ORDER BY node_id",
            &[],
        )
        .await?
        .iter()
        .map(|row| NodeStatus {
            node_id: row.get(0),
            advertise_url: row.get(1),
            heartbeat_age_s: row.get(2),
        })
        .collect();
    Ok(ClusterStatus { shards, nodes })
}
