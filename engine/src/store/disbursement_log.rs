//! Disbursements at rest: an append-only log of versions in sled blocks,
//! found through indexes kept in memory.
//!
//! One sled key per index per disbursement made sled's inserts at
//! checkpoints half of all CPU under load, and sled's page cache grew by
//! kilobytes per key. So a checkpoint writes the newest version of each
//! disbursement it covers into blocks of about `BLOCK_BYTES` under
//! `D`+checkpoint+part (one sled value per eight or so disbursements
//! instead of five keys per disbursement), and the indexes (id to block, ref code, per
//! merchant idempotency key and creation time, the open set) live here, a
//! few hundred bytes per disbursement. Opening the store rebuilds them by
//! reading every block, oldest first, so the newest version wins.
//!
//! A version is never rewritten in place; older versions stay in earlier
//! blocks (at most one per status change) and are skipped by the index.

use crate::domain::Disbursement;
use crate::sharded::{ShardedMap, ShardedSet};
use foldhash::HashMap;
use std::collections::BTreeSet;
use uuid::Uuid;

/// Where a block is cut. sled 0.34 writes a tree node bigger than a quarter
/// of its 512 KiB segment as a separate blob file, and a leaf holds up to 16
/// values: 64 KiB blocks made most new blocks' leaves blob files (hundreds a
/// minute under load, each fsynced at every checkpoint). At 4 KiB (about
/// eight versions) a full leaf stays well under that threshold.
pub const BLOCK_BYTES: usize = 4 * 1024;

/// The sled key prefix of disbursement blocks.
pub const BLOCK_PREFIX: u8 = b'D';

/// Where a checkpointed version is: the block (checkpoint and part) and the
/// byte offset of its length prefix in the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    /// The first journal sequence the writing checkpoint did not cover.
    pub checkpoint: u64,
    /// The block's number within that checkpoint.
    pub part: u32,
    /// Offset of the version's length prefix.
    pub offset: u32,
}

impl Location {
    /// The sled key of this location's block.
    pub fn block_key(&self) -> [u8; 13] {
        block_key(self.checkpoint, self.part)
    }
}

/// `D`+checkpoint+part.
pub fn block_key(checkpoint: u64, part: u32) -> [u8; 13] {
    let mut key = [0u8; 13];
    key[0] = BLOCK_PREFIX;
    key[1..9].copy_from_slice(&checkpoint.to_be_bytes());
    key[9..].copy_from_slice(&part.to_be_bytes());
    key
}

/// The checkpoint and part of a block key, if it is one.
pub fn parse_block_key(key: &[u8]) -> Option<(u64, u32)> {
    if key.len() != 13 || key[0] != BLOCK_PREFIX {
        return None;
    }
    let checkpoint = u64::from_be_bytes(key[1..9].try_into().ok()?);
    let part = u32::from_be_bytes(key[9..].try_into().ok()?);
    Some((checkpoint, part))
}

/// The versions of a block: (offset, encoded version), in order. `None`
/// when the block is cut short (never written so by this module).
pub fn block_versions(block: &[u8]) -> Option<Vec<(u32, &[u8])>> {
    let mut versions = Vec::new();
    let mut at = 0usize;
    while at < block.len() {
        let length = u32::from_le_bytes(block.get(at..at + 4)?.try_into().ok()?) as usize;
        versions.push((at as u32, block.get(at + 4..at + 4 + length)?));
        at += 4 + length;
    }
    Some(versions)
}

/// The encoded version at `offset` of a block.
pub fn version_at(block: &[u8], offset: u32) -> Option<&[u8]> {
    let at = offset as usize;
    let length = u32::from_le_bytes(block.get(at..at + 4)?.try_into().ok()?) as usize;
    block.get(at + 4..at + 4 + length)
}

/// Packs encoded versions into blocks, recording where each went.
pub struct BlockWriter {
    checkpoint: u64,
    blocks: Vec<Vec<u8>>,
    /// Where each version was put.
    pub locations: Vec<(Uuid, Location)>,
}

impl BlockWriter {
    /// Blocks of the checkpoint that covers the journal below `checkpoint`.
    pub fn new(checkpoint: u64) -> BlockWriter {
        BlockWriter {
            checkpoint,
            blocks: Vec::new(),
            locations: Vec::new(),
        }
    }

    /// Adds the encoded newest version of disbursement `id`.
    pub fn push(&mut self, id: Uuid, encoded: &[u8]) {
        if self.blocks.last().is_none_or(|block| block.len() >= BLOCK_BYTES) {
            self.blocks.push(Vec::with_capacity(BLOCK_BYTES + encoded.len() + 4));
        }
        let part = self.blocks.len() as u32 - 1;
        let block = self.blocks.last_mut().expect("a block was just ensured");
        let offset = block.len() as u32;
        super::overlay::append_to_block(block, encoded);
        self.locations.push((
            id,
            Location {
                checkpoint: self.checkpoint,
                part,
                offset,
            },
        ));
    }

    /// The blocks with their sled keys.
    pub fn blocks(&self) -> impl Iterator<Item = ([u8; 13], &[u8])> {
        self.blocks
            .iter()
            .enumerate()
            .map(|(part, block)| (block_key(self.checkpoint, part as u32), block.as_slice()))
    }
}

/// One merchant's disbursement indexes.
#[derive(Default)]
struct MerchantIndex {
    /// Idempotency key hash -> id.
    by_key: ShardedMap<u128, Uuid>,
    /// (created ms, id), for listings.
    created: BTreeSet<(i64, Uuid)>,
}

/// Every disbursement's indexes. Covers every durable version, checkpointed
/// or still in the overlay; only checkpointed ones have a location.
#[derive(Default)]
pub struct DisbursementIndex {
    /// Every indexed disbursement; where its newest checkpointed version is, once it has one.
    located: ShardedMap<Uuid, Option<Location>>,
    by_ref: ShardedMap<u128, Uuid>,
    merchants: HashMap<Uuid, MerchantIndex>,
    open: ShardedSet<Uuid>,
}

impl DisbursementIndex {
    /// Indexes a durable version (idempotent: versions may be offered again
    /// by replay). `hashes` gives the store's hashes of its idempotency key
    /// and ref code; they are only needed (and computed) for a disbursement
    /// not indexed yet, since neither ever changes.
    pub fn index_version(&mut self, disbursement: &Disbursement, hashes: impl FnOnce() -> (u128, u128)) {
        let id = disbursement.id;
        if !self.located.contains_key(&id) {
            let (key_hash, ref_hash) = hashes();
            self.by_ref.insert(ref_hash, id);
            let merchant = self.merchants.entry(disbursement.merchant_id).or_default();
            merchant.by_key.insert(key_hash, id);
            merchant.created.insert((disbursement.created_at_ms, id));
            self.located.insert(id, None);
        }
        if disbursement.status.is_terminal() {
            self.open.remove(&id);
        } else {
            self.open.insert(id);
        }
    }

    /// Records where a checkpoint put a disbursement's newest version.
    pub fn locate(&mut self, id: Uuid, location: Location) {
        self.located.insert(id, Some(location));
    }

    /// Where a disbursement's newest checkpointed version is.
    pub fn location(&self, id: &Uuid) -> Option<Location> {
        self.located.get(id).copied().flatten()
    }

    /// The disbursement with a ref code hash.
    pub fn id_by_ref(&self, ref_hash: u128) -> Option<Uuid> {
        self.by_ref.get(&ref_hash).copied()
    }

    /// The disbursement a merchant created with an idempotency key hash.
    pub fn id_by_key(&self, merchant_id: &Uuid, key_hash: u128) -> Option<Uuid> {
        self.merchants.get(merchant_id)?.by_key.get(&key_hash).copied()
    }

    /// A merchant's idempotency key hashes, or `None` when there are more than `limit`.
    pub fn key_hashes(&self, merchant_id: &Uuid, limit: usize) -> Option<ShardedSet<u128>> {
        let Some(merchant) = self.merchants.get(merchant_id) else {
            return Some(ShardedSet::default());
        };
        (merchant.by_key.len() <= limit).then(|| merchant.by_key.keys().copied().collect())
    }

    /// A merchant's disbursements created in `[from_ms, to_ms)`, oldest first.
    pub fn created_between(&self, merchant_id: &Uuid, from_ms: i64, to_ms: i64) -> Vec<Uuid> {
        let Some(merchant) = self.merchants.get(merchant_id) else {
            return Vec::new();
        };
        if from_ms >= to_ms {
            return Vec::new();
        }
        merchant
            .created
            .range((from_ms, Uuid::nil())..(to_ms, Uuid::nil()))
            .map(|(_, id)| *id)
            .collect()
    }

    /// Disbursements not yet in a final status.
    pub fn open(&self) -> Vec<Uuid> {
        self.open.iter().copied().collect()
    }

    /// How many disbursements are not yet in a final status.
    pub fn open_count(&self) -> usize {
        self.open.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_found_where_the_writer_put_them() {
        let mut writer = BlockWriter::new(42);
        let ids: Vec<Uuid> = (0..500).map(|_| Uuid::new_v4()).collect();
        for (n, id) in ids.iter().enumerate() {
            writer.push(*id, &vec![n as u8; 300 + n]);
        }
        let blocks: HashMap<[u8; 13], Vec<u8>> = writer.blocks().map(|(k, b)| (k, b.to_vec())).collect();
        assert!(blocks.len() > 1, "blocks are cut");
        for (n, (id, location)) in writer.locations.iter().enumerate() {
            assert_eq!(*id, ids[n]);
            let block = &blocks[&location.block_key()];
            assert_eq!(version_at(block, location.offset).unwrap(), &vec![n as u8; 300 + n][..]);
            assert_eq!(parse_block_key(&location.block_key()), Some((42, location.part)));
        }
        let all: usize = blocks.values().map(|b| block_versions(b).unwrap().len()).sum();
        assert_eq!(all, 500);
        assert!(block_versions(&[1, 0, 0, 0]).is_none(), "a cut block is refused");
    }
}
