//! Webhook reads: events by id (versions in blocks,
//! `history::WEBHOOK_EVENTS`) and a merchant's delivery attempts (in blocks too, `history::WEBHOOK_ATTEMPTS`).

use crate::domain::{EventDelivery, EventDeliveryVersion, EventResource, WebhookAttempt, WebhookEvent};
use crate::store::history::Kind;
use crate::store::stored::{ResourceVersion, ResourceWanted, StoredEvent};
use crate::store::{Store, StoreError};
use std::sync::Arc;
use uuid::Uuid;

impl Store {
    /// A webhook event by id: the overlay's newest version, else the one
    /// a checkpoint wrote, which names its resource: the changes it keeps
    /// are laid over the resource's newest version. An event's delivery is
    /// kept apart (`history::WEBHOOK_DELIVERIES`, written by each attempt)
    /// and laid over the event as it was written.
    pub fn webhook_event(&self, id: &Uuid) -> Result<Option<WebhookEvent>, StoreError> {
        let recent = {
            let overlay = self.overlay.lock().expect("overlay lock");
            let found = overlay.active.version::<WebhookEvent>(Kind::WebhookEvents, id);
            found.or_else(|| {
                overlay
                    .flushing
                    .as_deref()?
                    .version::<WebhookEvent>(Kind::WebhookEvents, id)
            })
        };
        let mut event = match recent {
            Some(event) => event,
            None => match self.checkpointed_version::<StoredEvent>(Kind::WebhookEvents, id)? {
                Some(stored) => self.event_over_its_resource(stored)?,
                None => return Ok(None),
            },
        };
        if let Some(delivery) = self.event_delivery(id)? {
            event.set_delivery(delivery);
        }
        Ok(Some(event))
    }

    /// `stored` whole, over the newest version of the resource it names.
    fn event_over_its_resource(&self, stored: StoredEvent) -> Result<WebhookEvent, StoreError> {
        let (id, merchant_id, named) = (stored.id, stored.merchant_id, stored.subject.named());
        let resource = match named {
            None => None,
            Some(ResourceWanted::Order(id)) => self.order(&id)?.map(|order| EventResource::Order(Box::new(order))),
            Some(ResourceWanted::Refund(id)) => self.refund(&id)?.map(|refund| EventResource::Refund(Box::new(refund))),
            Some(ResourceWanted::Disbursement(id)) => self
                .disbursement(&id)?
                .map(|disbursement| EventResource::Disbursement(Arc::new(disbursement))),
        };
        let versions: Vec<ResourceVersion<'_>> = resource.iter().map(ResourceVersion::of).collect();
        stored.into_event_over(&versions).ok_or_else(|| StoreError::Corrupt {
            merchant_id,
            reason: format!("webhook event {id} names {named:?}, which is not stored"),
        })
    }

    /// Where an event's delivery stands, as its newest attempt left it
    /// (`None` before its first attempt recorded this way).
    pub(crate) fn event_delivery(&self, id: &Uuid) -> Result<Option<EventDelivery>, StoreError> {
        let version = self.newest_version::<EventDeliveryVersion>(Kind::WebhookDeliveries, id)?;
        Ok(version.map(|version| version.delivery))
    }

    /// A merchant's delivery attempts made at or after `since_ms` (the
    /// retention window), newest first, that pass `keep`: the
    /// `offset`..`offset + limit` slice and the total.
    pub fn merchant_webhook_attempts(
        &self,
        merchant_id: &Uuid,
        since_ms: i64,
        keep: impl Fn(&WebhookAttempt) -> bool,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<WebhookAttempt>, usize), StoreError> {
        let ids = self.created_between(Kind::WebhookAttempts, merchant_id, since_ms, i64::MAX)?;
        super::versions::newest_page(ids, |id| self.webhook_attempt(id), keep, offset, limit)
    }

    /// A delivery attempt by the id it was stored under.
    fn webhook_attempt(&self, id: &Uuid) -> Result<Option<WebhookAttempt>, StoreError> {
        self.newest_version(Kind::WebhookAttempts, id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::WebhookAttempt;
    use crate::store::history::{WEBHOOK_ATTEMPTS, WEBHOOK_EVENTS};
    use crate::store::keys::{prefixed, KeyPrefix};
    use crate::store::queries::orders::tests::test_order;
    use crate::store::record::{encode_value, JournalRecord};

    fn events(count: usize) -> Vec<WebhookEvent> {
        let merchant = Uuid::new_v4();
        (0..count)
            .map(|n| {
                let order = test_order(merchant, n);
                let url = (n % 2 == 0).then(|| "https://merchant.example/hook".to_string());
                WebhookEvent::new(merchant, n as i64, url, EventResource::Order(Box::new(order)))
            })
            .collect()
    }

    /// Delivered: the version after its first attempt.
    fn delivered(event: &WebhookEvent) -> WebhookEvent {
        let mut done = event.clone();
        done.attempts = 1;
        done.delivered = true;
        done.next_attempt_at_ms = None;
        done
    }

    /// The record of a first attempt that delivered `event`.
    fn attempt_recorded(event: &WebhookEvent) -> JournalRecord {
        let attempt = attempts(std::slice::from_ref(event), 1).remove(0);
        JournalRecord::WebhookAttemptRecorded {
            event_id: event.id,
            delivery: delivered(event).delivery(),
            previously_due_ms: event.next_attempt_at_ms,
            attempt: Box::new(attempt),
        }
    }

    fn assert_events_stored(store: &Store, events: &[WebhookEvent], delivered_below: usize) {
        for (n, event) in events.iter().enumerate() {
            let found = store.webhook_event(&event.id).unwrap().unwrap();
            assert_eq!(found.delivered, n < delivered_below && event.url.is_some(), "event {n}");
            assert_eq!(found.resource, event.resource);
        }
        assert!(store.webhook_event(&Uuid::new_v4()).unwrap().is_none());
    }

    /// The first attempt of each event below `below` with somewhere to go,
    /// made at `1_000 + n / 4` ms: several to a millisecond.
    fn attempts(events: &[WebhookEvent], below: usize) -> Vec<WebhookAttempt> {
        events[..below]
            .iter()
            .enumerate()
            .filter(|(_, event)| event.url.is_some())
            .map(|(n, event)| WebhookAttempt::of_event(event, 1, 1_000 + n as i64 / 4, None))
            .collect()
    }

    /// A merchant's attempts list newest first (by time, then in the order
    /// made), paged, with the total.
    fn assert_attempts_listed(store: &Store, attempts: &[WebhookAttempt]) {
        let merchant = attempts[0].merchant_id;
        let (all, total) = store
            .merchant_webhook_attempts(&merchant, i64::MIN, |_| true, 0, usize::MAX)
            .unwrap();
        assert_eq!(total, attempts.len());
        let newest_first: Vec<Uuid> = attempts.iter().rev().map(|attempt| attempt.event_id).collect();
        assert_eq!(
            all.iter().map(|attempt| attempt.event_id).collect::<Vec<_>>(),
            newest_first
        );
        let wanted = attempts[7].event_id;
        let (page, total) = store
            .merchant_webhook_attempts(&merchant, i64::MIN, |attempt| attempt.event_id == wanted, 0, 10)
            .unwrap();
        assert_eq!((page.len(), total), (1, 1));
        assert_eq!(page[0], attempts[7]);
        let (page, _) = store
            .merchant_webhook_attempts(&merchant, i64::MIN, |_| true, 3, 2)
            .unwrap();
        let expected = vec![
            attempts[attempts.len() - 4].clone(),
            attempts[attempts.len() - 5].clone(),
        ];
        assert_eq!(page, expected);
        let (none, total) = store
            .merchant_webhook_attempts(&Uuid::new_v4(), i64::MIN, |_| true, 0, 10)
            .unwrap();
        assert!(none.is_empty() && total == 0);
    }

    /// Events read the same from the overlay, from blocks after checkpoints
    /// (the delivered version over the first) and after reopening, and the
    /// due keys follow deliveries.
    #[test]
    fn events_are_found_in_the_overlay_in_blocks_and_after_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let events = events(600);
        let mut seq = 0;
        let mut apply = |store: &Store, record: JournalRecord| {
            seq += 1;
            store.apply(seq, &record, &record.encode()).unwrap();
        };
        {
            let store = Store::open(dir.path()).unwrap();
            for chunk in events.chunks(100) {
                let record = JournalRecord::Evented {
                    record: Box::new(JournalRecord::OrderCreated(Box::new(test_order(Uuid::new_v4(), 0)))),
                    events: chunk.iter().cloned().map(std::sync::Arc::new).collect(),
                };
                apply(&store, record);
            }
            store.checkpoint().unwrap();
            assert_eq!(store.webhooks_due(None, 1_000_000, usize::MAX).unwrap().len(), 300);
            for (n, attempt) in attempts(&events, 400).into_iter().enumerate() {
                let event = store.webhook_event(&attempt.event_id).unwrap().unwrap();
                let record = JournalRecord::WebhookAttempted {
                    event: Box::new(StoredEvent::of(&delivered(&event), false)),
                    previously_due_ms: event.next_attempt_at_ms,
                    attempt: Box::new(attempt),
                };
                apply(&store, record);
                if n == 100 {
                    store.checkpoint().unwrap();
                }
            }
            assert_events_stored(&store, &events, 400);
            assert_attempts_listed(&store, &attempts(&events, 400));
            store.checkpoint().unwrap();
            assert_events_stored(&store, &events, 400);
            assert_attempts_listed(&store, &attempts(&events, 400));
            assert_eq!(
                store
                    .ledger_tree()
                    .scan_prefix([KeyPrefix::WebhookAttempt.byte()])
                    .count(),
                0
            );
            assert_eq!(store.webhooks_due(None, 1_000_000, usize::MAX).unwrap().len(), 100);
            assert_eq!(
                store
                    .ledger_tree()
                    .scan_prefix([KeyPrefix::WebhookEvent.byte()])
                    .count(),
                0
            );
        }
        let store = Store::open(dir.path()).unwrap();
        assert_events_stored(&store, &events, 400);
        assert_attempts_listed(&store, &attempts(&events, 400));
        assert_eq!(store.webhooks_due(None, 1_000_000, usize::MAX).unwrap().len(), 100);
    }

    /// An attempt record of a few fields (the event's delivery, not the
    /// event again, nor at the checkpoint) updates the event wherever it is stored, clears its due
    /// key and lists the attempt; one for an event no longer stored (past
    /// retention) still clears the due key and keeps the attempt.
    #[test]
    fn a_slim_attempt_record_updates_the_stored_event() {
        let dir = tempfile::tempdir().unwrap();
        let events = events(4);
        let due: Vec<&WebhookEvent> = events.iter().filter(|event| event.url.is_some()).collect();
        assert_eq!(due.len(), 2);
        let record_for = attempt_recorded;
        {
            let store = Store::open(dir.path()).unwrap();
            let created = JournalRecord::Evented {
                record: Box::new(JournalRecord::OrderCreated(Box::new(test_order(Uuid::new_v4(), 0)))),
                events: events.iter().cloned().map(std::sync::Arc::new).collect(),
            };
            store.apply(1, &created, &created.encode()).unwrap();
            store.checkpoint().unwrap();
            let event_blocks = || {
                let prefix = crate::store::keys::KeyPrefix::WebhookEventBlock.byte();
                store.ledger_tree().scan_prefix([prefix]).count()
            };
            let written_once = event_blocks();
            assert_eq!(store.webhooks_due(None, 1_000_000, 10).unwrap().len(), 2);
            // The first event from its block, the second from the overlay.
            let first = record_for(due[0]);
            store.apply(2, &first, &first.encode()).unwrap();
            let slim = first.encode().len();
            let whole = JournalRecord::WebhookAttempted {
                event: Box::new(StoredEvent::of(&delivered(due[0]), false)),
                previously_due_ms: due[0].next_attempt_at_ms,
                attempt: Box::new(attempts(std::slice::from_ref(due[0]), 1).remove(0)),
            };
            assert!(
                slim * 2 < whole.encode().len(),
                "{slim} bytes against {}",
                whole.encode().len()
            );
            let second = record_for(due[1]);
            store.apply(3, &second, &second.encode()).unwrap();
            for event in &due {
                let stored = store.webhook_event(&event.id).unwrap().unwrap();
                assert_eq!(stored, delivered(event));
            }
            assert!(store.webhooks_due(None, 1_000_000, 10).unwrap().is_empty());
            let (listed, total) = store
                .merchant_webhook_attempts(&due[0].merchant_id, i64::MIN, |_| true, 0, 10)
                .unwrap();
            assert_eq!((listed.len(), total), (2, 2));
            store.checkpoint().unwrap();
            assert_eq!(
                event_blocks(),
                written_once,
                "an attempt writes where the delivery stands, not the event"
            );
            // An event no longer stored: its due key still goes.
            let mut gone = events[0].clone();
            gone.id = Uuid::new_v4();
            gone.next_attempt_at_ms = Some(5);
            let orphan = record_for(&gone);
            store.apply(4, &orphan, &orphan.encode()).unwrap();
            assert!(store.webhook_event(&gone.id).unwrap().is_none());
            store.checkpoint().unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        for event in &due {
            assert_eq!(store.webhook_event(&event.id).unwrap().unwrap(), delivered(event));
        }
        assert!(store.webhooks_due(None, 1_000_000, 10).unwrap().is_empty());
        let (_, total) = store
            .merchant_webhook_attempts(&due[0].merchant_id, i64::MIN, |_| true, 0, 10)
            .unwrap();
        assert_eq!(total, 3);
    }

    /// Looking up where a new event's delivery stands needs no sled read
    /// when no checkpointed run can hold it: it is answered while sled is
    /// held as a reopen holds it (the delivery thread asks this of every
    /// event it sends).
    #[test]
    fn a_new_events_delivery_is_looked_up_without_waiting_for_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mut events = events(8);
        for (n, event) in events.iter_mut().enumerate() {
            // The checkpointed deliveries' ids sort after the new events'.
            event.id = Uuid::from_u128(if n < 4 { u128::MAX - n as u128 } else { n as u128 });
            event.url = Some("https://merchant.example/hook".into());
        }
        let created = JournalRecord::Evented {
            record: Box::new(JournalRecord::OrderCreated(Box::new(test_order(Uuid::new_v4(), 0)))),
            events: events.iter().cloned().map(std::sync::Arc::new).collect(),
        };
        store.apply(1, &created, &created.encode()).unwrap();
        for (seq, event) in (2..).zip(&events[..4]) {
            let record = attempt_recorded(event);
            store.apply(seq, &record, &record.encode()).unwrap();
        }
        store.checkpoint().unwrap();
        let reopening = store.sled.hold_as_a_reopen();
        let (read, reads_done) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let found: Vec<Option<bool>> = events[4..]
                    .iter()
                    .map(|event| {
                        store
                            .event_delivery(&event.id)
                            .unwrap()
                            .map(|delivery| delivery.delivered)
                    })
                    .collect();
                let _ = read.send(found);
            });
            let found = reads_done.recv_timeout(std::time::Duration::from_secs(10));
            drop(reopening);
            assert_eq!(found, Ok(vec![None; 4]), "looked up while sled was held");
        });
        for event in &events[..4] {
            assert_eq!(store.webhook_event(&event.id).unwrap().unwrap(), delivered(event));
        }
    }

    /// Events journaled with their spans are kept as the record's own
    /// bytes, and read back whole from blocks after a checkpoint and a reopen.
    #[test]
    fn events_kept_as_their_record_bytes_read_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let events = events(30);
        {
            let store = Store::open(dir.path()).unwrap();
            let record = JournalRecord::Evented {
                record: Box::new(JournalRecord::OrderCreated(Box::new(test_order(Uuid::new_v4(), 0)))),
                events: events.iter().cloned().map(std::sync::Arc::new).collect(),
            };
            let (payload, spans) = record.encode_with_spans();
            assert_eq!(spans.len(), events.len());
            store.apply_encoded(1, &record, &payload, &spans).unwrap();
            store.checkpoint().unwrap();
            for event in &events {
                assert_eq!(&store.webhook_event(&event.id).unwrap().unwrap(), event);
            }
        }
        let store = Store::open(dir.path()).unwrap();
        for event in &events {
            assert_eq!(&store.webhook_event(&event.id).unwrap().unwrap(), event);
        }
    }

    /// A data dir that kept events as keys (format 3) has them moved into
    /// event blocks when opened, and the keys go.
    #[test]
    fn events_kept_as_keys_move_into_blocks_when_the_store_opens() {
        let dir = tempfile::tempdir().unwrap();
        let mut events = events(300);
        for event in events.iter_mut().take(100).filter(|event| event.url.is_some()) {
            *event = delivered(event);
        }
        {
            let store = Store::open(dir.path()).unwrap();
            for event in &events {
                let key = prefixed(KeyPrefix::WebhookEvent, &[event.id.as_bytes()]);
                store
                    .ledger_tree()
                    .insert(key, encode_value(&StoredEvent::of(event, false)))
                    .unwrap();
            }
            for attempt in attempts(&events, 100) {
                let key = prefixed(
                    KeyPrefix::WebhookAttempt,
                    &[
                        attempt.merchant_id.as_bytes(),
                        &(attempt.attempted_at_ms as u64).to_be_bytes(),
                        attempt.event_id.as_bytes(),
                        &attempt.attempt.to_be_bytes(),
                    ],
                );
                store.ledger_tree().insert(key, encode_value(&attempt)).unwrap();
            }
            for kind in [&WEBHOOK_EVENTS, &WEBHOOK_ATTEMPTS] {
                store.ledger_tree().remove(kind.format_key).unwrap();
            }
            store.flush().unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        assert_events_stored(&store, &events, 100);
        assert_attempts_listed(&store, &attempts(&events, 100));
        for prefix in [KeyPrefix::WebhookEvent, KeyPrefix::WebhookAttempt] {
            assert_eq!(
                store.ledger_tree().scan_prefix([prefix.byte()]).count(),
                0,
                "{prefix:?}"
            );
        }
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_events_stored(&store, &events, 100);
        assert_attempts_listed(&store, &attempts(&events, 100));
    }

    /// An event keeps only what changed: read from its block after the
    /// order was refunded and settled, it still shows the order as paid.
    #[test]
    fn an_event_reads_its_resource_as_it_was_though_it_changed_since() {
        use crate::domain::{FeeSplit, OrderStatus};
        use crate::money::MinorUnits;
        let dir = tempfile::tempdir().unwrap();
        let merchant = Uuid::new_v4();
        let mut paid = test_order(merchant, 1);
        paid.status = OrderStatus::Paid;
        paid.paid_at_ms = Some(2_000);
        paid.vendor_rrn = Some("RRN-1".into());
        paid.fees = Some(FeeSplit {
            net: MinorUnits::new(9_000),
            ..FeeSplit::default()
        });
        paid.payment_seq = Some(3);
        paid.updated_at_ms = 2_000;
        let event = WebhookEvent::new(
            merchant,
            2_000,
            Some("https://m.example/hook".into()),
            EventResource::Order(Box::new(paid.clone())),
        );
        let mut refunded = paid.clone();
        refunded.status = OrderStatus::Refunded;
        refunded.refunded_amount = refunded.amount;
        refunded.is_settled = true;
        refunded.settlement_id = Some(Uuid::new_v4());
        refunded.updated_at_ms = 3_000;
        {
            let store = Store::open(dir.path()).unwrap();
            let created = JournalRecord::OrderCreated(Box::new(paid.as_created()));
            store.apply(1, &created, &created.encode()).unwrap();
            let record =
                JournalRecord::with_events(JournalRecord::OrderUpdated(Box::new(paid.clone())), vec![event.clone()]);
            let (bytes, spans) = record.encode_with_spans();
            // The event names the order its record carries: a few dozen bytes.
            let span = spans.last().unwrap().clone();
            assert!(span.len() < 160, "{} bytes", span.len());
            store.apply_encoded(2, &record, &bytes, &spans).unwrap();
            store.checkpoint().unwrap();
            let later = JournalRecord::OrderUpdated(Box::new(refunded.clone()));
            store.apply(3, &later, &later.encode()).unwrap();
            store.checkpoint().unwrap();
            assert_eq!(store.webhook_event(&event.id).unwrap(), Some(event.clone()));
        }
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.order(&paid.id).unwrap(), Some(refunded));
        assert_eq!(store.webhook_event(&event.id).unwrap(), Some(event));
    }
}
