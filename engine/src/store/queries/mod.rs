//! Reading resources (orders, refunds, beneficiaries, settlements, webhooks;
//! disbursements have their own indexes): the overlay's newest values laid
//! over sled's, and the lookups every family shares (by key, through an
//! index, by time range, a page of the newest).

mod beneficiaries;
mod disbursements;
mod orders;
mod settlements;
mod webhooks;

use super::keys::{prefixed, KeyPrefix, KeyValue};
use super::record::decode_value;
use super::{Store, StoreError};
use uuid::Uuid;

impl Store {
    /// A resource value: the overlay's newest, else sled's.
    fn resource(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        {
            let overlay = self.overlay.lock().expect("overlay lock");
            let flushing = overlay.flushing.as_ref().and_then(|f| f.resources.get(key));
            if let Some(value) = overlay.active.resources.get(key).or(flushing) {
                return Ok(value.clone());
            }
        }
        Ok(self.ledger.get(key)?.map(|value| value.to_vec()))
    }

    /// Live resource keys and values in `[start, end)`, ascending: sled's,
    /// with the overlay's newer values and removals laid over them.
    fn resource_range(&self, start: &[u8], end: &[u8]) -> Result<Vec<KeyValue>, StoreError> {
        // An empty or inverted range (a list's created_from after its
        // created_to) holds nothing; BTreeMap::range would panic on it.
        if start >= end {
            return Ok(Vec::new());
        }
        let mut newer: std::collections::BTreeMap<Vec<u8>, Option<Vec<u8>>> = std::collections::BTreeMap::new();
        {
            let overlay = self.overlay.lock().expect("overlay lock");
            let range = (
                std::ops::Bound::Included(start.to_vec()),
                std::ops::Bound::Excluded(end.to_vec()),
            );
            if let Some(flushing) = overlay.flushing.as_ref() {
                newer.extend(
                    flushing
                        .resources
                        .range(range.clone())
                        .map(|(k, v)| (k.clone(), v.clone())),
                );
            }
            newer.extend(
                overlay
                    .active
                    .resources
                    .range(range)
                    .map(|(k, v)| (k.clone(), v.clone())),
            );
        }
        let mut merged: std::collections::BTreeMap<Vec<u8>, Vec<u8>> = std::collections::BTreeMap::new();
        for item in self.ledger.range(start..end) {
            let (key, value) = item?;
            merged.insert(key.to_vec(), value.to_vec());
        }
        for (key, value) in newer {
            match value {
                Some(value) => merged.insert(key, value),
                None => merged.remove(&key),
            };
        }
        Ok(merged.into_iter().collect())
    }

    fn decoded<T: serde::de::DeserializeOwned>(&self, key: &[u8]) -> Result<Option<T>, StoreError> {
        match self.resource(key)? {
            Some(bytes) => Ok(Some(decode_value(&bytes)?)),
            None => Ok(None),
        }
    }

    fn by_index<T: serde::de::DeserializeOwned>(
        &self,
        index_key: &[u8],
        prefix: KeyPrefix,
    ) -> Result<Option<T>, StoreError> {
        match self.resource(index_key)? {
            Some(id) => self.decoded(&prefixed(prefix, &[&id])),
            None => Ok(None),
        }
    }

    /// The ids ending the index keys in `[start, end)`, in key order.
    fn indexed_ids(&self, start: &[u8], end: &[u8]) -> Result<Vec<Uuid>, StoreError> {
        Ok(self
            .resource_range(start, end)?
            .into_iter()
            .map(|(key, _)| Uuid::from_slice(&key[key.len() - 16..]).unwrap_or_default())
            .collect())
    }

    /// The ids of a `prefix`+owner+time ms+id index with times in `[from_ms, to_ms)`, oldest first.
    fn ids_in_time_range(
        &self,
        prefix: KeyPrefix,
        owner: &Uuid,
        from_ms: i64,
        to_ms: i64,
    ) -> Result<Vec<Uuid>, StoreError> {
        let from = (from_ms.max(0) as u64).to_be_bytes();
        let to = (to_ms.max(0) as u64).to_be_bytes();
        self.indexed_ids(
            &prefixed(prefix, &[owner.as_bytes(), &from]),
            &prefixed(prefix, &[owner.as_bytes(), &to]),
        )
    }

    /// The records `record_prefix`+id of `ids`, in order; ids without one are skipped.
    fn load_all<T: serde::de::DeserializeOwned>(
        &self,
        record_prefix: KeyPrefix,
        ids: impl IntoIterator<Item = Uuid>,
    ) -> Result<Vec<T>, StoreError> {
        let mut found = Vec::new();
        for id in ids {
            if let Some(record) = self.decoded(&prefixed(record_prefix, &[id.as_bytes()]))? {
                found.push(record);
            }
        }
        Ok(found)
    }

    /// Of the records of `ids_oldest_first` that pass `keep`, newest first:
    /// the `offset`..`offset + limit` slice and how many passed.
    fn newest_page<T: serde::de::DeserializeOwned>(
        &self,
        record_prefix: KeyPrefix,
        ids_oldest_first: Vec<Uuid>,
        keep: impl Fn(&T) -> bool,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<T>, usize), StoreError> {
        let mut page = Vec::new();
        let mut total = 0;
        for id in ids_oldest_first.into_iter().rev() {
            let Some(record) = self.decoded::<T>(&prefixed(record_prefix, &[id.as_bytes()]))? else {
                continue;
            };
            if !keep(&record) {
                continue;
            }
            if total >= offset && page.len() < limit {
                page.push(record);
            }
            total += 1;
        }
        Ok((page, total))
    }
}
