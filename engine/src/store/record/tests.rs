//! The journal record encoding: round trips, spans, damaged bytes.

use super::*;
use crate::ledger::{wallet_credit, MerchantBook};
use crate::money::MinorUnits;
use strum::IntoEnumIterator;
use uuid::Uuid;

/// Every variant in the order it has in the data format: its number is its
/// place here. Journals already on disk are read by these numbers, so a
/// reorder, or a variant added anywhere but at the end, breaks them.
const VARIANTS_IN_DATA_FORMAT_ORDER: [&str; 24] = [
    "OrganizationSaved",
    "BankSaved",
    "EwalletSaved",
    "MerchantSaved",
    "EntryPosted",
    "DisbursementCreated",
    "BeneficiariesSaved",
    "DisbursementUpdated",
    "DisbursementReversed",
    "PaymentVendorSaved",
    "VendorRoutingSaved",
    "OrderCreated",
    "OrderUpdated",
    "OrderPaid",
    "RefundSaved",
    "Evented",
    "WebhookAttempted",
    "SettlementCreated",
    "SettlementUpdated",
    "DisbursementsUpdated",
    "PayoutRoutingSaved",
    "DisbursementBatchCreated",
    "MerchantUserSaved",
    "WebhookAttemptRecorded",
];

/// The variants keep their numbers: a new one goes at the end of
/// `JournalRecord` and of the list above.
#[test]
fn journal_record_variants_keep_their_data_format_numbers() {
    let declared: Vec<&str> = RecordVariant::iter().map(<&str>::from).collect();
    assert_eq!(
        declared, VARIANTS_IN_DATA_FORMAT_ORDER,
        "JournalRecord's variants were reordered or inserted: their numbers are the data format"
    );
    for (place, variant) in RecordVariant::iter().enumerate() {
        assert_eq!(variant as usize, place, "{variant:?}");
    }
}

/// Records nested thousands deep are refused, not a stack overflow (the
/// `record_decode` fuzz target's crash); the one level the engine writes,
/// and a few more, still decode.
#[test]
fn deeply_nested_records_are_an_error_not_a_crash() {
    let deep = vec![RecordVariant::Evented as u8; 4096];
    assert!(JournalRecord::decode(&deep).is_err());
    let organization = Organization {
        id: Uuid::new_v4(),
        name: "nested".into(),
        created_at_ms: 1,
    };
    let mut tagged_deep = vec![LAYOUT_TAG, 1];
    tagged_deep.extend(vec![RecordVariant::Evented as u8; 4096]);
    assert!(JournalRecord::decode(&tagged_deep).is_err());
    // Three levels, each with no events: `tag 1 [Evented]*3 record [0]*3`.
    let mut bytes = vec![LAYOUT_TAG, 1];
    bytes.extend([RecordVariant::Evented as u8; 3]);
    bytes.extend(&JournalRecord::OrganizationSaved(organization.clone()).encode()[2..]);
    bytes.extend([0u8; 3]);
    let decoded = JournalRecord::decode(&bytes).expect("three levels decode");
    let mut expected = JournalRecord::OrganizationSaved(organization);
    for _ in 0..3 {
        expected = JournalRecord::Evented {
            record: Box::new(expected),
            events: Vec::new(),
        };
    }
    assert_eq!(decoded, expected);
    assert_eq!(decoded.encode(), bytes);
}

/// A length claiming more than any record holds is refused, not allocated.
#[test]
fn a_damaged_length_is_an_error_not_an_allocation() {
    let damaged = [
        0x09, 0xfd, 0xf0, 0xff, 0xdb, 0x00, 0x00, 0x00, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f,
    ];
    assert!(JournalRecord::decode(&damaged).is_err());
}

#[test]
fn entries_round_trip_through_bincode() {
    let book = MerchantBook::new(Uuid::new_v4());
    let entry = book
        .prepare(wallet_credit(MinorUnits::new(42), "x".into(), Some("k".into())), 5)
        .unwrap();
    let record = JournalRecord::EntryPosted(entry.clone());
    assert_eq!(JournalRecord::decode(&record.encode()).unwrap(), record);
    assert_eq!(encode_entry(&entry), record.encode());
    assert!(JournalRecord::decode(&[0xff, 0xff]).is_err());
}

fn disbursement(n: usize) -> Disbursement {
    Disbursement {
        id: Uuid::new_v4(),
        ref_code: format!("DSB-261121000000-{n:04}"),
        merchant_id: Uuid::new_v4(),
        idempotency_key: format!("key-{n}"),
        destination: std::sync::Arc::new(crate::domain::Destination::Bank {
            bank_short_code: "BCA".into(),
            bank_id: Uuid::new_v4(),
            account_number: format!("12345{n:05}"),
            account_name: "Budi Santoso".into(),
        }),
        request_amount: MinorUnits::new(1_000_000 + n as i64),
        fee: MinorUnits::new(250_000),
        final_amount: MinorUnits::new(1_250_000 + n as i64),
        vendor_disbursement_id: n.is_multiple_of(2).then(|| format!("SBX-{n}")),
        payout_vendor: n.is_multiple_of(2).then(|| "acme".into()),
        on_process_at_ms: n.is_multiple_of(3).then_some(1_700_000_000_400),
        source: crate::domain::Source::Api,
        status: crate::domain::DisbursementStatus::OnProcess,
        notify_url: Some("https://merchant.example/hook".into()),
        beneficiary_id: None,
        failure_reason: None,
        debit_seq: 300 + n as u64,
        reversal_seq: None,
        wib_day: 20_000,
        created_at_ms: 1_700_000_000_000 + n as i64,
        updated_at_ms: 1_700_000_000_500,
    }
}

/// A batch whose items created `created` and met a refusal each way
/// a stored refusal can hold data.
fn batch(created: &[Uuid]) -> crate::domain::DisbursementBatch {
    use crate::domain::{BatchItem, BatchRefusal};
    let mut items: Vec<BatchItem> = created.iter().map(|id| BatchItem::Created(*id)).collect();
    items.extend([
        BatchItem::Refused(BatchRefusal::Invalid {
            field: "amount_minor".into(),
            reason: "must be at least 1".into(),
        }),
        BatchItem::Refused(BatchRefusal::Duplicate(Uuid::new_v4())),
        BatchItem::Refused(BatchRefusal::InsufficientBalance),
    ]);
    crate::domain::DisbursementBatch {
        id: Uuid::new_v4(),
        merchant_id: Uuid::new_v4(),
        idempotency_key: "batch-1".into(),
        created_at_ms: 1_700_000_000_000,
        items,
    }
}

/// `encode_with_spans` writes exactly what serde writes, and each span
/// is the encoding of a carried disbursement, in the record's order.
#[test]
fn spanned_encoding_is_the_serde_encoding_with_each_disbursement_located() {
    let book = MerchantBook::new(Uuid::new_v4());
    let entry = book
        .prepare(wallet_credit(MinorUnits::new(42), "x".into(), Some("k".into())), 5)
        .unwrap();
    let (one, two, three) = (
        Arc::new(disbursement(1)),
        Arc::new(disbursement(2)),
        Arc::new(disbursement(3)),
    );
    let event = WebhookEvent::new(
        one.merchant_id,
        7,
        Some("https://merchant.example/hook".into()),
        crate::domain::EventResource::Disbursement(one.clone()),
    );
    let cases: Vec<(JournalRecord, Vec<&Arc<Disbursement>>)> = vec![
        (
            JournalRecord::DisbursementCreated {
                disbursement: one.clone(),
                entry: entry.clone(),
            },
            vec![&one],
        ),
        (JournalRecord::DisbursementUpdated(two.clone()), vec![&two]),
        (
            JournalRecord::DisbursementReversed {
                disbursement: three.clone(),
                entry: entry.clone(),
            },
            vec![&three],
        ),
        (
            JournalRecord::DisbursementsUpdated(vec![one.clone(), two.clone(), three.clone()]),
            vec![&one, &two, &three],
        ),
        (JournalRecord::DisbursementsUpdated(Vec::new()), vec![]),
        (
            JournalRecord::with_events(
                JournalRecord::DisbursementsUpdated(vec![two.clone(), one.clone()]),
                vec![event.clone()],
            ),
            vec![&two, &one],
        ),
        (
            JournalRecord::with_events(JournalRecord::DisbursementUpdated(three.clone()), vec![event]),
            vec![&three],
        ),
        (
            JournalRecord::DisbursementBatchCreated {
                disbursements: vec![(two.clone(), entry.clone()), (one.clone(), entry.clone())],
                batch: Arc::new(batch(&[two.id, one.id])),
            },
            vec![&two, &one],
        ),
        (
            JournalRecord::DisbursementBatchCreated {
                disbursements: Vec::new(),
                batch: Arc::new(batch(&[])),
            },
            vec![],
        ),
        (JournalRecord::EntryPosted(entry), vec![]),
    ];
    for (record, carried) in cases {
        let (bytes, spans) = record.encode_with_spans();
        assert_eq!(bytes, record.encode(), "{record:?}");
        assert_eq!(JournalRecord::decode(&bytes).unwrap(), record);
        let mut expected: Vec<Vec<u8>> = carried.iter().map(|d| encode_value(&***d)).collect();
        if let JournalRecord::Evented { events, .. } = &record {
            // An event names the version its record carries, else is whole.
            expected.extend(events.iter().map(|event| {
                let carried = carried.iter().any(|d| d.id == event.resource.id());
                encode_value(&StoredEvent::of(event, carried))
            }));
        }
        assert_eq!(spans.len(), expected.len(), "{record:?}");
        for (span, version) in spans.into_iter().zip(expected) {
            assert_eq!(bytes[span], version[..]);
        }
    }
}
