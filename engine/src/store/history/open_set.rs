//! The open set (disbursements not yet final) and how checkpoints keep it.
//! A checkpoint writes only how the set changed since the checkpoint before
//! (ids opened, ids closed), under the next number; once the changes written
//! outnumber the set, one whole copy replaces them. So a checkpoint costs
//! what changed, not what is open: written whole, a large set held open at
//! a slow vendor would be rewritten in full at every checkpoint.
//! A disbursement opened and closed between two checkpoints is never
//! written at all.

use super::super::keys::{named_key, KeyPrefix};
use super::super::record::{decode_plain, encode_plain};
use super::super::StoreError;
use crate::sharded::ShardedSet;
use foldhash::{HashMap, HashMapExt};
use std::collections::hash_map::Entry;
use uuid::Uuid;

/// The sled key of the open set's last whole copy.
pub(super) const WHOLE_KEY: [u8; 5] = named_key(KeyPrefix::IndexRun, b"open");
/// The prefix of the changes written since the whole copy, each followed by
/// its number (big-endian, so they scan in the order written). Numbered on
/// their own, not by checkpoint: two checkpoints may cover the same journal.
/// `WHOLE_KEY` is not under it: it is one byte shorter.
pub(super) const CHANGES_PREFIX: [u8; 6] = named_key(KeyPrefix::IndexRun, b"open+");

/// Below this many, changes are written as changes even when they outnumber
/// the set: a small set's whole copy is cheap, but writing it at every
/// checkpoint of a steady load is what the changes are for.
const WHOLE_COPY_MIN: usize = 16 * 1024;

/// The open set, with what the checkpoints have not yet written of it.
#[derive(Default)]
pub struct OpenSet {
    ids: ShardedSet<Uuid>,
    /// How the set moved since a checkpoint last took its changes: true
    /// for opened (absent from what the checkpoints hold), false for closed.
    changes: HashMap<Uuid, bool>,
    /// Ids in the changes written since the last whole copy.
    written_since_copy: usize,
    /// The number of the next changes written.
    next_number: u64,
    /// A checkpoint took changes and then failed, so what sled holds is not
    /// known: the next one writes a whole copy.
    copy_due: bool,
}

impl OpenSet {
    /// The set as `load` read it; replay then moves it on.
    pub fn loaded(loaded: Loaded) -> OpenSet {
        OpenSet {
            ids: loaded.ids.into_iter().collect(),
            changes: HashMap::new(),
            written_since_copy: loaded.written_since_copy,
            next_number: loaded.next_number,
            copy_due: false,
        }
    }

    /// `id` is not final (again: idempotent).
    pub fn open(&mut self, id: Uuid) {
        if self.ids.insert(id) {
            self.changes.insert(id, true);
        }
    }

    /// `id` is final (idempotent).
    pub fn close(&mut self, id: Uuid) {
        if !self.ids.remove(&id) {
            return;
        }
        match self.changes.entry(id) {
            // Opened since the checkpoints last wrote: they never held it.
            Entry::Occupied(opened) if *opened.get() => {
                opened.remove();
            }
            other => {
                other.insert_entry(false);
            }
        }
    }

    /// Every open id, in no order.
    pub fn ids(&self) -> Vec<Uuid> {
        self.ids.iter().copied().collect()
    }

    /// How many are open.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// What a checkpoint writes with its marker; the changes are taken. If
    /// the checkpoint then fails, call `checkpoint_failed`.
    pub fn take_for_checkpoint(&mut self) -> OpenSetWrite {
        if self.changes.is_empty() && !self.copy_due {
            return OpenSetWrite::Nothing;
        }
        let changes = std::mem::take(&mut self.changes);
        let written = self.written_since_copy + changes.len();
        if self.copy_due || written > self.ids.len().max(WHOLE_COPY_MIN) {
            self.copy_due = false;
            self.written_since_copy = 0;
            return OpenSetWrite::whole(&self.ids());
        }
        self.written_since_copy = written;
        let (mut opened, mut closed) = (Vec::new(), Vec::new());
        for (id, is_opened) in changes {
            if is_opened {
                opened.push(id)
            } else {
                closed.push(id)
            }
        }
        let value = encode_plain(&(opened, closed));
        let key = changes_key(self.next_number);
        self.next_number += 1;
        OpenSetWrite::Changes { key, value }
    }

    /// A checkpoint failed after `take_for_checkpoint`: the next writes a
    /// whole copy, whatever of this one reached sled.
    pub fn checkpoint_failed(&mut self) {
        self.copy_due = true;
    }
}

/// An open set's part of a checkpoint's marker.
pub enum OpenSetWrite {
    /// It did not change.
    Nothing,
    /// The changes since the checkpoint before, under the next number.
    Changes { key: Vec<u8>, value: Vec<u8> },
    /// A whole copy (encoded), replacing every change written before it.
    Whole(Vec<u8>),
}

impl OpenSetWrite {
    /// A whole copy of `ids`.
    pub fn whole(ids: &[Uuid]) -> OpenSetWrite {
        // A slice encodes as the `Vec<Uuid>` that `load` reads.
        OpenSetWrite::Whole(encode_plain(&ids))
    }

    /// Adds it to `marker`, a batch for `tree`; a whole copy removes the
    /// changes `tree` holds (all of them, found there: a failed checkpoint
    /// may have left one nobody counted).
    pub fn add_to(self, marker: &mut sled::Batch, tree: &sled::Tree) -> Result<(), StoreError> {
        match self {
            OpenSetWrite::Nothing => {}
            OpenSetWrite::Changes { key, value } => marker.insert(key, value),
            OpenSetWrite::Whole(value) => {
                for key in tree.scan_prefix(CHANGES_PREFIX).keys() {
                    marker.remove(key?);
                }
                marker.insert(&WHOLE_KEY[..], value);
            }
        }
        Ok(())
    }
}

/// The open set as the checkpoints wrote it.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The open ids.
    pub ids: Vec<Uuid>,
    /// Ids in the changes written since the whole copy.
    pub written_since_copy: usize,
    /// The number the next changes take.
    pub next_number: u64,
}

/// The open set the checkpoints wrote: the whole copy (none is an empty
/// set) with the changes after it applied in order.
pub fn load(tree: &sled::Tree) -> Result<Loaded, StoreError> {
    let mut ids: std::collections::HashSet<Uuid> = match tree.get(WHOLE_KEY)? {
        Some(bytes) => decode_plain::<Vec<Uuid>>(&bytes)?.into_iter().collect(),
        None => Default::default(),
    };
    let mut written = 0;
    let mut next_number = 0;
    for item in tree.scan_prefix(CHANGES_PREFIX) {
        let (key, value) = item?;
        let number = key[CHANGES_PREFIX.len()..]
            .try_into()
            .map(u64::from_be_bytes)
            .map_err(|_| StoreError::Format(format!("unreadable open set changes key {key:?}")))?;
        next_number = number + 1;
        let (opened, closed): (Vec<Uuid>, Vec<Uuid>) = decode_plain(&value)?;
        written += opened.len() + closed.len();
        ids.extend(opened);
        for id in &closed {
            ids.remove(id);
        }
    }
    Ok(Loaded {
        ids: ids.into_iter().collect(),
        written_since_copy: written,
        next_number,
    })
}

fn changes_key(number: u64) -> Vec<u8> {
    let mut key = CHANGES_PREFIX.to_vec();
    key.extend_from_slice(&number.to_be_bytes());
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> sled::Tree {
        let db = sled::Config::new().temporary(true).open().unwrap();
        db.open_tree("ledger").unwrap()
    }

    /// Writes what a checkpoint would, as its marker would; true for a whole copy.
    fn checkpoint(set: &mut OpenSet, tree: &sled::Tree) -> bool {
        let write = set.take_for_checkpoint();
        let whole = matches!(write, OpenSetWrite::Whole(_));
        let mut marker = sled::Batch::default();
        write.add_to(&mut marker, tree).unwrap();
        tree.apply_batch(marker).unwrap();
        whole
    }

    fn sorted(mut ids: Vec<Uuid>) -> Vec<Uuid> {
        ids.sort();
        ids
    }

    #[test]
    fn what_a_restart_reads_is_the_set_after_every_checkpoint_whether_changes_or_whole_copies() {
        let tree = tree();
        let mut set = OpenSet::default();
        let ids: Vec<Uuid> = (0..40_000).map(|_| Uuid::new_v4()).collect();
        let mut wholes = 0;
        for (round, chunk) in ids.chunks(5_000).enumerate() {
            for id in chunk {
                set.open(*id);
            }
            // The previous round's ids close; a few of this round's open and close at once.
            if round > 0 {
                for id in &ids[(round - 1) * 5_000..round * 5_000 - 1_000] {
                    set.close(*id);
                }
            }
            set.close(chunk[0]);
            wholes += checkpoint(&mut set, &tree) as usize;
            let loaded = load(&tree).unwrap();
            assert_eq!(sorted(loaded.ids), sorted(set.ids()), "after checkpoint {round}");
        }
        assert!(wholes >= 1, "changes past the set's size are folded into a whole copy");
        let changes_left = tree.scan_prefix(CHANGES_PREFIX).count();
        assert!(
            changes_left < 8,
            "a whole copy removes the changes before it: {changes_left} left"
        );
    }

    #[test]
    fn a_disbursement_opened_and_closed_between_checkpoints_is_never_written() {
        let tree = tree();
        let mut set = OpenSet::default();
        let kept = Uuid::new_v4();
        set.open(kept);
        for _ in 0..100 {
            let id = Uuid::new_v4();
            set.open(id);
            set.close(id);
        }
        assert!(!checkpoint(&mut set, &tree));
        let (_, value) = tree.scan_prefix(CHANGES_PREFIX).next().unwrap().unwrap();
        let (opened, closed): (Vec<Uuid>, Vec<Uuid>) = decode_plain(&value).unwrap();
        assert_eq!((opened, closed), (vec![kept], vec![]));
        // Closed after a checkpoint wrote it open: written as closed.
        set.close(kept);
        assert!(!checkpoint(&mut set, &tree));
        let loaded = load(&tree).unwrap();
        assert_eq!((loaded.ids, loaded.written_since_copy), (vec![], 2));
    }

    #[test]
    fn checkpoints_with_nothing_changed_keep_the_changes_written_before() {
        let tree = tree();
        let mut set = OpenSet::default();
        let id = Uuid::new_v4();
        set.open(id);
        assert!(!checkpoint(&mut set, &tree));
        // Two checkpoints may cover the same journal: neither loses what the first wrote.
        assert!(matches!(set.take_for_checkpoint(), OpenSetWrite::Nothing));
        assert!(!checkpoint(&mut set, &tree));
        let loaded = load(&tree).unwrap();
        assert_eq!((loaded.ids.clone(), loaded.next_number), (vec![id], 1));
        // After a restart, the next changes take the next number.
        let mut reopened = OpenSet::loaded(loaded);
        let other = Uuid::new_v4();
        reopened.open(other);
        assert!(!checkpoint(&mut reopened, &tree));
        let loaded = load(&tree).unwrap();
        assert_eq!((sorted(loaded.ids), loaded.next_number), (sorted(vec![id, other]), 2));
    }

    #[test]
    fn after_a_failed_checkpoint_the_next_writes_a_whole_copy_over_whatever_the_failed_one_left() {
        let tree = tree();
        let mut set = OpenSet::default();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        set.open(a);
        assert!(!checkpoint(&mut set, &tree));
        set.open(b);
        // Taken, then the checkpoint fails before its marker reached sled.
        let _lost = set.take_for_checkpoint();
        set.checkpoint_failed();
        set.close(a);
        assert!(checkpoint(&mut set, &tree));
        let loaded = load(&tree).unwrap();
        assert_eq!((loaded.ids, loaded.written_since_copy), (vec![b], 0));
        assert_eq!(tree.scan_prefix(CHANGES_PREFIX).count(), 0);
    }

    #[test]
    fn a_restart_goes_on_counting_the_changes_written_since_the_whole_copy() {
        let tree = tree();
        let mut set = OpenSet::default();
        let opened: Vec<Uuid> = (0..3).map(|_| Uuid::new_v4()).collect();
        for id in &opened {
            set.open(*id);
        }
        checkpoint(&mut set, &tree);
        let loaded = load(&tree).unwrap();
        assert_eq!(
            (sorted(loaded.ids.clone()), loaded.written_since_copy),
            (sorted(opened), 3)
        );
        let reopened = OpenSet::loaded(loaded);
        assert_eq!((reopened.len(), reopened.written_since_copy), (3, 3));
    }
}
