//! The kinds read through the one versioned path besides orders and
//! disbursements (refunds, settlements, beneficiaries, batches): found in
//! the overlay, in blocks after a checkpoint, and after reopening, with no
//! sled key of their own but their open-work keys.

use super::orders::tests::test_order;
use crate::domain::{BatchItem, Beneficiary, DisbursementBatch, Refund, RefundStatus, Settlement, SettlementStatus};
use crate::money::MinorUnits;
use crate::store::keys::KeyPrefix;
use crate::store::record::JournalRecord;
use crate::store::tests::test_beneficiary;
use crate::store::Store;
use std::sync::Arc;
use uuid::Uuid;

fn refund(order: &crate::domain::Order, n: usize) -> Refund {
    Refund {
        id: Uuid::new_v4(),
        order_id: order.id,
        order_ref_code: order.ref_code.clone(),
        merchant_id: order.merchant_id,
        amount: MinorUnits::new(100),
        reason: "CUSTOMER_REQUEST".into(),
        reason_detail: None,
        idempotency_key: format!("refund-{n}"),
        status: RefundStatus::Pending,
        vendor_refund_id: None,
        failure_reason: None,
        debit_seq: Some(n as u64),
        reversal_seq: None,
        settlement_id: None,
        created_at_ms: n as i64,
        updated_at_ms: n as i64,
    }
}

fn settlement(merchant_id: Uuid, n: usize) -> Settlement {
    Settlement {
        id: Uuid::new_v4(),
        ref_code: format!("STL-261127-{n:05}"),
        merchant_id,
        settlement_date: "2026-11-27".into(),
        period_start_ms: 0,
        period_end_ms: n as i64,
        gross_amount: MinorUnits::new(1_000),
        mdr_total: MinorUnits::ZERO,
        platform_fee: MinorUnits::ZERO,
        aggregator_fee: MinorUnits::ZERO,
        refund_total: MinorUnits::ZERO,
        disbursement_fee: MinorUnits::ZERO,
        carried_over: MinorUnits::ZERO,
        net_payout: MinorUnits::new(1_000),
        order_count: 1,
        bank_id: None,
        destination: None,
        status: SettlementStatus::Pending,
        failure_reason: None,
        carry_out: MinorUnits::ZERO,
        entry_seq: None,
        reversal_seq: None,
        created_at_ms: n as i64,
        updated_at_ms: n as i64,
    }
}

/// What the records below leave, read back: every third refund SUCCESS,
/// every settlement after the first PAID, the first beneficiary deleted.
struct Made {
    merchant: Uuid,
    order: crate::domain::Order,
    refunds: Vec<Refund>,
    settlements: Vec<Settlement>,
    beneficiaries: Vec<Beneficiary>,
    batch: DisbursementBatch,
}

fn assert_found(store: &Store, made: &Made) {
    let refunds = store.order_refunds(&made.order.id).unwrap();
    let ids: Vec<Uuid> = refunds.iter().map(|r| r.id).collect();
    let made_ids: Vec<Uuid> = made.refunds.iter().map(|r| r.id).collect();
    assert_eq!(ids, made_ids, "an order's refunds, oldest first");
    for (n, refund) in made.refunds.iter().enumerate() {
        let found = store.refund(&refund.id).unwrap().unwrap();
        let status = if n % 3 == 0 {
            RefundStatus::Success
        } else {
            RefundStatus::Pending
        };
        assert_eq!(found.status, status, "refund {n}");
        let by_key = store.refund_by_key(&made.merchant, &refund.idempotency_key).unwrap();
        assert_eq!(by_key.unwrap().id, refund.id);
        assert!(store
            .refund_by_key(&Uuid::new_v4(), &refund.idempotency_key)
            .unwrap()
            .is_none());
    }
    let open = store.open_refunds().unwrap();
    assert_eq!(open.len(), made.refunds.len() - made.refunds.len().div_ceil(3));

    let (page, total) = store.merchant_settlements(&made.merchant, 0, 2).unwrap();
    assert_eq!(total, made.settlements.len());
    assert_eq!(page[0].id, made.settlements.last().unwrap().id, "newest first");
    for settlement in &made.settlements {
        assert!(store.settlement_ref_exists(&settlement.ref_code).unwrap());
        assert_eq!(
            store.settlement(&settlement.id).unwrap().unwrap().ref_code,
            settlement.ref_code
        );
    }
    let taken = store.settlement_refs_taken(|n| format!("STL-261127-{n:05}")).unwrap();
    assert_eq!(taken, made.settlements.len());
    assert_eq!(
        store.settlement_refs_taken(|n| format!("STL-261128-{n:05}")).unwrap(),
        0
    );
    let open: Vec<Uuid> = store.open_settlements().unwrap().iter().map(|s| s.id).collect();
    assert_eq!(open, [made.settlements[0].id], "only the first is not final");

    let listed = store.merchant_beneficiaries(&made.merchant).unwrap();
    let ids: Vec<Uuid> = listed.iter().map(|b| b.id).collect();
    let newest_first: Vec<Uuid> = made.beneficiaries.iter().rev().map(|b| b.id).collect();
    assert_eq!(ids, newest_first);
    assert!(listed.last().unwrap().deleted_at_ms.is_some(), "the first is deleted");

    let batch = store.disbursement_batch(&made.batch.id).unwrap().unwrap();
    assert_eq!(batch, made.batch);
    let by_key = store.disbursement_batch_by_key(&made.merchant, "batch-1").unwrap();
    assert_eq!(by_key.unwrap().id, made.batch.id);
    assert!(store
        .disbursement_batch_by_key(&made.merchant, "batch-2")
        .unwrap()
        .is_none());
}

#[test]
fn refunds_settlements_beneficiaries_and_batches_are_found_in_the_overlay_in_blocks_and_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let merchant = Uuid::new_v4();
    let order = test_order(merchant, 1);
    let made = Made {
        merchant,
        refunds: (0..300).map(|n| refund(&order, n)).collect(),
        settlements: (1..=40).map(|n| settlement(merchant, n)).collect(),
        beneficiaries: (0..30).map(|n| test_beneficiary(merchant, n)).collect(),
        batch: DisbursementBatch {
            id: Uuid::new_v4(),
            merchant_id: merchant,
            idempotency_key: "batch-1".into(),
            created_at_ms: 5,
            items: vec![BatchItem::Created(Uuid::new_v4())],
        },
        order,
    };
    let mut seq = 0;
    let mut apply = |store: &Store, record: JournalRecord| {
        seq += 1;
        store.apply(seq, &record, &record.encode()).unwrap();
    };
    {
        let store = Store::open(dir.path()).unwrap();
        for (n, refund) in made.refunds.iter().enumerate() {
            let record = JournalRecord::RefundSaved {
                order: Box::new(made.order.clone()),
                refund: Box::new(refund.clone()),
                entry: None,
            };
            apply(&store, record);
            if n == 150 {
                store.checkpoint().unwrap();
            }
        }
        for refund in made.refunds.iter().step_by(3) {
            let mut done = refund.clone();
            done.status = RefundStatus::Success;
            let record = JournalRecord::RefundSaved {
                order: Box::new(made.order.clone()),
                refund: Box::new(done),
                entry: None,
            };
            apply(&store, record);
        }
        for settlement in &made.settlements {
            let record = JournalRecord::SettlementCreated {
                settlement: Box::new(settlement.clone()),
                orders: Vec::new(),
                refunds: Vec::new(),
                entry: None,
            };
            apply(&store, record);
        }
        store.checkpoint().unwrap();
        for settlement in made.settlements.iter().skip(1) {
            let mut paid = settlement.clone();
            paid.status = SettlementStatus::Paid;
            let record = JournalRecord::SettlementUpdated {
                settlement: Box::new(paid),
                entry: None,
            };
            apply(&store, record);
        }
        apply(&store, JournalRecord::BeneficiariesSaved(made.beneficiaries.clone()));
        let mut deleted = made.beneficiaries[0].clone();
        deleted.deleted_at_ms = Some(100);
        apply(&store, JournalRecord::BeneficiariesSaved(vec![deleted]));
        let record = JournalRecord::DisbursementBatchCreated {
            disbursements: Vec::new(),
            batch: Arc::new(made.batch.clone()),
        };
        apply(&store, record);
        assert_found(&store, &made);
        store.checkpoint().unwrap();
        assert_found(&store, &made);
    }
    let store = Store::open(dir.path()).unwrap();
    assert_found(&store, &made);
    let own_keys = [
        KeyPrefix::Refund,
        KeyPrefix::RefundByIdempotencyKey,
        KeyPrefix::RefundByOrder,
        KeyPrefix::Settlement,
        KeyPrefix::SettlementByMerchant,
        KeyPrefix::SettlementByRefCode,
        KeyPrefix::Beneficiary,
        KeyPrefix::BeneficiaryByMerchant,
        KeyPrefix::DisbursementBatch,
        KeyPrefix::DisbursementBatchByKey,
    ];
    for prefix in own_keys {
        assert_eq!(
            store.ledger_tree().scan_prefix([prefix.byte()]).count(),
            0,
            "{prefix:?}"
        );
    }
}
