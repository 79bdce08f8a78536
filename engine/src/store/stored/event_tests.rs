//! Webhook events in layout 1 (whole, as data formats up to 6 wrote them)
//! and layout 2 (the resource named, with what changes), alone and in
//! journal records.

use super::tests::{disbursement, entry, event, id, order, refund, unhex, LAYOUT_1_UNTAGGED};
use super::*;
use crate::domain::order::RefundStatus;
use crate::domain::webhook::EventResource;
use crate::store::record::{decode_value, encode_value, JournalRecord};
use serde_with::de::DeserializeAsWrap;
use serde_with::ser::SerializeAsWrap;
use std::sync::Arc;

fn layout_1_event() -> Vec<u8> {
    let (_, hex) = LAYOUT_1_UNTAGGED
        .iter()
        .find(|(name, _)| *name == "event")
        .expect("pinned");
    unhex(hex)
}

/// The refund of `event()`, as it stands after a later change.
fn refund_changed_since() -> Refund {
    let mut later = refund();
    later.status = RefundStatus::Failed;
    later.failure_reason = Some("reversed by the bank".into());
    later.reversal_seq = Some(9);
    later.settlement_id = None;
    later.updated_at_ms += 60_000;
    later
}

/// An event written whole before layout 2 reads back whole, tagged or not;
/// the order a refund's event carried is left behind.
#[test]
fn a_layout_1_event_reads_whole_without_its_refunds_order() {
    let untagged = layout_1_event();
    let mut tagged = vec![LAYOUT_TAG, 1];
    tagged.extend(&untagged);
    for bytes in [untagged, tagged] {
        let stored: StoredEvent = decode_value(&bytes).unwrap();
        assert_eq!(
            stored.subject,
            EventSubject::Whole(EventResource::Refund(Box::new(refund())))
        );
        assert_eq!(stored.into_event_over(&[]), Some(event()));
    }
}

/// Layout 2 keeps the resource's id and its changing fields; laid over any
/// version of that resource, it is the event as it happened.
#[test]
fn a_layout_2_event_names_its_resource_and_keeps_only_what_changes() {
    let stored = StoredEvent::of(&event(), true);
    let bytes = encode_value(&stored);
    assert_eq!(&bytes[..2], &[LAYOUT_TAG, 2]);
    assert_eq!(hex::encode(&bytes[2..]), LAYOUT_2_EVENT, "layout 2 changed");
    assert!(bytes.len() * 4 < layout_1_event().len(), "{} bytes", bytes.len());
    let read: StoredEvent = decode_value(&bytes).unwrap();
    assert_eq!(read, stored);
    let later = refund_changed_since();
    assert_eq!(
        read.clone().into_event_over(&[ResourceVersion::Refund(&later)]),
        Some(event())
    );
    // Not its resource: another kind, or another refund.
    let mut other = refund();
    other.id = id(21);
    assert_eq!(read.clone().into_event_over(&[ResourceVersion::Order(&order())]), None);
    assert_eq!(read.into_event_over(&[ResourceVersion::Refund(&other)]), None);
    // Whole when asked: the resource's own layout inside layout 2.
    let whole = StoredEvent::of(&event(), false);
    let read: StoredEvent = decode_value(&encode_value(&whole)).unwrap();
    assert_eq!(read.into_event_over(&[]), Some(event()));
}

/// A record's events name the versions it carries, and read back over
/// them; an event whose resource the record does not carry is kept whole.
#[test]
fn an_evented_record_writes_its_events_over_the_versions_it_carries() {
    let saved = JournalRecord::RefundSaved {
        order: Box::new(order()),
        refund: Box::new(refund()),
        entry: Some(entry()),
    };
    let by_reference = JournalRecord::with_events(saved, vec![event()]);
    let elsewhere = JournalRecord::with_events(JournalRecord::OrderUpdated(Box::new(order())), vec![event()]);
    let mut event_bytes = Vec::new();
    for (record, named) in [(&by_reference, true), (&elsewhere, false)] {
        let (bytes, spans) = record.encode_with_spans();
        assert_eq!(bytes, record.encode());
        assert_eq!(&JournalRecord::decode(&bytes).unwrap(), record);
        let written = &bytes[spans.last().unwrap().clone()];
        event_bytes.push(written.len());
        let written: StoredEvent = decode_value(written).unwrap();
        assert_eq!(matches!(written.subject, EventSubject::Refund(..)), named);
    }
    // A refund is small; an order named instead of copied saves far more.
    assert!(event_bytes[0] * 5 < event_bytes[1] * 3, "{event_bytes:?}");
}

/// Bytes whose event names a resource the record does not carry are
/// refused, not read over something else.
#[test]
fn an_event_naming_what_its_record_does_not_carry_is_refused() {
    let inner = JournalRecord::OrderUpdated(Box::new(order())).encode();
    let mut forged = vec![LAYOUT_TAG, 1, 15];
    forged.extend(&inner[2..]);
    forged.push(1);
    forged.extend(encode_value(&StoredEvent::of(&event(), true)));
    let refused = JournalRecord::decode(&forged).unwrap_err().to_string();
    assert!(
        refused.contains("names a resource its record does not carry"),
        "{refused}"
    );
    // The same bytes with the refund carried read back.
    let carried = JournalRecord::Evented {
        record: Box::new(JournalRecord::RefundSaved {
            order: Box::new(order()),
            refund: Box::new(refund()),
            entry: None,
        }),
        events: vec![Arc::new(event())],
    };
    assert_eq!(JournalRecord::decode(&carried.encode()).unwrap(), carried);
}

/// The changes of an order and of a disbursement as layout 2 events keep
/// them (`LAYOUT_2_EVENT` pins a refund's). A disbursement's begin with its
/// status, not in the order of its fields: the changes struct they mirror
/// was written out by hand before it was derived from the disbursement.
#[test]
fn the_changes_of_an_order_and_a_disbursement_keep_their_layout() {
    fn pinned<T, L>(changes: &T) -> String
    where
        T: std::fmt::Debug + PartialEq,
        L: serde_with::SerializeAs<T> + for<'de> serde_with::DeserializeAs<'de, T>,
    {
        let config = bincode::config::standard();
        let bytes = bincode::serde::encode_to_vec(SerializeAsWrap::<T, L>::new(changes), config).unwrap();
        let (read, _): (DeserializeAsWrap<T, L>, _) = bincode::serde::decode_from_slice(&bytes, config).unwrap();
        assert_eq!(&read.into_inner(), changes);
        hex::encode(bytes)
    }
    assert_eq!(pinned::<_, OrderChangesV1>(&order().changes()), ORDER_CHANGES);
    assert_eq!(
        pinned::<_, DisbursementChangesV1>(&disbursement().changes()),
        DISBURSEMENT_CHANGES
    );
}

/// `order().changes()` in layout 1 of an order's changes.
const ORDER_CHANGES: &str = "0201fd40ed878f35030000010452524e310101fc70110100fbd007fbe803fc587997000103fc80841e000001100192000000007000800000000000000bfd80fa8a8f35030000";

/// `disbursement().changes()` in layout 1 of a disbursement's changes.
const DISBURSEMENT_CHANGES: &str =
    "040103562d39010753414e44424f5801fde8e3848f35030000010e4143434f554e545f434c4f5345440108fdd0e7848f35030000";

/// `event()` in layout 2, after its tag.
const LAYOUT_2_EVENT: &str = "10019200000000700080000000000000321001920000000070008000000000000002fd00c2898f35030000011d68747470733a2f2f6d65726368616e742e6578616d706c652f686f6f6b01100192000000007000800000000000001401010452462d310001040001100192000000007000800000000000000bfd00c2898f35030000020100";
