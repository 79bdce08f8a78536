//! Disbursement reads: by id from the overlay or the block the index points
//! to, by ref code and idempotency key, listings and the open set.

use crate::domain::Disbursement;
use crate::store::history::Kind;
use crate::store::{Store, StoreError};
use uuid::Uuid;

/// The disbursements' one lookup, as `history::DISBURSEMENTS` declares it.
const KEY_LOOKUP: usize = 0;

impl Store {
    /// A disbursement by id: the overlay's newest version, else the block
    /// the index points to.
    pub fn disbursement(&self, id: &Uuid) -> Result<Option<Disbursement>, StoreError> {
        self.newest_version(Kind::Disbursements, id)
    }

    /// A disbursement by ref code.
    pub fn disbursement_by_ref(&self, ref_code: &str) -> Result<Option<Disbursement>, StoreError> {
        match self.id_by_ref(Kind::Disbursements, ref_code)? {
            Some(id) => Ok(self.disbursement(&id)?.filter(|d| d.ref_code == ref_code)),
            None => Ok(None),
        }
    }

    /// True when a ref code is taken (or shares its 128-bit hash with one that is).
    pub fn disbursement_ref_exists(&self, ref_code: &str) -> Result<bool, StoreError> {
        Ok(self.id_by_ref(Kind::Disbursements, ref_code)?.is_some())
    }

    /// The disbursement a merchant created with an idempotency key.
    pub fn disbursement_by_key(&self, merchant_id: &Uuid, key: &str) -> Result<Option<Disbursement>, StoreError> {
        let hash = self.key_hash(key);
        match self.id_by_lookup(Kind::Disbursements, KEY_LOOKUP, merchant_id, hash)? {
            Some(id) => Ok(self.disbursement(&id)?.filter(|d| d.idempotency_key == key)),
            None => Ok(None),
        }
    }

    /// A merchant's disbursement idempotency key hashes, or `None` when
    /// there are more than `limit`.
    pub fn disbursement_key_hashes(&self, merchant_id: &Uuid, limit: usize) -> Option<Vec<u128>> {
        // An unreadable history only means "not all known": keys are then
        // looked up one by one.
        match self.lookup_hashes(Kind::Disbursements, KEY_LOOKUP, merchant_id, limit) {
            Ok(hashes) => hashes,
            Err(error) => {
                tracing::error!(%error, "disbursement key history unreadable");
                None
            }
        }
    }

    /// A merchant's disbursements created in `[from_ms, to_ms)`, newest first,
    /// that pass `keep`: the `offset`..`offset + limit` slice and the total.
    pub fn merchant_disbursements(
        &self,
        merchant_id: &Uuid,
        from_ms: i64,
        to_ms: i64,
        keep: impl Fn(&Disbursement) -> bool,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<Disbursement>, usize), StoreError> {
        let ids = self.created_between(Kind::Disbursements, merchant_id, from_ms, to_ms)?;
        super::versions::newest_page(ids, |id| self.disbursement(id), keep, offset, limit)
    }

    /// How many durable disbursements are not yet final.
    pub fn open_disbursement_count(&self) -> usize {
        self.kind(Kind::Disbursements)
            .recent
            .read()
            .expect("recent index lock")
            .open_count()
    }

    /// Disbursements not yet in a final status, to resume after a restart.
    pub fn open_disbursements(&self) -> Result<Vec<Disbursement>, StoreError> {
        let ids = self
            .kind(Kind::Disbursements)
            .recent
            .read()
            .expect("recent index lock")
            .open();
        let mut open = Vec::with_capacity(ids.len());
        for id in ids {
            open.extend(self.disbursement(&id)?.filter(|d| !d.status.is_terminal()));
        }
        Ok(open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::record::JournalRecord;
    use crate::store::tests::{assert_disbursements_stored, test_disbursement};
    use std::fs;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    /// Disbursements read the same from the overlay, from blocks after a
    /// checkpoint, with newer versions over older blocks, and after reopening.
    #[test]
    fn disbursements_are_found_in_the_overlay_in_blocks_and_after_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let merchant = Uuid::new_v4();
        let disbursements: Vec<Disbursement> = (0..3000).map(|n| test_disbursement(merchant, n)).collect();
        let mut seq = 0u64;
        let mut apply = |store: &Store, disbursement: &Disbursement| {
            seq += 1;
            let record = JournalRecord::DisbursementUpdated(Arc::new(disbursement.clone()));
            store.apply(seq, &record, &record.encode()).unwrap();
        };
        {
            let store = Store::open(dir.path()).unwrap();
            for disbursement in &disbursements {
                apply(&store, disbursement);
            }
            store.checkpoint().unwrap();
            // The second versions: half still in the overlay, half in newer blocks.
            for (n, disbursement) in disbursements.iter().enumerate().step_by(3) {
                let mut done = disbursement.clone();
                done.status = crate::domain::DisbursementStatus::Success;
                apply(&store, &done);
                if n == 1500 {
                    store.checkpoint().unwrap();
                }
            }
            assert_disbursements_stored(&store, &disbursements);
            store.checkpoint().unwrap();
            assert_disbursements_stored(&store, &disbursements);
            // Nothing new: the same checkpoint number, and its blocks stay.
            store.checkpoint().unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        assert_disbursements_stored(&store, &disbursements);
        // Every second one FAILED, written to blocks by a checkpoint that
        // dies before its marker: after a restart the blocks are ignored,
        // and replaying the journal after the marker brings the versions back.
        let marker = store.checkpoint_seq().unwrap();
        let mut failed = Vec::new();
        for disbursement in disbursements.iter().skip(1).step_by(3).take(100) {
            let mut gone = disbursement.clone();
            gone.status = crate::domain::DisbursementStatus::Failed;
            apply(&store, &gone);
            failed.push(JournalRecord::DisbursementUpdated(Arc::new(gone)));
        }
        store.fail_after_batches.store(1, Ordering::Release);
        assert!(store.checkpoint().is_err());
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.checkpoint_seq().unwrap(), marker);
        let first_failed = disbursements[1].id;
        let status = store.disbursement(&first_failed).unwrap().unwrap().status;
        assert_eq!(
            status,
            crate::domain::DisbursementStatus::Pending,
            "the cut blocks are not read"
        );
        for (n, record) in failed.iter().enumerate() {
            store.apply(marker + n as u64, record, &record.encode()).unwrap();
        }
        let status = store.disbursement(&first_failed).unwrap().unwrap().status;
        assert_eq!(status, crate::domain::DisbursementStatus::Failed);
        assert_eq!(store.open_disbursements().unwrap().len(), 1900);
        store.checkpoint().unwrap();
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.open_disbursements().unwrap().len(), 1900);
        let status = store.disbursement(&first_failed).unwrap().unwrap().status;
        assert_eq!(status, crate::domain::DisbursementStatus::Failed);
        let (page, total) = store
            .merchant_disbursements(&merchant, 1000, 2000, |d| d.status.is_terminal(), 0, 5)
            .unwrap();
        assert_eq!(
            total, 333,
            "created in [1000, 2000) and final (the FAILED ones are all below 300)"
        );
        let created: Vec<i64> = page.iter().map(|d| d.created_at_ms).collect();
        assert_eq!(created, [1998, 1995, 1992, 1989, 1986]);
        // No tree node grew past sled's blob threshold (blob files pile up
        // and every checkpoint fsyncs each one).
        let blobs = fs::read_dir(dir.path().join("blobs")).map_or(0, |files| files.count());
        assert_eq!(blobs, 0, "sled wrote blob files");
    }
}
