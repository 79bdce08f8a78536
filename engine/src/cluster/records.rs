//! Each shard's journal of record and its snapshots. Appends go many at a
//! time in one transaction (group commit); every append and snapshot checks,
//! inside its transaction, that the writer still holds the shard under the
//! epoch it wrote with.
//!
//! The check reads the lease rows `FOR SHARE`: a takeover's `UPDATE` of
//! the same row waits until the append commits or rolls back, so a new
//! owner, which reads the records after its takeover commits, sees every
//! append that passed the check, and no append passes it after.

use super::{ClusterError, Database};
use std::collections::BTreeMap;

/// One record to append: its shard, the writer's epoch for that shard, and
/// its place in the shard's journal.
#[derive(Clone, Debug)]
pub struct Append {
    pub shard: u16,
    pub epoch: i64,
    pub seq: i64,
    pub record: Vec<u8>,
}

/// One record as the journal of record has it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardRecord {
    pub seq: i64,
    /// The lease epoch it was written under.
    pub epoch: i64,
    pub record: Vec<u8>,
}

/// One node's appends and reads of the journal of record.
#[derive(Clone)]
pub struct ShardRecords {
    database: Database,
    node_id: String,
    /// Test seam: appends without the epoch check, to show that the check
    /// is what stops a node that lost its lease.
    #[cfg(any(test, feature = "test-postgres"))]
    pub unfenced: bool,
}

impl ShardRecords {
    /// Node `node_id`'s access to the journal of record.
    pub fn new(database: Database, node_id: impl Into<String>) -> ShardRecords {
        ShardRecords {
            database,
            node_id: node_id.into(),
            #[cfg(any(test, feature = "test-postgres"))]
            unfenced: false,
        }
    }

    fn fenced(&self) -> bool {
        #[cfg(any(test, feature = "test-postgres"))]
        if self.unfenced {
            return false;
        }
        true
    }

    /// Appends `batch` in one transaction. Either all of it commits, or, if
    /// any shard it names is no longer this node's under the epoch given,
    /// none of it and `Fenced` with those shards. The same batch appended
    /// again is taken as written (a retry after an unseen commit); different
    /// records under sequence numbers already stored are refused.
    pub async fn append(&self, batch: &[Append]) -> Result<(), ClusterError> {
        if batch.is_empty() {
            return Ok(());
        }
        let mut epochs: BTreeMap<u16, i64> = BTreeMap::new();
        for append in batch {
            let epoch = epochs.entry(append.shard).or_insert(append.epoch);
            if *epoch != append.epoch {
                return Err(ClusterError::Database(format!(
                    "one batch names shard {} under two epochs",
                    append.shard
                )));
            }
        }
        let mut client = self.database.client().await?;
        let transaction = client.transaction().await?;
        if let Err(error) = self.check_epochs(&transaction, &epochs).await {
            transaction.rollback().await?;
            return Err(error);
        }
        let shards: Vec<i32> = batch.iter().map(|append| append.shard as i32).collect();
        let seqs: Vec<i64> = batch.iter().map(|append| append.seq).collect();
        let epochs: Vec<i64> = batch.iter().map(|append| append.epoch).collect();
        let records: Vec<&[u8]> = batch.iter().map(|append| append.record.as_slice()).collect();
        let written = transaction
            .execute(
                "INSERT INTO shard_records (shard, seq, epoch, record)
                 SELECT * FROM UNNEST($1::integer[], $2::bigint[], $3::bigint[], $4::bytea[])
                 ON CONFLICT (shard, seq) DO NOTHING",
                &[&shards, &seqs, &epochs, &records],
            )
            .await?;
        if written as usize != batch.len() {
            // Records already there: this batch again, after an attempt whose
            // commit went through unseen, or a writer that broke the order.
            let same = transaction
                .query_one(
                    "SELECT count(*) FROM shard_records AS stored
                     JOIN UNNEST($1::integer[], $2::bigint[], $3::bigint[], $4::bytea[])
                          AS ours(shard, seq, epoch, record)
                       ON stored.shard = ours.shard AND stored.seq = ours.seq
                     WHERE stored.epoch = ours.epoch AND stored.record = ours.record",
                    &[&shards, &seqs, &epochs, &records],
                )
                .await?
                .get::<_, i64>(0);
            if same as usize != batch.len() {
                transaction.rollback().await?;
                return Err(ClusterError::Database(
                    "records already stored under these sequence numbers differ from the batch".into(),
                ));
            }
        }
        transaction.commit().await?;
        Ok(())
    }

    /// Fails with `Fenced` unless every shard of `epochs` is still this
    /// node's under that epoch; locks those lease rows for the rest of the
    /// transaction (see the top of the file).
    async fn check_epochs(
        &self,
        transaction: &deadpool_postgres::Transaction<'_>,
        epochs: &BTreeMap<u16, i64>,
    ) -> Result<(), ClusterError> {
        if !self.fenced() {
            return Ok(());
        }
        let shards: Vec<i32> = epochs.keys().map(|&shard| shard as i32).collect();
        let rows = transaction
            .query(
                "SELECT shard, epoch, node_id FROM shard_leases WHERE shard = ANY($1) FOR SHARE",
                &[&shards],
            )
            .await?;
        let held: BTreeMap<u16, (i64, Option<String>)> = rows
            .iter()
            .map(|row| (row.get::<_, i32>(0) as u16, (row.get(1), row.get(2))))
            .collect();
        let lost: Vec<u16> = epochs
            .iter()
            .filter(|(shard, epoch)| {
                held.get(shard)
                    .is_none_or(|(held_epoch, node)| held_epoch != *epoch || node.as_deref() != Some(&self.node_id))
            })
            .map(|(&shard, _)| shard)
            .collect();
        if lost.is_empty() {
            Ok(())
        } else {
            Err(ClusterError::Fenced(lost))
        }
    }

    /// Writes `state`, `shard`'s state through record `seq`, as its latest
    /// snapshot, fenced like an append; then drops the records it covers
    /// and the snapshots before it, in the same transaction.
    pub async fn write_snapshot(&self, shard: u16, epoch: i64, seq: i64, state: &[u8]) -> Result<(), ClusterError> {
        let mut client = self.database.client().await?;
        let transaction = client.transaction().await?;
        if let Err(error) = self.check_epochs(&transaction, &BTreeMap::from([(shard, epoch)])).await {
            transaction.rollback().await?;
            return Err(error);
        }
        let shard_number = shard as i32;
        transaction
            .execute(
                "INSERT INTO shard_snapshots (shard, seq, epoch, state) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (shard, seq) DO UPDATE SET epoch = EXCLUDED.epoch, state = EXCLUDED.state, taken_at = now()",
                &[&shard_number, &seq, &epoch, &state],
            )
            .await?;
        transaction
            .execute(
                "DELETE FROM shard_records WHERE shard = $1 AND seq <= $2",
                &[&shard_number, &seq],
            )
            .await?;
        transaction
            .execute(
                "DELETE FROM shard_snapshots WHERE shard = $1 AND seq < $2",
                &[&shard_number, &seq],
            )
            .await?;
        transaction.commit().await?;
        Ok(())
    }

    /// `shard`'s latest snapshot: the last record it covers and the state.
    pub async fn latest_snapshot(&self, shard: u16) -> Result<Option<(i64, Vec<u8>)>, ClusterError> {
        let client = self.database.client().await?;
        let row = client
            .query_opt(
                "SELECT seq, state FROM shard_snapshots WHERE shard = $1 ORDER BY seq DESC LIMIT 1",
                &[&(shard as i32)],
            )
            .await?;
        Ok(row.map(|row| (row.get(0), row.get(1))))
    }

    /// Up to `limit` records of `shard` after `after_seq`, in order.
    pub async fn read_after(&self, shard: u16, after_seq: i64, limit: i64) -> Result<Vec<ShardRecord>, ClusterError> {
        let client = self.database.client().await?;
        let rows = client
            .query(
                "SELECT seq, epoch, record FROM shard_records
                 WHERE shard = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                &[&(shard as i32), &after_seq, &limit],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|row| ShardRecord {
                seq: row.get(0),
                epoch: row.get(1),
                record: row.get(2),
            })
            .collect())
    }

    /// The last sequence number `shard`'s journal has reached, in its
    /// records or its latest snapshot; 0 when it has neither.
    pub async fn last_seq(&self, shard: u16) -> Result<i64, ClusterError> {
        let client = self.database.client().await?;
        let row = client
            .query_one(
                "SELECT GREATEST(
                     (SELECT COALESCE(MAX(seq), 0) FROM shard_records WHERE shard = $1),
                     (SELECT COALESCE(MAX(seq), 0) FROM shard_snapshots WHERE shard = $1))::bigint",
                &[&(shard as i32)],
            )
            .await?;
        Ok(row.get(0))
    }
}
