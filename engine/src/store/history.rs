//! Where versioned resources (disbursements, orders) are found: the ones
//! created since the last checkpoint that covered them, and the open ones
//! (live work), in memory; all history in sorted runs on disk (`runs.rs`),
//! read on demand. So memory follows live work, and opening the store reads
//! the runs' fences and filters, never every block.
//!
//! Each kind declares its indexes once (`KindSpec`), each a `RunSet` under
//! `H` in sled's `ledger` tree:
//! - locations: id -> where its newest checkpointed version is (`Location`);
//! - refs: ref code hash -> id;
//! - lookups: merchant + a hash -> id (an idempotency key; an order's own id);
//! - created: merchant + creation time + id, for listings.
//!
//! A checkpoint adds one run to each, with how the open set changed
//! (`open_set.rs`, for kinds that keep one).

mod entries;
mod kinds;
mod open_set;

use super::blocks::Location;
use super::runs::{MergedRun, RunBuilder, RunSet, RunSpec, StagedRun};
use super::sled_slot::SledSlot;
use super::StoreError;
use crate::sharded::ShardedMap;
pub(in crate::store) use entries::merchant_hash_key;
use entries::{created_key, encode_location, uuid_of};
pub use entries::{created_ms_of, decode_location};
use foldhash::{HashMap, HashMapExt};
pub use kinds::{
    Kind, KindSpec, BATCHES, BENEFICIARIES, DISBURSEMENTS, KINDS, KIND_COUNT, LOOKUPS_MAX, ORDERS, REFUNDS,
    SETTLEMENTS, WEBHOOK_ATTEMPTS, WEBHOOK_EVENTS,
};
use open_set::OpenSet;
pub use open_set::{Loaded as LoadedOpenSet, OpenSetWrite};
use std::collections::BTreeSet;
use std::sync::Arc;
use uuid::Uuid;

/// A durable version as the recent index takes it.
pub struct Indexed {
    /// Its id.
    pub id: Uuid,
    /// Its merchant (whose lookups find it).
    pub merchant_id: Uuid,
    /// Whose listing by creation time holds it: its merchant, or for a
    /// refund its order.
    pub listed_under: Uuid,
    /// Creation, Unix ms.
    pub created_ms: i64,
    /// New to every index (its creation record, or as far as is known).
    pub new: bool,
    /// Final: it leaves the open set (kinds that keep one).
    pub terminal: bool,
}

/// The hashes a new version is indexed under: its ref code's (for kinds
/// found by one), and one per lookup of its kind (`None` where it has no
/// such key).
pub type Hashes = (Option<u128>, [Option<u128>; LOOKUPS_MAX]);

/// What a version of a kind without refs or lookups is indexed under.
pub const NO_HASHES: Hashes = (None, [None; LOOKUPS_MAX]);

/// What the index keeps of a version created since the last checkpoint
/// that covered it.
#[derive(Clone, Copy)]
struct RecentEntry {
    merchant_id: Uuid,
    listed_under: Uuid,
    ref_hash: Option<u128>,
    lookups: [Option<u128>; LOOKUPS_MAX],
    created_ms: i64,
}

impl RecentEntry {
    /// What is kept of `version`, indexed under `hashes`.
    fn of(version: &Indexed, (ref_hash, lookups): Hashes) -> RecentEntry {
        RecentEntry {
            merchant_id: version.merchant_id,
            listed_under: version.listed_under,
            ref_hash,
            lookups,
            created_ms: version.created_ms,
        }
    }
}

/// One merchant's recent versions (their lookups), and the ones listed
/// under it (its merchant's, or an order's refunds).
#[derive(Default)]
struct RecentMerchant {
    by_lookup: [HashMap<u128, Uuid>; LOOKUPS_MAX],
    created: BTreeSet<(i64, Uuid)>,
}

/// The versions first indexed while one overlay layer filled. The
/// checkpoint that writes the layer writes their entries to the runs, then
/// drops the generation whole: no entry is ever removed one by one.
#[derive(Default)]
struct Generation {
    entries: ShardedMap<Uuid, RecentEntry>,
    by_ref: ShardedMap<u128, Uuid>,
    merchants: HashMap<Uuid, RecentMerchant>,
}

impl Generation {
    /// An empty generation with room for as many versions as `previous`
    /// indexed (see `Layer::sized_like`).
    fn sized_like(previous: &Generation) -> Generation {
        Generation {
            entries: ShardedMap::with_capacity(previous.entries.len()),
            by_ref: ShardedMap::with_capacity(previous.by_ref.len()),
            merchants: HashMap::with_capacity(previous.merchants.len()),
        }
    }

    fn insert(&mut self, id: Uuid, entry: RecentEntry) {
        if let Some(ref_hash) = entry.ref_hash {
            self.by_ref.insert(ref_hash, id);
        }
        let merchant = self.merchants.entry(entry.merchant_id).or_default();
        for (lookup, hash) in merchant.by_lookup.iter_mut().zip(entry.lookups) {
            if let Some(hash) = hash {
                lookup.insert(hash, id);
            }
        }
        let listing = self.merchants.entry(entry.listed_under).or_default();
        listing.created.insert((entry.created_ms, id));
        self.entries.insert(id, entry);
    }
}

/// The in-memory part of one kind: recent versions and the open set.
///
/// Invariant: `filling` holds the recent versions that went to the
/// overlay's active layer, and `sealed` those of the layers taken by
/// checkpoints not yet finished (or failed: a failed layer goes back into
/// the active one, and its generation stays sealed until a checkpoint
/// writes both). Both change under the overlay's lock, so every recent
/// entry a checkpoint writes belongs to a version in the layers it writes.
#[derive(Default)]
pub struct RecentIndex {
    filling: Generation,
    sealed: Vec<Generation>,
    open: OpenSet,
}

impl RecentIndex {
    /// Indexes a durable version (idempotent). A version `new` that the
    /// index already holds as recent is not indexed twice; one new to the
    /// index but already in the history only writes the same entries
    /// again, which merges fold into one. `hashes` gives the store's hashes
    /// of its ref code and lookups; `open_set` says whether the kind keeps one.
    pub fn index_version(&mut self, version: Indexed, open_set: bool, hashes: impl FnOnce() -> Hashes) {
        let id = version.id;
        if version.new && !self.is_recent(&id) {
            self.filling.insert(id, RecentEntry::of(&version, hashes()));
        }
        if !open_set {
            return;
        }
        if version.terminal {
            self.open.close(id);
        } else {
            self.open.open(id);
        }
    }

    /// A checkpoint took the overlay's active layer (call under the
    /// overlay's lock): the recent versions indexed so far are the ones it
    /// will write.
    pub fn seal(&mut self) {
        if self.filling.entries.is_empty() {
            // Nothing came since the last seal: the room made for it goes
            // too, so a quiet server holds none of its last busy moment.
            self.filling = Generation::default();
        } else {
            let next = Generation::sized_like(&self.filling);
            self.sealed.push(std::mem::replace(&mut self.filling, next));
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

    /// A recent version with a ref code hash.
    pub fn id_by_ref(&self, ref_hash: u128) -> Option<Uuid> {
        self.generations()
            .find_map(|generation| generation.by_ref.get(&ref_hash).copied())
    }

    /// A recent version a merchant made with a hash of lookup `lookup`.
    pub fn id_by_lookup(&self, lookup: usize, merchant_id: &Uuid, hash: u128) -> Option<Uuid> {
        self.generations().find_map(|generation| {
            generation.merchants.get(merchant_id)?.by_lookup[lookup]
                .get(&hash)
                .copied()
        })
    }

    /// A merchant's recent hashes of lookup `lookup`.
    pub fn lookup_hashes(&self, lookup: usize, merchant_id: &Uuid) -> Vec<u128> {
        self.generations()
            .filter_map(|generation| generation.merchants.get(merchant_id))
            .flat_map(|merchant| merchant.by_lookup[lookup].keys().copied())
            .collect()
    }

    /// The recent versions listed under `merchant_id` (see
    /// `Indexed::listed_under`) created in `[from_ms, to_ms)`, in no order.
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

    /// Versions created since the last checkpoint covering them.
    pub fn recent_count(&self) -> usize {
        self.generations().map(|generation| generation.entries.len()).sum()
    }

    /// True for a version created since the last checkpoint covering it.
    pub fn is_recent(&self, id: &Uuid) -> bool {
        self.generations().any(|generation| generation.entries.contains_key(id))
    }

    /// The open set as the checkpoints left it (replay then moves it on).
    pub fn set_open(&mut self, loaded: LoadedOpenSet) {
        self.open = OpenSet::loaded(loaded);
    }

    /// Ids not yet in a final status.
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

    /// How many are not yet in a final status.
    pub fn open_count(&self) -> usize {
        self.open.len()
    }

    /// The sealed generations' entries, for the checkpoint writing them.
    fn sealed_entries(&self) -> impl Iterator<Item = (&Uuid, &RecentEntry)> {
        self.sealed.iter().flat_map(|generation| generation.entries.iter())
    }
}

/// The on-disk part of one kind: every checkpointed version's index entries.
pub struct HistoryRuns {
    spec: &'static KindSpec,
    sled: Arc<SledSlot>,
    locations: RunSet,
    refs: Option<RunSet>,
    lookups: Vec<RunSet>,
    created: Option<RunSet>,
}

/// A checkpoint's new index entries, gathered before they are written.
pub struct HistoryBatch {
    locations: RunBuilder,
    refs: Option<RunBuilder>,
    lookups: Vec<RunBuilder>,
    created: Option<RunBuilder>,
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

    /// The write-once entries of the recent versions the index sealed for
    /// this checkpoint: each one's version is in the layers it writes
    /// (`in_layers`, checked in debug builds).
    pub fn push_sealed(&mut self, index: &RecentIndex, in_layers: impl Fn(&Uuid) -> bool) {
        for (id, entry) in index.sealed_entries() {
            debug_assert!(in_layers(id), "sealed recent version {id} is in no layer written");
            self.push_created(*id, *entry);
        }
    }

    /// The write-once entries of a version written before the runs held its
    /// kind (a data dir being brought to this format).
    pub fn push_new(&mut self, version: &Indexed, hashes: Hashes, location: Location) {
        self.push_location(version.id, location);
        self.push_created(version.id, RecentEntry::of(version, hashes));
    }

    fn push_created(&mut self, id: Uuid, entry: RecentEntry) {
        if let (Some(refs), Some(ref_hash)) = (&mut self.refs, entry.ref_hash) {
            refs.push(&ref_hash.to_be_bytes(), id.as_bytes());
        }
        for (run, hash) in self.lookups.iter_mut().zip(entry.lookups) {
            if let Some(hash) = hash {
                run.push(&merchant_hash_key(&entry.merchant_id, hash), id.as_bytes());
            }
        }
        if let Some(created) = &mut self.created {
            created.push(&created_key(&entry.listed_under, entry.created_ms, &id), &[]);
        }
    }
}

impl HistoryRuns {
    /// The runs of `spec`'s kind in `tree`; `None` when the tree was never
    /// filled (a data dir from before the runs held the kind, whose versions
    /// must be read once). With it, the open set (see `set_open`), empty
    /// for a kind that keeps none.
    pub fn load(
        sled: Arc<SledSlot>,
        spec: &'static KindSpec,
    ) -> Result<(HistoryRuns, Option<LoadedOpenSet>), StoreError> {
        let tree = sled.ledger();
        let filled = tree
            .get(spec.format_key)?
            .is_some_and(|format| format == spec.format || spec.formats_read.iter().any(|read| format == *read));
        let open = match (filled, spec.keeps_open_set) {
            (false, _) => None,
            (true, true) => Some(open_set::load(&tree)?),
            (true, false) => Some(LoadedOpenSet::default()),
        };
        let runs = HistoryRuns {
            spec,
            locations: RunSet::load(&tree, spec.locations)?,
            refs: spec.refs.map(|refs| RunSet::load(&tree, refs)).transpose()?,
            lookups: spec
                .lookups
                .iter()
                .map(|lookup| RunSet::load(&tree, *lookup))
                .collect::<Result<_, _>>()?,
            created: spec.created.map(|created| RunSet::load(&tree, created)).transpose()?,
            sled: sled.clone(),
        };
        Ok((runs, open))
    }

    /// Its kind.
    pub fn spec(&self) -> &'static KindSpec {
        self.spec
    }

    /// An empty batch for the next checkpoint.
    pub fn batch(&self) -> HistoryBatch {
        self.batch_for(0)
    }

    /// A batch with room for the entries of `versions` versions: each has
    /// one location and at most one entry in every other run.
    pub fn batch_for(&self, versions: usize) -> HistoryBatch {
        let run = |spec| RunBuilder::with_capacity(spec, versions);
        HistoryBatch {
            locations: run(self.spec.locations),
            refs: self.spec.refs.map(run),
            lookups: self.spec.lookups.iter().map(|lookup| run(*lookup)).collect(),
            created: self.spec.created.map(run),
        }
    }

    fn sets(&self) -> impl Iterator<Item = &RunSet> {
        [Some(&self.locations), self.refs.as_ref(), self.created.as_ref()]
            .into_iter()
            .flatten()
            .chain(self.lookups.iter())
    }

    fn sets_mut(&mut self) -> impl Iterator<Item = &mut RunSet> {
        let Self {
            locations,
            refs,
            lookups,
            created,
            ..
        } = self;
        [Some(locations), refs.as_mut(), created.as_mut()]
            .into_iter()
            .flatten()
            .chain(lookups.iter_mut())
    }

    fn set_tagged(&mut self, tag: u8) -> &mut RunSet {
        self.sets_mut()
            .find(|set| set.spec().tag == tag)
            .expect("a run of one of this kind's indexes")
    }

    /// Writes a batch's runs' chunks through `sink`.
    pub fn stage(
        &self,
        batch: HistoryBatch,
        sink: &mut dyn FnMut(Vec<u8>, Vec<u8>) -> Result<(), StoreError>,
    ) -> Result<StagedHistory, StoreError> {
        let mut runs = Vec::new();
        let HistoryBatch {
            locations,
            refs,
            lookups,
            created,
        } = batch;
        for records in [Some(locations), refs, created].into_iter().flatten().chain(lookups) {
            if !records.is_empty() {
                let set = self
                    .sets()
                    .find(|set| set.spec().tag == records.spec().tag)
                    .expect("a batch of this kind's indexes");
                runs.push(set.stage(&records, sink)?);
            }
        }
        Ok(StagedHistory { runs })
    }

    /// The entries to apply with the checkpoint's marker: the staged runs'
    /// metadata and the format (the open set's part is `OpenSetWrite`).
    pub fn marker_entries(&self, staged: &StagedHistory) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut entries: Vec<(Vec<u8>, Vec<u8>)> = staged.runs.iter().map(StagedRun::meta_entry).collect();
        entries.push((self.spec.format_key.to_vec(), self.spec.format.to_vec()));
        entries
    }

    /// Makes staged runs visible (their metadata is applied).
    pub fn add(&mut self, staged: StagedHistory) {
        for run in staged.runs {
            self.set_tagged(run.tag()).add(run);
        }
    }

    /// Where a version's newest checkpointed copy is.
    pub fn location(&self, id: &Uuid) -> Result<Option<Location>, StoreError> {
        Ok(self
            .locations
            .get(|| self.sled.ledger(), id.as_bytes())?
            .map(|v| decode_location(self.spec.blocks, &v)))
    }

    /// The checkpointed version with a ref code hash.
    pub fn id_by_ref(&self, ref_hash: u128) -> Result<Option<Uuid>, StoreError> {
        let Some(refs) = &self.refs else {
            return Ok(None);
        };
        Ok(refs
            .get(|| self.sled.ledger(), &ref_hash.to_be_bytes())?
            .map(|v| uuid_of(&v)))
    }

    /// The checkpointed version a merchant made with a hash of lookup `lookup`.
    pub fn id_by_lookup(&self, lookup: usize, merchant_id: &Uuid, hash: u128) -> Result<Option<Uuid>, StoreError> {
        let key = merchant_hash_key(merchant_id, hash);
        Ok(self.lookups[lookup]
            .get(|| self.sled.ledger(), &key)?
            .map(|v| uuid_of(&v)))
    }

    /// A merchant's checkpointed hashes of lookup `lookup`, or `None` past `limit`.
    pub fn lookup_hashes(
        &self,
        lookup: usize,
        merchant_id: &Uuid,
        limit: usize,
    ) -> Result<Option<Vec<u128>>, StoreError> {
        let set = &self.lookups[lookup];
        let (from, to) = (
            merchant_hash_key(merchant_id, 0),
            merchant_hash_key(merchant_id, u128::MAX),
        );
        let Some(found) = set.range_within(&self.sled.ledger(), &from, &to, limit)? else {
            return Ok(None);
        };
        // `to` itself is a key that could exist.
        let last = set.get(|| self.sled.ledger(), &to)?.map(|_| u128::MAX);
        let mut hashes: Vec<u128> = found
            .iter()
            .map(|(key, _)| u128::from_be_bytes(key[16..32].try_into().expect("32-byte key")))
            .collect();
        hashes.extend(last);
        Ok((hashes.len() <= limit).then_some(hashes))
    }

    /// A merchant's checkpointed versions created in `[from_ms, to_ms)`.
    pub fn created_between(
        &self,
        merchant_id: &Uuid,
        from_ms: i64,
        to_ms: i64,
    ) -> Result<Vec<(i64, Uuid)>, StoreError> {
        let Some(created) = self.created.as_ref().filter(|_| from_ms < to_ms) else {
            return Ok(Vec::new());
        };
        let (from, to) = (
            created_key(merchant_id, from_ms, &Uuid::nil()),
            created_key(merchant_id, to_ms, &Uuid::nil()),
        );
        Ok(created
            .range(&self.sled.ledger(), &from, &to)?
            .into_iter()
            .map(|(key, _)| (created_ms_of(&key), uuid_of(&key[24..40])))
            .collect())
    }

    /// The next merge due, its run id reserved: planned under the write
    /// lock (briefly), written with no lock, installed under it again.
    pub fn plan_merge(&mut self) -> Option<PlannedMerge> {
        let sled = self.sled.clone();
        for set in self.sets_mut() {
            if let Some(runs) = set.plan_merge() {
                let id = set.reserve_id();
                return Some(PlannedMerge {
                    spec: set.spec(),
                    id,
                    runs,
                    sled,
                });
            }
        }
        None
    }

    /// Puts a written merge in place; returns the runs whose chunks
    /// `PlannedMerge::finish` may then delete.
    pub fn install_merge(&mut self, merged: MergedRun) -> Result<Vec<u64>, StoreError> {
        let tree = self.sled.ledger();
        self.set_tagged(merged.tag()).install_merge(&tree, merged)
    }

    /// Memory held for the runs (fences and filters).
    pub fn memory_bytes(&self) -> usize {
        self.sets().map(RunSet::memory_bytes).sum()
    }

    /// Entries across the kind's indexes (a key in several runs counts in each).
    #[cfg(test)]
    pub fn entries(&self) -> u64 {
        self.sets().map(RunSet::entries).sum()
    }

    /// Runs across the kind's indexes.
    pub fn run_count(&self) -> usize {
        self.sets().map(RunSet::run_count).sum()
    }
}

/// A merge planned: which index, the runs it replaces, its run's id.
pub struct PlannedMerge {
    spec: RunSpec,
    id: u64,
    runs: Vec<std::sync::Arc<super::runs::Run>>,
    sled: Arc<SledSlot>,
}

impl PlannedMerge {
    /// The index it merges.
    pub fn spec(&self) -> RunSpec {
        self.spec
    }

    /// Writes the merged run (readers go on meanwhile), without the
    /// records `keep` refuses.
    pub fn write(&self, keep: &dyn Fn(&[u8]) -> bool) -> Result<MergedRun, StoreError> {
        RunSet::write_merge(self.spec, &self.sled.ledger(), self.id, &self.runs, keep)
    }

    /// Deletes the replaced runs' chunks, once installed.
    pub fn finish(&self, replaced: &[u64]) -> Result<(), StoreError> {
        RunSet::finish_merge(self.spec, &self.sled.ledger(), replaced)
    }
}

#[cfg(test)]
mod tests;
