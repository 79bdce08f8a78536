//! The journal's record types and their bincode 2 encoding.

use super::stored::{
    self, EventDeliveryV1, ResourceVersion, ResourceWanted, Stored, StoredEvent, Versioned, LAYOUT_TAG,
};
use crate::domain::catalog::{PaymentVendorConfig, PayoutRouting, VendorRouting};
use crate::domain::order::{Order, Refund};
use crate::domain::settlement::Settlement;
use crate::domain::webhook::{EventDelivery, WebhookAttempt, WebhookEvent};
use crate::domain::{Bank, Beneficiary, Disbursement, DisbursementBatch, Ewallet, MerchantRecord, Organization};
use crate::ledger::Entry;
use serde::{Deserialize, Serialize};
use serde_with::de::DeserializeAsWrap;
use serde_with::ser::SerializeAsWrap;
use serde_with::serde_as;
use std::ops::Range;
use std::sync::Arc;

/// Bytes reserved for an encoded record: room for a disbursement with its
/// debit entry, the commonest record, without growing the buffer.
const RECORD_CAPACITY_HINT: usize = 768;

/// One durable change. Every record carries the whole new state of what it
/// changes (or a whole ledger entry), so applying it twice is harmless:
/// recovery may replay records sled already holds. Disbursements are shared
/// (`Arc`, encoded as the value itself) with the merchant actor's memory and
/// the store's overlay, so a version is built once, not copied to each.
///
/// The order of the variants is the data format: serde numbers a variant by
/// its place, and that number is written before its fields. A variant is
/// only ever added at the end (`record/tests.rs` pins the order).
#[serde_as]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, strum::EnumDiscriminants)]
#[strum_discriminants(name(RecordVariant), vis(pub(crate)), derive(strum::EnumIter, strum::IntoStaticStr))]
pub enum JournalRecord {
    /// An organization was created.
    OrganizationSaved(#[serde_as(as = "Versioned")] Organization),
    /// A bank was added or changed.
    BankSaved(#[serde_as(as = "Versioned")] Bank),
    /// An e-wallet was added or changed.
    EwalletSaved(#[serde_as(as = "Versioned")] Ewallet),
    /// A merchant was created or changed (credentials, key, settings).
    MerchantSaved(#[serde_as(as = "Box<Versioned>")] Box<MerchantRecord>),
    /// Money moved.
    EntryPosted(#[serde_as(as = "Versioned")] Entry),
    /// A disbursement was created together with the entry debiting the wallet.
    DisbursementCreated {
        /// The new disbursement.
        #[serde_as(as = "Arc<Versioned>")]
        disbursement: Arc<Disbursement>,
        /// Its debit.
        #[serde_as(as = "Versioned")]
        entry: Entry,
    },
    /// Beneficiaries created or changed together (a new default unsets the old one).
    BeneficiariesSaved(#[serde_as(as = "Vec<Versioned>")] Vec<Beneficiary>),
    /// A disbursement changed status without moving money.
    DisbursementUpdated(#[serde_as(as = "Arc<Versioned>")] Arc<Disbursement>),
    /// A disbursement failed or was rejected, with the entry giving the
    /// full amount back.
    DisbursementReversed {
        /// The disbursement in its final status.
        #[serde_as(as = "Arc<Versioned>")]
        disbursement: Arc<Disbursement>,
        /// Its reversal.
        #[serde_as(as = "Versioned")]
        entry: Entry,
    },
    /// A payment vendor was added or changed.
    PaymentVendorSaved(#[serde_as(as = "Versioned")] PaymentVendorConfig),
    /// An organization's vendors for a payment method were set.
    VendorRoutingSaved(#[serde_as(as = "Versioned")] VendorRouting),
    /// An order was created.
    OrderCreated(#[serde_as(as = "Box<Versioned>")] Box<Order>),
    /// An order changed without moving money (expired, failed).
    OrderUpdated(#[serde_as(as = "Box<Versioned>")] Box<Order>),
    /// An order was paid, with the entry crediting its net.
    OrderPaid {
        /// The order, PAID.
        #[serde_as(as = "Box<Versioned>")]
        order: Box<Order>,
        /// The payment's entry.
        #[serde_as(as = "Versioned")]
        entry: Entry,
    },
    /// A refund was created or settled, with its order's new refunded
    /// amount and status, and the entry that moved money (if any).
    RefundSaved {
        /// The order after the change.
        #[serde_as(as = "Box<Versioned>")]
        order: Box<Order>,
        /// The refund after the change.
        #[serde_as(as = "Box<Versioned>")]
        refund: Box<Refund>,
        /// The wallet debit at creation, or the credit back after a failure.
        #[serde_as(as = "Option<Versioned>")]
        entry: Option<Entry>,
    },
    /// A change together with the webhook events it causes: no change
    /// without its events, no event without its change. Each event is
    /// written as a `StoredEvent` naming the resource version the change
    /// carries, and read back over it (`evented_to_wire`).
    #[serde(serialize_with = "evented_to_wire", deserialize_with = "evented_from_wire")]
    Evented {
        /// The change.
        record: Box<JournalRecord>,
        /// Its events, due for delivery; shared with the overlay, as
        /// disbursements are.
        events: Vec<Arc<WebhookEvent>>,
    },
    /// A delivery attempt, with the whole event after it (journals written
    /// before `WebhookAttemptRecorded`; never written now).
    WebhookAttempted {
        /// The event after the attempt.
        #[serde_as(as = "Box<Versioned>")]
        event: Box<StoredEvent>,
        /// When it was due before the attempt (its index entry goes).
        previously_due_ms: Option<i64>,
        /// The attempt.
        #[serde_as(as = "Box<Versioned>")]
        attempt: Box<WebhookAttempt>,
    },
    /// A settlement was created with the orders and refunds it took (now
    /// settled) and the entry moving the money out of pending settlement.
    SettlementCreated {
        /// The new settlement.
        #[serde_as(as = "Box<Versioned>")]
        settlement: Box<Settlement>,
        /// Its orders, `is_settled` now.
        #[serde_as(as = "Vec<Versioned>")]
        orders: Vec<Order>,
        /// Its refunds, marked with it.
        #[serde_as(as = "Vec<Versioned>")]
        refunds: Vec<Refund>,
        /// The money, if any moved.
        #[serde_as(as = "Option<Versioned>")]
        entry: Option<Entry>,
    },
    /// A settlement changed status, with the entry giving a failed transfer back.
    SettlementUpdated {
        /// The settlement after the change.
        #[serde_as(as = "Box<Versioned>")]
        settlement: Box<Settlement>,
        /// The reversal, for FAILED.
        #[serde_as(as = "Option<Versioned>")]
        entry: Option<Entry>,
    },
    /// Disbursements changed status together without moving money (a batch
    /// handed to the vendor).
    DisbursementsUpdated(#[serde_as(as = "Vec<Arc<Versioned>>")] Vec<Arc<Disbursement>>),
    /// An organization's payout vendors for a channel were set.
    PayoutRoutingSaved(#[serde_as(as = "Versioned")] PayoutRouting),
    /// One batch request's disbursements, created together, each with the
    /// entry debiting the wallet, and the batch with what every item came
    /// to: one record however many items, so a batch is durable whole.
    DisbursementBatchCreated {
        /// The new disbursements, in the batch's order, with their debits.
        #[serde_as(as = "Vec<(Arc<Versioned>, Versioned)>")]
        disbursements: Vec<(Arc<Disbursement>, Entry)>,
        /// The batch.
        #[serde_as(as = "Arc<Versioned>")]
        batch: Arc<DisbursementBatch>,
    },
    /// A dashboard user was created.
    MerchantUserSaved(#[serde_as(as = "Versioned")] crate::domain::MerchantUser),
    /// A delivery attempt, with where the event's delivery stands after
    /// it: a few fields, applied over the stored event, which alone
    /// carries its resource. (`WebhookAttempted`, which carried the whole
    /// event again, is still read from journals written before.)
    WebhookAttemptRecorded {
        /// The event.
        event_id: uuid::Uuid,
        /// Its delivery after the attempt.
        #[serde_as(as = "EventDeliveryV1")]
        delivery: EventDelivery,
        /// When it was due before the attempt (its due key goes).
        previously_due_ms: Option<i64>,
        /// The attempt.
        #[serde_as(as = "Box<Versioned>")]
        attempt: Box<WebhookAttempt>,
    },
}

/// Records nested in `Evented` at most when decoding. The engine nests one
/// level; without a bound, bytes nesting thousands of levels would
/// overflow the decoder's stack (found by the `record_decode` fuzz target).
const NESTED_RECORDS_MAX: u8 = 8;

std::thread_local! {
    static NESTING: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
}

/// Decodes an `Evented` record's inner record, refusing nesting past
/// `NESTED_RECORDS_MAX`.
fn nested_record<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Box<JournalRecord>, D::Error> {
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            NESTING.with(|depth| depth.set(depth.get().saturating_sub(1)));
        }
    }
    let depth = NESTING.with(|depth| {
        let current = depth.get();
        depth.set(current.saturating_add(1));
        current
    });
    let _leave = Leave;
    if depth >= NESTED_RECORDS_MAX {
        return Err(serde::de::Error::custom("records nested too deep"));
    }
    Box::<JournalRecord>::deserialize(deserializer)
}

/// An `Evented` record's event as written: named by reference when one of
/// `carried` (the record's `resource_versions`) is its resource (it always
/// is; whole otherwise, so any event can be written).
pub(super) fn event_in_record(event: &WebhookEvent, carried: &[ResourceVersion<'_>]) -> StoredEvent {
    let wanted = ResourceWanted::of(&event.resource);
    StoredEvent::of(event, carried.iter().any(|version| wanted.is(version)))
}

/// Writes `Evented`'s fields: the inner record, then its events.
fn evented_to_wire<S: serde::Serializer>(
    record: &JournalRecord,
    events: &[Arc<WebhookEvent>],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let carried = record.resource_versions();
    let events: Vec<StoredEvent> = events.iter().map(|event| event_in_record(event, &carried)).collect();
    let events: Vec<SerializeAsWrap<StoredEvent, Versioned>> = events.iter().map(SerializeAsWrap::new).collect();
    (record, events).serialize(serializer)
}

/// `Evented`'s fields: the change and its events.
type EventedFields = (Box<JournalRecord>, Vec<Arc<WebhookEvent>>);

/// Reads `Evented`'s fields, each event laid over the version of its
/// resource the inner record carries.
fn evented_from_wire<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<EventedFields, D::Error> {
    struct Nested(Box<JournalRecord>);
    impl<'de> Deserialize<'de> for Nested {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            nested_record(deserializer).map(Nested)
        }
    }
    let (Nested(record), events) =
        <(Nested, Vec<DeserializeAsWrap<StoredEvent, Versioned>>)>::deserialize(deserializer)?;
    let versions = record.resource_versions();
    let events = events
        .into_iter()
        .map(|event| {
            let event = event.into_inner();
            let id = event.id;
            event.into_event_over(&versions).map(Arc::new).ok_or_else(|| {
                serde::de::Error::custom(format_args!("event {id} names a resource its record does not carry"))
            })
        })
        .collect::<Result<Vec<_>, D::Error>>()?;
    Ok((record, events))
}

impl JournalRecord {
    /// The versions of orders, refunds and disbursements the record
    /// carries: what its events may name.
    pub fn resource_versions(&self) -> Vec<ResourceVersion<'_>> {
        match self {
            JournalRecord::OrderCreated(order) | JournalRecord::OrderUpdated(order) => {
                vec![ResourceVersion::Order(order)]
            }
            JournalRecord::OrderPaid { order, .. } => vec![ResourceVersion::Order(order)],
            JournalRecord::RefundSaved { order, refund, .. } => {
                vec![ResourceVersion::Order(order), ResourceVersion::Refund(refund)]
            }
            JournalRecord::SettlementCreated { orders, refunds, .. } => orders
                .iter()
                .map(ResourceVersion::Order)
                .chain(refunds.iter().map(ResourceVersion::Refund))
                .collect(),
            JournalRecord::DisbursementCreated { disbursement, .. }
            | JournalRecord::DisbursementUpdated(disbursement)
            | JournalRecord::DisbursementReversed { disbursement, .. } => {
                vec![ResourceVersion::Disbursement(disbursement)]
            }
            JournalRecord::DisbursementsUpdated(disbursements) => disbursements
                .iter()
                .map(|disbursement| ResourceVersion::Disbursement(disbursement))
                .collect(),
            JournalRecord::DisbursementBatchCreated { disbursements, .. } => disbursements
                .iter()
                .map(|(disbursement, _)| ResourceVersion::Disbursement(disbursement))
                .collect(),
            JournalRecord::Evented { record, .. } => record.resource_versions(),
            _ => Vec::new(),
        }
    }

    /// `record` with `events`, or `record` alone when there are none. An
    /// event with no URL to go to (no notify URL, no merchant default) is
    /// not kept: nothing could ever deliver it.
    pub fn with_events(record: JournalRecord, events: Vec<WebhookEvent>) -> JournalRecord {
        let events: Vec<Arc<WebhookEvent>> = events
            .into_iter()
            .filter(|event| event.url.is_some())
            .map(Arc::new)
            .collect();
        if events.is_empty() {
            record
        } else {
            JournalRecord::Evented {
                record: Box::new(record),
                events,
            }
        }
    }
}

/// Encodes `JournalRecord::EntryPosted(entry)` without cloning `entry`.
pub fn encode_entry(entry: &Entry) -> Vec<u8> {
    let mut out = Vec::with_capacity(RECORD_CAPACITY_HINT);
    begin_record(&mut out);
    tag(&mut out, RecordVariant::EntryPosted);
    put_versioned(&mut out, entry);
    out
}

fn config() -> impl bincode::config::Config {
    bincode::config::standard()
}

/// `config` for reading: a length read from damaged bytes may claim any
/// size, and without a limit the decoder would try to allocate it (found by
/// the `record_decode` fuzz target: 13 bytes asked for an exabyte). No
/// record is larger than the journal takes.
fn read_config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<{ crate::limits::JOURNAL_RECORD_BYTES_MAX }>()
}

/// Why a stored record could not be read back.
#[derive(Debug, thiserror::Error)]
#[error("undecodable record: {0}")]
pub struct DecodeError(String);

fn put<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    bincode::serde::encode_into_std_write(value, out, config()).expect("journal records always encode");
}

/// A variant's number as serde writes it: its place in `JournalRecord`,
/// which is what `RecordVariant`'s discriminants are.
fn tag(out: &mut Vec<u8>, variant: RecordVariant) {
    put_u32(out, variant as u32);
}

fn put_u32(out: &mut Vec<u8>, number: u32) {
    bincode::encode_into_std_write(number, out, config()).expect("journal records always encode");
}

/// A journal record's layout tag and number, before its variant.
fn begin_record(out: &mut Vec<u8>) {
    out.push(LAYOUT_TAG);
    put_u32(out, <JournalRecord as Stored>::NEWEST);
}

/// Writes a stored version where a span can find it: tagged, so a block
/// holding the span's bytes reads it in its own layout.
fn put_spanned<T: Stored>(out: &mut Vec<u8>, spans: &mut Vec<Range<usize>>, value: &T) {
    let start = out.len();
    put_versioned(out, value);
    spans.push(start..out.len());
}

fn put_versioned<T: Stored>(out: &mut Vec<u8>, value: &T) {
    put(out, &SerializeAsWrap::<T, Versioned>::new(value));
}

impl JournalRecord {
    /// The bytes written to the journal and sled.
    pub fn encode(&self) -> Vec<u8> {
        // Most records are a few hundred bytes: one allocation, no regrowth.
        let mut out = Vec::with_capacity(RECORD_CAPACITY_HINT);
        put_versioned(&mut out, self);
        out
    }

    /// The same bytes as `encode`, and where in them each version the
    /// record carries is: its disbursements, then its webhook events, in
    /// the order the record lists them. The overlay and checkpoints keep
    /// those bytes as they are instead of encoding each version again.
    /// Written field by field the way serde's derive encodes them in
    /// bincode (variant index, then the fields in order; a sequence is its
    /// length, then its items); the tests hold the two encodings equal.
    pub fn encode_with_spans(&self) -> (Vec<u8>, Vec<Range<usize>>) {
        let mut out = Vec::with_capacity(RECORD_CAPACITY_HINT);
        let mut spans = Vec::new();
        begin_record(&mut out);
        self.encode_spanned(&mut out, &mut spans);
        (out, spans)
    }

    /// The record's variant and fields, in its newest layout.
    fn encode_spanned(&self, out: &mut Vec<u8>, spans: &mut Vec<Range<usize>>) {
        match self {
            JournalRecord::DisbursementCreated { disbursement, entry } => {
                tag(out, RecordVariant::DisbursementCreated);
                put_spanned(out, spans, &**disbursement);
                put_versioned(out, entry);
            }
            JournalRecord::DisbursementUpdated(disbursement) => {
                tag(out, RecordVariant::DisbursementUpdated);
                put_spanned(out, spans, &**disbursement);
            }
            JournalRecord::DisbursementReversed { disbursement, entry } => {
                tag(out, RecordVariant::DisbursementReversed);
                put_spanned(out, spans, &**disbursement);
                put_versioned(out, entry);
            }
            JournalRecord::DisbursementsUpdated(disbursements) => {
                tag(out, RecordVariant::DisbursementsUpdated);
                put(out, &(disbursements.len() as u64));
                for disbursement in disbursements {
                    put_spanned(out, spans, &**disbursement);
                }
            }
            JournalRecord::DisbursementBatchCreated { disbursements, batch } => {
                tag(out, RecordVariant::DisbursementBatchCreated);
                put(out, &(disbursements.len() as u64));
                // A tuple is its fields one after the other.
                for (disbursement, entry) in disbursements {
                    put_spanned(out, spans, &**disbursement);
                    put_versioned(out, entry);
                }
                put_versioned(out, &**batch);
            }
            JournalRecord::Evented { record, events } => {
                tag(out, RecordVariant::Evented);
                record.encode_spanned(out, spans);
                put(out, &(events.len() as u64));
                let carried = record.resource_versions();
                for event in events {
                    put_spanned(out, spans, &event_in_record(event, &carried));
                }
            }
            other => put(out, other),
        }
    }

    /// Reads a record back.
    pub fn decode(bytes: &[u8]) -> Result<JournalRecord, DecodeError> {
        decode_value(bytes)
    }
}

impl Stored for JournalRecord {
    const NEWEST: u32 = 1;

    fn serialize_newest<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.serialize(serializer)
    }

    fn next_in_layout<'de, A: serde::de::SeqAccess<'de>>(layout: u32, seq: &mut A) -> Result<Option<Self>, A::Error> {
        match layout {
            1 => seq.next_element::<JournalRecord>(),
            newer => Err(stored::unknown_layout::<A::Error>("a journal record", newer)),
        }
    }

    fn deserialize_untagged<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        JournalRecord::deserialize(deserializer)
    }
}

/// Encodes a stored value, tagged with its newest layout.
pub fn encode_value<T: Stored>(value: &T) -> Vec<u8> {
    bincode::serde::encode_to_vec(SerializeAsWrap::<T, Versioned>::new(value), config())
        .expect("stored values always encode")
}

/// Decodes a stored value in the layout it was written in (untagged:
/// layout 1, from data format 5 or older).
pub fn decode_value<T: Stored>(bytes: &[u8]) -> Result<T, DecodeError> {
    stored::decode_top_level(bytes, || decode_exactly::<DeserializeAsWrap<T, Versioned>>(bytes))
        .map(DeserializeAsWrap::into_inner)
}

/// Encodes one of the store's own bookkeeping values (run metadata, open
/// sets): store types, not records, so kept in plain bincode.
pub fn encode_plain<T: Serialize>(value: &T) -> Vec<u8> {
    bincode::serde::encode_to_vec(value, config()).expect("stored values always encode")
}

/// Decodes what `encode_plain` wrote.
pub fn decode_plain<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, DecodeError> {
    decode_exactly(bytes)
}

fn decode_exactly<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, DecodeError> {
    let (value, used) =
        bincode::serde::decode_from_slice::<T, _>(bytes, read_config()).map_err(|e| DecodeError(e.to_string()))?;
    if used != bytes.len() {
        return Err(DecodeError(format!("{} trailing bytes", bytes.len() - used)));
    }
    Ok(value)
}

#[cfg(test)]
mod tests;
