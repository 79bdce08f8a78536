//! Applying durable journal records: to the overlay, where readers see
//! them at once and the next checkpoint finds them (merchants and the
//! catalog to their in-memory maps as well). Applying never reads or
//! writes sled.

use super::catalog::catalog_key;
use super::history::{Hashes, Indexed, Kind};
use super::indexing;
use super::keys::{prefixed, KeyPrefix};
use super::overlay::{MerchantLayer, Overlay, RecordTree};
use super::record::{self, encode_value, JournalRecord};
use super::{Store, StoreError};
use crate::domain::{
    Disbursement, DisbursementBatch, EventDeliveryVersion, Order, OrderStatus, Refund, RefundStatus, Settlement,
    WebhookAttempt, WebhookEvent,
};
use crate::ledger::Entry;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Store {
    /// Applies durable journal record `seq`. Idempotent: replay may offer
    /// records the checkpoint already holds. Everything a record puts in the
    /// overlay goes in under one lock, so no checkpoint can split a record.
    pub fn apply(&self, seq: u64, record: &JournalRecord, payload: &[u8]) -> Result<(), StoreError> {
        self.apply_encoded(seq, record, payload, &[])
    }

    /// `apply` for a record encoded by `JournalRecord::encode_with_spans`:
    /// `spans` locate its disbursement versions in `payload`, which a
    /// checkpoint then writes as they are.
    pub fn apply_encoded(
        &self,
        seq: u64,
        record: &JournalRecord,
        payload: &[u8],
        spans: &[std::ops::Range<usize>],
    ) -> Result<(), StoreError> {
        let tree_record = self.apply_to_memory(record, payload);
        let mut overlay = self.overlay.lock().expect("overlay lock");
        if let Some((tree, key, value)) = tree_record {
            overlay.active.put_tree_record(tree, key, value);
        }
        let mut encoded = EncodedVersions {
            payload,
            spans: spans.iter(),
        };
        self.apply_to_overlay(&mut overlay, record, payload, &mut encoded)?;
        overlay.active.through_seq = overlay.active.through_seq.max(seq);
        Ok(())
    }

    /// Decodes and applies journal record `seq` (recovery).
    pub fn apply_payload(&self, seq: u64, payload: &[u8]) -> Result<(), StoreError> {
        let record = JournalRecord::decode(payload)?;
        self.apply(seq, &record, payload)
    }

    /// Applies durable journal record `seq`, a ledger entry, to the overlay.
    /// Idempotent: entries the book already holds are skipped.
    pub fn apply_entry(&self, seq: u64, entry: &Entry, payload: &[u8]) -> Result<(), StoreError> {
        let mut overlay = self.overlay.lock().expect("overlay lock");
        self.overlay_entry(&mut overlay, entry, payload)?;
        overlay.active.through_seq = overlay.active.through_seq.max(seq);
        Ok(())
    }

    /// The parts of a record held in memory outside the overlay (the
    /// merchant directory, the catalog), and the tree record that keeps
    /// them, which the overlay takes to the next checkpoint.
    fn apply_to_memory(&self, record: &JournalRecord, payload: &[u8]) -> Option<(RecordTree, Vec<u8>, Vec<u8>)> {
        match record {
            JournalRecord::MerchantSaved(merchant) => {
                let encoded = encode_value(&**merchant);
                self.directory
                    .write()
                    .expect("directory lock")
                    .insert((**merchant).clone());
                Some((RecordTree::Merchants, merchant.id.as_bytes().to_vec(), encoded))
            }
            JournalRecord::OrganizationSaved(_)
            | JournalRecord::BankSaved(_)
            | JournalRecord::EwalletSaved(_)
            | JournalRecord::PaymentVendorSaved(_)
            | JournalRecord::VendorRoutingSaved(_)
            | JournalRecord::PayoutRoutingSaved(_)
            | JournalRecord::MerchantUserSaved(_) => {
                let key = catalog_key(record);
                self.apply_to_catalog(record.clone());
                self.catalog_version.fetch_add(1, Ordering::AcqRel);
                Some((RecordTree::Catalog, key, payload.to_vec()))
            }
            // Wrapped records are order, refund and disbursement changes: none uses its bytes here.
            JournalRecord::Evented { record, .. } => self.apply_to_memory(record, &[]),
            _ => None,
        }
    }

    /// The parts of a record that go to the overlay, all under one lock so
    /// no checkpoint can split a record.
    fn apply_to_overlay(
        &self,
        overlay: &mut Overlay,
        record: &JournalRecord,
        payload: &[u8],
        encoded: &mut EncodedVersions<'_>,
    ) -> Result<(), StoreError> {
        match record {
            JournalRecord::EntryPosted(entry) => self.overlay_entry(overlay, entry, payload)?,
            JournalRecord::DisbursementCreated { disbursement, entry }
            | JournalRecord::DisbursementReversed { disbursement, entry } => {
                // Entry blocks hold plain entry records, whatever record carried the entry.
                self.overlay_entry(overlay, entry, &record::encode_entry(entry))?;
                let created = matches!(record, JournalRecord::DisbursementCreated { .. });
                self.overlay_disbursement(overlay, disbursement, encoded.next(), created);
            }
            JournalRecord::DisbursementUpdated(disbursement) => {
                self.overlay_disbursement(overlay, disbursement, encoded.next(), false)
            }
            JournalRecord::DisbursementsUpdated(disbursements) => {
                for disbursement in disbursements {
                    self.overlay_disbursement(overlay, disbursement, encoded.next(), false);
                }
            }
            JournalRecord::DisbursementBatchCreated { disbursements, batch } => {
                for (disbursement, entry) in disbursements {
                    self.overlay_entry(overlay, entry, &record::encode_entry(entry))?;
                    self.overlay_disbursement(overlay, disbursement, encoded.next(), true);
                }
                self.overlay_batch(overlay, batch);
            }
            JournalRecord::OrderCreated(order) => self.overlay_order(overlay, order, true),
            JournalRecord::OrderUpdated(order) => self.overlay_order(overlay, order, false),
            JournalRecord::OrderPaid { order, entry } => {
                self.overlay_entry(overlay, entry, &record::encode_entry(entry))?;
                self.overlay_order(overlay, order, false);
            }
            JournalRecord::RefundSaved { order, refund, entry } => {
                if let Some(entry) = entry {
                    self.overlay_entry(overlay, entry, &record::encode_entry(entry))?;
                }
                self.overlay_order(overlay, order, false);
                self.overlay_refund(overlay, refund);
            }
            JournalRecord::BeneficiariesSaved(beneficiaries) => {
                for beneficiary in beneficiaries {
                    let indexed = indexing::beneficiary_indexed(beneficiary);
                    let encoded = encode_value(beneficiary).into_boxed_slice();
                    let version = Arc::new(beneficiary.clone());
                    self.overlay_version(overlay, Kind::Beneficiaries, version, encoded, indexed, || {
                        super::history::NO_HASHES
                    });
                }
            }
            JournalRecord::SettlementCreated {
                settlement,
                orders,
                refunds,
                entry,
            } => {
                if let Some(entry) = entry {
                    self.overlay_entry(overlay, entry, &record::encode_entry(entry))?;
                }
                for order in orders {
                    self.overlay_order(overlay, order, false);
                }
                for refund in refunds {
                    self.overlay_refund(overlay, refund);
                }
                self.overlay_settlement(overlay, settlement, true);
            }
            JournalRecord::SettlementUpdated { settlement, entry } => {
                if let Some(entry) = entry {
                    self.overlay_entry(overlay, entry, &record::encode_entry(entry))?;
                }
                self.overlay_settlement(overlay, settlement, false);
            }
            JournalRecord::Evented { record, events } => {
                // Only an inner entry record would need its own bytes; none is ever wrapped.
                self.apply_to_overlay(overlay, record, &[], encoded)?;
                // Its events' spans follow the inner record's.
                let carried = record.resource_versions();
                for event in events {
                    let encoded = encoded.next().map_or_else(
                        || encode_value(&record::event_in_record(event, &carried)),
                        <[u8]>::to_vec,
                    );
                    self.overlay_webhook_event(overlay, event.clone(), None, encoded);
                }
            }
            JournalRecord::WebhookAttemptRecorded {
                event_id,
                delivery,
                previously_due_ms,
                attempt,
            } => {
                // The event itself is not written again: only where its
                // delivery stands, which reads lay over it.
                let version = EventDeliveryVersion {
                    event_id: *event_id,
                    delivery: *delivery,
                };
                let encoded = encode_value(&version).into_boxed_slice();
                overlay
                    .active
                    .put_version(Kind::WebhookDeliveries, *event_id, Arc::new(version), encoded);
                self.overlay_due_key_moved(overlay, *event_id, *previously_due_ms, delivery.next_attempt_at_ms);
                self.overlay_webhook_attempt(overlay, attempt);
            }
            JournalRecord::WebhookAttempted {
                event,
                previously_due_ms,
                attempt,
            } => {
                // Written whole (layout 1) when such records were written.
                let whole = (**event).clone().into_event_over(&[]).ok_or_else(|| {
                    StoreError::Format(format!("a delivery attempt's event {} without its resource", event.id))
                })?;
                let encoded = encode_value(&**event);
                self.overlay_webhook_event(overlay, Arc::new(whole), *previously_due_ms, encoded);
                self.overlay_webhook_attempt(overlay, attempt);
            }
            _ => {}
        }
        Ok(())
    }

    fn overlay_entry(&self, overlay: &mut Overlay, entry: &Entry, payload: &[u8]) -> Result<(), StoreError> {
        let key_hash = entry.idempotency_key.as_deref().map(|key| self.key_hash(key));
        if !overlay.active.merchants.contains_key(&entry.merchant_id) {
            let below = self.below_active(overlay, &entry.merchant_id)?;
            let layer = match below.tail {
                Some(tail) => MerchantLayer::continuing(below.book, tail),
                None => MerchantLayer::new(below.book),
            };
            overlay.active.merchants.insert(entry.merchant_id, layer);
        }
        let active = &mut overlay.active;
        let layer = active.merchants.get_mut(&entry.merchant_id).expect("inserted above");
        if entry.seq > layer.book.last_seq {
            layer.book.apply(entry).map_err(|error| StoreError::Corrupt {
                merchant_id: entry.merchant_id,
                reason: format!("entry {}: {error}", entry.seq),
            })?;
            layer.push_entry(entry, payload, key_hash);
            active.entry_count += 1;
        } else if let Some(hash) = key_hash {
            // The book was written by a checkpoint cut short before its
            // marker, which would have made the entry's key visible: the
            // key goes to the next checkpoint (see `entry_keys.rs`).
            layer.keys.insert(hash, entry.seq);
        }
        Ok(())
    }

    /// A disbursement's newest version, indexed at once (readers find it
    /// in the overlay until a checkpoint has written it to a block). A
    /// PENDING version the index does not hold as recent is new to it as
    /// far as it knows (a version written without its creation record, as
    /// tests do): indexing one already in the history only writes the same
    /// entries again, which merges fold into one.
    fn overlay_disbursement(
        &self,
        overlay: &mut Overlay,
        disbursement: &Arc<Disbursement>,
        encoded: Option<&[u8]>,
        created: bool,
    ) {
        let new = created || disbursement.status == crate::domain::DisbursementStatus::Pending;
        let indexed = indexing::disbursement_indexed(disbursement, new);
        let encoded = encoded.map_or_else(|| encode_value(&**disbursement), <[u8]>::to_vec);
        let version = disbursement.clone();
        self.overlay_version(
            overlay,
            Kind::Disbursements,
            version,
            encoded.into_boxed_slice(),
            indexed,
            || self.disbursement_hashes(disbursement),
        );
    }

    /// Puts a version of `kind` in the overlay and indexes it at once
    /// (readers find it there until a checkpoint has written it to a block).
    fn overlay_version(
        &self,
        overlay: &mut Overlay,
        kind: Kind,
        version: Arc<dyn std::any::Any + Send + Sync>,
        encoded: Box<[u8]>,
        indexed: Indexed,
        hashes: impl FnOnce() -> Hashes,
    ) {
        #[cfg(debug_assertions)]
        self.assert_fixed_fields_kept(overlay, kind, indexed.id, &*version);
        overlay.active.put_version(kind, indexed.id, version, encoded);
        let mut index = self.kind(kind).recent.write().expect("recent index lock");
        index.index_version(indexed, kind.spec().keeps_open_set, hashes);
    }

    /// Checks, in debug builds (every test), what a webhook event relies on
    /// to be read back (`domain::changes`): a new version of an order,
    /// refund or disbursement differs from the one before it only in the
    /// fields that change over a resource's life.
    #[cfg(debug_assertions)]
    fn assert_fixed_fields_kept(&self, overlay: &Overlay, kind: Kind, id: uuid::Uuid, version: &dyn std::any::Any) {
        fn previous<T: Clone + super::stored::Stored + 'static>(
            store: &Store,
            overlay: &Overlay,
            kind: Kind,
            id: uuid::Uuid,
        ) -> Option<T> {
            let layered = overlay.active.version::<T>(kind, &id);
            let layered = layered.or_else(|| overlay.flushing.as_deref()?.version::<T>(kind, &id));
            layered.or_else(|| store.checkpointed_version::<T>(kind, &id).ok().flatten())
        }
        if let Some(new) = version.downcast_ref::<Order>() {
            if let Some(old) = previous::<Order>(self, overlay, kind, id) {
                assert_eq!(
                    old.with_changes(new.changes()),
                    *new,
                    "a fixed field of order {id} changed"
                );
            }
        } else if let Some(new) = version.downcast_ref::<Refund>() {
            if let Some(old) = previous::<Refund>(self, overlay, kind, id) {
                assert_eq!(
                    old.with_changes(new.changes()),
                    *new,
                    "a fixed field of refund {id} changed"
                );
            }
        } else if let Some(new) = version.downcast_ref::<Disbursement>() {
            if let Some(old) = previous::<Disbursement>(self, overlay, kind, id) {
                assert_eq!(
                    old.with_changes(new.changes()),
                    *new,
                    "a fixed field of disbursement {id} changed"
                );
            }
        }
    }

    /// An order's newest version, indexed at once as a disbursement's is,
    /// and the keys that follow its status (expiry while PENDING, unsettled
    /// while paid and not taken by a settlement).
    fn overlay_order(&self, overlay: &mut Overlay, order: &Order, created: bool) {
        let id = order.id.as_bytes();
        let merchant = order.merchant_id.as_bytes();
        let mut writes = Vec::new();
        if let Some(expires) = order.expires_at_ms {
            let expires = (expires.max(0) as u64).to_be_bytes();
            let pending = (order.status == OrderStatus::Pending).then(Vec::new);
            writes.push((prefixed(KeyPrefix::PendingOrderByExpiry, &[&expires, id]), pending));
        }
        if let Some(paid_at) = order.paid_at_ms {
            let paid_at = (paid_at.max(0) as u64).to_be_bytes();
            let unsettled = (!order.is_settled).then(Vec::new);
            writes.push((
                prefixed(KeyPrefix::UnsettledOrder, &[merchant, &paid_at, id]),
                unsettled,
            ));
        }
        overlay.active.put_resources(writes);
        let encoded = encode_value(order).into_boxed_slice();
        let indexed = indexing::order_indexed(order, created);
        self.overlay_version(overlay, Kind::Orders, Arc::new(order.clone()), encoded, indexed, || {
            self.order_hashes(order)
        });
    }

    /// A batch: written once, never changed.
    fn overlay_batch(&self, overlay: &mut Overlay, batch: &DisbursementBatch) {
        let encoded = encode_value(batch).into_boxed_slice();
        let indexed = indexing::batch_indexed(batch);
        self.overlay_version(
            overlay,
            Kind::Batches,
            Arc::new(batch.clone()),
            encoded,
            indexed,
            || self.batch_hashes(batch),
        );
    }

    /// A refund's newest version, and the keys that follow its status.
    fn overlay_refund(&self, overlay: &mut Overlay, refund: &Refund) {
        let id = refund.id.as_bytes();
        let created = (refund.created_at_ms.max(0) as u64).to_be_bytes();
        let open = (refund.status == RefundStatus::Pending).then(Vec::new);
        // MANUAL refunds (no wallet debit) wait for a settlement to deduct
        // them; one that failed after a settlement deducted it (it has a
        // reversal then) waits for the next to give it back.
        let unsettled = (refund.debit_seq.is_none()
            && refund.settlement_id.is_none()
            && (refund.status != RefundStatus::Failed || refund.reversal_seq.is_some()))
        .then(Vec::new);
        let writes = [
            (
                prefixed(
                    KeyPrefix::UnsettledRefund,
                    &[refund.merchant_id.as_bytes(), &created, id],
                ),
                unsettled,
            ),
            (prefixed(KeyPrefix::PendingRefund, &[id]), open),
        ];
        overlay.active.put_resources(writes);
        let encoded = encode_value(refund).into_boxed_slice();
        let indexed = indexing::refund_indexed(refund);
        self.overlay_version(
            overlay,
            Kind::Refunds,
            Arc::new(refund.clone()),
            encoded,
            indexed,
            || self.refund_hashes(refund),
        );
    }

    /// A settlement's newest version, and its open key while not final.
    fn overlay_settlement(&self, overlay: &mut Overlay, settlement: &Settlement, created: bool) {
        let open = (!settlement.status.is_terminal()).then(Vec::new);
        overlay
            .active
            .put_resources([(prefixed(KeyPrefix::OpenSettlement, &[settlement.id.as_bytes()]), open)]);
        let encoded = encode_value(settlement).into_boxed_slice();
        let indexed = indexing::settlement_indexed(settlement, created);
        self.overlay_version(
            overlay,
            Kind::Settlements,
            Arc::new(settlement.clone()),
            encoded,
            indexed,
            || self.settlement_hashes(settlement),
        );
    }

    /// A delivery attempt: written once, under an id drawn now (see
    /// `history::WEBHOOK_ATTEMPTS`), listed by its merchant and time.
    fn overlay_webhook_attempt(&self, overlay: &mut Overlay, attempt: &WebhookAttempt) {
        let id = uuid::Uuid::now_v7();
        let encoded = encode_value(attempt).into_boxed_slice();
        let indexed = indexing::attempt_indexed(id, attempt);
        let version = Arc::new(attempt.clone());
        self.overlay_version(overlay, Kind::WebhookAttempts, version, encoded, indexed, || {
            super::history::NO_HASHES
        });
    }

    /// Moves an event's due key from `previously_due_ms` to `due_ms`
    /// (either none: it had none, or has none now).
    fn overlay_due_key_moved(
        &self,
        overlay: &mut Overlay,
        event_id: uuid::Uuid,
        previously_due_ms: Option<i64>,
        due_ms: Option<i64>,
    ) {
        if let Some(previous) = previously_due_ms {
            overlay.active.put_resources([(due_key(previous, &event_id), None)]);
            self.note_not_due(previous, event_id);
        }
        if let Some(next) = due_ms {
            self.overlay_due_key(overlay, next, event_id);
        }
    }

    /// Puts a version of an event in the overlay, `encoded` as its block
    /// will hold it, and moves its due key.
    fn overlay_webhook_event(
        &self,
        overlay: &mut Overlay,
        event: Arc<WebhookEvent>,
        previously_due_ms: Option<i64>,
        encoded: Vec<u8>,
    ) {
        let encoded = encoded.into_boxed_slice();
        overlay
            .active
            .put_version(Kind::WebhookEvents, event.id, event.clone(), encoded);
        self.overlay_due_key_moved(overlay, event.id, previously_due_ms, event.next_attempt_at_ms);
    }

    /// Puts an event's due key of `due_ms` in the outbox.
    fn overlay_due_key(&self, overlay: &mut Overlay, due_ms: i64, event_id: uuid::Uuid) {
        if self.fresh_keys.load(Ordering::Acquire) {
            overlay
                .active
                .put_fresh_resource(due_key(due_ms, &event_id), Vec::new());
        } else {
            overlay
                .active
                .put_resources([(due_key(due_ms, &event_id), Some(Vec::new()))]);
        }
        self.note_due(due_ms, event_id);
    }
}

/// The outbox key of an event due at `due_ms`.
fn due_key(due_ms: i64, event_id: &uuid::Uuid) -> Vec<u8> {
    prefixed(
        KeyPrefix::WebhookEventDue,
        &[&(due_ms.max(0) as u64).to_be_bytes(), event_id.as_bytes()],
    )
}

/// The encodings of the versions a record carries (disbursements, then
/// webhook events), in the order the record lists them (none for a record
/// read back from disk).
struct EncodedVersions<'a> {
    payload: &'a [u8],
    spans: std::slice::Iter<'a, std::ops::Range<usize>>,
}

impl<'a> EncodedVersions<'a> {
    fn next(&mut self) -> Option<&'a [u8]> {
        let span = self.spans.next()?;
        self.payload.get(span.clone())
    }
}
