//! Sorted index runs on disk: how an index of all history (a disbursement's
//! block, its ref code, its idempotency key, its creation time) lives in
//! sled and is read on demand instead of being held in memory, which stays
//! bounded by live work (ARCHITECTURE.md, Storage).
//!
//! One sled key per index entry would make sled's inserts at checkpoints a
//! large share of all CPU; so each checkpoint writes its new entries as one
//! run: fixed-size records (key, then value) sorted by key, cut into chunks
//! of about `CHUNK_BYTES`, one sled value each. Memory keeps, per run, only
//! the first key of each chunk (its fences) and, for indexes asked about
//! keys they may not hold, a Bloom filter: about 1.3 bytes per entry in all.
//! On disk those are cut into parts of `CHUNK_BYTES` too, under a small
//! head: a big run's metadata in one value would make its sled leaf a blob
//! file, rewritten whole and held decoded whatever sled's cache setting.
//! A lookup reads at most one chunk per run whose filter lets it through,
//! newest run first; the newest entry of a key wins.
//!
//! Runs are merged so there stay few: when `FANOUT` runs of the same size
//! tier are the newest, they become one (size-tiered, newest runs only, so
//! "newer" stays "higher id"). A merge writes the new run's chunks, then
//! swaps the metadata in one sled batch, then deletes the old chunks; an
//! intent record names both sides, so a crash at any point is finished or
//! undone when the set is loaded (`merge.rs`).

use super::keys::KeyPrefix;
use super::record::{decode_plain, encode_plain};
use super::StoreError;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

pub use in_order::InOrderRun;
pub use merge::MergedRun;

/// Where a chunk is cut: small enough that sled keeps it inline in its
/// leaf (a node over a quarter of a 512 KiB segment becomes a blob file).
pub const CHUNK_BYTES: usize = 4 * 1024;
/// Runs of one size tier merged together.
const FANOUT: usize = 4;
/// Bloom filter bits per entry, and probes: about 1% false positives.
const BLOOM_BITS_PER_ENTRY: u64 = 10;
const BLOOM_PROBES: u64 = 7;

/// Every run key starts with `KeyPrefix::IndexRun`, so runs share sled's
/// `ledger` tree (and a checkpoint's marker batch) with nothing else's keys;
/// the byte after it tells chunks, metadata and merge intents apart.
const PREFIX: u8 = KeyPrefix::IndexRun.byte();
const CHUNK_MARK: u8 = b'C';
/// A run's whole metadata in one value, as data dirs written before the
/// parts hold it: read, never written.
const WHOLE_META_MARK: u8 = b'M';
/// A run's head (`RunHead`), the key that makes the run part of its index.
const HEAD_MARK: u8 = b'm';
/// The parts of a run's fences and filter, numbered from 0.
const PART_MARK: u8 = b'P';
const INTENT_MARK: u8 = b'I';

/// The shape of one index's records.
#[derive(Clone, Copy, Debug)]
pub struct RunSpec {
    /// Tells this index's sled keys from other indexes' in the same tree.
    pub tag: u8,
    /// Bytes of a key.
    pub key_len: usize,
    /// Bytes of a value (0 for an index that is only keys).
    pub value_len: usize,
    /// Where in a key 8 uniformly random bytes start (an id's or a hash's),
    /// which place the key in the Bloom filter without hashing it again;
    /// `None` for an index only ever scanned by range.
    pub random_at: Option<usize>,
}

impl RunSpec {
    fn record_len(&self) -> usize {
        self.key_len + self.value_len
    }

    fn records_per_chunk(&self) -> usize {
        (CHUNK_BYTES / self.record_len()).max(1)
    }
}

/// What memory keeps of a run.
#[derive(Debug, Serialize, Deserialize)]
struct RunMeta {
    len: u64,
    chunks: u32,
    /// The first key of each chunk, concatenated.
    fences: Vec<u8>,
    /// The Bloom filter's words (empty without one).
    bloom: Vec<u64>,
}

impl RunMeta {
    /// The fences, then the filter's words little-endian: what the parts
    /// hold, cut every `CHUNK_BYTES`.
    fn part_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.fences.len() + self.bloom.len() * 8);
        bytes.extend_from_slice(&self.fences);
        for word in &self.bloom {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
        bytes
    }

    fn head(&self) -> RunHead {
        RunHead {
            len: self.len,
            chunks: self.chunks,
            fence_bytes: self.fences.len() as u64,
            bloom_words: self.bloom.len() as u64,
        }
    }

    /// The metadata `head` describes, from its parts' bytes in order
    /// (parts past what it needs are a staged run's left under a reused
    /// id, and ignored).
    fn from_parts(head: RunHead, parts: &[u8], id: u64, tag: u8) -> Result<RunMeta, StoreError> {
        let fence_bytes = usize::try_from(head.fence_bytes).map_err(|_| short_parts(id, tag))?;
        let bloom_bytes = usize::try_from(head.bloom_words.saturating_mul(8)).map_err(|_| short_parts(id, tag))?;
        let bloom_end = fence_bytes
            .checked_add(bloom_bytes)
            .ok_or_else(|| short_parts(id, tag))?;
        let fences = parts.get(..fence_bytes).ok_or_else(|| short_parts(id, tag))?.to_vec();
        let bloom = parts
            .get(fence_bytes..bloom_end)
            .ok_or_else(|| short_parts(id, tag))?
            .chunks_exact(8)
            .map(|word| u64::from_le_bytes(word.try_into().expect("8 bytes")))
            .collect();
        Ok(RunMeta {
            len: head.len,
            chunks: head.chunks,
            fences,
            bloom,
        })
    }
}

/// What a run's head key holds: its size, and the lengths of the fences
/// and filter its parts carry.
#[derive(Debug, Serialize, Deserialize)]
struct RunHead {
    len: u64,
    chunks: u32,
    fence_bytes: u64,
    bloom_words: u64,
}

/// One run: its id (newer runs have higher ids) and what memory keeps.
#[derive(Debug)]
pub struct Run {
    id: u64,
    meta: RunMeta,
    /// Its greatest key, when known: a key above it is in none of its
    /// chunks, so a lookup of a newer time-ordered id (an event's, say)
    /// passes the run without its filter or a read. Known for the runs
    /// this process wrote; left unknown for those loaded at open rather
    /// than read a chunk of each (merges replace them with known ones).
    last_key: Option<Box<[u8]>>,
}

/// A merge in progress: the run it writes and the runs it replaces.
#[derive(Serialize, Deserialize)]
struct Intent {
    writes: u64,
    replaces: Vec<u64>,
}

/// One index's runs, oldest first.
pub struct RunSet {
    spec: RunSpec,
    runs: Vec<Arc<Run>>,
    next_id: u64,
}

/// Records gathered for a run: pushed in any order, sorted when written; of
/// records with the same key, the last pushed wins.
pub struct RunBuilder {
    spec: RunSpec,
    records: Vec<u8>,
}

impl RunBuilder {
    /// An empty run of `spec`'s index.
    pub fn new(spec: RunSpec) -> RunBuilder {
        RunBuilder::with_capacity(spec, 0)
    }

    /// An empty run with room for `records` records, so a checkpoint's run
    /// is not grown (copied, and given fresh memory) by doubling.
    pub fn with_capacity(spec: RunSpec, records: usize) -> RunBuilder {
        RunBuilder {
            spec,
            records: Vec::with_capacity(records * spec.record_len()),
        }
    }

    /// Adds a record. Panics if the key or value has the wrong size (a
    /// caller's bug, never input).
    pub fn push(&mut self, key: &[u8], value: &[u8]) {
        assert_eq!(key.len(), self.spec.key_len, "index key size");
        assert_eq!(value.len(), self.spec.value_len, "index value size");
        self.records.extend_from_slice(key);
        self.records.extend_from_slice(value);
    }

    /// The index it is for.
    pub fn spec(&self) -> RunSpec {
        self.spec
    }

    /// True when nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The records sorted by key, one per key (the last pushed).
    fn sorted(&self) -> Vec<&[u8]> {
        let (record_len, key_len) = (self.spec.record_len(), self.spec.key_len);
        let mut records: Vec<&[u8]> = self.records.chunks_exact(record_len).collect();
        // Stable: of equal keys, the last pushed stays last.
        records.sort_by(|a, b| a[..key_len].cmp(&b[..key_len]));
        let mut unique: Vec<&[u8]> = Vec::with_capacity(records.len());
        for record in records {
            match unique.last_mut() {
                Some(last) if last[..key_len] == record[..key_len] => *last = record,
                _ => unique.push(record),
            }
        }
        unique
    }
}

/// Writes one run's chunks as they fill, and builds what memory keeps of it.
struct RunWriter<'a> {
    spec: RunSpec,
    id: u64,
    meta: RunMeta,
    chunk: Vec<u8>,
    /// The key of the last record pushed (records come in key order).
    last_key: Vec<u8>,
    sink: &'a mut dyn FnMut(Vec<u8>, Vec<u8>) -> Result<(), StoreError>,
}

impl<'a> RunWriter<'a> {
    fn new(
        spec: RunSpec,
        id: u64,
        expected: u64,
        sink: &'a mut dyn FnMut(Vec<u8>, Vec<u8>) -> Result<(), StoreError>,
    ) -> RunWriter<'a> {
        let bloom_words = match spec.random_at {
            Some(_) => (expected * BLOOM_BITS_PER_ENTRY).div_ceil(64).max(1) as usize,
            None => 0,
        };
        RunWriter {
            spec,
            id,
            meta: RunMeta {
                len: 0,
                chunks: 0,
                fences: Vec::new(),
                bloom: vec![0; bloom_words],
            },
            chunk: Vec::with_capacity(spec.records_per_chunk() * spec.record_len()),
            last_key: Vec::with_capacity(spec.key_len),
            sink,
        }
    }

    fn push(&mut self, record: &[u8]) -> Result<(), StoreError> {
        let key = &record[..self.spec.key_len];
        if self.chunk.is_empty() {
            self.meta.fences.extend_from_slice(key);
        }
        if let Some(at) = self.spec.random_at {
            crate::bloom::set(&mut self.meta.bloom, random_bytes(key, at), BLOOM_PROBES);
        }
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.chunk.extend_from_slice(record);
        self.meta.len += 1;
        if self.chunk.len() / self.spec.record_len() >= self.spec.records_per_chunk() {
            self.cut()?;
        }
        Ok(())
    }

    fn cut(&mut self) -> Result<(), StoreError> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        let key = chunk_key(self.spec.tag, self.id, self.meta.chunks).to_vec();
        // The next chunk gets its whole size at once, not by doubling.
        let capacity = self.spec.records_per_chunk() * self.spec.record_len();
        let chunk = std::mem::replace(&mut self.chunk, Vec::with_capacity(capacity));
        self.meta.chunks += 1;
        (self.sink)(key, chunk)
    }

    /// Writes the last chunk and the metadata's parts; the head, which
    /// makes the run visible, is the caller's to apply.
    fn finish(mut self) -> Result<Run, StoreError> {
        self.cut()?;
        for (index, part) in self.meta.part_bytes().chunks(CHUNK_BYTES).enumerate() {
            (self.sink)(part_key(self.spec.tag, self.id, index as u32).to_vec(), part.to_vec())?;
        }
        Ok(Run {
            id: self.id,
            meta: self.meta,
            last_key: (!self.last_key.is_empty()).then(|| self.last_key.into_boxed_slice()),
        })
    }
}

impl RunSet {
    /// The runs of `spec`'s index in `tree`, after finishing or undoing a
    /// merge a crash interrupted.
    pub fn load(tree: &sled::Tree, spec: RunSpec) -> Result<RunSet, StoreError> {
        if let Some(intent) = tree.get(intent_key(spec.tag))? {
            let intent: Intent = decode_plain(&intent)?;
            let written = tree.get(head_key(spec.tag, intent.writes))?.is_some()
                || tree.get(whole_meta_key(spec.tag, intent.writes))?.is_some();
            if written {
                for id in intent.replaces {
                    remove_run_data(tree, spec.tag, id)?;
                }
            } else {
                remove_run_data(tree, spec.tag, intent.writes)?;
            }
            tree.remove(intent_key(spec.tag))?;
        }
        let mut runs = Vec::new();
        for item in tree.scan_prefix([PREFIX, WHOLE_META_MARK, spec.tag]) {
            let (key, value) = item?;
            runs.push(Arc::new(Run {
                id: run_id(&key)?,
                meta: decode_plain(&value)?,
                last_key: None,
            }));
        }
        for item in tree.scan_prefix([PREFIX, HEAD_MARK, spec.tag]) {
            let (key, value) = item?;
            let id = run_id(&key)?;
            let mut parts = Vec::new();
            // Big-endian part numbers: the scan is in order.
            for part in tree.scan_prefix(part_prefix(spec.tag, id)).values() {
                parts.extend_from_slice(&part?);
            }
            let meta = RunMeta::from_parts(decode_plain(&value)?, &parts, id, spec.tag)?;
            runs.push(Arc::new(Run {
                id,
                meta,
                last_key: None,
            }));
        }
        runs.sort_by_key(|run| run.id);
        let next_id = runs.last().map_or(1, |run| run.id + 1);
        Ok(RunSet { spec, runs, next_id })
    }

    /// Writes `records` as a new run's chunks through `sink` (a checkpoint's
    /// own small batches); the run is visible once its `meta_entry` is
    /// applied (with the checkpoint's marker) and it is `add`ed. A run
    /// staged and never added leaves chunks under an id the next one reuses.
    pub fn stage(
        &self,
        records: &RunBuilder,
        sink: &mut dyn FnMut(Vec<u8>, Vec<u8>) -> Result<(), StoreError>,
    ) -> Result<StagedRun, StoreError> {
        let sorted = records.sorted();
        let mut writer = RunWriter::new(self.spec, self.next_id, sorted.len() as u64, sink);
        for record in sorted {
            writer.push(record)?;
        }
        Ok(StagedRun {
            tag: self.spec.tag,
            run: writer.finish()?,
        })
    }

    /// Makes a staged run visible (after its metadata was applied).
    pub fn add(&mut self, staged: StagedRun) {
        self.next_id = self.next_id.max(staged.run.id + 1);
        self.runs.push(Arc::new(staged.run));
    }

    /// This index's shape.
    pub fn spec(&self) -> RunSpec {
        self.spec
    }

    /// Entries in all runs (a key in several runs counts in each).
    pub fn entries(&self) -> u64 {
        self.runs.iter().map(|run| run.meta.len).sum()
    }

    /// How many runs there are.
    pub fn run_count(&self) -> usize {
        self.runs.len()
    }

    /// Bytes memory holds for these runs (fences and filters).
    pub fn memory_bytes(&self) -> usize {
        self.runs
            .iter()
            .map(|run| run.meta.fences.len() + run.meta.bloom.len() * 8)
            .sum()
    }
}

/// An index record read back: its key and its value.
pub type IndexRecord = (Vec<u8>, Vec<u8>);

/// A run whose chunks are written, not yet visible.
pub struct StagedRun {
    tag: u8,
    run: Run,
}

impl StagedRun {
    /// Its index's tag.
    pub fn tag(&self) -> u8 {
        self.tag
    }

    /// The sled entry that makes it part of its index (its head; its
    /// chunks and parts are written already).
    pub fn meta_entry(&self) -> (Vec<u8>, Vec<u8>) {
        self.run.head_entry(self.tag)
    }
}

impl Run {
    fn head_entry(&self, tag: u8) -> (Vec<u8>, Vec<u8>) {
        (head_key(tag, self.id).to_vec(), encode_plain(&self.meta.head()))
    }
}

/// The 8 uniformly random bytes of `key` at `at`: what places it in a filter.
fn random_bytes(key: &[u8], at: usize) -> u64 {
    let mut random = [0u8; 8];
    random.copy_from_slice(&key[at..at + 8]);
    u64::from_le_bytes(random)
}

fn chunk_key(tag: u8, id: u64, chunk: u32) -> [u8; 15] {
    numbered_key(CHUNK_MARK, tag, id, chunk)
}

/// `mark`+`tag`+`id`: a run's whole-metadata key, head key or part prefix.
fn run_key(mark: u8, tag: u8, id: u64) -> [u8; 11] {
    let mut key = [0u8; 11];
    key[..3].copy_from_slice(&[PREFIX, mark, tag]);
    key[3..].copy_from_slice(&id.to_be_bytes());
    key
}

fn whole_meta_key(tag: u8, id: u64) -> [u8; 11] {
    run_key(WHOLE_META_MARK, tag, id)
}

fn head_key(tag: u8, id: u64) -> [u8; 11] {
    run_key(HEAD_MARK, tag, id)
}

fn part_prefix(tag: u8, id: u64) -> [u8; 11] {
    run_key(PART_MARK, tag, id)
}

fn part_key(tag: u8, id: u64, part: u32) -> [u8; 15] {
    numbered_key(PART_MARK, tag, id, part)
}

/// `run_key` followed by a chunk's or part's number, big-endian so they
/// scan in order.
fn numbered_key(mark: u8, tag: u8, id: u64, number: u32) -> [u8; 15] {
    let mut key = [0u8; 15];
    key[..11].copy_from_slice(&run_key(mark, tag, id));
    key[11..].copy_from_slice(&number.to_be_bytes());
    key
}

fn run_id(key: &[u8]) -> Result<u64, StoreError> {
    let id = key.get(3..11).ok_or_else(|| bad_key(key))?;
    Ok(u64::from_be_bytes(id.try_into().expect("8 bytes")))
}

fn intent_key(tag: u8) -> [u8; 3] {
    [PREFIX, INTENT_MARK, tag]
}

/// How many of the sorted records of `stride` bytes each, concatenated in
/// `records` (a run's fences, or a chunk), satisfy `before`, which holds
/// for a prefix of them: `slice::partition_point` over the concatenation,
/// without first collecting a slice per record.
fn sorted_partition(records: &[u8], stride: usize, before: impl Fn(&[u8]) -> bool) -> usize {
    let (mut low, mut high) = (0, records.len() / stride);
    while low < high {
        let middle = low + (high - low) / 2;
        if before(&records[middle * stride..(middle + 1) * stride]) {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    low
}

fn read_chunk(tree: &sled::Tree, tag: u8, id: u64, chunk: u32) -> Result<sled::IVec, StoreError> {
    tree.get(chunk_key(tag, id, chunk))?.ok_or_else(|| {
        StoreError::Format(format!(
            "index run {id} of index {} is missing chunk {chunk}",
            tag as char
        ))
    })
}

/// Removes a run's chunks and its metadata's parts (not its head: the
/// batch that takes the run out of its index removes that).
fn remove_run_data(tree: &sled::Tree, tag: u8, id: u64) -> Result<(), StoreError> {
    let mut batch = sled::Batch::default();
    for mark in [CHUNK_MARK, PART_MARK] {
        for item in tree.scan_prefix(run_key(mark, tag, id)).keys() {
            batch.remove(item?);
        }
    }
    tree.apply_batch(batch)?;
    Ok(())
}

fn bad_key(key: &[u8]) -> StoreError {
    StoreError::Format(format!("unreadable index run key {key:?}"))
}

fn short_parts(id: u64, tag: u8) -> StoreError {
    StoreError::Format(format!(
        "index run {id} of index {} is missing parts of its metadata",
        tag as char
    ))
}

mod in_order;
mod merge;
mod reads;
#[cfg(test)]
mod tests;
