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
        self.checkpoint_then(false).map(|(covers_below, _)| covers_below)
    }

    /// A checkpoint, then sled reopened (see `reopen_sled`) while the layer
    /// it wrote is still read from memory: readers of what that layer holds
    /// (the newest versions, and the recent index of their ids) do not wait
    /// out sled's open. Returns the first sequence not covered, and how the
    /// reopen went (it is not tried after a failed checkpoint).
    pub fn checkpoint_and_reopen_sled(&self) -> Result<(u64, SledReopen), StoreError> {
        self.checkpoint_then(true)
            .map(|(covers_below, reopened)| (covers_below, reopened.unwrap_or(Ok(None))))
    }

    /// A checkpoint, with sled reopened between writing the layer and
    /// letting it go when `reopen_sled`; the reopen's outcome if tried.
    fn checkpoint_then(&self, reopen_sled: bool) -> Result<(u64, Option<SledReopen>), StoreError> {
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
        });
        // While the layer and its recent entries are still read: a reader
        // of them does not touch sled, so it does not wait for the reopen.
        let reopened = (reopen_sled && result.is_ok()).then(|| self.sled.reopen());
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
        result?;
        self.compact_history();
        if let Err(error) = self.entry_keys.compact(&self.ledger_tree()) {
            tracing::error!(%error, "merging entry key runs failed; retried at the next checkpoint");
        }
        Ok((covers_below, reopened))
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
pub(super) fn fsync_tree(path: &Path) -> io::Result<()> {
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
mod tests {
    use super::*;
    use crate::domain::Disbursement;
    use crate::ledger::{wallet_credit, MerchantBook};
    use crate::money::MinorUnits;
    use crate::store::record::JournalRecord;
    use crate::store::tests::{assert_disbursements_stored, test_disbursement};

    /// Merchant and catalog records are applied while sled reopens, without
    /// waiting for it (the applier never reaches sled), and the checkpoint
    /// after it writes them to their trees, where the next open finds them.
    #[test]
    fn merchant_and_catalog_records_apply_during_a_reopen_and_reach_sled_at_the_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let merchant = crate::store::stored::tests::merchant();
        let bank = crate::domain::Bank {
            id: Uuid::from_u128(3),
            name: "Bank Negara Indonesia".into(),
            short_code: "BNI".into(),
            is_enabled: true,
        };
        {
            let store = Store::open(dir.path()).unwrap();
            let records = [
                JournalRecord::MerchantSaved(Box::new(merchant.clone())),
                JournalRecord::BankSaved(bank.clone()),
            ];
            let reopening = store.sled.hold_as_a_reopen();
            let (done, finished) = std::sync::mpsc::channel();
            std::thread::scope(|scope| {
                scope.spawn(|| {
                    for (seq, record) in (1..).zip(&records) {
                        store.apply(seq, record, &record.encode()).unwrap();
                    }
                    let _ = done.send(());
                });
                let applied = finished.recv_timeout(std::time::Duration::from_secs(10));
                drop(reopening);
                assert_eq!(applied, Ok(()), "applied while sled was held");
            });
            assert_eq!(store.directory().get(&merchant.id).as_deref(), Some(&merchant));
            assert!(store.merchants_tree().get(merchant.id.as_bytes()).unwrap().is_none());
            store.checkpoint().unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.checkpoint_seq().unwrap(), 3, "the records are covered");
        assert_eq!(store.directory().get(&merchant.id).as_deref(), Some(&merchant));
        assert_eq!(store.catalog().banks.get("BNI"), Some(&bank));
    }

    /// A checkpoint that reopens sled keeps what it wrote readable from
    /// memory until sled is open again: the newest versions, by id and by
    /// ref code, are read while the reopen holds sled, and the reopen is
    /// reported; what was checkpointed before is read from sled after it.
    #[test]
    fn what_a_checkpoint_wrote_is_read_without_waiting_for_its_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let merchant = Uuid::new_v4();
        let disbursements: Vec<Disbursement> = (0..200).map(|n| test_disbursement(merchant, n)).collect();
        for (seq, disbursement) in (1..).zip(&disbursements) {
            let record = JournalRecord::DisbursementUpdated(Arc::new(disbursement.clone()));
            store.apply(seq, &record, &record.encode()).unwrap();
            if seq == 100 {
                store.checkpoint().unwrap();
            }
        }
        let (older, written) = disbursements.split_at(100);
        let (holding, reopen_holds) = std::sync::mpsc::channel();
        let (go_on, reopen_waits) = std::sync::mpsc::channel();
        store.sled.pause_next_reopen((holding, reopen_waits));
        let store = &store;
        std::thread::scope(|scope| {
            let checkpoint = scope.spawn(|| store.checkpoint_and_reopen_sled());
            assert_eq!(reopen_holds.recv_timeout(std::time::Duration::from_secs(10)), Ok(()));
            let (read, reads_done) = std::sync::mpsc::channel();
            scope.spawn(move || {
                for disbursement in written {
                    let by_id = store.disbursement(&disbursement.id).unwrap();
                    let by_ref = store.disbursement_by_ref(&disbursement.ref_code).unwrap();
                    assert_eq!(by_id.as_ref(), Some(disbursement));
                    assert_eq!(by_ref.as_ref(), Some(disbursement));
                }
                let _ = read.send(());
            });
            let reads = reads_done.recv_timeout(std::time::Duration::from_secs(10));
            go_on.send(()).unwrap();
            assert_eq!(reads, Ok(()), "read while the reopen held sled");
            let (covers_below, reopened) = checkpoint.join().unwrap().unwrap();
            assert_eq!(covers_below, 201);
            assert!(matches!(reopened, Ok(Some(_))), "reopened: {reopened:?}");
        });
        for disbursement in older.iter().chain(written) {
            assert_eq!(
                store.disbursement(&disbursement.id).unwrap().as_ref(),
                Some(disbursement)
            );
        }
        assert_eq!(store.checkpoint_seq().unwrap(), 201);
    }

    /// sled closed and reopened between checkpoints: readers on other
    /// threads read all along and always find what was checkpointed; a
    /// handle held out defers the reopen instead of blocking on it; what
    /// is written after a reopen lands, and all of it opens again.
    #[test]
    fn sled_reopened_between_checkpoints_keeps_every_record_readable() {
        use std::sync::atomic::{AtomicBool, AtomicU64};
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        let merchant = Uuid::new_v4();
        let disbursements: Vec<Disbursement> = (0..2000).map(|n| test_disbursement(merchant, n)).collect();
        let (first, second) = disbursements.split_at(1000);
        let apply = |store: &Store, from_seq: u64, part: &[Disbursement]| {
            for (index, disbursement) in part.iter().enumerate() {
                let record = JournalRecord::DisbursementUpdated(Arc::new(disbursement.clone()));
                store.apply(from_seq + index as u64, &record, &record.encode()).unwrap();
            }
        };
        apply(&store, 1, first);
        store.checkpoint().unwrap();

        let stop = Arc::new(AtomicBool::new(false));
        let reads = Arc::new(AtomicU64::new(0));
        let readers: Vec<_> = (0..2)
            .map(|reader| {
                let (store, stop, reads) = (store.clone(), stop.clone(), reads.clone());
                let ids: Vec<Uuid> = first.iter().skip(reader).step_by(7).map(|d| d.id).collect();
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Acquire) {
                        for id in &ids {
                            let found = store.disbursement(id).unwrap().expect("a checkpointed disbursement");
                            assert_eq!(found.id, *id);
                            reads.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        while reads.load(Ordering::Relaxed) == 0 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let mut reopened = 0;
        for _ in 0..200 {
            if store.reopen_sled().unwrap().is_some() {
                reopened += 1;
                if reopened == 5 {
                    break;
                }
            }
        }
        let reads_by_then = reads.load(Ordering::Relaxed);
        while reads.load(Ordering::Relaxed) == reads_by_then {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        stop.store(true, Ordering::Release);
        for reader in readers {
            reader.join().expect("no reader failed");
        }
        assert_eq!(reopened, 5, "reopens found moments with no handle out");

        let held = store.ledger_tree();
        assert_eq!(store.reopen_sled().unwrap(), None, "a handle out defers the reopen");
        drop(held);
        assert!(store.reopen_sled().unwrap().is_some());

        apply(&store, 1001, second);
        store.checkpoint().unwrap();
        assert!(store.reopen_sled().unwrap().is_some());
        for disbursement in &disbursements {
            assert_eq!(
                store.disbursement(&disbursement.id).unwrap().unwrap().id,
                disbursement.id
            );
        }
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.checkpoint_seq().unwrap(), 2001);
        for disbursement in &disbursements {
            let found = store
                .disbursement(&disbursement.id)
                .unwrap()
                .expect("found after a restart");
            assert_eq!(found.ref_code, disbursement.ref_code);
        }
    }

    /// A checkpoint that stops after some of its batches (as a crash would)
    /// leaves sled with part of a layer and the old marker; replaying the
    /// journal's records over it gives exactly the state of an unbroken run.
    #[test]
    fn a_checkpoint_cut_between_batches_is_repaired_by_replay() {
        use crate::domain::Beneficiary;
        use crate::store::tests::test_beneficiary;
        let dir = tempfile::tempdir().unwrap();
        let merchants = [Uuid::new_v4(), Uuid::new_v4()];
        // The journal, as the records it would hold.
        let mut records: Vec<JournalRecord> = Vec::new();
        for (index, merchant) in merchants.iter().enumerate() {
            let mut book = MerchantBook::new(*merchant);
            for n in 0..(1500 * (index + 1)) {
                let proposal = wallet_credit(MinorUnits::new(1), "x".repeat(100), Some(format!("k{n}")));
                let entry = book.prepare(proposal, 0).unwrap();
                book.apply(&entry).unwrap();
                records.push(JournalRecord::EntryPosted(entry));
            }
        }
        let beneficiaries: Vec<Beneficiary> = (0..1500).map(|n| test_beneficiary(merchants[n % 2], n)).collect();
        records.extend(
            beneficiaries
                .chunks(10)
                .map(|chunk| JournalRecord::BeneficiariesSaved(chunk.to_vec())),
        );
        // Disbursements: every one PENDING, then every third SUCCESS (a
        // second version, in the same layer).
        let disbursements: Vec<Disbursement> = (0..3000).map(|n| test_disbursement(merchants[n % 2], n)).collect();
        for disbursement in &disbursements {
            records.push(JournalRecord::DisbursementUpdated(Arc::new(disbursement.clone())));
        }
        for disbursement in disbursements.iter().step_by(3) {
            let mut done = disbursement.clone();
            done.status = crate::domain::DisbursementStatus::Success;
            records.push(JournalRecord::DisbursementUpdated(Arc::new(done)));
        }
        let apply_all = |store: &Store, from_seq: u64| {
            for (index, record) in records.iter().enumerate() {
                let seq = index as u64 + 1;
                if seq >= from_seq {
                    store.apply(seq, record, &record.encode()).unwrap();
                }
            }
        };
        {
            let store = Store::open(dir.path()).unwrap();
            apply_all(&store, 1);
            // The first batch holds both merchants and the first resources.
            store.fail_after_batches.store(1, Ordering::Release);
            assert!(
                store.checkpoint().is_err(),
                "the checkpoint is cut after its first batch"
            );
            assert_eq!(store.checkpoint_seq().unwrap(), 0, "the marker did not move");
        }
        // Restart: replay everything from the old marker, then checkpoint.
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(
            store.durable_book(&merchants[0]).unwrap().last_seq,
            1500,
            "the cut checkpoint left its first batch (books and entries) behind"
        );
        let from = store.checkpoint_seq().unwrap().max(1);
        apply_all(&store, from);
        store.checkpoint().unwrap();
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        for (index, merchant) in merchants.iter().enumerate() {
            let expected = 1500 * (index as u64 + 1);
            let entries = store.entries_after(merchant, 0).unwrap();
            assert_eq!(entries.len() as u64, expected);
            assert!(entries.iter().enumerate().all(|(i, e)| e.seq == i as u64 + 1));
            let book = store.durable_book(merchant).unwrap();
            assert_eq!(book.last_seq, expected);
            assert_eq!(book.balance(crate::ledger::Account::Wallet).get(), expected as i64);
            let index_keys = store.idempotency_index(merchant, usize::MAX).unwrap().unwrap();
            assert_eq!(index_keys.len() as u64, expected, "every key indexed once");
            // The first merchant's book was in the cut checkpoint's first
            // batch: replay skipped its entries and kept their keys.
            let first_key = store.key_hash("k0");
            assert_eq!(store.overlay_key_lookup(merchant, first_key), None);
            assert_eq!(store.checkpointed_key_lookup(merchant, first_key).unwrap(), Some(1));
            assert_eq!(store.merchant_beneficiaries(merchant).unwrap().len(), 750);
            let (page, total) = store
                .merchant_disbursements(merchant, 0, i64::MAX, |_| true, 0, 10)
                .unwrap();
            assert_eq!(total, 1500);
            assert_eq!(page[0].id, disbursements[2998 + index].id, "newest first");
            assert_eq!(store.disbursement_key_hashes(merchant, usize::MAX).unwrap().len(), 1500);
        }
        assert_disbursements_stored(&store, &disbursements);
    }
}
