//! The keys of sled's `ledger` tree: `KeyPrefix`, the first byte of every
//! key (the map of what is on disk), and the functions that build keys.

use crate::domain::Source;
use uuid::Uuid;

/// The first byte of every key in sled's `ledger` tree, with the layout of
/// the keys it starts and what they hold. Times are milliseconds and
/// numbers big-endian, so keys sort by them; "merchant", "id" and "order
/// id" are 16-byte UUIDs; key hashes are `Store::key_hash`'s 16 bytes.
///
/// These bytes are the data format: a variant's byte never changes
/// (`DATA_FORMAT` would have to), and the compiler refuses two variants
/// with one byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum KeyPrefix {
    /// `B`+merchant -> the merchant's book as of the checkpoint.
    Book = b'B',
    /// `E`+merchant+first seq -> an entry block: length-prefixed encoded
    /// `EntryPosted` records, the first of them `first seq`.
    EntryBlock = b'E',
    /// `K`+merchant+run -> sorted idempotency key hashes with their entries'
    /// seqs (`run`: the last journal seq of the checkpoint that wrote it),
    /// in a data dir of format 6 or before; moved into the entry key runs
    /// when opened (`entry_keys.rs`).
    IdempotencyKeyRun = b'K',
    /// `M`+name -> the store's own settings (the checkpoint marker, the
    /// key hash seed).
    Meta = b'M',
    /// `D`+checkpoint+part -> a block of disbursement versions (`blocks.rs`).
    DisbursementBlock = b'D',
    /// `O`+checkpoint+part -> a block of order versions (`blocks.rs`).
    OrderBlock = b'O',
    /// `W`+checkpoint+part -> a block of webhook event versions (`blocks.rs`).
    WebhookEventBlock = b'W',
    /// `Q`+checkpoint+part -> a block of webhook delivery attempts (`blocks.rs`).
    WebhookAttemptBlock = b'Q',
    /// `V`+checkpoint+part -> a block of webhook event deliveries (`blocks.rs`).
    WebhookDeliveryBlock = b'V',
    /// `R`+checkpoint+part -> a block of refund versions (`blocks.rs`).
    RefundBlock = b'R',
    /// `S`+checkpoint+part -> a block of settlement versions (`blocks.rs`).
    SettlementBlock = b'S',
    /// `N`+checkpoint+part -> a block of beneficiary versions (`blocks.rs`).
    BeneficiaryBlock = b'N',
    /// `T`+checkpoint+part -> a block of disbursement batches (`blocks.rs`).
    BatchBlock = b'T',
    /// `H`+... -> the versioned kinds' sorted index runs (`runs.rs`:
    /// chunks, run metadata, merge intents) and the open set and formats
    /// beside them (`history.rs`).
    IndexRun = b'H',
    /// `a`+id -> order, in a data dir that kept orders as keys; brought
    /// into order blocks when opened (`Store::open`), as are the four below.
    Order = b'a',
    /// `c`+ref code -> order id (orders kept as keys).
    OrderByRefCode = b'c',
    /// `e`+merchant+created ms+id -> () (orders kept as keys).
    OrderByMerchant = b'e',
    /// `f`+merchant+source+merchant order id -> order id (orders kept as keys).
    OrderByMerchantOrderId = b'f',
    /// `h`+merchant+`Idempotency-Key` hash -> order id (orders kept as keys).
    OrderByIdempotencyKey = b'h',
    /// `j`+expires ms+id -> () while the order is PENDING (the expiry sweep).
    PendingOrderByExpiry = b'j',
    /// `k`+merchant+paid ms+order id -> () for a paid order no settlement
    /// has taken (MANUAL merchants).
    UnsettledOrder = b'k',
    /// `s`+id -> refund, in a data dir that kept refunds, settlements,
    /// beneficiaries and batches as keys (format 4); brought into their
    /// blocks when opened (`Store::open`), as are the index keys below.
    Refund = b's',
    /// `t`+merchant+idempotency key hash -> refund id (format 4).
    RefundByIdempotencyKey = b't',
    /// `n`+order id+created ms+id -> (): an order's refunds (format 4).
    RefundByOrder = b'n',
    /// `u`+id -> () while the refund is PENDING.
    PendingRefund = b'u',
    /// `v`+merchant+created ms+refund id -> () for a MANUAL refund no
    /// settlement has taken.
    UnsettledRefund = b'v',
    /// `b`+id -> beneficiary (format 4).
    Beneficiary = b'b',
    /// `m`+merchant+created ms+id -> (): a merchant's beneficiaries (format 4).
    BeneficiaryByMerchant = b'm',
    /// `x`+id -> settlement (format 4).
    Settlement = b'x',
    /// `y`+merchant+created ms+id -> (): a merchant's settlements (format 4).
    SettlementByMerchant = b'y',
    /// `z`+ref code -> settlement id (format 4).
    SettlementByRefCode = b'z',
    /// `w`+id -> () while the settlement is not final.
    OpenSettlement = b'w',
    /// `g`+event id -> webhook event, in a data dir that kept events as
    /// keys; brought into webhook event blocks when opened.
    WebhookEvent = b'g',
    /// `p`+due ms+event id -> () while a delivery attempt is due.
    WebhookEventDue = b'p',
    /// `q`+merchant+attempted ms+event id+attempt -> delivery attempt, in a
    /// data dir that kept attempts as keys; brought into attempt blocks when opened.
    WebhookAttempt = b'q',
    /// `d`+id -> disbursement batch (what each item came to; format 4).
    DisbursementBatch = b'd',
    /// `i`+merchant+batch idempotency key hash -> batch id (format 4).
    DisbursementBatchByKey = b'i',
}

impl KeyPrefix {
    /// The byte that starts this prefix's keys on disk.
    pub const fn byte(self) -> u8 {
        self as u8
    }
}

/// `prefix`+`name`, built at compile time: `N` is `name`'s length plus one.
pub(super) const fn named_key<const N: usize>(prefix: KeyPrefix, name: &[u8]) -> [u8; N] {
    assert!(name.len() + 1 == N, "a named key is its prefix and its name");
    let mut key = [0u8; N];
    key[0] = prefix.byte();
    let mut at = 0;
    while at < name.len() {
        key[at + 1] = name[at];
        at += 1;
    }
    key
}

/// The first journal sequence the last durable checkpoint does not cover.
pub(super) const CHECKPOINT_SEQ_KEY: [u8; 15] = named_key(KeyPrefix::Meta, b"checkpoint_seq");
/// The seed of `Store::key_hash`, drawn once per installation.
pub(super) const HASH_SEED_KEY: [u8; 10] = named_key(KeyPrefix::Meta, b"hash_seed");

/// `prefix`+merchant.
pub(super) fn merchant_key(prefix: KeyPrefix, merchant_id: &Uuid) -> [u8; 17] {
    let mut key = [0u8; 17];
    key[0] = prefix.byte();
    key[1..].copy_from_slice(merchant_id.as_bytes());
    key
}

/// `prefix`+merchant+seq.
pub(super) fn merchant_seq_key(prefix: KeyPrefix, merchant_id: &Uuid, seq: u64) -> [u8; 25] {
    let mut key = [0u8; 25];
    key[..17].copy_from_slice(&merchant_key(prefix, merchant_id));
    key[17..].copy_from_slice(&seq.to_be_bytes());
    key
}

/// A key and its value, as read from sled or the overlay.
pub(super) type KeyValue = (Vec<u8>, Vec<u8>);

/// `prefix` followed by `parts`.
pub(super) fn prefixed(prefix: KeyPrefix, parts: &[&[u8]]) -> Vec<u8> {
    let mut key = vec![prefix.byte()];
    for part in parts {
        key.extend_from_slice(part);
    }
    key
}

/// Every key of `prefix`, as the range `[start, end)`.
pub(super) fn prefix_range(prefix: KeyPrefix) -> ([u8; 1], [u8; 1]) {
    ([prefix.byte()], [prefix.byte() + 1])
}

/// A merchant's order id in one API as one text: source byte + merchant
/// order id (a Legacy `orderId` and a V1 `merchant_order_id` with the same
/// text are different orders); `Store::order_id_hash` hashes it.
pub fn order_id_suffix(source: Source, merchant_order_id: &str) -> Vec<u8> {
    let mut suffix = vec![match source {
        Source::Api => b'A',
        Source::Legacy => b'L',
    }];
    suffix.extend_from_slice(merchant_order_id.as_bytes());
    suffix
}

/// A big-endian `u64`; 0 when `bytes` is not 8 long.
pub(super) fn read_u64(bytes: &[u8]) -> u64 {
    u64::from_be_bytes(bytes.try_into().unwrap_or([0; 8]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes written before the prefixes were named: a data dir of
    /// `DATA_FORMAT` reads only if every one stays as it is.
    #[test]
    fn every_prefix_keeps_its_on_disk_byte() {
        use KeyPrefix::*;
        let on_disk = [
            (Book, b'B'),
            (EntryBlock, b'E'),
            (IdempotencyKeyRun, b'K'),
            (Meta, b'M'),
            (DisbursementBlock, b'D'),
            (OrderBlock, b'O'),
            (WebhookEventBlock, b'W'),
            (WebhookAttemptBlock, b'Q'),
            (WebhookDeliveryBlock, b'V'),
            (RefundBlock, b'R'),
            (SettlementBlock, b'S'),
            (BeneficiaryBlock, b'N'),
            (BatchBlock, b'T'),
            (IndexRun, b'H'),
            (Order, b'a'),
            (OrderByRefCode, b'c'),
            (OrderByMerchant, b'e'),
            (OrderByMerchantOrderId, b'f'),
            (OrderByIdempotencyKey, b'h'),
            (PendingOrderByExpiry, b'j'),
            (UnsettledOrder, b'k'),
            (Refund, b's'),
            (RefundByIdempotencyKey, b't'),
            (RefundByOrder, b'n'),
            (PendingRefund, b'u'),
            (UnsettledRefund, b'v'),
            (Beneficiary, b'b'),
            (BeneficiaryByMerchant, b'm'),
            (Settlement, b'x'),
            (SettlementByMerchant, b'y'),
            (SettlementByRefCode, b'z'),
            (OpenSettlement, b'w'),
            (WebhookEvent, b'g'),
            (WebhookEventDue, b'p'),
            (WebhookAttempt, b'q'),
            (DisbursementBatch, b'd'),
            (DisbursementBatchByKey, b'i'),
        ];
        for (prefix, byte) in on_disk {
            assert_eq!(prefix.byte(), byte, "{prefix:?}");
        }
        assert_eq!(&CHECKPOINT_SEQ_KEY, b"Mcheckpoint_seq");
        assert_eq!(&HASH_SEED_KEY, b"Mhash_seed");
    }
}
