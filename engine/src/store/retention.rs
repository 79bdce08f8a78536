//! Retention: webhook events delivered (or given up), where their delivery
//! stands, and delivery attempts are kept for a window, then dropped at
//! checkpoints; money records are kept forever.
//!
//! Blocks are written in checkpoint order, so what falls out of the window
//! is a prefix of a kind's blocks. A sweep drops whole blocks from the
//! oldest while every version in them is expired or superseded by a newer
//! block, and stops at the first that still holds something kept: one
//! event still retrying holds back the blocks after it, never loses one.
//! Where the kept blocks start (`retained_from`) is stored with the drop in
//! one sled batch; a location below it reads as gone, so index entries
//! pointing into dropped blocks need no rewrite.

use super::blocks::{self, Location};
use super::history::{self, Kind, KindSpec};
use super::record::decode_value;
use super::stored::StoredEvent;
use super::{corrupt_block, KindIndexes, Store, StoreError};
use crate::domain::{EventDeliveryVersion, WebhookAttempt};
use std::sync::atomic::Ordering;

/// A block's place in its kind's order: (checkpoint, part).
pub type BlockPosition = (u64, u32);

/// Blocks one sweep drops at most, so the checkpoint that runs it stays
/// short after a long pause or a shortened window; the next ones go on.
const SWEEP_BLOCKS_MAX: usize = 2048;

/// Where `spec`'s kept blocks start, as stored (the very first block when
/// nothing was dropped or the kind has no retention).
pub(super) fn load_retained_from(tree: &sled::Tree, spec: &KindSpec) -> Result<BlockPosition, StoreError> {
    let Some(key) = spec.retention_key else {
        return Ok((0, 0));
    };
    match tree.get(key)? {
        None => Ok((0, 0)),
        Some(bytes) if bytes.len() == 12 => Ok((
            u64::from_be_bytes(bytes[..8].try_into().expect("8 bytes")),
            u32::from_be_bytes(bytes[8..].try_into().expect("4 bytes")),
        )),
        Some(bytes) => Err(StoreError::Format(format!(
            "the retention position {key:?} holds {} bytes, not 12",
            bytes.len()
        ))),
    }
}

fn encode_position((checkpoint, part): BlockPosition) -> [u8; 12] {
    let mut bytes = [0u8; 12];
    bytes[..8].copy_from_slice(&checkpoint.to_be_bytes());
    bytes[8..].copy_from_slice(&part.to_be_bytes());
    bytes
}

impl KindIndexes {
    /// Whether the block `location` names is still kept.
    pub(super) fn retains(&self, location: &Location) -> bool {
        (location.checkpoint, location.part) >= *self.retained_from.read().expect("retention lock")
    }

    /// Which records of index `tag` a merge keeps: for a kind with
    /// retention, not a location into a dropped block, nor a creation
    /// entry from before the window (its version is dropped, or past the
    /// window and about to be); everything else.
    pub(super) fn merge_keeps(&self, tag: u8) -> impl Fn(&[u8]) -> bool {
        let spec = self.spec();
        let key_len = spec.locations.key_len;
        let retained_from = *self.retained_from.read().expect("retention lock");
        let since_ms = self.retained_since_ms.load(Ordering::Acquire);
        let retention = spec.retention_key.is_some();
        let created_tag = spec.created.map(|created| created.tag);
        move |record: &[u8]| {
            if !retention {
                true
            } else if tag == spec.locations.tag {
                let location = history::decode_location(spec.blocks, &record[key_len..]);
                (location.checkpoint, location.part) >= retained_from
            } else if Some(tag) == created_tag {
                history::created_ms_of(record) >= since_ms
            } else {
                true
            }
        }
    }
}

impl Store {
    /// Drops webhook events that happened before `cutoff_ms` and are
    /// delivered or given up, and delivery attempts made before it: whole
    /// blocks, oldest first (see the module docs). Call between
    /// checkpoints, never during one. Returns how many blocks went.
    pub fn drop_webhooks_before(&self, cutoff_ms: i64) -> Result<usize, StoreError> {
        let webhook_kinds = [Kind::WebhookEvents, Kind::WebhookDeliveries, Kind::WebhookAttempts];
        for kind in webhook_kinds {
            self.kind(kind).retained_since_ms.fetch_max(cutoff_ms, Ordering::AcqRel);
        }
        let events = self.drop_blocks_while(self.kind(Kind::WebhookEvents), |encoded, location| {
            let event: StoredEvent = decode_value(encoded)?;
            let delivery = self.event_delivery(&event.id)?.unwrap_or(event.delivery);
            if delivery.next_attempt_at_ms.is_none() && event.occurred_at_ms < cutoff_ms {
                return Ok(true);
            }
            // Kept, unless a later block holds a newer version.
            let newest = self
                .kind(Kind::WebhookEvents)
                .runs
                .read()
                .expect("history lock")
                .location(&event.id)?;
            Ok(newest != Some(location))
        })?;
        // A delivery goes with its event, or once a later block holds a
        // newer one (its events are all checkpointed: each delivery's
        // checkpoint is its event's or a later one).
        let deliveries = self.drop_blocks_while(self.kind(Kind::WebhookDeliveries), |encoded, location| {
            let version: EventDeliveryVersion = decode_value(encoded)?;
            let events = self.kind(Kind::WebhookEvents);
            let event_at = events.runs.read().expect("history lock").location(&version.event_id)?;
            if !event_at.is_some_and(|event_at| events.retains(&event_at)) {
                return Ok(true);
            }
            let newest = self
                .kind(Kind::WebhookDeliveries)
                .runs
                .read()
                .expect("history lock")
                .location(&version.event_id)?;
            Ok(newest != Some(location))
        })?;
        let attempts = self.drop_blocks_while(self.kind(Kind::WebhookAttempts), |encoded, _| {
            let attempt: WebhookAttempt = decode_value(encoded)?;
            Ok(attempt.attempted_at_ms < cutoff_ms)
        })?;
        Ok(events + deliveries + attempts)
    }

    /// Drops `kind`'s oldest blocks while every version in them passes
    /// `gone` (given its encoding and where it is), at most
    /// `SWEEP_BLOCKS_MAX`; returns how many went.
    fn drop_blocks_while(
        &self,
        kind: &KindIndexes,
        gone: impl Fn(&[u8], Location) -> Result<bool, StoreError>,
    ) -> Result<usize, StoreError> {
        let spec = kind.spec();
        let Some(retention_key) = spec.retention_key else {
            return Ok(0);
        };
        let from = *kind.retained_from.read().expect("retention lock");
        let mut retained_from = from;
        let mut dropped = Vec::new();
        let kept_blocks =
            blocks::block_key(spec.blocks, from.0, from.1)..=blocks::block_key(spec.blocks, u64::MAX, u32::MAX);
        for item in self.ledger_tree().range(kept_blocks) {
            if dropped.len() >= SWEEP_BLOCKS_MAX {
                break;
            }
            let (key, block) = item?;
            let (checkpoint, part) = blocks::parse_block_key(spec.blocks, &key).ok_or_else(|| corrupt_block(&key))?;
            let versions = blocks::block_versions(&block).ok_or_else(|| corrupt_block(&key))?;
            let mut all_gone = true;
            for (offset, encoded) in versions {
                let location = Location {
                    blocks: spec.blocks,
                    checkpoint,
                    part,
                    offset,
                };
                if !gone(encoded, location)? {
                    all_gone = false;
                    break;
                }
            }
            if !all_gone {
                break;
            }
            dropped.push(key);
            retained_from = (checkpoint, part.saturating_add(1));
        }
        if dropped.is_empty() {
            return Ok(0);
        }
        // Readers judge locations by the position first, so none looks for
        // a block after it went.
        *kind.retained_from.write().expect("retention lock") = retained_from;
        let mut batch = sled::Batch::default();
        batch.insert(retention_key, &encode_position(retained_from));
        for key in &dropped {
            batch.remove(key);
        }
        self.ledger_tree().apply_batch(batch)?;
        Ok(dropped.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{EventResource, WebhookEvent};
    use crate::store::keys::KeyPrefix;
    use crate::store::queries::orders::tests::test_order;
    use crate::store::record::JournalRecord;
    use uuid::Uuid;

    struct Journal<'a> {
        store: &'a Store,
        seq: u64,
    }

    impl Journal<'_> {
        fn apply(&mut self, record: JournalRecord) {
            self.seq += 1;
            self.store.apply(self.seq, &record, &record.encode()).unwrap();
        }

        /// `count` events of `merchant` that happened at `occurred_ms`, each with somewhere to go.
        fn create(&mut self, merchant: Uuid, count: usize, occurred_ms: i64) -> Vec<WebhookEvent> {
            let events: Vec<WebhookEvent> = (0..count)
                .map(|n| {
                    let resource = EventResource::Order(Box::new(test_order(merchant, n)));
                    WebhookEvent::new(merchant, occurred_ms, Some("https://m.example/hook".into()), resource)
                })
                .collect();
            self.apply(JournalRecord::Evented {
                record: Box::new(JournalRecord::OrderCreated(Box::new(test_order(merchant, 0)))),
                events: events.iter().cloned().map(std::sync::Arc::new).collect(),
            });
            events
        }

        /// Each event delivered by one attempt at `attempted_at_ms`.
        fn deliver(&mut self, events: &[WebhookEvent], attempted_at_ms: i64) {
            for event in events {
                let mut delivered = event.clone();
                delivered.attempts = 1;
                delivered.delivered = true;
                delivered.next_attempt_at_ms = None;
                let attempt = WebhookAttempt::of_event(event, 1, attempted_at_ms, None);
                self.apply(JournalRecord::WebhookAttemptRecorded {
                    event_id: event.id,
                    delivery: delivered.delivery(),
                    previously_due_ms: event.next_attempt_at_ms,
                    attempt: Box::new(attempt),
                });
            }
        }
    }

    fn found(store: &Store, events: &[WebhookEvent]) -> usize {
        events
            .iter()
            .filter(|event| store.webhook_event(&event.id).unwrap().is_some())
            .count()
    }

    fn attempts_listed(store: &Store, merchant: &Uuid) -> Vec<i64> {
        let (attempts, total) = store
            .merchant_webhook_attempts(merchant, i64::MIN, |_| true, 0, usize::MAX)
            .unwrap();
        assert_eq!(attempts.len(), total);
        attempts.iter().map(|attempt| attempt.attempted_at_ms).collect()
    }

    fn blocks(store: &Store, prefix: KeyPrefix) -> usize {
        store.ledger_tree().scan_prefix([prefix.byte()]).count()
    }

    /// Old delivered events and old attempts go; an old event still
    /// retrying holds back every block from its own, and goes once it is
    /// delivered, its deliveries with it; what was dropped stays dropped
    /// after reopening.
    #[test]
    fn events_past_the_window_go_whole_blocks_from_the_oldest_and_stay_gone() {
        let dir = tempfile::tempdir().unwrap();
        let merchant = Uuid::new_v4();
        let (delivered_old, retrying_old, delivered_new);
        {
            let store = Store::open(dir.path()).unwrap();
            let mut journal = Journal { store: &store, seq: 0 };
            delivered_old = journal.create(merchant, 30, 1_000);
            journal.deliver(&delivered_old, 1_100);
            store.checkpoint().unwrap();
            retrying_old = journal.create(merchant, 10, 1_000);
            store.checkpoint().unwrap();
            delivered_new = journal.create(merchant, 10, 10_000);
            journal.deliver(&delivered_new, 10_100);
            store.checkpoint().unwrap();
            let all_blocks = blocks(&store, KeyPrefix::WebhookEventBlock);
            let delivery_blocks = blocks(&store, KeyPrefix::WebhookDeliveryBlock);

            assert!(store.drop_webhooks_before(5_000).unwrap() > 0);
            assert_eq!(found(&store, &delivered_old), 0);
            assert_eq!(found(&store, &retrying_old), 10);
            assert_eq!(found(&store, &delivered_new), 10);
            assert!(blocks(&store, KeyPrefix::WebhookEventBlock) < all_blocks);
            assert!(
                blocks(&store, KeyPrefix::WebhookDeliveryBlock) < delivery_blocks,
                "the dropped events' deliveries go"
            );
            assert_eq!(attempts_listed(&store, &merchant), vec![10_100; 10]);
            assert_eq!(
                store.drop_webhooks_before(5_000).unwrap(),
                0,
                "nothing more is past the window"
            );

            // Delivered now, they are past the window too: their block
            // goes, their deliveries with them.
            journal.deliver(&retrying_old, 20_000);
            store.checkpoint().unwrap();
            assert!(store.drop_webhooks_before(5_000).unwrap() > 0);
            assert_eq!(found(&store, &retrying_old), 0);
            assert_eq!(found(&store, &delivered_new), 10);
            assert!(store.drop_webhooks_before(15_000).unwrap() > 0);
            assert_eq!(found(&store, &delivered_new), 0);
            assert_eq!(blocks(&store, KeyPrefix::WebhookEventBlock), 0);
            assert_eq!(blocks(&store, KeyPrefix::WebhookDeliveryBlock), 0);
            assert_eq!(attempts_listed(&store, &merchant), vec![20_000; 10]);
            // Reads of dropped versions still answer while their index
            // entries stay (they point below the kept blocks).
            assert!(store.webhook_event(&delivered_old[0].id).unwrap().is_none());

            // The next merge leaves out the entries into dropped blocks: of
            // the four newest runs (10 entries each, two of them dead),
            // only the new events' stay beside the oldest run's 30.
            let entries = || store.kind(Kind::WebhookEvents).runs.read().unwrap().entries();
            assert_eq!(entries(), 50);
            let fresh = journal.create(merchant, 10, 30_000);
            store.checkpoint().unwrap();
            assert_eq!(entries(), 60);
            let fresher = journal.create(merchant, 10, 30_000);
            store.checkpoint().unwrap();
            assert_eq!(entries(), 50);
            assert_eq!(found(&store, &fresh) + found(&store, &fresher), 20);
        }
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(
            found(&store, &delivered_old) + found(&store, &retrying_old) + found(&store, &delivered_new),
            0
        );
        assert_eq!(attempts_listed(&store, &merchant), vec![20_000; 10]);
        assert_eq!(store.drop_webhooks_before(15_000).unwrap(), 0);
        assert!(store.drop_webhooks_before(25_000).unwrap() > 0);
        assert!(attempts_listed(&store, &merchant).is_empty());
        assert_eq!(blocks(&store, KeyPrefix::WebhookAttemptBlock), 0);
    }

    /// An event with nowhere to go is finished at once, and retention takes
    /// it like a delivered one.
    #[test]
    fn events_with_nowhere_to_go_are_dropped_too() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let merchant = Uuid::new_v4();
        let events: Vec<WebhookEvent> = (0..20)
            .map(|n| {
                let resource = EventResource::Order(Box::new(test_order(merchant, n)));
                WebhookEvent::new(merchant, 1_000, None, resource)
            })
            .collect();
        let record = JournalRecord::Evented {
            record: Box::new(JournalRecord::OrderCreated(Box::new(test_order(merchant, 0)))),
            events: events.iter().cloned().map(std::sync::Arc::new).collect(),
        };
        store.apply(1, &record, &record.encode()).unwrap();
        store.checkpoint().unwrap();
        assert_eq!(store.drop_webhooks_before(1_000).unwrap(), 0, "not before the cutoff");
        assert_eq!(found(&store, &events), 20);
        assert!(store.drop_webhooks_before(1_001).unwrap() > 0);
        assert_eq!(found(&store, &events), 0);
    }
}
