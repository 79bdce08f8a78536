//! The idempotency keys of ledger entries at rest: one index of sorted runs
//! (`runs.rs`) keyed by merchant and key hash, valued by the entry's
//! sequence number. A checkpoint adds one run holding every merchant's keys
//! since the last, and merges keep the runs few, so what a checkpoint
//! writes follows the keys it brings, never a merchant's whole history,
//! and no value grows with a merchant (a big sled value becomes a blob
//! file, rewritten whole and held decoded past sled's cache setting).
//! Memory keeps each run's fences and filter.
//!
//! Invariant: a key whose entry a stored book holds is in a run or in the
//! journal after the checkpoint marker. A run becomes visible with the
//! marker, and a book may be written before it: so recovery puts the keys
//! of the entries it skips (the book has them) back into the overlay.

use super::history::merchant_hash_key;
use super::keys::{named_key, KeyPrefix};
use super::overlay::Layer;
use super::runs::{InOrderRun, RunBuilder, RunSet, RunSpec, StagedRun};
use super::StoreError;
use std::collections::HashMap;
use std::sync::RwLock;
use uuid::Uuid;

/// merchant + key hash -> seq (8 bytes, big-endian). The hash's bytes are
/// random, so they place a key in the filter.
const SPEC: RunSpec = RunSpec {
    tag: b'q',
    key_len: 32,
    value_len: 8,
    random_at: Some(16),
};

/// Says the runs hold every checkpointed key: absent in a data dir that
/// kept one value of keys per merchant and checkpoint (`KeyPrefix::IdempotencyKeyRun`).
const FORMAT_KEY: [u8; 18] = named_key(KeyPrefix::IndexRun, b"format-entry-keys");
const FORMAT: &[u8] = b"entry-keys-1";

/// Merchants' entry keys whose layers are in sled.
pub(super) struct EntryKeys {
    runs: RwLock<RunSet>,
}

impl EntryKeys {
    /// The runs in `tree`, and whether they hold every checkpointed key
    /// (else `fill_from_merchant_runs` must run once).
    pub(super) fn load(tree: &sled::Tree) -> Result<(EntryKeys, bool), StoreError> {
        let filled = tree.get(FORMAT_KEY)?.is_some_and(|format| format == FORMAT);
        let runs = RunSet::load(tree, SPEC)?;
        Ok((
            EntryKeys {
                runs: RwLock::new(runs),
            },
            filled,
        ))
    }

    /// Writes the keys of `layer` as a run's chunks through `sink`; `None`
    /// when the layer used none. Visible once `marker_entries` are applied
    /// and it is `add`ed.
    pub(super) fn stage(
        &self,
        layer: &Layer,
        sink: &mut dyn FnMut(Vec<u8>, Vec<u8>) -> Result<(), StoreError>,
    ) -> Result<Option<StagedRun>, StoreError> {
        let count = layer.merchants.values().map(|merchant| merchant.keys.len()).sum();
        if count == 0 {
            return Ok(None);
        }
        let mut run = RunBuilder::with_capacity(SPEC, count);
        for (merchant_id, merchant) in &layer.merchants {
            for (hash, seq) in &merchant.keys {
                run.push(&merchant_hash_key(merchant_id, *hash), &seq.to_be_bytes());
            }
        }
        let runs = self.runs.read().expect("entry keys lock");
        runs.stage(&run, sink).map(Some)
    }

    /// What goes into the checkpoint's marker batch with `staged`.
    pub(super) fn marker_entries(staged: Option<&StagedRun>) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut entries: Vec<(Vec<u8>, Vec<u8>)> = staged.map(StagedRun::meta_entry).into_iter().collect();
        entries.push((FORMAT_KEY.to_vec(), FORMAT.to_vec()));
        entries
    }

    /// Makes a staged run visible, after its marker was applied.
    pub(super) fn add(&self, staged: StagedRun) {
        self.runs.write().expect("entry keys lock").add(staged);
    }

    /// Merges runs while there are too many. Readers go on while a merge is
    /// written; it is put in place under the lock. A merge that fails is
    /// left to its intent (finished or undone when the runs are loaded).
    pub(super) fn compact(&self, tree: &sled::Tree) -> Result<(), StoreError> {
        loop {
            let planned = {
                let mut runs = self.runs.write().expect("entry keys lock");
                runs.plan_merge().map(|plan| (plan, runs.reserve_id()))
            };
            let Some((plan, id)) = planned else { return Ok(()) };
            let merged = RunSet::write_merge(SPEC, tree, id, &plan, &|_| true)?;
            let replaced = self
                .runs
                .write()
                .expect("entry keys lock")
                .install_merge(tree, merged)?;
            RunSet::finish_merge(SPEC, tree, &replaced)?;
        }
    }

    /// The entry that used `hash` among the checkpointed keys of a merchant
    /// (`tree` is called only if a run may hold it: see `RunSet::get`).
    pub(super) fn get<T: std::ops::Deref<Target = sled::Tree>>(
        &self,
        tree: impl FnOnce() -> T,
        merchant_id: &Uuid,
        hash: u128,
    ) -> Result<Option<u64>, StoreError> {
        let runs = self.runs.read().expect("entry keys lock");
        Ok(runs
            .get(tree, &merchant_hash_key(merchant_id, hash))?
            .map(|seq| read_seq(&seq)))
    }

    /// Adds every checkpointed key of a merchant, with its entry, to
    /// `index`; false as soon as `index` holds more than `limit`.
    pub(super) fn add_merchant_keys(
        &self,
        tree: &sled::Tree,
        merchant_id: &Uuid,
        index: &mut HashMap<u128, u64>,
        limit: usize,
    ) -> Result<bool, StoreError> {
        // Half-open: a hash of all ones is out of practical reach.
        let (from, to) = (
            merchant_hash_key(merchant_id, 0),
            merchant_hash_key(merchant_id, u128::MAX),
        );
        let mut within = index.len() <= limit;
        let runs = self.runs.read().expect("entry keys lock");
        runs.visit_range(tree, &from, &to, &mut |key, seq| {
            let hash = u128::from_be_bytes(key[16..].try_into().expect("a 32-byte key"));
            index.insert(hash, read_seq(seq));
            within = index.len() <= limit;
            within
        })?;
        Ok(within)
    }

    /// Moves the per-merchant key values of an older data dir into one run,
    /// then removes them, in one batch with the format key; flushed by the
    /// caller. Memory holds one merchant's keys at a time: the values come
    /// in merchant order, so the run is written as they are read. Cut
    /// short, it is done again from the start, its chunks written again
    /// under the same id.
    pub(super) fn fill_from_merchant_runs(&self, tree: &sled::Tree) -> Result<u64, StoreError> {
        let prefix = [KeyPrefix::IdempotencyKeyRun.byte()];
        // A first pass counts the keys, which size the run's filter.
        let mut expected = 0u64;
        for value in tree.scan_prefix(prefix).values() {
            expected += (value?.len() / MERCHANT_RUN_RECORD) as u64;
        }
        let mut runs = self.runs.write().expect("entry keys lock");
        let mut old_keys = Vec::new();
        let staged = if expected == 0 {
            for key in tree.scan_prefix(prefix).keys() {
                old_keys.push(key?);
            }
            None
        } else {
            let mut sink = |key: Vec<u8>, chunk: Vec<u8>| -> Result<(), StoreError> {
                tree.insert(key, chunk)?;
                Ok(())
            };
            let mut run = runs.stage_in_order(expected, &mut sink);
            let mut merchant: Option<(Uuid, Vec<(u128, u64)>)> = None;
            for item in tree.scan_prefix(prefix) {
                let (key, value) = item?;
                let merchant_id = key
                    .get(1..17)
                    .and_then(|bytes| Uuid::from_slice(bytes).ok())
                    .ok_or_else(|| StoreError::Io(std::io::Error::other("a key run's key is cut short")))?;
                if merchant.as_ref().is_some_and(|(id, _)| *id != merchant_id) {
                    let (id, keys) = merchant.take().expect("checked above");
                    push_merchant_keys(&mut run, &id, keys)?;
                }
                let (_, keys) = merchant.get_or_insert_with(|| (merchant_id, Vec::new()));
                keys.extend(decode_merchant_run(&value));
                old_keys.push(key);
            }
            if let Some((id, keys)) = merchant {
                push_merchant_keys(&mut run, &id, keys)?;
            }
            Some(run.finish()?)
        };
        let mut batch = sled::Batch::default();
        for (key, value) in EntryKeys::marker_entries(staged.as_ref()) {
            batch.insert(key, value);
        }
        for key in old_keys {
            batch.remove(key);
        }
        tree.apply_batch(batch)?;
        if let Some(staged) = staged {
            runs.add(staged);
        }
        Ok(expected)
    }
}

/// Writes one merchant's keys, gathered from its values oldest first, in
/// hash order; of one hash the newest value's entry, as a lookup found it.
fn push_merchant_keys(
    run: &mut InOrderRun<'_>,
    merchant_id: &Uuid,
    mut keys: Vec<(u128, u64)>,
) -> Result<(), StoreError> {
    // Stable: of equal hashes the newest stays last.
    keys.sort_by_key(|(hash, _)| *hash);
    for (at, (hash, seq)) in keys.iter().enumerate() {
        if keys.get(at + 1).is_some_and(|(next, _)| next == hash) {
            continue;
        }
        run.push(&merchant_hash_key(merchant_id, *hash), &seq.to_be_bytes())?;
    }
    Ok(())
}

/// Bytes of one key in an older data dir's per-merchant value: its hash,
/// then its entry's seq, big-endian.
const MERCHANT_RUN_RECORD: usize = 24;

fn read_seq(bytes: &[u8]) -> u64 {
    u64::from_be_bytes(bytes.try_into().expect("an 8-byte seq"))
}

/// The `(hash, seq)` pairs of an older data dir's per-merchant key value.
fn decode_merchant_run(bytes: &[u8]) -> impl Iterator<Item = (u128, u64)> + '_ {
    bytes.chunks_exact(MERCHANT_RUN_RECORD).map(|record| {
        let hash = u128::from_be_bytes(record[..16].try_into().expect("16 bytes"));
        (hash, read_seq(&record[16..]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::{wallet_credit, MerchantBook};
    use crate::money::MinorUnits;
    use crate::store::keys::merchant_seq_key;
    use crate::store::record::JournalRecord;
    use crate::store::Store;

    /// Posts `count` keyed credits for `merchant` from journal seq `seq`,
    /// returning the next seq; its keys are `{prefix}{n}`.
    fn post_keyed(store: &Store, book: &mut MerchantBook, seq: &mut u64, prefix: &str, count: usize) {
        for n in 0..count {
            let proposal = wallet_credit(MinorUnits::new(1), "credit".into(), Some(format!("{prefix}{n}")));
            let entry = book.prepare(proposal, 0).unwrap();
            book.apply(&entry).unwrap();
            let record = JournalRecord::EntryPosted(entry);
            store.apply(*seq, &record, &record.encode()).unwrap();
            *seq += 1;
        }
    }

    /// Over many checkpoints the runs merge, and every key is found by
    /// its merchant only, with its entry, also after a restart.
    #[test]
    fn keys_of_many_checkpoints_are_found_after_merges_and_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let merchants = [Uuid::new_v4(), Uuid::new_v4()];
        let mut books = merchants.map(MerchantBook::new);
        let mut seq = 1;
        {
            let store = Store::open(dir.path()).unwrap();
            for _ in 0..20 {
                for book in books.iter_mut() {
                    let done = book.last_seq as usize;
                    post_keyed(&store, book, &mut seq, &format!("k{done}-"), 50);
                }
                store.checkpoint().unwrap();
            }
            let runs = store.entry_keys.runs.read().unwrap().run_count();
            assert!(runs < 8, "20 checkpoints' runs merged into {runs}");
        }
        let store = Store::open(dir.path()).unwrap();
        for (merchant, book) in merchants.iter().zip(&books) {
            let keys = store.idempotency_index(merchant, usize::MAX).unwrap().unwrap();
            assert_eq!(keys.len() as u64, book.last_seq);
            for done in (0..1000).step_by(50) {
                for n in [0, 49] {
                    let hash = store.key_hash(&format!("k{done}-{n}"));
                    assert_eq!(
                        store.checkpointed_key_lookup(merchant, hash).unwrap(),
                        Some(keys[&hash])
                    );
                }
            }
            assert_eq!(
                store.idempotency_index(merchant, 999).unwrap(),
                None,
                "more keys than the limit"
            );
        }
        let hash = store.key_hash("k0-0");
        assert_eq!(store.checkpointed_key_lookup(&Uuid::new_v4(), hash).unwrap(), None);
        assert_eq!(
            store
                .checkpointed_key_lookup(&merchants[0], store.key_hash("never"))
                .unwrap(),
            None
        );
    }

    /// A data dir of format 6 kept one value of keys per merchant and
    /// checkpoint: opening it moves them into the runs and removes them.
    #[test]
    fn per_merchant_key_values_of_format_6_are_moved_into_runs() {
        let dir = tempfile::tempdir().unwrap();
        let merchants = [Uuid::new_v4(), Uuid::new_v4()];
        let written: Vec<(Uuid, u128, u64)> = {
            let store = Store::open(dir.path()).unwrap();
            let tree = store.ledger_tree();
            let mut written = Vec::new();
            // Two values for the first merchant (two checkpoints), one for the second.
            // The second value repeats key 299 with a newer entry: the newest wins.
            for (merchant, run, keys) in [(0, 10u64, 0..300u64), (0, 20, 299..310), (1, 10, 0..5)] {
                let mut pairs: Vec<(u128, u64)> = keys
                    .map(|n| (store.key_hash(&format!("key-{n}")), n + 1 + run))
                    .collect();
                pairs.sort_unstable();
                let mut value = Vec::new();
                for (hash, seq) in &pairs {
                    value.extend_from_slice(&hash.to_be_bytes());
                    value.extend_from_slice(&seq.to_be_bytes());
                    written.push((merchants[merchant], *hash, *seq));
                }
                tree.insert(
                    merchant_seq_key(KeyPrefix::IdempotencyKeyRun, &merchants[merchant], run),
                    value,
                )
                .unwrap();
            }
            tree.remove(FORMAT_KEY).unwrap();
            written
        };
        let store = Store::open(dir.path()).unwrap();
        let tree = store.ledger_tree();
        assert_eq!(tree.scan_prefix([KeyPrefix::IdempotencyKeyRun.byte()]).count(), 0);
        assert_eq!(tree.get(FORMAT_KEY).unwrap().as_deref(), Some(FORMAT));
        drop(tree);
        let repeated = store.key_hash("key-299");
        for (merchant, hash, seq) in &written {
            let newest = if *hash == repeated && *merchant == merchants[0] {
                299 + 1 + 20
            } else {
                *seq
            };
            assert_eq!(store.checkpointed_key_lookup(merchant, *hash).unwrap(), Some(newest));
        }
        assert_eq!(
            store
                .idempotency_index(&merchants[0], usize::MAX)
                .unwrap()
                .unwrap()
                .len(),
            310
        );
        assert_eq!(
            store
                .idempotency_index(&merchants[1], usize::MAX)
                .unwrap()
                .unwrap()
                .len(),
            5
        );
        let other = store.key_hash("key-7");
        assert_eq!(store.checkpointed_key_lookup(&merchants[1], other).unwrap(), None);
    }
}
