//! Reading resources: every versioned kind through one path
//! (`versions.rs`: the overlay's newest version, else its block), one file
//! of reads per kind; and the open-work keys (a PENDING order's expiry,
//! what waits for a settlement, open refunds and settlements, webhook due
//! times), the overlay's newest values laid over sled's.

mod batches;
mod beneficiaries;
mod disbursements;
pub(super) mod orders;
mod settlements;
mod versions;
mod webhooks;

#[cfg(test)]
mod kinds_tests;

pub use orders::OrderLookup;

use super::keys::{prefixed, KeyPrefix, KeyValue};
use super::{Store, StoreError};
use uuid::Uuid;

impl Store {
    /// The first `limit` live resource keys and values in `[start, end)`,
    /// ascending, read lazily: the overlay's two layers are merged (the
    /// active one wins) only up to the `limit`-th key they hold a value for,
    /// and sled only up to that key, since nothing past it can be among the
    /// first `limit`.
    pub(super) fn resource_range_first(
        &self,
        start: &[u8],
        end: &[u8],
        limit: usize,
    ) -> Result<Vec<KeyValue>, StoreError> {
        use std::cmp::Ordering as KeyOrder;
        if start >= end || limit == 0 {
            return Ok(Vec::new());
        }
        let range = (
            std::ops::Bound::Included(start.to_vec()),
            std::ops::Bound::Excluded(end.to_vec()),
        );
        // The overlay's newest word on each key, in key order, up to its
        // `limit`-th value; removals (`None`) hide sled's keys.
        let mut newer: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
        let mut newer_values = 0;
        {
            let overlay = self.overlay.lock().expect("overlay lock");
            let mut active = overlay.active.resources.range(range.clone()).peekable();
            let mut flushing = overlay
                .flushing
                .iter()
                .flat_map(|layer| layer.resources.range(range.clone()))
                .peekable();
            while newer_values < limit {
                let next = match (active.peek(), flushing.peek()) {
                    (None, None) => break,
                    (Some(_), None) => active.next(),
                    (None, Some(_)) => flushing.next(),
                    (Some((active_key, _)), Some((flushing_key, _))) => match active_key.cmp(flushing_key) {
                        KeyOrder::Less => active.next(),
                        KeyOrder::Greater => flushing.next(),
                        KeyOrder::Equal => {
                            flushing.next();
                            active.next()
                        }
                    },
                };
                let Some((key, value)) = next else { break };
                newer_values += usize::from(value.is_some());
                newer.push((key.clone(), value.clone()));
            }
        }
        // With `limit` values in the overlay, its last key bounds the answer.
        let bound = (newer_values == limit)
            .then(|| newer.last().map(|(key, _)| key.clone()))
            .flatten();
        let mut older: Vec<KeyValue> = Vec::new();
        for item in self.ledger_tree().range(start..end) {
            let (key, value) = item?;
            if bound.as_ref().is_some_and(|bound| key.as_ref() > bound.as_slice()) || older.len() == limit {
                break;
            }
            if newer
                .binary_search_by(|(newer_key, _)| newer_key.as_slice().cmp(&key))
                .is_err()
            {
                older.push((key.to_vec(), value.to_vec()));
            }
        }
        let mut merged = Vec::with_capacity(limit.min(older.len() + newer_values));
        let mut newer = newer
            .into_iter()
            .filter_map(|(key, value)| value.map(|value| (key, value)))
            .peekable();
        let mut older = older.into_iter().peekable();
        while merged.len() < limit {
            let next = match (older.peek(), newer.peek()) {
                (None, None) => break,
                (Some(_), None) => older.next(),
                (None, Some(_)) => newer.next(),
                (Some((older_key, _)), Some((newer_key, _))) => {
                    if older_key < newer_key {
                        older.next()
                    } else {
                        newer.next()
                    }
                }
            };
            merged.extend(next);
        }
        Ok(merged)
    }

    /// Live resource keys and values in `[start, end)`, ascending: sled's,
    /// with the overlay's newer values and removals laid over them.
    fn resource_range(&self, start: &[u8], end: &[u8]) -> Result<Vec<KeyValue>, StoreError> {
        self.resource_range_first(start, end, usize::MAX)
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

    /// The versions of `ids` (read by `load`), in order; ids without one are skipped.
    fn load_all<T>(
        &self,
        ids: impl IntoIterator<Item = Uuid>,
        load: impl Fn(&Uuid) -> Result<Option<T>, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let mut found = Vec::new();
        for id in ids {
            found.extend(load(&id)?);
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::overlay::Layer;
    use crate::store::stored::StoredEvent;
    use std::sync::Arc;

    /// The reference the bounded read is held to: sled's range with the
    /// overlay's layers laid over it, all of it merged in maps.
    fn whole_merge(store: &Store, start: &[u8], end: &[u8]) -> Result<Vec<KeyValue>, StoreError> {
        // An empty or inverted range (a list's created_from after its
        // created_to) holds nothing; BTreeMap::range would panic on it.
        if start >= end {
            return Ok(Vec::new());
        }
        let mut newer: std::collections::BTreeMap<Vec<u8>, Option<Vec<u8>>> = std::collections::BTreeMap::new();
        {
            let overlay = store.overlay.lock().expect("overlay lock");
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
        for item in store.ledger_tree().range(start..end) {
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

    #[test]
    fn a_bounded_range_read_is_the_head_of_the_whole_merged_range() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move |below: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % below
        };
        let key = |n: u64| prefixed(KeyPrefix::WebhookEventDue, &[&n.to_be_bytes()]);
        let (mut active, mut flushing) = (Layer::default(), Layer::default());
        for n in 0..600u64 {
            // Each key lives in sled, in the layer being flushed, in the
            // active layer, in several of them, or nowhere; a layer's word
            // may be a removal.
            let word = |next: &mut dyn FnMut(u64) -> u64| (next(3) > 0).then(|| vec![next(200) as u8]);
            if next(3) == 0 {
                store.ledger_tree().insert(key(n), vec![n as u8]).unwrap();
            }
            if next(4) == 0 {
                flushing.put_resources([(key(n), word(&mut next))]);
            }
            if next(4) == 0 {
                active.put_resources([(key(n), word(&mut next))]);
            }
        }
        {
            let mut overlay = store.overlay.lock().unwrap();
            overlay.active = active;
            overlay.flushing = Some(Arc::new(flushing));
        }
        for _ in 0..300 {
            let start = key(next(620));
            let end = key(next(620));
            let limit = next(80) as usize;
            let whole: Vec<KeyValue> = whole_merge(&store, &start, &end)
                .unwrap()
                .into_iter()
                .take(limit)
                .collect();
            assert_eq!(store.resource_range_first(&start, &end, limit).unwrap(), whole);
        }
    }

    #[test]
    fn a_due_key_made_and_cleared_in_one_layer_leaves_nothing_once_fresh_keys_are_allowed() {
        use crate::domain::{EventResource, WebhookAttempt, WebhookEvent};
        use crate::store::record::JournalRecord;
        for fresh in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::open(dir.path()).unwrap();
            if fresh {
                store.allow_fresh_keys();
            }
            let merchant = Uuid::new_v4();
            let disbursement = crate::store::tests::test_disbursement(merchant, 1);
            let event = WebhookEvent::new(
                merchant,
                1_000,
                Some("http://127.0.0.1:9/hook".into()),
                EventResource::Disbursement(Arc::new(disbursement.clone())),
            );
            let created = JournalRecord::Evented {
                record: Box::new(JournalRecord::DisbursementUpdated(Arc::new(disbursement))),
                events: vec![std::sync::Arc::new(event.clone())],
            };
            store.apply(1, &created, &created.encode()).unwrap();
            assert_eq!(store.webhooks_due(None, 2_000, 10).unwrap(), vec![(1_000, event.id)]);

            let mut delivered = event.clone();
            (delivered.attempts, delivered.delivered, delivered.next_attempt_at_ms) = (1, true, None);
            let attempt = WebhookAttempt {
                event_id: event.id,
                merchant_id: merchant,
                event: event.event.clone(),
                url: "http://127.0.0.1:9/hook".into(),
                attempt: 1,
                status_code: Some(200),
                latency_ms: 1,
                error: None,
                next_retry_at_ms: None,
                delivered: true,
                attempted_at_ms: 1_500,
                manual: false,
            };
            let attempted = JournalRecord::WebhookAttempted {
                event: Box::new(StoredEvent::of(&delivered, false)),
                previously_due_ms: Some(1_000),
                attempt: Box::new(attempt),
            };
            store.apply(2, &attempted, &attempted.encode()).unwrap();
            let due_key = prefixed(
                KeyPrefix::WebhookEventDue,
                &[&1_000u64.to_be_bytes(), event.id.as_bytes()],
            );
            let held = store.overlay.lock().unwrap().active.resources.get(&due_key).cloned();
            // Fresh, the key is simply gone; before recovery is checkpointed a
            // removal is kept, since sled may hold the key.
            assert_eq!(held, if fresh { None } else { Some(None) }, "fresh: {fresh}");
            assert!(store.webhooks_due(None, 2_000, 10).unwrap().is_empty());
            store.checkpoint().unwrap();
            assert!(store.webhooks_due(None, 2_000, 10).unwrap().is_empty());
            assert!(store.ledger_tree().get(&due_key).unwrap().is_none());
            assert!(store.webhook_event(&event.id).unwrap().unwrap().delivered);
        }
    }
}
