//! Versioned resources at rest (disbursements, orders): an append-only log
//! of versions in sled blocks, found through the indexes of `history.rs`.
//!
//! sled's memory grows with the number of keys it is given, whatever its
//! cache setting, and its inserts cost per key: so a checkpoint writes the
//! newest version of each resource it covers into blocks of about
//! `BLOCK_BYTES` under the kind's prefix + checkpoint + part (one sled
//! value per few versions instead of several keys per resource), and where
//! each went into the history's sorted runs.
//!
//! A version is never rewritten in place; older versions stay in earlier
//! blocks (at most one per change a checkpoint saw) and the index skips them.

use super::keys::KeyPrefix;
use uuid::Uuid;

/// Where a block is cut. sled 0.34 writes a tree node bigger than a quarter
/// of its 512 KiB segment as a separate blob file, and a leaf holds up to 16
/// values: with much bigger blocks most new blocks' leaves would be blob
/// files, each fsynced at every checkpoint. At 4 KiB (a few versions) a full
/// leaf stays well under that threshold.
pub const BLOCK_BYTES: usize = 4 * 1024;

/// Where a checkpointed version is: the block (its kind's prefix,
/// checkpoint and part) and the byte offset of its length prefix in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    /// The kind's block prefix.
    pub blocks: KeyPrefix,
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
        block_key(self.blocks, self.checkpoint, self.part)
    }
}

/// `blocks`+checkpoint+part.
pub fn block_key(blocks: KeyPrefix, checkpoint: u64, part: u32) -> [u8; 13] {
    let mut key = [0u8; 13];
    key[0] = blocks.byte();
    key[1..9].copy_from_slice(&checkpoint.to_be_bytes());
    key[9..].copy_from_slice(&part.to_be_bytes());
    key
}

/// The checkpoint and part of a block key of `blocks`, if it is one.
pub fn parse_block_key(blocks: KeyPrefix, key: &[u8]) -> Option<(u64, u32)> {
    if key.len() != 13 || key[0] != blocks.byte() {
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
    prefix: KeyPrefix,
    checkpoint: u64,
    blocks: Vec<Vec<u8>>,
    /// Where each version was put.
    pub locations: Vec<(Uuid, Location)>,
}

impl BlockWriter {
    /// Blocks under `prefix` of the checkpoint that covers the journal
    /// below `checkpoint`.
    pub fn new(prefix: KeyPrefix, checkpoint: u64) -> BlockWriter {
        BlockWriter {
            prefix,
            checkpoint,
            blocks: Vec::new(),
            locations: Vec::new(),
        }
    }

    /// Adds the encoded newest version of resource `id`.
    pub fn push(&mut self, id: Uuid, encoded: &[u8]) {
        if self.blocks.last().is_none_or(|block| block.len() >= BLOCK_BYTES) {
            self.blocks.push(Vec::with_capacity(BLOCK_BYTES + encoded.len() + 4));
        }
        let part = self.blocks.len() as u32 - 1;
        let block = self.blocks.last_mut().expect("a block was just ensured");
        let offset = block.len() as u32;
        append_to_block(block, encoded);
        self.locations.push((
            id,
            Location {
                blocks: self.prefix,
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
            .map(|(part, block)| (block_key(self.prefix, self.checkpoint, part as u32), block.as_slice()))
    }
}

/// Appends one encoded record to an entry block.
pub fn append_to_block(block: &mut Vec<u8>, payload: &[u8]) {
    block.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    block.extend_from_slice(payload);
}

#[cfg(test)]
mod tests {
    use super::*;
    use foldhash::HashMap;

    #[test]
    fn versions_are_found_where_the_writer_put_them() {
        let mut writer = BlockWriter::new(KeyPrefix::OrderBlock, 42);
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
            let key = location.block_key();
            assert_eq!(parse_block_key(KeyPrefix::OrderBlock, &key), Some((42, location.part)));
            assert_eq!(parse_block_key(KeyPrefix::DisbursementBlock, &key), None);
        }
        let all: usize = blocks.values().map(|b| block_versions(b).unwrap().len()).sum();
        assert_eq!(all, 500);
        assert!(block_versions(&[1, 0, 0, 0]).is_none(), "a cut block is refused");
    }
}
