//! Layout 1 pinned to the bytes data formats 3 to 5 wrote, and tagged
//! values read in their own layout.

use super::*;
use crate::domain::batch::{BatchItem, BatchRefusal};
use crate::domain::catalog::VendorKind;
use crate::domain::merchant::{Fees, Limits, SettlementBank, SettlementType, StoredCredentials};
use crate::domain::order::{FeeSplit, OrderStatus, PaymentMethod, RefundStatus, VirtualAccount};
use crate::domain::settlement::SettlementStatus;
use crate::domain::webhook::{EventDelivery, EventResource, WebhookEvent};
use crate::domain::{Channel, Destination, DisbursementStatus, Source, VerificationStatus};
use crate::ledger::{Account, EntryKind, EntryResource, Posting, ResourceKind, Side};
use crate::store::record::{decode_value, encode_value, JournalRecord};
use std::sync::Arc;
use uuid::Uuid;

pub(super) fn id(n: u128) -> Uuid {
    Uuid::from_u128(0x0192_0000_0000_7000_8000_0000_0000_0000 + n)
}

pub(super) fn disbursement() -> Disbursement {
    Disbursement {
        id: id(1),
        ref_code: "DSB-261128000000-AB12".into(),
        merchant_id: id(2),
        idempotency_key: "payout-1".into(),
        destination: std::sync::Arc::new(Destination::Bank {
            bank_short_code: "BCA".into(),
            bank_id: id(3),
            account_number: "1234567890".into(),
            account_name: "Budi Santoso".into(),
        }),
        request_amount: MinorUnits::new(1_000_000),
        fee: MinorUnits::new(250_000),
        final_amount: MinorUnits::new(1_250_000),
        vendor_disbursement_id: Some("V-9".into()),
        payout_vendor: Some("SANDBOX".into()),
        on_process_at_ms: Some(1_764_288_000_500),
        source: Source::Legacy,
        status: DisbursementStatus::Failed,
        notify_url: Some("https://merchant.example/hook".into()),
        beneficiary_id: Some(id(4)),
        failure_reason: Some("ACCOUNT_CLOSED".into()),
        debit_seq: 7,
        reversal_seq: Some(8),
        wib_day: 20_420,
        created_at_ms: 1_764_288_000_000,
        updated_at_ms: 1_764_288_001_000,
    }
}

pub(super) fn order() -> Order {
    Order {
        id: id(10),
        ref_code: "ORD-261128000000-CD34".into(),
        merchant_id: id(2),
        merchant_order_id: "INV-1".into(),
        source: Source::Api,
        payment_method: PaymentMethod::BankTransfer,
        amount: MinorUnits::new(5_000_000),
        status: OrderStatus::PartiallyRefunded,
        qris_string: None,
        virtual_account: Some(VirtualAccount {
            bank_short_code: "BNI".into(),
            account_number: "8808123456".into(),
        }),
        vendor: "SANDBOX".into(),
        vendor_reference: Some("VR-1".into()),
        expires_at_ms: Some(1_764_291_600_000),
        paid_at_ms: Some(1_764_288_100_000),
        vendor_rrn: Some("RRN1".into()),
        is_settled: true,
        customer_name: Some("Siti".into()),
        customer_email: Some("siti@example.com".into()),
        customer_phone: Some("6281234567890".into()),
        notify_url: Some("https://merchant.example/hook".into()),
        return_url: Some("https://merchant.example/done".into()),
        metadata: Some("{\"cart\":1}".into()),
        fees: Some(FeeSplit {
            mdr: MinorUnits::new(35_000),
            platform_fee: MinorUnits::new(1_000),
            aggregator_fee: MinorUnits::new(500),
            net: MinorUnits::new(4_963_500),
        }),
        payment_seq: Some(3),
        refunded_amount: MinorUnits::new(1_000_000),
        idempotency: Some(("order-1".into(), [7; 32])),
        failure_reason: None,
        settlement_id: Some(id(11)),
        created_at_ms: 1_764_288_000_000,
        updated_at_ms: 1_764_288_200_000,
    }
}

pub(super) fn refund() -> Refund {
    Refund {
        id: id(20),
        order_id: id(10),
        order_ref_code: "ORD-261128000000-CD34".into(),
        merchant_id: id(2),
        amount: MinorUnits::new(1_000_000),
        reason: "CUSTOMER_REQUEST".into(),
        reason_detail: Some("size".into()),
        idempotency_key: "refund-1".into(),
        status: RefundStatus::Success,
        vendor_refund_id: Some("RF-1".into()),
        failure_reason: None,
        debit_seq: Some(4),
        reversal_seq: None,
        settlement_id: Some(id(11)),
        created_at_ms: 1_764_288_150_000,
        updated_at_ms: 1_764_288_160_000,
    }
}

pub(super) fn entry() -> Entry {
    Entry {
        merchant_id: id(2),
        seq: 4,
        kind: EntryKind::Refund,
        idempotency_key: Some("refund-1".into()),
        memo: "refund".into(),
        postings: vec![
            Posting {
                account: Account::Wallet,
                side: Side::Debit,
                amount: MinorUnits::new(1_000_000),
            },
            Posting {
                account: Account::RefundClearing,
                side: Side::Credit,
                amount: MinorUnits::new(1_000_000),
            },
        ],
        reverses: None,
        created_at_ms: 1_764_288_150_000,
        resource: Some(EntryResource {
            kind: ResourceKind::Refund,
            id: id(20),
            ref_code: "ORD-261128000000-CD34".into(),
        }),
        wallet_balance_after: 3_963_500,
    }
}

fn settlement() -> Settlement {
    Settlement {
        id: id(11),
        ref_code: "STL-20261128-0001".into(),
        merchant_id: id(2),
        settlement_date: "2026-11-28".into(),
        period_start_ms: 1_764_201_600_000,
        period_end_ms: 1_764_288_000_000,
        gross_amount: MinorUnits::new(5_000_000),
        mdr_total: MinorUnits::new(35_000),
        platform_fee: MinorUnits::new(1_000),
        aggregator_fee: MinorUnits::new(500),
        refund_total: MinorUnits::new(1_000_000),
        disbursement_fee: MinorUnits::ZERO,
        carried_over: MinorUnits::new(-20),
        net_payout: MinorUnits::new(3_963_480),
        order_count: 1,
        bank_id: Some(id(3)),
        destination: Some(SettlementBank {
            bank_short_code: "BNI".into(),
            account_number: "9876543210".into(),
            account_name: "Toko".into(),
        }),
        status: SettlementStatus::Paid,
        failure_reason: None,
        carry_out: MinorUnits::ZERO,
        entry_seq: Some(5),
        reversal_seq: None,
        created_at_ms: 1_764_288_300_000,
        updated_at_ms: 1_764_288_400_000,
    }
}

fn beneficiary() -> Beneficiary {
    Beneficiary {
        id: id(30),
        organization_id: id(31),
        merchant_id: id(2),
        label: Some("Supplier".into()),
        destination: Destination::Ewallet {
            provider: "OVO".into(),
            phone: "6281234567890".into(),
        },
        verification_status: VerificationStatus::Verified,
        verified_name: Some("SITI".into()),
        is_default: true,
        is_enabled: true,
        deleted_at_ms: Some(1_764_288_500_000),
        created_at_ms: 1_764_288_000_000,
        updated_at_ms: 1_764_288_500_000,
    }
}

fn batch() -> DisbursementBatch {
    DisbursementBatch {
        id: id(40),
        merchant_id: id(2),
        idempotency_key: "batch-1".into(),
        created_at_ms: 1_764_288_000_000,
        items: vec![
            BatchItem::Created(id(1)),
            BatchItem::Refused(BatchRefusal::Invalid {
                field: "amount_minor".into(),
                reason: "must be positive".into(),
            }),
            BatchItem::Refused(BatchRefusal::AmountBelowMinimum("10000".into())),
            BatchItem::Refused(BatchRefusal::Duplicate(id(41))),
            BatchItem::Refused(BatchRefusal::Internal),
        ],
    }
}

pub(super) fn event() -> WebhookEvent {
    WebhookEvent {
        id: id(50),
        merchant_id: id(2),
        event: "refund.success".into(),
        occurred_at_ms: 1_764_288_160_000,
        url: Some("https://merchant.example/hook".into()),
        resource: EventResource::Refund(Box::new(refund())),
        attempts: 2,
        delivered: true,
        next_attempt_at_ms: None,
    }
}

fn attempt() -> WebhookAttempt {
    WebhookAttempt {
        event_id: id(50),
        merchant_id: id(2),
        event: "refund.success".into(),
        url: "https://merchant.example/hook".into(),
        attempt: 2,
        status_code: Some(200),
        latency_ms: 31,
        error: None,
        next_retry_at_ms: None,
        delivered: true,
        attempted_at_ms: 1_764_288_170_000,
        manual: false,
    }
}

fn delivery() -> EventDeliveryVersion {
    EventDeliveryVersion {
        event_id: id(50),
        delivery: EventDelivery {
            attempts: 2,
            delivered: false,
            next_attempt_at_ms: Some(1_764_288_230_000),
        },
    }
}

pub(in crate::store) fn merchant() -> MerchantRecord {
    MerchantRecord {
        id: id(2),
        organization_id: id(31),
        name: "Toko".into(),
        settlement_type: SettlementType::Manual,
        settlement_bank: Some(SettlementBank {
            bank_short_code: "BNI".into(),
            account_number: "9876543210".into(),
            account_name: "Toko".into(),
        }),
        fees: Fees {
            qris_mdr_bps: 70,
            bank_transfer_mdr_minor: 400_000,
            platform_fee_minor: 1_000,
            aggregator_fee_minor: 500,
            disbursement_fee_bank_minor: 250_000,
            disbursement_fee_ewallet_minor: 150_000,
        },
        limits: Limits {
            per_transaction_minor: 10_000_000_000,
            daily_minor: 50_000_000_000,
            review_threshold_minor: 5_000_000_000,
            rate_limit_per_second: 100,
            rate_limit_burst: 200,
        },
        default_notify_url: Some("https://merchant.example/hook".into()),
        is_active: true,
        require_signature: false,
        credentials: StoredCredentials {
            api_key_sha256: [9; 32],
            client_id: "client".into(),
            client_secret: "secret".into(),
            webhook_secret: "whsec".into(),
        },
        public_key_pem: None,
        created_at_ms: 1_764_201_600_000,
        updated_at_ms: 1_764_288_000_000,
    }
}

/// A record of every kind the journal holds, each with its versions.
fn records() -> Vec<(&'static str, JournalRecord)> {
    vec![
        (
            "OrganizationSaved",
            JournalRecord::OrganizationSaved(crate::domain::Organization {
                id: id(31),
                name: "PT Toko".into(),
                created_at_ms: 1_764_201_600_000,
            }),
        ),
        (
            "BankSaved",
            JournalRecord::BankSaved(Bank {
                id: id(3),
                name: "Bank Negara Indonesia".into(),
                short_code: "BNI".into(),
                is_enabled: true,
            }),
        ),
        (
            "EwalletSaved",
            JournalRecord::EwalletSaved(Ewallet {
                id: id(5),
                name: "OVO".into(),
                short_code: "OVO".into(),
                is_enabled: false,
                sort_order: 2,
            }),
        ),
        ("MerchantSaved", JournalRecord::MerchantSaved(Box::new(merchant()))),
        ("EntryPosted", JournalRecord::EntryPosted(entry())),
        (
            "DisbursementCreated",
            JournalRecord::DisbursementCreated {
                disbursement: Arc::new(disbursement()),
                entry: entry(),
            },
        ),
        (
            "BeneficiariesSaved",
            JournalRecord::BeneficiariesSaved(vec![beneficiary()]),
        ),
        (
            "PaymentVendorSaved",
            JournalRecord::PaymentVendorSaved(PaymentVendorConfig {
                name: "XENDIT".into(),
                kind: VendorKind::Http {
                    url: "https://vendor.example".into(),
                    secret: "s".into(),
                    timeout_ms: 5_000,
                },
                supports_refund: true,
                payouts: false,
            }),
        ),
        (
            "VendorRoutingSaved",
            JournalRecord::VendorRoutingSaved(VendorRouting {
                organization_id: id(31),
                method: PaymentMethod::Qris,
                vendors: vec!["SANDBOX".into(), "XENDIT".into()],
            }),
        ),
        (
            "RefundSaved",
            JournalRecord::RefundSaved {
                order: Box::new(order()),
                refund: Box::new(refund()),
                entry: Some(entry()),
            },
        ),
        (
            "Evented",
            JournalRecord::Evented {
                record: Box::new(JournalRecord::OrderUpdated(Box::new(order()))),
                events: vec![Arc::new(event())],
            },
        ),
        (
            "SettlementCreated",
            JournalRecord::SettlementCreated {
                settlement: Box::new(settlement()),
                orders: vec![order()],
                refunds: vec![refund()],
                entry: None,
            },
        ),
        (
            "PayoutRoutingSaved",
            JournalRecord::PayoutRoutingSaved(PayoutRouting {
                organization_id: id(31),
                channel: Channel::Ewallet,
                vendors: vec!["SANDBOX".into()],
            }),
        ),
        (
            "DisbursementBatchCreated",
            JournalRecord::DisbursementBatchCreated {
                disbursements: vec![(Arc::new(disbursement()), entry())],
                batch: Arc::new(batch()),
            },
        ),
        (
            "MerchantUserSaved",
            JournalRecord::MerchantUserSaved(MerchantUser {
                id: id(60),
                merchant_id: id(2),
                email: "owner@example.com".into(),
                password_hash: "$argon2id$v=19$...".into(),
                created_at_ms: 1_764_288_000_000,
            }),
        ),
        (
            "WebhookAttemptRecorded",
            JournalRecord::WebhookAttemptRecorded {
                event_id: id(50),
                delivery: delivery().delivery,
                previously_due_ms: Some(1_764_288_170_000),
                attempt: Box::new(attempt()),
            },
        ),
    ]
}

fn book() -> MerchantBook {
    MerchantBook {
        merchant_id: id(2),
        last_seq: 5,
        balances: [3_963_500, -1, 0, 35_000, 1_000, 500, 0, 0, 0, -5_000_000],
    }
}

/// Each value kept alone (a block's version, a sled value), encoded.
fn values() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("disbursement", encode_value(&disbursement())),
        ("order", encode_value(&order())),
        ("refund", encode_value(&refund())),
        ("settlement", encode_value(&settlement())),
        ("beneficiary", encode_value(&beneficiary())),
        ("batch", encode_value(&batch())),
        ("attempt", encode_value(&attempt())),
        ("delivery", encode_value(&delivery())),
        ("entry", encode_value(&entry())),
        ("book", encode_value(&book())),
        ("merchant", encode_value(&merchant())),
    ]
}

/// Decodes `bytes` as the value named `name` and encodes it again.
fn round_trip(name: &str, bytes: &[u8]) -> Vec<u8> {
    fn again<T: Stored + std::fmt::Debug>(bytes: &[u8]) -> Vec<u8> {
        encode_value(&decode_value::<T>(bytes).unwrap_or_else(|e| panic!("{e}")))
    }
    match name {
        "disbursement" => again::<Disbursement>(bytes),
        "order" => again::<Order>(bytes),
        "refund" => again::<Refund>(bytes),
        "settlement" => again::<Settlement>(bytes),
        "beneficiary" => again::<Beneficiary>(bytes),
        "batch" => again::<DisbursementBatch>(bytes),
        "attempt" => again::<WebhookAttempt>(bytes),
        "delivery" => again::<EventDeliveryVersion>(bytes),
        "entry" => again::<Entry>(bytes),
        "book" => again::<MerchantBook>(bytes),
        "merchant" => again::<MerchantRecord>(bytes),
        other => unreachable!("{other}"),
    }
}

pub(super) fn unhex(hex: &str) -> Vec<u8> {
    hex::decode(hex).expect("pinned hex")
}

/// Layout 1 is what data formats 3 to 5 wrote, byte for byte: a value is
/// its tag and layout number, then exactly the old bytes, and the old bytes
/// alone read back as the same value.
#[test]
fn layout_1_is_the_untagged_bytes_older_formats_wrote() {
    for (name, encoded) in values() {
        let untagged = LAYOUT_1_UNTAGGED
            .iter()
            .find(|(pinned, _)| *pinned == name)
            .map(|(_, hex)| unhex(hex))
            .unwrap_or_else(|| panic!("{name} has no pinned bytes"));
        assert_eq!(&encoded[..2], &[LAYOUT_TAG, 1], "{name}");
        assert_eq!(
            hex::encode(&encoded[2..]),
            hex::encode(&untagged),
            "{name}: layout 1 changed"
        );
        assert_eq!(
            round_trip(name, &untagged),
            encoded,
            "{name}: its untagged bytes read as layout 1"
        );
        assert_eq!(round_trip(name, &encoded), encoded, "{name}");
    }
}

/// A journal record written before tags (each pinned as a format-5 build
/// wrote it) reads back whole, versions and all; written again it is
/// tagged, and reads back the same.
#[test]
fn journal_records_of_format_5_read_as_layout_1() {
    for (name, record) in records() {
        let old = FORMAT_5_RECORDS
            .iter()
            .find(|(pinned, _)| *pinned == name)
            .map(|(_, hex)| unhex(hex))
            .unwrap_or_else(|| panic!("{name} has no pinned bytes"));
        assert_ne!(old[0], LAYOUT_TAG);
        assert_eq!(JournalRecord::decode(&old).unwrap(), record, "{name}");
        let encoded = record.encode();
        assert_eq!(&encoded[..2], &[LAYOUT_TAG, 1], "{name}");
        assert_eq!(JournalRecord::decode(&encoded).unwrap(), record, "{name}");
        assert_eq!(record.encode_with_spans().0, encoded, "{name}");
    }
}

/// An `enum_layout!` variant is written as the index declared beside it,
/// and an index no variant has is refused, not read as another.
#[test]
fn an_enum_layout_writes_the_declared_index_and_refuses_an_unknown_one() {
    use serde_with::de::DeserializeAsWrap;
    use serde_with::ser::SerializeAsWrap;
    let config = bincode::config::standard();
    let read = |bytes: &[u8]| {
        bincode::serde::decode_from_slice::<DeserializeAsWrap<Account, AccountV1>, _>(bytes, config)
            .map(|(account, _)| account.into_inner())
    };
    for (index, account) in Account::ALL.into_iter().enumerate() {
        let written = bincode::serde::encode_to_vec(SerializeAsWrap::<Account, AccountV1>::new(&account), config)
            .expect("encodes");
        assert_eq!(written, [index as u8], "{account:?}");
        assert_eq!(read(&written).expect("decodes"), account);
    }
    let refused = read(&[10]).expect_err("no account has index 10").to_string();
    assert!(refused.contains("variant index 0 <= i < 10"), "{refused}");
}

/// A layout this build does not know is refused by name, not misread.
#[test]
fn a_newer_layout_is_refused() {
    let mut newer = encode_value(&order());
    newer[1] = 2;
    let refused = decode_value::<Order>(&newer).unwrap_err().to_string();
    assert!(
        refused.contains("Order in layout 2, newer than this build reads"),
        "{refused}"
    );
    let mut record = JournalRecord::OrderCreated(Box::new(order())).encode();
    record[1] = 2;
    let refused = JournalRecord::decode(&record).unwrap_err().to_string();
    assert!(refused.contains("a journal record in layout 2"), "{refused}");
    // A tagged record whose version lost its tag is damage, not an old value.
    let mut untagged_inside = vec![LAYOUT_TAG, 1];
    untagged_inside.extend(&JournalRecord::OrderCreated(Box::new(order())).encode()[2..3]);
    untagged_inside.extend(&encode_value(&order())[2..]);
    assert!(JournalRecord::decode(&untagged_inside).is_err());
}

/// `values()` as a format-5 build wrote them (each sample encoded by that
/// build's own code), without the tag.
pub(super) const LAYOUT_1_UNTAGGED: &[(&str, &str)] = &[
    ("disbursement", "1001920000000070008000000000000001154453422d3236313132383030303030302d414231321001920000000070008000000000000002087061796f75742d31000342434110019200000000700080000000000000030a313233343536373839300c427564692053616e746f736ffc80841e00fc20a10700fca02526000103562d39010753414e44424f5801fde8e3848f350300000104011d68747470733a2f2f6d65726368616e742e6578616d706c652f686f6f6b011001920000000070008000000000000004010e4143434f554e545f434c4f534544070108fb889ffd00e0848f35030000fdd0e7848f35030000"),
    ("order", "100192000000007000800000000000000a154f52442d3236313132383030303030302d43443334100192000000007000800000000000000205494e562d310001fc8096980002000103424e490a383830383132333435360753414e44424f58010456522d3101fd00bdf28f3503000001fd40ed878f35030000010452524e3101010453697469011073697469406578616d706c652e636f6d010d36323831323334353637383930011d68747470733a2f2f6d65726368616e742e6578616d706c652f686f6f6b011d68747470733a2f2f6d65726368616e742e6578616d706c652f646f6e65010a7b2263617274223a317d01fc70110100fbd007fbe803fc587997000103fc80841e0001076f726465722d3107070707070707070707070707070707070707070707070707070707070707070001100192000000007000800000000000000bfd00e0848f35030000fd80fa8a8f35030000"),
    ("refund", "1001920000000070008000000000000014100192000000007000800000000000000a154f52442d3236313132383030303030302d434433341001920000000070008000000000000002fc80841e0010435553544f4d45525f52455155455354010473697a6508726566756e642d3101010452462d310001040001100192000000007000800000000000000bfde073898f35030000fd00c2898f35030000"),
    ("settlement", "100192000000007000800000000000000b1153544c2d32303236313132382d3030303110019200000000700080000000000000020a323032362d31312d3238fd0028388535030000fd00e0848f35030000fc80969800fc70110100fbd007fbe803fc80841e000027fcb0f47800010110019200000000700080000000000000030103424e49010a393837363534333231300104546f6b6f020000010500fdc0078e8f35030000fd0015918f35030000"),
    ("beneficiary", "100192000000007000800000000000001e100192000000007000800000000000001f10019200000000700080000000000000020108537570706c69657201034f564f0d3632383132333435363738393001010453495449010101fd4022948f35030000fd00e0848f35030000fd4022948f35030000"),
    ("batch", "100192000000007000800000000000002810019200000000700080000000000000020762617463682d31fd00e0848f350300000500100192000000007000800000000000000101000c616d6f756e745f6d696e6f72106d75737420626520706f7369746976650107053130303030010e10019200000000700080000000000000290110"),
    ("event", "100192000000007000800000000000003210019200000000700080000000000000020e726566756e642e73756363657373fd00c2898f35030000011d68747470733a2f2f6d65726368616e742e6578616d706c652f686f6f6b011001920000000070008000000000000014100192000000007000800000000000000a154f52442d3236313132383030303030302d434433341001920000000070008000000000000002fc80841e0010435553544f4d45525f52455155455354010473697a6508726566756e642d3101010452462d310001040001100192000000007000800000000000000bfde073898f35030000fd00c2898f35030000100192000000007000800000000000000a154f52442d3236313132383030303030302d43443334100192000000007000800000000000000205494e562d310001fc8096980002000103424e490a383830383132333435360753414e44424f58010456522d3101fd00bdf28f3503000001fd40ed878f35030000010452524e3101010453697469011073697469406578616d706c652e636f6d010d36323831323334353637383930011d68747470733a2f2f6d65726368616e742e6578616d706c652f686f6f6b011d68747470733a2f2f6d65726368616e742e6578616d706c652f646f6e65010a7b2263617274223a317d01fc70110100fbd007fbe803fc587997000103fc80841e0001076f726465722d3107070707070707070707070707070707070707070707070707070707070707070001100192000000007000800000000000000bfd00e0848f35030000fd80fa8a8f35030000020100"),
    ("attempt", "100192000000007000800000000000003210019200000000700080000000000000020e726566756e642e737563636573731d68747470733a2f2f6d65726368616e742e6578616d706c652f686f6f6b0201c81f000001fd20108a8f3503000000"),
    ("delivery", "1001920000000070008000000000000032020001fde0e48b8f35030000"),
    ("entry", "100192000000007000800000000000000204050108726566756e642d3106726566756e64020000fc80841e000801fc80841e0000fde073898f3503000001011001920000000070008000000000000014154f52442d3236313132383030303030302d43443334fcd8f47800"),
    ("book", "100192000000007000800000000000000205fcd8f478000100fc70110100fbd007fbe803000000fc7f969800"),
    ("merchant", "1001920000000070008000000000000002100192000000007000800000000000001f04546f6b6f010103424e490a3938373635343332313004546f6b6f8cfc00350c00fbd007fbe803fc20a10700fce0930400fd00c817a804000000fd00e8764817000000fd00e40b5402000000c8fb9001011d68747470733a2f2f6d65726368616e742e6578616d706c652f686f6f6b0100090909090909090909090909090909090909090909090909090909090909090906636c69656e740673656372657405776873656300fd0028388535030000fd00e0848f35030000"),
];

/// `records()` as a format-5 build wrote them.
const FORMAT_5_RECORDS: &[(&str, &str)] = &[
    ("OrganizationSaved", "00100192000000007000800000000000001f07505420546f6b6ffd0028388535030000"),
    ("BankSaved", "0110019200000000700080000000000000031542616e6b204e656761726120496e646f6e6573696103424e4901"),
    ("EwalletSaved", "021001920000000070008000000000000005034f564f034f564f0004"),
    ("MerchantSaved", "031001920000000070008000000000000002100192000000007000800000000000001f04546f6b6f010103424e490a3938373635343332313004546f6b6f8cfc00350c00fbd007fbe803fc20a10700fce0930400fd00c817a804000000fd00e8764817000000fd00e40b5402000000c8fb9001011d68747470733a2f2f6d65726368616e742e6578616d706c652f686f6f6b0100090909090909090909090909090909090909090909090909090909090909090906636c69656e740673656372657405776873656300fd0028388535030000fd00e0848f35030000"),
    ("EntryPosted", "04100192000000007000800000000000000204050108726566756e642d3106726566756e64020000fc80841e000801fc80841e0000fde073898f3503000001011001920000000070008000000000000014154f52442d3236313132383030303030302d43443334fcd8f47800"),
    ("DisbursementCreated", "051001920000000070008000000000000001154453422d3236313132383030303030302d414231321001920000000070008000000000000002087061796f75742d31000342434110019200000000700080000000000000030a313233343536373839300c427564692053616e746f736ffc80841e00fc20a10700fca02526000103562d39010753414e44424f5801fde8e3848f350300000104011d68747470733a2f2f6d65726368616e742e6578616d706c652f686f6f6b011001920000000070008000000000000004010e4143434f554e545f434c4f534544070108fb889ffd00e0848f35030000fdd0e7848f35030000100192000000007000800000000000000204050108726566756e642d3106726566756e64020000fc80841e000801fc80841e0000fde073898f3503000001011001920000000070008000000000000014154f52442d3236313132383030303030302d43443334fcd8f47800"),
    ("BeneficiariesSaved", "0601100192000000007000800000000000001e100192000000007000800000000000001f10019200000000700080000000000000020108537570706c69657201034f564f0d3632383132333435363738393001010453495449010101fd4022948f35030000fd00e0848f35030000fd4022948f35030000"),
    ("PaymentVendorSaved", "090658454e444954011668747470733a2f2f76656e646f722e6578616d706c650173fb88130100"),
    ("VendorRoutingSaved", "0a100192000000007000800000000000001f00020753414e44424f580658454e444954"),
    ("RefundSaved", "0e100192000000007000800000000000000a154f52442d3236313132383030303030302d43443334100192000000007000800000000000000205494e562d310001fc8096980002000103424e490a383830383132333435360753414e44424f58010456522d3101fd00bdf28f3503000001fd40ed878f35030000010452524e3101010453697469011073697469406578616d706c652e636f6d010d36323831323334353637383930011d68747470733a2f2f6d65726368616e742e6578616d706c652f686f6f6b011d68747470733a2f2f6d65726368616e742e6578616d706c652f646f6e65010a7b2263617274223a317d01fc70110100fbd007fbe803fc587997000103fc80841e0001076f726465722d3107070707070707070707070707070707070707070707070707070707070707070001100192000000007000800000000000000bfd00e0848f35030000fd80fa8a8f350300001001920000000070008000000000000014100192000000007000800000000000000a154f52442d3236313132383030303030302d434433341001920000000070008000000000000002fc80841e0010435553544f4d45525f52455155455354010473697a6508726566756e642d3101010452462d310001040001100192000000007000800000000000000bfde073898f35030000fd00c2898f3503000001100192000000007000800000000000000204050108726566756e642d3106726566756e64020000fc80841e000801fc80841e0000fde073898f3503000001011001920000000070008000000000000014154f52442d3236313132383030303030302d43443334fcd8f47800"),
    ("Evented", "0f0c100192000000007000800000000000000a154f52442d3236313132383030303030302d43443334100192000000007000800000000000000205494e562d310001fc8096980002000103424e490a383830383132333435360753414e44424f58010456522d3101fd00bdf28f3503000001fd40ed878f35030000010452524e3101010453697469011073697469406578616d706c652e636f6d010d36323831323334353637383930011d68747470733a2f2f6d65726368616e742e6578616d706c652f686f6f6b011d68747470733a2f2f6d65726368616e742e6578616d706c652f646f6e65010a7b2263617274223a317d01fc70110100fbd007fbe803fc587997000103fc80841e0001076f726465722d3107070707070707070707070707070707070707070707070707070707070707070001100192000000007000800000000000000bfd00e0848f35030000fd80fa8a8f3503000001100192000000007000800000000000003210019200000000700080000000000000020e726566756e642e73756363657373fd00c2898f35030000011d68747470733a2f2f6d65726368616e742e6578616d706c652f686f6f6b011001920000000070008000000000000014100192000000007000800000000000000a154f52442d3236313132383030303030302d434433341001920000000070008000000000000002fc80841e0010435553544f4d45525f52455155455354010473697a6508726566756e642d3101010452462d310001040001100192000000007000800000000000000bfde073898f35030000fd00c2898f35030000100192000000007000800000000000000a154f52442d3236313132383030303030302d43443334100192000000007000800000000000000205494e562d310001fc8096980002000103424e490a383830383132333435360753414e44424f58010456522d3101fd00bdf28f3503000001fd40ed878f35030000010452524e3101010453697469011073697469406578616d706c652e636f6d010d36323831323334353637383930011d68747470733a2f2f6d65726368616e742e6578616d706c652f686f6f6b011d68747470733a2f2f6d65726368616e742e6578616d706c652f646f6e65010a7b2263617274223a317d01fc70110100fbd007fbe803fc587997000103fc80841e0001076f726465722d3107070707070707070707070707070707070707070707070707070707070707070001100192000000007000800000000000000bfd00e0848f35030000fd80fa8a8f35030000020100"),
    ("SettlementCreated", "11100192000000007000800000000000000b1153544c2d32303236313132382d3030303110019200000000700080000000000000020a323032362d31312d3238fd0028388535030000fd00e0848f35030000fc80969800fc70110100fbd007fbe803fc80841e000027fcb0f47800010110019200000000700080000000000000030103424e49010a393837363534333231300104546f6b6f020000010500fdc0078e8f35030000fd0015918f3503000001100192000000007000800000000000000a154f52442d3236313132383030303030302d43443334100192000000007000800000000000000205494e562d310001fc8096980002000103424e490a383830383132333435360753414e44424f58010456522d3101fd00bdf28f3503000001fd40ed878f35030000010452524e3101010453697469011073697469406578616d706c652e636f6d010d36323831323334353637383930011d68747470733a2f2f6d65726368616e742e6578616d706c652f686f6f6b011d68747470733a2f2f6d65726368616e742e6578616d706c652f646f6e65010a7b2263617274223a317d01fc70110100fbd007fbe803fc587997000103fc80841e0001076f726465722d3107070707070707070707070707070707070707070707070707070707070707070001100192000000007000800000000000000bfd00e0848f35030000fd80fa8a8f35030000011001920000000070008000000000000014100192000000007000800000000000000a154f52442d3236313132383030303030302d434433341001920000000070008000000000000002fc80841e0010435553544f4d45525f52455155455354010473697a6508726566756e642d3101010452462d310001040001100192000000007000800000000000000bfde073898f35030000fd00c2898f3503000000"),
    ("PayoutRoutingSaved", "14100192000000007000800000000000001f01010753414e44424f58"),
    ("DisbursementBatchCreated", "15011001920000000070008000000000000001154453422d3236313132383030303030302d414231321001920000000070008000000000000002087061796f75742d31000342434110019200000000700080000000000000030a313233343536373839300c427564692053616e746f736ffc80841e00fc20a10700fca02526000103562d39010753414e44424f5801fde8e3848f350300000104011d68747470733a2f2f6d65726368616e742e6578616d706c652f686f6f6b011001920000000070008000000000000004010e4143434f554e545f434c4f534544070108fb889ffd00e0848f35030000fdd0e7848f35030000100192000000007000800000000000000204050108726566756e642d3106726566756e64020000fc80841e000801fc80841e0000fde073898f3503000001011001920000000070008000000000000014154f52442d3236313132383030303030302d43443334fcd8f47800100192000000007000800000000000002810019200000000700080000000000000020762617463682d31fd00e0848f350300000500100192000000007000800000000000000101000c616d6f756e745f6d696e6f72106d75737420626520706f7369746976650107053130303030010e10019200000000700080000000000000290110"),
    ("MerchantUserSaved", "16100192000000007000800000000000003c1001920000000070008000000000000002116f776e6572406578616d706c652e636f6d12246172676f6e32696424763d3139242e2e2efd00e0848f35030000"),
    ("WebhookAttemptRecorded", "171001920000000070008000000000000032020001fde0e48b8f3503000001fd20108a8f35030000100192000000007000800000000000003210019200000000700080000000000000020e726566756e642e737563636573731d68747470733a2f2f6d65726368616e742e6578616d706c652f686f6f6b0201c81f000001fd20108a8f3503000000"),
];
