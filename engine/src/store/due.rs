//! The webhook deliveries due, in memory: the outbox's (due time, event id)
//! keys as a sorted set the applier keeps in step, so the dispatcher's
//! looks read memory instead of scanning sled several hundred times a
//! second.
//!
//! Bounded: a backlog past `DUE_IN_MEMORY_MAX` keys (a dead endpoint's
//! events piling up) drops the set, and reads go to the outbox on disk,
//! which always holds every key, until a refill finds the backlog fits
//! again. A refill reads the outbox while the applier goes on: the changes
//! applied meanwhile are recorded and replayed over what it read, so no
//! key is missed or kept after its removal.

use super::keys::{prefixed, read_u64, KeyPrefix};
use super::{Store, StoreError};
use std::collections::BTreeSet;
use std::ops::Bound;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// Due keys kept in memory at most (about 40 bytes each); small in unit
/// tests, so they cross the bound both ways.
const DUE_IN_MEMORY_MAX: usize = if cfg!(test) { 64 } else { 256 * 1024 };
/// The least time between refills while the set is dropped: each reads up
/// to `DUE_IN_MEMORY_MAX` keys from the outbox.
const REFILL_SPACING: Duration = if cfg!(test) {
    Duration::ZERO
} else {
    Duration::from_secs(5)
};

/// A change to the due keys, in applied order.
#[derive(Clone, Copy)]
enum DueChange {
    Add(i64, Uuid),
    Remove(i64, Uuid),
}

/// The outbox's due keys in memory (see the module docs).
#[derive(Default)]
pub(super) struct DueIndex {
    keys: BTreeSet<(i64, Uuid)>,
    /// Whether `keys` holds every due key of the outbox. False at open
    /// (the first read fills it) and after a backlog outgrew the bound.
    complete: bool,
    /// Changes applied while a refill reads the outbox.
    recording: Option<Vec<DueChange>>,
    last_refill: Option<Instant>,
}

impl DueIndex {
    fn change(&mut self, change: DueChange) {
        if let Some(recording) = self.recording.as_mut() {
            recording.push(change);
        }
        if self.complete {
            apply(&mut self.keys, change);
            if self.keys.len() > DUE_IN_MEMORY_MAX {
                self.drop_keys();
            }
        }
    }

    fn drop_keys(&mut self) {
        self.complete = false;
        self.keys = BTreeSet::new();
    }

    /// Starts recording changes for a refill, unless none is needed or
    /// allowed now; whether it started.
    fn begin_refill(&mut self) -> bool {
        let spaced = self.last_refill.is_none_or(|last| last.elapsed() >= REFILL_SPACING);
        if self.complete || self.recording.is_some() || !spaced {
            return false;
        }
        self.recording = Some(Vec::new());
        self.last_refill = Some(Instant::now());
        true
    }

    /// Ends a refill with the keys it read from the outbox (`None`: the
    /// read failed), replaying the changes applied meanwhile over them.
    fn finish_refill(&mut self, read: Option<Vec<(i64, Uuid)>>) {
        let changes = self.recording.take().unwrap_or_default();
        let Some(read) = read.filter(|read| read.len() <= DUE_IN_MEMORY_MAX) else {
            return;
        };
        let mut keys: BTreeSet<(i64, Uuid)> = read.into_iter().collect();
        for change in changes {
            apply(&mut keys, change);
        }
        self.keys = keys;
        self.complete = true;
        if self.keys.len() > DUE_IN_MEMORY_MAX {
            self.drop_keys();
        }
    }

    /// Up to `limit` keys due at or before `now_ms`, after `after` when given.
    fn due(&self, after: Option<(i64, Uuid)>, now_ms: i64, limit: usize) -> Vec<(i64, Uuid)> {
        let start = after.map_or(Bound::Unbounded, Bound::Excluded);
        let end = Bound::Included((now_ms.max(0), Uuid::max()));
        self.keys.range((start, end)).take(limit).copied().collect()
    }
}

fn apply(keys: &mut BTreeSet<(i64, Uuid)>, change: DueChange) {
    match change {
        DueChange::Add(due_ms, id) => keys.insert((due_ms, id)),
        DueChange::Remove(due_ms, id) => keys.remove(&(due_ms, id)),
    };
}

impl Store {
    /// The applier set an event due at `due_ms` (in the overlay already).
    pub(super) fn note_due(&self, due_ms: i64, id: Uuid) {
        let change = DueChange::Add(due_ms.max(0), id);
        self.due.lock().expect("due lock").change(change);
    }

    /// The applier cleared an event's due time `due_ms` (in the overlay already).
    pub(super) fn note_not_due(&self, due_ms: i64, id: Uuid) {
        let change = DueChange::Remove(due_ms.max(0), id);
        self.due.lock().expect("due lock").change(change);
    }

    /// Events due at or before `now_ms`, with the time each is due, oldest
    /// first: at most `limit` of them, after the (due ms, event id) key
    /// `after` when one is given (the next page of a look). From memory,
    /// unless a backlog outgrew it.
    pub fn webhooks_due(
        &self,
        after: Option<(i64, Uuid)>,
        now_ms: i64,
        limit: usize,
    ) -> Result<Vec<(i64, Uuid)>, StoreError> {
        {
            let due = self.due.lock().expect("due lock");
            if due.complete {
                return Ok(due.due(after, now_ms, limit));
            }
        }
        self.refill_due()?;
        {
            let due = self.due.lock().expect("due lock");
            if due.complete {
                return Ok(due.due(after, now_ms, limit));
            }
        }
        self.webhooks_due_on_disk(after, now_ms, limit)
    }

    /// Fills the due keys from the outbox when they fit, at most once per
    /// `REFILL_SPACING` (see the module docs).
    fn refill_due(&self) -> Result<(), StoreError> {
        if !self.due.lock().expect("due lock").begin_refill() {
            return Ok(());
        }
        let start = [KeyPrefix::WebhookEventDue.byte()];
        let end = [KeyPrefix::WebhookEventDue.byte() + 1];
        let read = self.resource_range_first(&start, &end, DUE_IN_MEMORY_MAX + 1);
        let mut due = self.due.lock().expect("due lock");
        match read {
            Ok(read) => {
                due.finish_refill(Some(read.iter().filter_map(|(key, _)| parse_due_key(key)).collect()));
                Ok(())
            }
            Err(error) => {
                due.finish_refill(None);
                Err(error)
            }
        }
    }

    /// `webhooks_due` read from the outbox's keys: the overlay's over sled's.
    /// Reads no further into them than the page needs, however long the backlog.
    fn webhooks_due_on_disk(
        &self,
        after: Option<(i64, Uuid)>,
        now_ms: i64,
        limit: usize,
    ) -> Result<Vec<(i64, Uuid)>, StoreError> {
        let start = match after {
            // The smallest key above `after`'s: the same bytes with one more.
            Some((due_ms, id)) => prefixed(
                KeyPrefix::WebhookEventDue,
                &[&(due_ms.max(0) as u64).to_be_bytes(), id.as_bytes(), &[0]],
            ),
            None => vec![KeyPrefix::WebhookEventDue.byte()],
        };
        let end = prefixed(
            KeyPrefix::WebhookEventDue,
            &[&((now_ms.max(0) as u64) + 1).to_be_bytes()],
        );
        Ok(self
            .resource_range_first(&start, &end, limit)?
            .into_iter()
            .filter_map(|(key, _)| parse_due_key(&key))
            .collect())
    }

    /// Whether the due keys are in memory now (tests).
    #[cfg(test)]
    pub(super) fn due_in_memory(&self) -> bool {
        self.due.lock().expect("due lock").complete
    }
}

/// A due key's (due ms, event id).
fn parse_due_key(key: &[u8]) -> Option<(i64, Uuid)> {
    let due = read_u64(key.get(1..9)?) as i64;
    Some((due, Uuid::from_slice(key.get(9..25)?).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{EventResource, WebhookAttempt, WebhookEvent};
    use crate::store::queries::orders::tests::test_order;
    use crate::store::record::JournalRecord;
    use crate::store::stored::StoredEvent;

    fn event(merchant: Uuid, n: usize, due_ms: i64) -> WebhookEvent {
        let resource = EventResource::Order(Box::new(test_order(merchant, n)));
        WebhookEvent::new(merchant, due_ms, Some("https://m.example/hook".into()), resource)
    }

    fn attempted(event: &WebhookEvent, next_ms: Option<i64>) -> JournalRecord {
        let mut after = event.clone();
        after.attempts += 1;
        after.delivered = next_ms.is_none();
        after.next_attempt_at_ms = next_ms;
        let attempt = WebhookAttempt::of_event(event, after.attempts, 1, next_ms);
        JournalRecord::WebhookAttempted {
            event: Box::new(StoredEvent::of(&after, false)),
            previously_due_ms: event.next_attempt_at_ms,
            attempt: Box::new(attempt),
        }
    }

    /// What memory answers is what the outbox on disk answers, for every
    /// page and cursor, whether the keys fit in memory or not.
    fn assert_due_as_on_disk(store: &Store) {
        for now_ms in [0, 150, 10_000] {
            for limit in [1, 7, 1_000] {
                let mut after = None;
                loop {
                    let from_memory = store.webhooks_due(after, now_ms, limit).unwrap();
                    let on_disk = store.webhooks_due_on_disk(after, now_ms, limit).unwrap();
                    assert_eq!(from_memory, on_disk, "now {now_ms}, limit {limit}, after {after:?}");
                    match from_memory.last() {
                        Some(last) => after = Some(*last),
                        None => break,
                    }
                }
            }
        }
    }

    /// The due keys are served from memory while they fit, from the outbox
    /// past the bound, and from memory again once attempts bring them under
    /// it; across checkpoints and a reopen, always as the outbox says.
    #[test]
    fn due_events_come_from_memory_while_they_fit_and_from_the_outbox_past_that() {
        let dir = tempfile::tempdir().unwrap();
        let merchant = Uuid::new_v4();
        let mut seq = 0;
        let mut apply = |store: &Store, record: JournalRecord| {
            seq += 1;
            store.apply(seq, &record, &record.encode()).unwrap();
        };
        let events: Vec<WebhookEvent> = (0..100).map(|n| event(merchant, n, 100 + n as i64)).collect();
        {
            let store = Store::open(dir.path()).unwrap();
            let evented = |events: &[WebhookEvent]| JournalRecord::Evented {
                record: Box::new(JournalRecord::OrderCreated(Box::new(test_order(merchant, 0)))),
                events: events.iter().cloned().map(std::sync::Arc::new).collect(),
            };
            apply(&store, evented(&events[..40]));
            assert_due_as_on_disk(&store);
            assert!(store.due_in_memory(), "40 keys fit");
            assert_eq!(store.webhooks_due(None, 10_000, 1_000).unwrap().len(), 40);
            apply(&store, evented(&events[40..]));
            assert!(!store.due_in_memory(), "100 keys do not");
            assert_due_as_on_disk(&store);
            store.checkpoint().unwrap();
            // Half delivered, a quarter moved later: 50 left, which fit.
            for event in &events[..50] {
                apply(&store, attempted(event, None));
            }
            for event in &events[50..75] {
                apply(&store, attempted(event, Some(5_000)));
            }
            assert_due_as_on_disk(&store);
            assert!(store.due_in_memory(), "50 keys fit again");
            assert_eq!(store.webhooks_due(None, 10_000, 1_000).unwrap().len(), 50);
            assert_eq!(
                store.webhooks_due(None, 150, 1_000).unwrap().len(),
                0,
                "those due by 150 ms went"
            );
            store.checkpoint().unwrap();
            assert_due_as_on_disk(&store);
        }
        let store = Store::open(dir.path()).unwrap();
        assert!(!store.due_in_memory(), "a reopened store reads the outbox first");
        assert_due_as_on_disk(&store);
        assert!(store.due_in_memory());
    }

    /// Changes applied while a refill reads the outbox are replayed over
    /// what it read: an addition it missed is kept, a removal it missed
    /// is not undone by the stale read.
    #[test]
    fn changes_during_a_refill_are_replayed_over_what_it_read() {
        let (a, b, c) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        let mut due = DueIndex::default();
        assert!(due.begin_refill());
        assert!(!due.begin_refill(), "one refill at a time");
        due.change(DueChange::Add(30, c));
        due.change(DueChange::Remove(10, a));
        // The read saw a (before its removal) and b, not c.
        due.finish_refill(Some(vec![(10, a), (20, b)]));
        assert!(due.complete);
        assert_eq!(due.due(None, 100, 10), vec![(20, b), (30, c)]);
        due.change(DueChange::Remove(20, b));
        assert_eq!(due.due(None, 100, 10), vec![(30, c)]);
        assert_eq!(due.due(Some((30, c)), 100, 10), vec![]);

        let mut failed = DueIndex::default();
        assert!(failed.begin_refill());
        failed.finish_refill(None);
        assert!(
            !failed.complete && failed.recording.is_none(),
            "a failed read leaves it to the outbox"
        );
    }
}
