//! Checkpoints: the overlay written to sled in small batches, the marker
//! last, then flushed and fsynced; and the merges that keep the history's
//! and the entry keys' runs few.

use super::blocks::{self, BlockWriter};
use super::entry_keys::EntryKeys;
use super::history::Kind;
use super::history::{OpenSetWrite, StagedHistory};
use super::keys::{merchant_key, merchant_seq_key, KeyPrefix, CHECKPOINT_SEQ_KEY};
use super::overlay::{self, Layer, LayerVersion, RecordTree};
use super::record::encode_value;
use super::runs::StagedRun;
use super::{KindIndexes, SledReopen, Store, StoreError};
use crate::limits;
use foldhash::HashMap;
use std::fs;
use std::io;
use std::path::Path;
#[cfg(test)]
use std::sync::atomic::Ordering;
use std::sync::Arc;
use uuid::Uuid;

impl Store {
    /// Writes the overlay to sled (small batches, the checkpoint marker
    /// last), flushes and fsyncs. Returns the first journal sequence not
    /// covered, below which journal segments may be dropped.
    pub fn checkpoint(&self) -> Result<u64, StoreError> {
        self.checkpoint_then(|| ()).map(|(covers_below, ())| covers_below)
    }

    /// A checkpoint, then sled reopened (see `reopen_sled`) while the layer
    /// it wrote is still read from memory: readers of what that layer holds
    /// (the newest versions, and the recent index of their ids) do not wait
    /// out sled's open. Returns the first sequence not covered, and how the
    /// reopen went (it is not tried after a failed checkpoint).
    pub fn checkpoint_and_reopen_sled(&self) -> Result<(u64, SledReopen), StoreError> {
        self.checkpoint_then(|| self.sled.reopen())
    }

    /// A checkpoint that, once the layer is in sled and before it leaves
    /// the overlay, runs `while_still_read`, and returns what it returned.
    fn checkpoint_then<R>(&self, while_still_read: impl FnOnce() -> R) -> Result<(u64, R), StoreError> {
        let layer = {
            let mut overlay = self.overlay.lock().expect("overlay lock");
            assert!(overlay.flushing.is_none(), "one checkpoint at a time");
            // With the layer, under the overlay's lock as the applier indexes:
            // the recent entries of exactly the versions this layer holds.
            for kind in self.kinds.iter() {
                kind.recent.write().expect("recent index lock").seal();
            }
            let next = Layer::sized_like(&overlay.active);
            let layer = Arc::new(std::mem::replace(&mut overlay.active, next));
            overlay.flushing = Some(layer.clone());
            layer
        };
        let covers_below = layer.through_seq + 1;
        let result = self.write_layer(&layer, covers_below);
        // The overlay's reference is then the only one, so a failed layer
        // goes back without a copy.
        drop(layer);
        let result = result.map(|(staged, entry_keys)| {
            // Before the layer leaves the overlay, so no reader misses both:
            // the runs first, then (below) the recent entries they now hold
            // go, freed outside the lock, which the applier waits on.
            if let Some(entry_keys) = entry_keys {
                self.entry_keys.add(entry_keys);
            }
            for (kind, staged) in self.kinds.iter().zip(staged) {
                kind.runs.write().expect("history lock").add(staged);
            }
            // While the layer and its recent entries are still read: a
            // reader of them does not touch sled (a reopen does not hold it up).
            while_still_read()
        });
        if result.is_ok() {
            for kind in self.kinds.iter() {
                let written = kind.recent.write().expect("recent index lock").forget_sealed();
                drop(written);
            }
        }
        // Whatever happened, the layer stays readable until it is in sled:
        // on failure it goes back under the active one.
        let written = {
            let mut overlay = self.overlay.lock().expect("overlay lock");
            let flushed = overlay.flushing.take();
            match (&result, flushed) {
                (Err(_), Some(flushed)) => {
                    let mut restored = Arc::try_unwrap(flushed).unwrap_or_else(|shared| Layer::clone_of(&shared));
                    for (merchant_id, newer) in std::mem::take(&mut overlay.active.merchants) {
                        restored.merge_newer(merchant_id, newer);
                    }
                    restored.resources.extend(std::mem::take(&mut overlay.active.resources));
                    restored
                        .tree_records
                        .extend(std::mem::take(&mut overlay.active.tree_records));
                    // The failed checkpoint may have written some of the
                    // restored layer's keys: only the active layer's stay fresh.
                    restored.fresh = std::mem::take(&mut overlay.active.fresh);
                    overlay.active.keep_newer_versions_over(&mut restored);
                    restored.through_seq = overlay.active.through_seq;
                    restored.entry_count += overlay.active.entry_count;
                    overlay.active = restored;
                    None
                }
                (Ok(_), Some(flushed)) => {
                    overlay.remember_written(&flushed);
                    Some(flushed)
                }
                (_, flushed) => flushed,
            }
        };
        // Freed outside the lock: freeing a large layer is slow, and every
        // writer and reader waits on the lock.
        drop(written);
        let after_written = result?;
        self.compact_history();
        if let Err(error) = self.entry_keys.compact(&self.ledger_tree()) {
            tracing::error!(%error, "merging entry key runs failed; retried at the next checkpoint");
        }
        Ok((covers_below, after_written))
    }

    /// Entries applied into the overlay since the last checkpoint.
    pub fn pending_entries(&self) -> usize {
        self.overlay.lock().expect("overlay lock").active.entry_count
    }

    /// Merges history runs where there are too many. Readers go on while a
    /// merge is written; it is put in place under the lock. A merge that
    /// fails is left to its intent (finished or undone at the next open).
    fn compact_history(&self) {
        for kind in self.kinds.iter() {
            loop {
                let plan = kind.runs.write().expect("history lock").plan_merge();
                let Some(plan) = plan else { break };
                let keep = kind.merge_keeps(plan.spec().tag);
                let merged = plan.write(&keep).and_then(|merged| {
                    let replaced = kind.runs.write().expect("history lock").install_merge(merged)?;
                    plan.finish(&replaced)
                });
                if let Err(error) = merged {
                    tracing::error!(%error, "merging history runs failed; retried at the next checkpoint");
                    return;
                }
            }
        }
    }

    /// Writes a layer in batches of about `CHECKPOINT_BATCH_OPS` writes,
    /// the checkpoint marker last. sled holds a process-wide write lock for
    /// a whole batch, stalling every reader; small batches keep those stalls
    /// short. Safe to stop anywhere before the marker: a merchant's book
    /// and entry blocks always share one batch (so replay skips exactly the
    /// entries the stored book has, and puts their keys back: see
    /// `entry_keys.rs`), and resources are whole values that replay
    /// rewrites in order. Returns the history runs of the layer's versions,
    /// one per kind, and the run of its entry keys, written but not yet visible.
    fn write_layer(&self, layer: &overlay::Layer, covers_below: u64) -> Result<StagedLayer, StoreError> {
        let mut batch = CheckpointBatch {
            store: self,
            batch: sled::Batch::default(),
            pending: 0,
            batches_written: 0,
        };
        // Before the marker, which the ledger's batches end with: sled
        // recovers a prefix of its log, so a marker found has these too.
        for ((tree, key), value) in &layer.tree_records {
            let tree = match tree {
                RecordTree::Merchants => self.merchants_tree(),
                RecordTree::Catalog => self.catalog_tree(),
            };
            tree.insert(key.as_slice(), value.as_slice())?;
        }
        for (merchant_id, merchant) in &layer.merchants {
            batch.insert(
                &merchant_key(KeyPrefix::Book, merchant_id),
                encode_value(&merchant.book),
            );
            for (first_seq, block) in &merchant.blocks {
                batch.insert(
                    &merchant_seq_key(KeyPrefix::EntryBlock, merchant_id, *first_seq),
                    block.as_slice(),
                );
            }
            // A merchant's book and entry blocks share one batch.
            batch.flush(false)?;
        }
        for (key, value) in &layer.resources {
            match value {
                Some(value) => batch.batch.insert(key.as_slice(), value.as_slice()),
                None => batch.batch.remove(key.as_slice()),
            }
            batch.pending += 1;
            batch.flush(false)?;
        }
        let mut staged = Vec::with_capacity(self.kinds.len());
        for (kind, versions) in self.kinds.iter().zip(&layer.versions) {
            staged.push(self.write_versions(kind, versions, covers_below, &mut batch)?);
        }
        let entry_keys = self.entry_keys.stage(layer, &mut |key, chunk| {
            batch.batch.insert(key, chunk);
            batch.pending += 1;
            batch.flush(false)
        })?;
        batch.flush(true)?;
        #[cfg(test)]
        if batch.batches_written >= self.fail_after_batches.load(Ordering::Acquire) {
            return Err(StoreError::Io(io::Error::other(
                "checkpoint interrupted before its marker (test)",
            )));
        }
        // The runs' metadata and the open set's changes go with the marker:
        // a checkpoint cut short leaves neither behind.
        let disbursements = self.kind(Kind::Disbursements);
        let open = disbursements
            .recent
            .write()
            .expect("recent index lock")
            .take_open_for_checkpoint();
        let finished = self.write_marker(covers_below, &staged, entry_keys.as_ref(), open);
        if finished.is_err() {
            // What of the open set's changes reached sled is not known.
            disbursements
                .recent
                .write()
                .expect("recent index lock")
                .open_checkpoint_failed();
        }
        finished.map(|()| (staged, entry_keys))
    }

    /// Writes one kind's newest versions of a layer into its blocks, and
    /// stages their index runs: where each went, and the write-once entries
    /// of the recent ones.
    fn write_versions(
        &self,
        kind: &KindIndexes,
        versions: &HashMap<Uuid, LayerVersion>,
        covers_below: u64,
        batch: &mut CheckpointBatch<'_>,
    ) -> Result<StagedHistory, StoreError> {
        let prefix = kind.spec().blocks;
        let mut blocks = BlockWriter::new(prefix, covers_below);
        if !versions.is_empty() {
            // A layer that holds a record covers more of the journal than the
            // last marker, so blocks under its number can only be an earlier
            // failed attempt's, which would otherwise mix with this one's.
            let own_blocks =
                blocks::block_key(prefix, covers_below, 0)..=blocks::block_key(prefix, covers_below, u32::MAX);
            for item in self.ledger_tree().range(own_blocks) {
                batch.batch.remove(item?.0);
                batch.pending += 1;
            }
        }
        for (id, version) in versions {
            blocks.push(*id, &version.encoded);
        }
        for (key, block) in blocks.blocks() {
            batch.insert(&key, block);
            batch.flush(false)?;
        }
        let runs = kind.runs.read().expect("history lock");
        let mut entries = runs.batch_for(versions.len());
        for (id, location) in &blocks.locations {
            entries.push_location(*id, *location);
        }
        let index = kind.recent.read().expect("recent index lock");
        entries.push_sealed(&index, |id| versions.contains_key(id));
        drop(index);
        let mut sink = |key: Vec<u8>, chunk: Vec<u8>| {
            batch.batch.insert(key, chunk);
            batch.pending += 1;
            batch.flush(false)
        };
        runs.stage(entries, &mut sink)
    }

    /// Applies a checkpoint's marker with what goes with it, and makes it
    /// all durable.
    fn write_marker(
        &self,
        covers_below: u64,
        staged: &[StagedHistory],
        entry_keys: Option<&StagedRun>,
        open: OpenSetWrite,
    ) -> Result<(), StoreError> {
        let mut marker = sled::Batch::default();
        marker.insert(&CHECKPOINT_SEQ_KEY, &covers_below.to_be_bytes());
        for (kind, staged) in self.kinds.iter().zip(staged) {
            for (key, value) in kind.runs.read().expect("history lock").marker_entries(staged) {
                marker.insert(key, value);
            }
        }
        for (key, value) in EntryKeys::marker_entries(entry_keys) {
            marker.insert(key, value);
        }
        open.add_to(&mut marker, &self.ledger_tree())?;
        self.ledger_tree().apply_batch(marker)?;
        self.sled.flush()?;
        fsync_tree(&self.path)?;
        Ok(())
    }
}

/// What a checkpoint wrote that becomes visible with its marker: each
/// kind's history runs, and the run of its entry keys (if it used any).
type StagedLayer = (Vec<StagedHistory>, Option<StagedRun>);

/// A checkpoint's writes, applied to sled in batches of about
/// `CHECKPOINT_BATCH_OPS` (see `Store::write_layer`).
struct CheckpointBatch<'a> {
    store: &'a Store,
    batch: sled::Batch,
    pending: usize,
    batches_written: usize,
}

impl CheckpointBatch<'_> {
    fn insert(&mut self, key: &[u8], value: impl Into<sled::IVec>) {
        self.batch.insert(key, value);
        self.pending += 1;
    }

    /// Applies the writes gathered once there are enough (or any, `force`).
    fn flush(&mut self, force: bool) -> Result<(), StoreError> {
        if self.pending > 0 && (force || self.pending >= limits::CHECKPOINT_BATCH_OPS) {
            #[cfg(test)]
            if self.batches_written >= self.store.fail_after_batches.load(Ordering::Acquire) {
                return Err(StoreError::Io(io::Error::other("checkpoint interrupted (test)")));
            }
            self.store.ledger_tree().apply_batch(std::mem::take(&mut self.batch))?;
            self.batches_written += 1;
            self.pending = 0;
        }
        Ok(())
    }
}

/// fsyncs every file and directory under `path`: sled's flush uses
/// `sync_file_range`, which does not make data or metadata durable.
///
/// sled's own threads replace snapshot files while this runs, so a file
/// listed and then gone is skipped: what sled deleted holds nothing it needs.
pub fn fsync_tree(path: &Path) -> io::Result<()> {
    let skip_vanished = |result: io::Result<()>| match result {
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    };
    for item in fs::read_dir(path)? {
        let item = item?;
        let Ok(kind) = item.file_type() else { continue };
        if kind.is_dir() {
            skip_vanished(fsync_tree(&item.path()))?;
        } else if kind.is_file() {
            skip_vanished(fs::File::open(item.path()).and_then(|file| file.sync_all()))?;
        }
    }
    fs::File::open(path)?.sync_all()
}

#[cfg(test)]
mod tests;
