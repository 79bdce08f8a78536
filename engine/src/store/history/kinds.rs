//! The versioned kinds, each declared once: its block prefix and the runs
//! of its indexes (`KindSpec`). Tags and keys are the data format.

use super::super::keys::{named_key, KeyPrefix};
use super::super::runs::RunSpec;

/// The most merchant lookups a kind has.
pub const LOOKUPS_MAX: usize = 2;

/// How one kind of versioned resource is kept at rest: the sled prefix of
/// its version blocks (`blocks.rs`) and the runs of its indexes. Tags and
/// keys are the data format: they never change.
pub struct KindSpec {
    /// The prefix of its version blocks.
    pub blocks: KeyPrefix,
    /// id -> `Location`.
    pub locations: RunSpec,
    /// ref code hash -> id, for kinds found by a ref code.
    pub refs: Option<RunSpec>,
    /// merchant + a hash -> id, one per lookup (at most `LOOKUPS_MAX`).
    pub lookups: &'static [RunSpec],
    /// merchant + creation time + id, for kinds that are listed.
    pub created: Option<RunSpec>,
    /// The sled key saying the runs hold every checkpointed version.
    pub format_key: &'static [u8],
    /// What `format_key` holds as written now.
    pub format: &'static [u8],
    /// Older values of `format_key` read as complete too.
    pub formats_read: &'static [&'static [u8]],
    /// Whether its open set (versions not final, resumed after a restart)
    /// is kept here.
    pub keeps_open_set: bool,
    /// For kinds kept for a retention window only: the sled key of the
    /// block position below which every block was dropped (`retention.rs`).
    pub retention_key: Option<&'static [u8]>,
}

const fn run(tag: u8, key_len: usize, value_len: usize, random_at: Option<usize>) -> RunSpec {
    RunSpec {
        tag,
        key_len,
        value_len,
        random_at,
    }
}

/// Disbursements: lookup 0 is the idempotency key. Their blocks, runs and
/// open set predate the other kinds, under the first names.
pub static DISBURSEMENTS: KindSpec = KindSpec {
    blocks: KeyPrefix::DisbursementBlock,
    // A v4 UUID's and a hash's first bytes are random.
    locations: run(b'l', 16, 16, Some(0)),
    refs: Some(run(b'r', 16, 16, Some(0))),
    lookups: &[run(b'k', 32, 16, Some(16))],
    created: Some(run(b'c', 40, 0, None)),
    format_key: &FORMAT_KEY,
    format: b"runs-2",
    // runs-1: the open set kept only whole (which `open_set::load` reads).
    formats_read: &[b"runs-1"],
    keeps_open_set: true,
    retention_key: None,
};

/// Orders: lookup 0 is the `Idempotency-Key`, lookup 1 the merchant's own
/// order id in one API (`Store::order_id_hash`). Whether one is open
/// (PENDING, or paid and not yet settled) is kept in resource keys.
pub static ORDERS: KindSpec = KindSpec {
    blocks: KeyPrefix::OrderBlock,
    locations: run(b'a', 16, 16, Some(0)),
    refs: Some(run(b'b', 16, 16, Some(0))),
    lookups: &[run(b'i', 32, 16, Some(16)), run(b'm', 32, 16, Some(16))],
    created: Some(run(b'e', 40, 0, None)),
    format_key: &ORDERS_FORMAT_KEY,
    format: b"orders-1",
    formats_read: &[],
    keeps_open_set: false,
    retention_key: None,
};

/// Webhook events: found by id only (the dispatcher's due keys and the
/// delivery attempts are resource keys beside them).
pub static WEBHOOK_EVENTS: KindSpec = KindSpec {
    blocks: KeyPrefix::WebhookEventBlock,
    locations: run(b'w', 16, 16, Some(0)),
    refs: None,
    lookups: &[],
    created: None,
    format_key: &EVENTS_FORMAT_KEY,
    format: b"events-1",
    formats_read: &[],
    keeps_open_set: false,
    retention_key: Some(&EVENTS_RETAINED_KEY),
};

/// Where each webhook event's delivery stands (`EventDeliveryVersion`),
/// written by every attempt so the event itself is written once; found by
/// the event's id, dropped with it.
pub static WEBHOOK_DELIVERIES: KindSpec = KindSpec {
    blocks: KeyPrefix::WebhookDeliveryBlock,
    locations: run(b'p', 16, 16, Some(0)),
    refs: None,
    lookups: &[],
    created: None,
    format_key: &DELIVERIES_FORMAT_KEY,
    format: b"deliveries-1",
    formats_read: &[],
    keeps_open_set: false,
    retention_key: Some(&DELIVERIES_RETAINED_KEY),
};

/// Webhook delivery attempts: written once, listed per merchant by the time
/// of the attempt. Their ids are drawn when applied (`Uuid::now_v7`, in the
/// order the journal holds them), so attempts of one millisecond list in
/// the order they were made.
pub static WEBHOOK_ATTEMPTS: KindSpec = KindSpec {
    blocks: KeyPrefix::WebhookAttemptBlock,
    locations: run(b'x', 16, 16, Some(0)),
    refs: None,
    lookups: &[],
    created: Some(run(b'y', 40, 0, None)),
    format_key: &ATTEMPTS_FORMAT_KEY,
    format: b"attempts-1",
    formats_read: &[],
    keeps_open_set: false,
    retention_key: Some(&ATTEMPTS_RETAINED_KEY),
};

/// Refunds: lookup 0 is the merchant's idempotency key; they are listed by
/// their order (`Indexed::listed_under`), not their merchant. Whether one is
/// open (PENDING, or waiting for a settlement) is kept in resource keys.
pub static REFUNDS: KindSpec = KindSpec {
    blocks: KeyPrefix::RefundBlock,
    locations: run(b'n', 16, 16, Some(0)),
    refs: None,
    lookups: &[run(b't', 32, 16, Some(16))],
    created: Some(run(b'u', 40, 0, None)),
    format_key: &REFUNDS_FORMAT_KEY,
    format: b"refunds-1",
    formats_read: &[],
    keeps_open_set: false,
    retention_key: None,
};

/// Settlements: found by ref code, listed by merchant. Whether one is open
/// is kept in a resource key.
pub static SETTLEMENTS: KindSpec = KindSpec {
    blocks: KeyPrefix::SettlementBlock,
    locations: run(b's', 16, 16, Some(0)),
    refs: Some(run(b'z', 16, 16, Some(0))),
    lookups: &[],
    created: Some(run(b'v', 40, 0, None)),
    format_key: &SETTLEMENTS_FORMAT_KEY,
    format: b"settlements-1",
    formats_read: &[],
    keeps_open_set: false,
    retention_key: None,
};

/// Beneficiaries: listed by merchant (deleted ones are versions too).
pub static BENEFICIARIES: KindSpec = KindSpec {
    blocks: KeyPrefix::BeneficiaryBlock,
    locations: run(b'g', 16, 16, Some(0)),
    refs: None,
    lookups: &[],
    created: Some(run(b'h', 40, 0, None)),
    format_key: &BENEFICIARIES_FORMAT_KEY,
    format: b"beneficiaries-1",
    formats_read: &[],
    keeps_open_set: false,
    retention_key: None,
};

/// Disbursement batches (what each item first came to): lookup 0 is the
/// batch's idempotency key. Written once, never changed.
pub static BATCHES: KindSpec = KindSpec {
    blocks: KeyPrefix::BatchBlock,
    locations: run(b'd', 16, 16, Some(0)),
    refs: None,
    lookups: &[run(b'j', 32, 16, Some(16))],
    created: None,
    format_key: &BATCHES_FORMAT_KEY,
    format: b"batches-1",
    formats_read: &[],
    keeps_open_set: false,
    retention_key: None,
};

/// The versioned kinds: each names its `KindSpec` in `KINDS` and its
/// state in the store and the overlay (indexed by the variant's number).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `DISBURSEMENTS`.
    Disbursements,
    /// `ORDERS`.
    Orders,
    /// `WEBHOOK_EVENTS`.
    WebhookEvents,
    /// `WEBHOOK_ATTEMPTS`.
    WebhookAttempts,
    /// `REFUNDS`.
    Refunds,
    /// `SETTLEMENTS`.
    Settlements,
    /// `BENEFICIARIES`.
    Beneficiaries,
    /// `BATCHES`.
    Batches,
    /// `WEBHOOK_DELIVERIES`.
    WebhookDeliveries,
}

/// How many versioned kinds there are.
pub const KIND_COUNT: usize = 9;

impl Kind {
    /// Every kind, in the order a checkpoint writes them.
    pub const ALL: [Kind; KIND_COUNT] = [
        Kind::Disbursements,
        Kind::Orders,
        Kind::WebhookEvents,
        Kind::WebhookAttempts,
        Kind::Refunds,
        Kind::Settlements,
        Kind::Beneficiaries,
        Kind::Batches,
        Kind::WebhookDeliveries,
    ];

    /// How the kind is kept at rest.
    pub fn spec(self) -> &'static KindSpec {
        KINDS[self as usize]
    }
}

/// Every versioned kind's spec, in `Kind`'s order.
pub static KINDS: [&KindSpec; KIND_COUNT] = [
    &DISBURSEMENTS,
    &ORDERS,
    &WEBHOOK_EVENTS,
    &WEBHOOK_ATTEMPTS,
    &REFUNDS,
    &SETTLEMENTS,
    &BENEFICIARIES,
    &BATCHES,
    &WEBHOOK_DELIVERIES,
];

/// The sled key saying the disbursement runs hold every checkpointed
/// disbursement (absent in a data dir written before the runs existed).
const FORMAT_KEY: [u8; 7] = named_key(KeyPrefix::IndexRun, b"format");
/// The same for orders (absent in a data dir that kept orders as keys).
const ORDERS_FORMAT_KEY: [u8; 14] = named_key(KeyPrefix::IndexRun, b"format-orders");
/// The same for webhook events (absent in a data dir that kept them as keys).
const EVENTS_FORMAT_KEY: [u8; 14] = named_key(KeyPrefix::IndexRun, b"format-events");
/// The same for webhook delivery attempts.
const ATTEMPTS_FORMAT_KEY: [u8; 16] = named_key(KeyPrefix::IndexRun, b"format-attempts");
/// The same for refunds, settlements, beneficiaries and batches (absent in
/// a data dir that kept them as keys).
const REFUNDS_FORMAT_KEY: [u8; 15] = named_key(KeyPrefix::IndexRun, b"format-refunds");
const SETTLEMENTS_FORMAT_KEY: [u8; 19] = named_key(KeyPrefix::IndexRun, b"format-settlements");
const BENEFICIARIES_FORMAT_KEY: [u8; 21] = named_key(KeyPrefix::IndexRun, b"format-beneficiaries");
const BATCHES_FORMAT_KEY: [u8; 15] = named_key(KeyPrefix::IndexRun, b"format-batches");
/// Where webhook event blocks start after retention dropped older ones.
const EVENTS_RETAINED_KEY: [u8; 16] = named_key(KeyPrefix::IndexRun, b"retained-events");
/// The same for webhook delivery blocks.
const DELIVERIES_FORMAT_KEY: [u8; 18] = named_key(KeyPrefix::IndexRun, b"format-deliveries");
const DELIVERIES_RETAINED_KEY: [u8; 20] = named_key(KeyPrefix::IndexRun, b"retained-deliveries");
/// The same for delivery attempt blocks.
const ATTEMPTS_RETAINED_KEY: [u8; 18] = named_key(KeyPrefix::IndexRun, b"retained-attempts");

#[cfg(test)]
mod tests {
    use super::*;

    /// Run tags tell the indexes' sled keys apart, block prefixes the
    /// kinds' blocks: no two may share one, and `Kind` names each spec.
    #[test]
    fn every_kind_has_its_own_tags_and_blocks() {
        let mut tags = Vec::new();
        let mut blocks = Vec::new();
        for (number, kind) in Kind::ALL.iter().enumerate() {
            assert_eq!(*kind as usize, number);
            let spec = kind.spec();
            blocks.push(spec.blocks.byte());
            tags.extend(
                [Some(spec.locations), spec.refs, spec.created]
                    .into_iter()
                    .flatten()
                    .map(|run| run.tag),
            );
            tags.extend(spec.lookups.iter().map(|run| run.tag));
        }
        let (tag_count, block_count) = (tags.len(), blocks.len());
        tags.sort_unstable();
        tags.dedup();
        blocks.sort_unstable();
        blocks.dedup();
        assert_eq!((tags.len(), blocks.len()), (tag_count, block_count));
    }
}
