//! A store's whole state as one value, for a cluster's shard snapshots:
//! every key and value of its sled trees, as the last checkpoint left
//! them (the checkpoint's sequence number among them), and the same written
//! back into an empty state directory before the store opens on it.
//!
//! Layout: `PGSNAP01`, then per tree: name length (u32 LE) and name, key
//! count (u64 LE), then each key and value, each as length (u32 LE) and
//! bytes.

use super::sled_slot::open_sled;
use super::{Store, StoreError};
use std::path::Path;

const MAGIC: &[u8; 8] = b"PGSNAP01";
/// The trees a store keeps (`sled_slot.rs`).
const TREES: [&str; 3] = ["ledger", "merchants", "catalog"];

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

impl Store {
    /// Every key and value of the store's trees; call after a checkpoint
    /// with no write since (a shut-down engine's store), so the state is
    /// exactly the checkpoint's.
    pub fn export_state(&self) -> Result<Vec<u8>, StoreError> {
        let mut out = MAGIC.to_vec();
        for (name, tree) in [
            ("ledger", self.ledger_tree()),
            ("merchants", self.merchants_tree()),
            ("catalog", self.catalog_tree()),
        ] {
            put_bytes(&mut out, name.as_bytes());
            out.extend_from_slice(&(tree.len() as u64).to_le_bytes());
            let mut written = 0u64;
            for entry in tree.iter() {
                let (key, value) = entry?;
                put_bytes(&mut out, &key);
                put_bytes(&mut out, &value);
                written += 1;
            }
            if written != tree.len() as u64 {
                return Err(StoreError::Snapshot(format!(
                    "tree {name} changed while it was exported"
                )));
            }
        }
        Ok(out)
    }
}

/// A cursor over snapshot bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], StoreError> {
        let end = self.at.checked_add(n).filter(|&end| end <= self.bytes.len());
        let end = end.ok_or_else(|| StoreError::Snapshot("snapshot cut short".into()))?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    fn u32(&mut self) -> Result<u32, StoreError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }

    fn u64(&mut self) -> Result<u64, StoreError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }

    fn bytes(&mut self) -> Result<&'a [u8], StoreError> {
        let length = self.u32()? as usize;
        self.take(length)
    }
}

/// Writes a snapshot into `state_dir`, which must hold no store yet; the
/// store then opens on it as on the checkpoint it was taken from. The
/// trees are written beside it and moved into place whole, so a snapshot
/// that fails to restore leaves nothing behind.
pub fn restore_state(state_dir: &Path, snapshot: &[u8]) -> Result<(), StoreError> {
    if state_dir.exists() {
        return Err(StoreError::Snapshot(format!(
            "{} already holds a store: a snapshot is restored only into an empty one",
            state_dir.display()
        )));
    }
    let restoring = state_dir.with_extension("restoring");
    if restoring.exists() {
        std::fs::remove_dir_all(&restoring)?;
    }
    let restored = write_trees(&restoring, snapshot);
    match restored {
        Ok(()) => std::fs::rename(&restoring, state_dir)?,
        Err(_) => {
            let _ = std::fs::remove_dir_all(&restoring);
        }
    }
    restored
}

fn write_trees(dir: &Path, snapshot: &[u8]) -> Result<(), StoreError> {
    let mut reader = Reader { bytes: snapshot, at: 0 };
    if reader.take(MAGIC.len())? != MAGIC {
        return Err(StoreError::Snapshot("not a store snapshot".into()));
    }
    let db = open_sled(dir)?;
    for expected in TREES {
        let name = reader.bytes()?;
        if name != expected.as_bytes() {
            return Err(StoreError::Snapshot(format!(
                "snapshot names tree {name:?} where {expected} belongs"
            )));
        }
        let tree = db.open_tree(expected)?;
        let count = reader.u64()?;
        let mut batch = sled::Batch::default();
        for _ in 0..count {
            let key = reader.bytes()?;
            let value = reader.bytes()?;
            batch.insert(key, value);
        }
        tree.apply_batch(batch)?;
    }
    if reader.at != snapshot.len() {
        return Err(StoreError::Snapshot("snapshot has bytes past its last tree".into()));
    }
    db.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_restores_every_tree_and_a_damaged_or_misplaced_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("state")).unwrap();
        store.ledger_tree().insert(b"k1", b"v1".to_vec()).unwrap();
        store.merchants_tree().insert(b"m", vec![7u8; 3000]).unwrap();
        store.catalog_tree().insert(b"c", b"".to_vec()).unwrap();
        let snapshot = store.export_state().unwrap();
        let seed_and_marker = store.ledger_tree().len();
        drop(store);

        let restored_dir = dir.path().join("restored");
        restore_state(&restored_dir, &snapshot).unwrap();
        let restored = open_sled(&restored_dir).unwrap();
        let tree = |name: &str| -> Vec<(Vec<u8>, Vec<u8>)> {
            let tree = restored.open_tree(name).unwrap();
            tree.iter()
                .map(|kv| kv.unwrap())
                .map(|(k, v)| (k.to_vec(), v.to_vec()))
                .collect()
        };
        let ledger = tree("ledger");
        assert_eq!(ledger.len(), seed_and_marker);
        assert!(ledger.contains(&(b"k1".to_vec(), b"v1".to_vec())));
        assert_eq!(tree("merchants"), vec![(b"m".to_vec(), vec![7u8; 3000])]);
        assert_eq!(tree("catalog"), vec![(b"c".to_vec(), Vec::new())]);
        drop(restored);

        let refused = |name: &str, bytes: &[u8]| {
            matches!(
                restore_state(&dir.path().join(name), bytes),
                Err(StoreError::Snapshot(_))
            )
        };
        assert!(refused("restored", &snapshot), "never over an existing store");
        assert!(refused("cut", &snapshot[..snapshot.len() - 1]));
        assert!(refused("garbage", b"not a snapshot at all"));
        let mut longer = snapshot.clone();
        longer.push(0);
        assert!(refused("longer", &longer));
        assert!(
            !dir.path().join("cut.restoring").exists(),
            "a failed restore leaves nothing behind"
        );
    }
}
