//! Merging runs, so an index keeps few: when `FANOUT` of the newest runs
//! share a size tier they become one. A merge is planned under the
//! caller's write lock, written beside readers (`write_merge`), put in
//! place under the lock again (`install_merge`), and its replaced chunks
//! deleted after (`finish_merge`); its intent record lets `RunSet::load`
//! finish or undo one a crash cut short.

use super::{
    head_key, intent_key, read_chunk, remove_run_data, whole_meta_key, Intent, Run, RunSet, RunSpec, RunWriter, FANOUT,
};
use crate::store::record::encode_plain;
use crate::store::StoreError;
use std::sync::Arc;

impl RunSet {
    /// The runs the next merge would replace: the newest runs while
    /// `FANOUT` or more of them share a size tier.
    pub fn plan_merge(&self) -> Option<Vec<Arc<Run>>> {
        let newest = self.runs.last()?;
        let tier = size_tier(newest.meta.len);
        let same = self
            .runs
            .iter()
            .rev()
            .take_while(|run| size_tier(run.meta.len) <= tier)
            .count();
        (same >= FANOUT).then(|| self.runs[self.runs.len() - same..].to_vec())
    }

    /// An id for a merge's run.
    pub fn reserve_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Writes the merge of `runs` (the newest, as `plan_merge` gave them) as
    /// run `id`, with its intent, leaving out the records (key and value)
    /// `keep` refuses; readers may go on meanwhile.
    pub fn write_merge(
        spec: RunSpec,
        tree: &sled::Tree,
        id: u64,
        runs: &[Arc<Run>],
        keep: &dyn Fn(&[u8]) -> bool,
    ) -> Result<MergedRun, StoreError> {
        let intent = Intent {
            writes: id,
            replaces: runs.iter().map(|run| run.id).collect(),
        };
        tree.insert(intent_key(spec.tag), encode_plain(&intent))?;
        let expected = runs.iter().map(|run| run.meta.len).sum();
        let mut sink = |key: Vec<u8>, chunk: Vec<u8>| {
            tree.insert(key, chunk)?;
            Ok(())
        };
        let mut writer = RunWriter::new(spec, id, expected, &mut sink);
        // Newest first, so of equal keys the first met wins.
        let mut cursors: Vec<Cursor> = runs.iter().rev().map(|run| Cursor::new(run.clone())).collect();
        let key_len = spec.key_len;
        let mut record = vec![0u8; spec.record_len()];
        loop {
            for cursor in cursors.iter_mut() {
                cursor.load(tree, spec)?;
            }
            // The least key; of equal keys the newest run's (the first met).
            let mut least: Option<&[u8]> = None;
            for current in cursors.iter().filter_map(|cursor| cursor.current(spec)) {
                if least.is_none_or(|best| current[..key_len] < best[..key_len]) {
                    least = Some(current);
                }
            }
            let Some(least) = least else { break };
            record.copy_from_slice(least);
            for cursor in cursors.iter_mut() {
                if cursor
                    .current(spec)
                    .is_some_and(|current| current[..key_len] == record[..key_len])
                {
                    cursor.advance(spec);
                }
            }
            if keep(&record) {
                writer.push(&record)?;
            }
        }
        Ok(MergedRun {
            tag: spec.tag,
            run: writer.finish()?,
            replaces: runs.iter().map(|run| run.id).collect(),
        })
    }

    /// Puts a written merge in place of the runs it replaces, on disk (one
    /// batch) and here. No reader may be inside `get` or `range` (the
    /// caller holds the write lock); `finish_merge` then deletes the old
    /// chunks once the lock is let go.
    pub fn install_merge(&mut self, tree: &sled::Tree, merged: MergedRun) -> Result<Vec<u64>, StoreError> {
        let mut swap = sled::Batch::default();
        let (head, value) = merged.run.head_entry(self.spec.tag);
        swap.insert(head, value);
        for old in &merged.replaces {
            swap.remove(head_key(self.spec.tag, *old).to_vec());
            swap.remove(whole_meta_key(self.spec.tag, *old).to_vec());
        }
        tree.apply_batch(swap)?;
        self.runs.retain(|run| !merged.replaces.contains(&run.id));
        self.runs.push(Arc::new(merged.run));
        Ok(merged.replaces)
    }

    /// Deletes the chunks and parts of runs a merge replaced, and its intent.
    pub fn finish_merge(spec: RunSpec, tree: &sled::Tree, replaced: &[u64]) -> Result<(), StoreError> {
        for id in replaced {
            remove_run_data(tree, spec.tag, *id)?;
        }
        tree.remove(intent_key(spec.tag))?;
        Ok(())
    }

    /// Merges the newest runs while `FANOUT` of them share a size tier,
    /// all under `&mut self` (see `plan_merge` for merging beside readers).
    /// Memory used: one chunk per merged run and the new run's fences and
    /// filter, whatever the runs' size.
    pub fn compact(&mut self, tree: &sled::Tree) -> Result<(), StoreError> {
        while let Some(runs) = self.plan_merge() {
            let id = self.reserve_id();
            let merged = RunSet::write_merge(self.spec, tree, id, &runs, &|_| true)?;
            let replaced = self.install_merge(tree, merged)?;
            RunSet::finish_merge(self.spec, tree, &replaced)?;
        }
        Ok(())
    }
}

/// A merge's run, written, not yet in place of the runs it replaces.
pub struct MergedRun {
    tag: u8,
    run: Run,
    replaces: Vec<u64>,
}

impl MergedRun {
    /// Its index's tag.
    pub fn tag(&self) -> u8 {
        self.tag
    }
}

/// A position in a run being merged: its current chunk and record.
struct Cursor {
    run: Arc<Run>,
    chunk_index: u32,
    chunk: Option<sled::IVec>,
    at: usize,
}

impl Cursor {
    fn new(run: Arc<Run>) -> Cursor {
        Cursor {
            run,
            chunk_index: 0,
            chunk: None,
            at: 0,
        }
    }

    /// Makes `current` the next record, reading the next chunk when this
    /// one is used up.
    fn load(&mut self, tree: &sled::Tree, spec: RunSpec) -> Result<(), StoreError> {
        while self.chunk_index < self.run.meta.chunks {
            match &self.chunk {
                None => {
                    self.chunk = Some(read_chunk(tree, spec.tag, self.run.id, self.chunk_index)?);
                    self.at = 0;
                }
                Some(chunk) if self.at + spec.record_len() <= chunk.len() => return Ok(()),
                Some(_) => {
                    self.chunk = None;
                    self.chunk_index += 1;
                }
            }
        }
        Ok(())
    }

    /// The record under the cursor (after `load`), `None` at the run's end.
    fn current(&self, spec: RunSpec) -> Option<&[u8]> {
        let chunk = self.chunk.as_ref()?;
        chunk.get(self.at..self.at + spec.record_len())
    }

    fn advance(&mut self, spec: RunSpec) {
        self.at += spec.record_len();
    }
}

/// A run's size tier: runs within a factor of `FANOUT` share one.
fn size_tier(len: u64) -> u32 {
    let mut tier = 0;
    let mut bound = FANOUT as u64;
    while len >= bound {
        tier += 1;
        bound = bound.saturating_mul(FANOUT as u64);
    }
    tier
}
