//! Reads every versioned kind (disbursements, orders) shares: a
//! checkpointed version from the block its location names, and ids through
//! the recent index first, then the runs.

use crate::store::history::Kind;
use crate::store::record::decode_value;
use crate::store::stored::Stored;
use crate::store::{blocks, corrupt_block, Store, StoreError};
use uuid::Uuid;

impl Store {
    /// A version of `kind` (whose domain type is `T`) by id: the overlay's
    /// newest, else the block its location names.
    pub(super) fn newest_version<T: Clone + Stored + 'static>(
        &self,
        kind: Kind,
        id: &Uuid,
    ) -> Result<Option<T>, StoreError> {
        {
            let overlay = self.overlay.lock().expect("overlay lock");
            let found = overlay.active.version::<T>(kind, id);
            let found = found.or_else(|| overlay.flushing.as_deref()?.version::<T>(kind, id));
            if found.is_some() {
                return Ok(found);
            }
        }
        self.checkpointed_version(kind, id)
    }

    /// A version a checkpoint wrote: from the block its location names.
    pub(in crate::store) fn checkpointed_version<T: Stored>(
        &self,
        kind: Kind,
        id: &Uuid,
    ) -> Result<Option<T>, StoreError> {
        let kind = self.kind(kind);
        let location = kind.runs.read().expect("history lock").location(id)?;
        let Some(location) = location.filter(|location| kind.retains(location)) else {
            return Ok(None);
        };
        let key = location.block_key();
        let block = match self.ledger_tree().get(key)? {
            Some(block) => block,
            // Retention dropped it since the location was read.
            None if !kind.retains(&location) => return Ok(None),
            None => return Err(corrupt_block(&key)),
        };
        let encoded = blocks::version_at(&block, location.offset).ok_or_else(|| corrupt_block(&key))?;
        Ok(Some(decode_value(encoded)?))
    }

    /// The id of the version with a ref code (or one sharing its 128-bit hash).
    pub(super) fn id_by_ref(&self, kind: Kind, ref_code: &str) -> Result<Option<Uuid>, StoreError> {
        let kind = self.kind(kind);
        let hash = self.key_hash(ref_code);
        let recent = kind.recent.read().expect("recent index lock").id_by_ref(hash);
        match recent {
            Some(id) => Ok(Some(id)),
            None => kind.runs.read().expect("history lock").id_by_ref(hash),
        }
    }

    /// The id of the version a merchant made with a hash of lookup `lookup`.
    pub(super) fn id_by_lookup(
        &self,
        kind: Kind,
        lookup: usize,
        merchant_id: &Uuid,
        hash: u128,
    ) -> Result<Option<Uuid>, StoreError> {
        let kind = self.kind(kind);
        let recent = kind
            .recent
            .read()
            .expect("recent index lock")
            .id_by_lookup(lookup, merchant_id, hash);
        match recent {
            Some(id) => Ok(Some(id)),
            None => kind
                .runs
                .read()
                .expect("history lock")
                .id_by_lookup(lookup, merchant_id, hash),
        }
    }

    /// Every hash of lookup `lookup` a merchant used, or `None` when there
    /// are more than `limit`.
    pub(super) fn lookup_hashes(
        &self,
        kind: Kind,
        lookup: usize,
        merchant_id: &Uuid,
        limit: usize,
    ) -> Result<Option<Vec<u128>>, StoreError> {
        let kind = self.kind(kind);
        let recent = kind
            .recent
            .read()
            .expect("recent index lock")
            .lookup_hashes(lookup, merchant_id);
        let stored = kind
            .runs
            .read()
            .expect("history lock")
            .lookup_hashes(lookup, merchant_id, limit)?;
        let Some(stored) = stored else {
            return Ok(None);
        };
        let mut all: Vec<u128> = recent.into_iter().chain(stored).collect();
        all.sort_unstable();
        all.dedup();
        Ok((all.len() <= limit).then_some(all))
    }

    /// The ids of a merchant's versions created in `[from_ms, to_ms)`,
    /// oldest first.
    pub(super) fn created_between(
        &self,
        kind: Kind,
        merchant_id: &Uuid,
        from_ms: i64,
        to_ms: i64,
    ) -> Result<Vec<Uuid>, StoreError> {
        let kind = self.kind(kind);
        let mut created = kind
            .recent
            .read()
            .expect("recent index lock")
            .created_between(merchant_id, from_ms, to_ms);
        created.extend(
            kind.runs
                .read()
                .expect("history lock")
                .created_between(merchant_id, from_ms, to_ms)?,
        );
        created.sort_unstable();
        created.dedup();
        Ok(created.into_iter().map(|(_, id)| id).collect())
    }
}

/// Of the versions of `ids_oldest_first` (read by `load`) that pass
/// `keep`, newest first: the `offset`..`offset + limit` slice and how many passed.
pub(super) fn newest_page<T>(
    ids_oldest_first: Vec<Uuid>,
    load: impl Fn(&Uuid) -> Result<Option<T>, StoreError>,
    keep: impl Fn(&T) -> bool,
    offset: usize,
    limit: usize,
) -> Result<(Vec<T>, usize), StoreError> {
    let mut page = Vec::new();
    let mut total = 0;
    for id in ids_oldest_first.into_iter().rev() {
        let Some(version) = load(&id)?.filter(&keep) else {
            continue;
        };
        if total >= offset && page.len() < limit {
            page.push(version);
        }
        total += 1;
    }
    Ok((page, total))
}
