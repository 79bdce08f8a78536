//! Reading an index's runs: one key (at most one chunk read per run its
//! filter lets through, newest run first) or a range of keys.

use super::{random_bytes, read_chunk, sorted_partition, IndexRecord, RunSet, BLOOM_PROBES};
use crate::store::StoreError;
use std::collections::BTreeMap;
use std::ops::Deref;

impl RunSet {
    /// The newest value of `key`, if any run has it. `tree` is called only
    /// when a run's last key, filter and fences let the key through: a key no run
    /// can hold is answered from memory, without a tree handle (taking one
    /// waits while sled reopens).
    pub fn get<T: Deref<Target = sled::Tree>>(
        &self,
        tree: impl FnOnce() -> T,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let spec = self.spec;
        let mut chunks = self
            .runs
            .iter()
            .rev()
            .filter_map(|run| {
                if run.last_key.as_deref().is_some_and(|last| key > last) {
                    return None;
                }
                if let Some(at) = spec.random_at {
                    if !crate::bloom::holds(&run.meta.bloom, random_bytes(key, at), BLOOM_PROBES) {
                        return None;
                    }
                }
                // Fences are sorted (each chunk's first key, chunks in key
                // order): the chunk that may hold `key` is the last one
                // whose fence is at or before it, found by halving, not by
                // a walk whose length grows with the run.
                let after = sorted_partition(&run.meta.fences, spec.key_len, |fence| fence <= key);
                (after > 0).then(|| (run.id, after as u32 - 1))
            })
            .peekable();
        if chunks.peek().is_none() {
            return Ok(None);
        }
        let tree = tree();
        for (run_id, chunk) in chunks {
            let chunk = read_chunk(&tree, spec.tag, run_id, chunk)?;
            let record_len = spec.record_len();
            let at = sorted_partition(&chunk, record_len, |record| &record[..spec.key_len] < key);
            if let Some(record) = chunk.get(at * record_len..(at + 1) * record_len) {
                if &record[..spec.key_len] == key {
                    return Ok(Some(record[spec.key_len..].to_vec()));
                }
            }
        }
        Ok(None)
    }

    /// Every key in `[from, to)` with its newest value, in key order.
    pub fn range(&self, tree: &sled::Tree, from: &[u8], to: &[u8]) -> Result<Vec<IndexRecord>, StoreError> {
        Ok(self.range_within(tree, from, to, usize::MAX)?.unwrap_or_default())
    }

    /// Like `range`, or `None` as soon as more than `limit` keys are found.
    pub fn range_within(
        &self,
        tree: &sled::Tree,
        from: &[u8],
        to: &[u8],
        limit: usize,
    ) -> Result<Option<Vec<IndexRecord>>, StoreError> {
        let mut found: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let mut over = false;
        // A newer run's value replaces an older one's.
        self.visit_range(tree, from, to, &mut |key, value| {
            found.insert(key.to_vec(), value.to_vec());
            over = found.len() > limit;
            !over
        })?;
        Ok((!over).then(|| found.into_iter().collect()))
    }

    /// Hands every record in `[from, to)` of every run to `visit` (key,
    /// then value), oldest run first, so of a key in several runs the
    /// newest comes last; reads one chunk at a time and copies nothing.
    /// Stops once `visit` returns false.
    pub fn visit_range(
        &self,
        tree: &sled::Tree,
        from: &[u8],
        to: &[u8],
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), StoreError> {
        let spec = self.spec;
        for run in &self.runs {
            let fences = &run.meta.fences;
            let first = sorted_partition(fences, spec.key_len, |fence| fence <= from).saturating_sub(1);
            let last = sorted_partition(fences, spec.key_len, |fence| fence < to);
            for chunk_index in first..last {
                let chunk = read_chunk(tree, spec.tag, run.id, chunk_index as u32)?;
                for record in chunk.chunks_exact(spec.record_len()) {
                    let (key, value) = record.split_at(spec.key_len);
                    if key >= from && key < to && !visit(key, value) {
                        return Ok(());
                    }
                }
            }
        }
        Ok(())
    }
}
