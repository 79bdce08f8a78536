//! Where disbursements are found: the ones created since the last
//! checkpoint that covered them, and the open ones (live work), in memory;
//! all history in sorted runs on disk (`runs.rs`), read on demand. So
//! memory follows live work, and opening the store reads the runs' fences
//! and filters, never every block.
//!
//! Four indexes, each a `RunSet` under `H` in sled's `ledger` tree:
//! - `l`: id -> where its newest checkpointed version is (`Location`);
//! - `r`: ref code hash -> id;
//! - `k`: merchant + idempotency key hash -> id;
//! - `c`: merchant + creation time + id, for listings.
//!
//! A checkpoint adds one run to each, with how the open set changed
//! (`open_set.rs`).

mod open_set;

use super::disbursement_log::Location;
use super::keys::{named_key, KeyPrefix};
use super::runs::{MergedRun, RunBuilder, RunSet, RunSpec, StagedRun};
use super::StoreError;
use crate::domain::Disbursement;
use crate::sharded::ShardedMap;
use foldhash::HashMap;
use open_set::OpenSet;
pub use open_set::{Loaded as LoadedOpenSet, OpenSetWrite};
use std::collections::BTreeSet;
use uuid::Uuid;

const LOCATIONS: RunSpec = RunSpec {
    tag: b'l',
    key_len: 16,
    value_len: 16,
    // A v4 UUID's first bytes are random.
    random_at: Some(0),
};
const REFS: RunSpec = RunSpec {
    tag: b'r',
    key_len: 16,
    value_len: 16,
    random_at: Some(0),
};
const KEYS: RunSpec = RunSpec {
    tag: b'k',
    key_len: 32,
    value_len: 16,
    random_at: Some(16),
};
const CREATED: RunSpec = RunSpec {
    tag: b'c',
    key_len: 40,
    value_len: 0,
    random_at: None,
};

/// The sled key saying the runs hold every checkpointed disbursement
/// (absent in a data dir written before the runs existed).
const FORMAT_KEY: [u8; 7] = named_key(KeyPrefix::IndexRun, b"format");
/// Written now: the open set kept as changes. An older build reads a data
/// dir of this format as one from before the runs, and rebuilds them.
const FORMAT: &[u8] = b"runs-2";
/// Also read: the open set kept only whole (which `open_set::load` reads).
const FORMAT_WHOLE_OPEN_SET: &[u8] = b"runs-1";

/// What the index keeps of a disbursement created since the last
/// checkpoint that covered it.
#[derive(Clone, Copy)]
struct RecentEntry {
    merchant_id: Uuid,
    ref_hash: u128,
    key_hash: u128,
    created_ms: i64,
}

/// One merchant's recent disbursements.
#[derive(Default)]
struct RecentMerchant {
    by_key: HashMap<u128, Uuid>,
    created: BTreeSet<(i64, Uuid)>,
}

/// The disbursements first indexed while one overlay layer filled. The
/// checkpoint that writes the layer writes their entries to the runs, then
/// drops the generation whole: no entry is ever removed one by one.
#[derive(Default)]
struct Generation {
    entries: ShardedMap<Uuid, RecentEntry>,
    by_ref: ShardedMap<u128, Uuid>,
    merchants: HashMap<Uuid, RecentMerchant>,
}

impl Generation {
    fn insert(&mut self, id: Uuid, entry: RecentEntry) {
        self.by_ref.insert(entry.ref_hash, id);
        let merchant = self.merchants.entry(entry.merchant_id).or_default();
        merchant.by_key.insert(entry.key_hash, id);
        merchant.created.insert((entry.created_ms, id));
        self.entries.insert(id, entry);
    }
}

/// The in-memory part: recent disbursements and the open set.
///
/// Invariant: `filling` holds the recent disbursements whose versions went
/// to the overlay's active layer, and `sealed` those of the layers taken by
/// checkpoints not yet finished (or failed: a failed layer goes back into
/// the active one, and its generation stays sealed until a checkpoint
/// writes both). Both change under the overlay's lock, so every recent
/// entry a checkpoint writes belongs to a version in the layers it writes.
#[derive(Default)]
pub struct DisbursementIndex {
    filling: Generation,
    sealed: Vec<Generation>,
    open: OpenSet,
}

impl DisbursementIndex {
    /// Indexes a durable version (idempotent). `created` when its record
    /// created it: then it is new to every index. So is a PENDING version
    /// the index does not hold as recent, as far as it knows (a version
    /// written without its creation record, as tests do): indexing one
    /// already in the history again only writes the same entries twice,
    /// which merges fold into one. `hashes` gives the store's hashes of
    /// its idempotency key and ref code.
    pub fn index_version(&mut self, disbursement: &Disbursement, created: bool, hashes: impl FnOnce() -> (u128, u128)) {
        let id = disbursement.id;
        let new = created || disbursement.status == crate::domain::DisbursementStatus::Pending;
        if new && !self.is_recent(&id) {
            let (key_hash, ref_hash) = hashes();
            let entry = RecentEntry {
                merchant_id: disbursement.merchant_id,
                ref_hash,
                key_hash,
                created_ms: disbursement.created_at_ms,
            };
            self.filling.insert(id, entry);
        }
        if disbursement.status.is_terminal() {
            self.open.close(id);
        } else {
            self.open.open(id);
        }
    }

    /// A checkpoint took the overlay's active layer (call under the
    /// overlay's lock): the recent disbursements indexed so far are the
    /// ones it will write.
    pub fn seal(&mut self) {
        if !self.filling.entries.is_empty() {
            self.sealed.push(std::mem::take(&mut self.filling));
        }
    }

    /// The checkpoint that wrote every sealed generation is in place: the
    /// runs hold them now. Returns them to be dropped outside the index's
    /// lock: freeing a checkpoint's entries takes a while, and the applier
    /// waits on that lock.
    pub fn forget_sealed(&mut self) -> impl Sized {
        std::mem::take(&mut self.sealed)
    }

    fn generations(&self) -> impl Iterator<Item = &Generation> {
        std::iter::once(&self.filling).chain(self.sealed.iter())
    }

    /// A recent disbursement with a ref code hash.
    pub fn id_by_ref(&self, ref_hash: u128) -> Option<Uuid> {
        self.generations()
            .find_map(|generation| generation.by_ref.get(&ref_hash).copied())
    }

    /// A recent disbursement a merchant created with an idempotency key hash.
    pub fn id_by_key(&self, merchant_id: &Uuid, key_hash: u128) -> Option<Uuid> {
        self.generations()
            .find_map(|generation| generation.merchants.get(merchant_id)?.by_key.get(&key_hash).copied())
    }

    /// A merchant's recent idempotency key hashes.
    pub fn key_hashes(&self, merchant_id: &Uuid) -> Vec<u128> {
        self.generations()
            .filter_map(|generation| generation.merchants.get(merchant_id))
            .flat_map(|merchant| merchant.by_key.keys().copied())
            .collect()
    }

    /// A merchant's recent disbursements created in `[from_ms, to_ms)`, in no order.
    pub fn created_between(&self, merchant_id: &Uuid, from_ms: i64, to_ms: i64) -> Vec<(i64, Uuid)> {
        if from_ms >= to_ms {
            return Vec::new();
        }
        self.generations()
            .filter_map(|generation| generation.merchants.get(merchant_id))
            .flat_map(|merchant| {
                merchant
                    .created
                    .range((from_ms, Uuid::nil())..(to_ms, Uuid::nil()))
                    .copied()
            })
            .collect()
    }

    /// Recent disbursements (created since the last checkpoint covering them).
    pub fn recent_count(&self) -> usize {
        self.generations().map(|generation| generation.entries.len()).sum()
    }

    /// True for a disbursement created since the last checkpoint covering it.
    pub fn is_recent(&self, id: &Uuid) -> bool {
        self.generations().any(|generation| generation.entries.contains_key(id))
    }

    /// The open set as the checkpoints left it (replay then moves it on).
    pub fn set_open(&mut self, loaded: LoadedOpenSet) {
        self.open = OpenSet::loaded(loaded);
    }

    /// Disbursements not yet in a final status.
    pub fn open(&self) -> Vec<Uuid> {
        self.open.ids()
    }

    /// The open set's part of a checkpoint's marker.
    pub fn take_open_for_checkpoint(&mut self) -> OpenSetWrite {
        self.open.take_for_checkpoint()
    }

    /// The checkpoint that took the open set's part failed.
    pub fn open_checkpoint_failed(&mut self) {
        self.open.checkpoint_failed();
    }

    /// How many disbursements are not yet in a final status.
    pub fn open_count(&self) -> usize {
        self.open.len()
    }

    /// The sealed generations' entries, for the checkpoint writing them.
    fn sealed_entries(&self) -> impl Iterator<Item = (&Uuid, &RecentEntry)> {
        self.sealed.iter().flat_map(|generation| generation.entries.iter())
    }
}

/// The on-disk part: every checkpointed disbursement's index entries.
pub struct HistoryRuns {
    tree: sled::Tree,
    locations: RunSet,
    refs: RunSet,
    keys: RunSet,
    created: RunSet,
}

/// A checkpoint's new index entries, gathered before they are written.
pub struct HistoryBatch {
    locations: RunBuilder,
    refs: RunBuilder,
    keys: RunBuilder,
    created: RunBuilder,
}

/// A checkpoint's runs, written, not yet visible.
pub struct StagedHistory {
    runs: Vec<StagedRun>,
}

impl HistoryBatch {
    /// Notes where a checkpoint put a version.
    pub fn push_location(&mut self, id: Uuid, location: Location) {
        self.locations.push(id.as_bytes(), &encode_location(location));
    }

    /// The write-once entries of the recent disbursements the index sealed
    /// for this checkpoint: each one's version is in the layers it writes
    /// (`in_layers`, checked in debug builds).
    pub fn push_sealed(&mut self, index: &DisbursementIndex, in_layers: impl Fn(&Uuid) -> bool) {
        for (id, entry) in index.sealed_entries() {
            debug_assert!(in_layers(id), "sealed recent disbursement {id} is in no layer written");
            self.push_created(*id, *entry);
        }
    }

    fn push_created(&mut self, id: Uuid, entry: RecentEntry) {
        self.refs.push(&entry.ref_hash.to_be_bytes(), id.as_bytes());
        self.keys
            .push(&merchant_hash_key(&entry.merchant_id, entry.key_hash), id.as_bytes());
        self.created
            .push(&created_key(&entry.merchant_id, entry.created_ms, &id), &[]);
    }
}

impl HistoryRuns {
    /// The runs in `tree`; `None` when the tree was never filled (a data
    /// dir from before the runs, whose blocks must be read once).
    /// With it, the open set (see `set_open`).
    pub fn load(tree: sled::Tree) -> Result<(HistoryRuns, Option<LoadedOpenSet>), StoreError> {
        let filled = tree
            .get(FORMAT_KEY)?
            .is_some_and(|format| format == FORMAT || format == FORMAT_WHOLE_OPEN_SET);
        let open = if filled { Some(open_set::load(&tree)?) } else { None };
        let runs = HistoryRuns {
            locations: RunSet::load(&tree, LOCATIONS)?,
            refs: RunSet::load(&tree, REFS)?,
            keys: RunSet::load(&tree, KEYS)?,
            created: RunSet::load(&tree, CREATED)?,
            tree,
        };
        Ok((runs, open))
    }

    /// An empty batch for the next checkpoint.
    pub fn batch(&self) -> HistoryBatch {
        HistoryBatch {
            locations: RunBuilder::new(LOCATIONS),
            refs: RunBuilder::new(REFS),
            keys: RunBuilder::new(KEYS),
            created: RunBuilder::new(CREATED),
        }
    }

    /// A batch of every disbursement of a data dir written before the runs:
    /// each as new, where the blocks put it.
    pub fn batch_of_all(&self, all: impl Iterator<Item = (Disbursement, u128, u128, Location)>) -> HistoryBatch {
        let mut batch = self.batch();
        for (disbursement, key_hash, ref_hash, location) in all {
            batch
                .locations
                .push(disbursement.id.as_bytes(), &encode_location(location));
            let entry = RecentEntry {
                merchant_id: disbursement.merchant_id,
                ref_hash,
                key_hash,
                created_ms: disbursement.created_at_ms,
            };
            batch.push_created(disbursement.id, entry);
        }
        batch
    }

    /// Writes a batch's runs' chunks through `sink`.
    pub fn stage(
        &self,
        batch: HistoryBatch,
        sink: &mut dyn FnMut(Vec<u8>, Vec<u8>) -> Result<(), StoreError>,
    ) -> Result<StagedHistory, StoreError> {
        let mut runs = Vec::new();
        for (set, records) in [
            (&self.locations, &batch.locations),
            (&self.refs, &batch.refs),
            (&self.keys, &batch.keys),
            (&self.created, &batch.created),
        ] {
            if !records.is_empty() {
                runs.push(set.stage(records, sink)?);
            }
        }
        Ok(StagedHistory { runs })
    }

    /// The entries to apply with the checkpoint's marker: the staged runs'
    /// metadata and the format (the open set's part is `OpenSetWrite`).
    pub fn marker_entries(staged: &StagedHistory) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut entries: Vec<(Vec<u8>, Vec<u8>)> = staged.runs.iter().map(StagedRun::meta_entry).collect();
        entries.push((FORMAT_KEY.to_vec(), FORMAT.to_vec()));
        entries
    }

    /// The tree the marker entries go to.
    pub fn tree(&self) -> &sled::Tree {
        &self.tree
    }

    /// Makes staged runs visible (their metadata is applied).
    pub fn add(&mut self, staged: StagedHistory) {
        for run in staged.runs {
            match run.tag() {
                tag if tag == LOCATIONS.tag => self.locations.add(run),
                tag if tag == REFS.tag => self.refs.add(run),
                tag if tag == KEYS.tag => self.keys.add(run),
                _ => self.created.add(run),
            }
        }
    }

    /// Where a disbursement's newest checkpointed version is.
    pub fn location(&self, id: &Uuid) -> Result<Option<Location>, StoreError> {
        Ok(self
            .locations
            .get(&self.tree, id.as_bytes())?
            .map(|v| decode_location(&v)))
    }

    /// The checkpointed disbursement with a ref code hash.
    pub fn id_by_ref(&self, ref_hash: u128) -> Result<Option<Uuid>, StoreError> {
        Ok(self.refs.get(&self.tree, &ref_hash.to_be_bytes())?.map(|v| uuid_of(&v)))
    }

    /// The checkpointed disbursement a merchant created with a key hash.
    pub fn id_by_key(&self, merchant_id: &Uuid, key_hash: u128) -> Result<Option<Uuid>, StoreError> {
        let key = merchant_hash_key(merchant_id, key_hash);
        Ok(self.keys.get(&self.tree, &key)?.map(|v| uuid_of(&v)))
    }

    /// A merchant's checkpointed key hashes, or `None` past `limit`.
    pub fn key_hashes(&self, merchant_id: &Uuid, limit: usize) -> Result<Option<Vec<u128>>, StoreError> {
        let (from, to) = (
            merchant_hash_key(merchant_id, 0),
            merchant_hash_key(merchant_id, u128::MAX),
        );
        let Some(found) = self.keys.range_within(&self.tree, &from, &to, limit)? else {
            return Ok(None);
        };
        // `to` itself is a key that could exist.
        let last = self.keys.get(&self.tree, &to)?.map(|_| u128::MAX);
        let mut hashes: Vec<u128> = found
            .iter()
            .map(|(key, _)| u128::from_be_bytes(key[16..32].try_into().expect("32-byte key")))
            .collect();
        hashes.extend(last);
        Ok((hashes.len() <= limit).then_some(hashes))
    }

    /// A merchant's checkpointed disbursements created in `[from_ms, to_ms)`.
    pub fn created_between(
        &self,
        merchant_id: &Uuid,
        from_ms: i64,
        to_ms: i64,
    ) -> Result<Vec<(i64, Uuid)>, StoreError> {
        if from_ms >= to_ms {
            return Ok(Vec::new());
        }
        let (from, to) = (
            created_key(merchant_id, from_ms, &Uuid::nil()),
            created_key(merchant_id, to_ms, &Uuid::nil()),
        );
        Ok(self
            .created
            .range(&self.tree, &from, &to)?
            .into_iter()
            .map(|(key, _)| {
                let ms = u64::from_be_bytes(key[16..24].try_into().expect("40-byte key")) ^ (1 << 63);
                (ms as i64, uuid_of(&key[24..40]))
            })
            .collect())
    }

    /// The next merge due, its run id reserved: planned under the write
    /// lock (briefly), written with no lock, installed under it again.
    pub fn plan_merge(&mut self) -> Option<PlannedMerge> {
        let tree = self.tree.clone();
        for set in [&mut self.locations, &mut self.refs, &mut self.keys, &mut self.created] {
            if let Some(runs) = set.plan_merge() {
                let id = set.reserve_id();
                return Some(PlannedMerge {
                    spec: set.spec(),
                    id,
                    runs,
                    tree,
                });
            }
        }
        None
    }

    /// Puts a written merge in place; returns the runs whose chunks
    /// `PlannedMerge::finish` may then delete.
    pub fn install_merge(&mut self, merged: MergedRun) -> Result<Vec<u64>, StoreError> {
        let tree = self.tree.clone();
        let set = match merged.tag() {
            tag if tag == LOCATIONS.tag => &mut self.locations,
            tag if tag == REFS.tag => &mut self.refs,
            tag if tag == KEYS.tag => &mut self.keys,
            _ => &mut self.created,
        };
        set.install_merge(&tree, merged)
    }

    /// Memory held for the runs (fences and filters).
    pub fn memory_bytes(&self) -> usize {
        [&self.locations, &self.refs, &self.keys, &self.created]
            .iter()
            .map(|set| set.memory_bytes())
            .sum()
    }

    /// Runs across the four indexes.
    pub fn run_count(&self) -> usize {
        [&self.locations, &self.refs, &self.keys, &self.created]
            .iter()
            .map(|set| set.run_count())
            .sum()
    }
}

/// A merge planned: which index, the runs it replaces, its run's id.
pub struct PlannedMerge {
    spec: RunSpec,
    id: u64,
    runs: Vec<std::sync::Arc<super::runs::Run>>,
    tree: sled::Tree,
}

impl PlannedMerge {
    /// Writes the merged run (readers go on meanwhile).
    pub fn write(&self) -> Result<MergedRun, StoreError> {
        RunSet::write_merge(self.spec, &self.tree, self.id, &self.runs)
    }

    /// Deletes the replaced runs' chunks, once installed.
    pub fn finish(&self, replaced: &[u64]) -> Result<(), StoreError> {
        RunSet::finish_merge(self.spec, &self.tree, replaced)
    }
}

fn encode_location(location: Location) -> [u8; 16] {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&location.checkpoint.to_be_bytes());
    bytes[8..12].copy_from_slice(&location.part.to_be_bytes());
    bytes[12..].copy_from_slice(&location.offset.to_be_bytes());
    bytes
}

fn decode_location(bytes: &[u8]) -> Location {
    Location {
        checkpoint: u64::from_be_bytes(bytes[..8].try_into().expect("16-byte location")),
        part: u32::from_be_bytes(bytes[8..12].try_into().expect("16-byte location")),
        offset: u32::from_be_bytes(bytes[12..16].try_into().expect("16-byte location")),
    }
}

fn uuid_of(bytes: &[u8]) -> Uuid {
    Uuid::from_slice(&bytes[..16]).expect("16-byte id")
}

fn merchant_hash_key(merchant_id: &Uuid, hash: u128) -> [u8; 32] {
    let mut key = [0u8; 32];
    key[..16].copy_from_slice(merchant_id.as_bytes());
    key[16..].copy_from_slice(&hash.to_be_bytes());
    key
}

/// Merchant, then creation time in an order-keeping form (sign bit
/// flipped), then id.
fn created_key(merchant_id: &Uuid, created_ms: i64, id: &Uuid) -> [u8; 40] {
    let mut key = [0u8; 40];
    key[..16].copy_from_slice(merchant_id.as_bytes());
    key[16..24].copy_from_slice(&((created_ms as u64) ^ (1 << 63)).to_be_bytes());
    key[24..].copy_from_slice(id.as_bytes());
    key
}

#[cfg(test)]
mod tests;
