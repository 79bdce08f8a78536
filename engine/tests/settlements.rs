//! Settlements with an injected clock: the figures of a hand-computed
//! example (MDR, refunds, the transfer fee), the daily run crossing 00:00
//! WIB, orders never settled twice (repeated and concurrent runs, restarts),
//! and a failed transfer carried into the next settlement.

use chrono::{DateTime, Utc};
use paygate_engine::clock::ManualClock;
use paygate_engine::domain::{PaymentMethod, SettlementBank, SettlementStatus, SettlementType};
use paygate_engine::input::{IdempotencyKey, PositiveAmount};
use paygate_engine::orders::{NewOrder, NewRefund, RefundReason};
use paygate_engine::{Engine, EngineConfig, NewMerchant};
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

async fn open(dir: &std::path::Path, clock: Arc<ManualClock>) -> Engine {
    let mut config = EngineConfig::new(dir);
    // Sandbox: refunds stay PENDING for the test; settlement transfers take 50 ms.
    config.sandbox_refund_delay = Some(Duration::from_millis(50));
    Engine::open(config, clock).await.expect("engine opens")
}

async fn manual_merchant(engine: &Engine, account_number: &str) -> Uuid {
    let new = NewMerchant {
        settlement_bank: Some(SettlementBank {
            bank_short_code: "BCA".into(),
            account_number: account_number.into(),
            account_name: "Toko Manual".into(),
        }),
        ..NewMerchant::new("Toko Manual", SettlementType::Manual)
    };
    engine.merchants().create_merchant(new).await.unwrap().0.id
}

async fn paid_order(engine: &Engine, merchant: Uuid, id: &str, amount: i64, method: &str) -> String {
    let new = NewOrder::new(id, amount, PaymentMethod::parse(method).unwrap()).unwrap();
    let (order, _) = engine.orders().create_order(merchant, new).await.unwrap();
    engine.orders().pay_order(&order, None).await.unwrap();
    order.ref_code
}

fn clock_at(instant: &str) -> Arc<ManualClock> {
    let start: DateTime<Utc> = instant.parse().unwrap();
    Arc::new(ManualClock::new(start))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn figures_match_a_hand_computed_example_and_orders_settle_once() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock_at("2026-11-21T03:00:00Z");
    let engine = open(dir.path(), clock.clone()).await;
    let merchant = manual_merchant(&engine, "1234567890").await;
    let first = paid_order(&engine, merchant, "A", 10_000_000, "QRIS").await;
    paid_order(&engine, merchant, "B", 2_500_050, "QRIS").await;
    paid_order(&engine, merchant, "C", 5_000_000, "BANK_TRANSFER").await;
    let refund = NewRefund {
        amount: PositiveAmount::parse(1_000_000).unwrap(),
        reason: RefundReason::parse(None, None).unwrap(),
        idempotency_key: IdempotencyKey::parse("r1").unwrap(),
    };
    engine.orders().create_refund(merchant, &first, refund).await.unwrap();
    clock.advance_ms(60_000);

    // Concurrent runs: one settlement, whoever wins.
    let runs = (0..4).map(|_| engine.orders().run_settlements(Some(merchant), None));
    let results = futures::future::join_all(runs).await;
    let created: Vec<_> = results.into_iter().flat_map(|r| r.unwrap()).collect();
    assert_eq!(created.len(), 1, "{created:?}");
    let settlement = &created[0];
    // gross 10,000,000 + 2,500,050 + 5,000,000
    assert_eq!(settlement.gross_amount.get(), 17_500_050);
    // MDR: 0.7% of 10,000,000 = 70,000; of 2,500,050 = 17,500.35 -> 17,500; bank transfer flat 400,000.
    assert_eq!(settlement.mdr_total.get(), 487_500);
    assert_eq!(settlement.refund_total.get(), 1_000_000);
    assert_eq!(settlement.disbursement_fee.get(), 250_000);
    assert_eq!(settlement.net_payout.get(), 17_500_050 - 487_500 - 1_000_000 - 250_000);
    assert_eq!(settlement.order_count, 3);
    assert_eq!(settlement.settlement_date, "2026-11-21");
    assert_eq!(settlement.ref_code, "STL-261121-00001");
    assert_eq!(settlement.status, SettlementStatus::Pending);
    assert_eq!(
        settlement.destination.as_ref().map(|bank| bank.account_number.as_str()),
        Some("1234567890")
    );
    assert!(settlement.bank_id.is_some());
    let order = engine.orders().order_for(merchant, &first).unwrap();
    assert!(order.is_settled);
    assert_eq!(order.settlement_id, Some(settlement.id));

    // Nothing left: a second run creates nothing, before and after a restart.
    assert!(engine
        .orders()
        .run_settlements(Some(merchant), None)
        .await
        .unwrap()
        .is_empty());
    let mut paid = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if engine.orders().settlement_for(merchant, settlement.id).unwrap().status == SettlementStatus::Paid {
            paid = true;
            break;
        }
    }
    assert!(paid, "the sandbox transfer completes");
    engine.halt_without_checkpoint().await;
    drop(engine);
    let engine = open(dir.path(), clock.clone()).await;
    assert!(engine.orders().run_settlements(None, None).await.unwrap().is_empty());
    let (listed, total) = engine
        .orders()
        .list_settlements(merchant, &Default::default(), 1, 10)
        .unwrap();
    assert_eq!(total, 1);
    assert_eq!(listed[0].status, SettlementStatus::Paid);
    let report = engine.merchants().verify_ledger().await.unwrap();
    assert!(report.balanced, "{:?}", report.problems);
    assert_eq!(report.accounts["pending_settlement"], 0, "{:?}", report.accounts);
    assert_eq!(report.accounts["payout_clearing"], settlement.net_payout.get() as i128);
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daily_run_settles_the_previous_day_at_midnight_wib() {
    let dir = tempfile::tempdir().unwrap();
    // 23:00 WIB on 21 November.
    let clock = clock_at("2026-11-21T16:00:00Z");
    let engine = open(dir.path(), clock.clone()).await;
    let merchant = manual_merchant(&engine, "1234567890").await;
    paid_order(&engine, merchant, "late-evening", 1_000_000, "QRIS").await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(
        engine
            .orders()
            .list_settlements(merchant, &Default::default(), 1, 10)
            .unwrap()
            .1,
        0,
        "not before midnight"
    );
    // 00:00:01 WIB on 22 November; an order paid now belongs to the new day.
    clock.advance_ms(3_600_000 + 1_000);
    paid_order(&engine, merchant, "after-midnight", 2_000_000, "QRIS").await;
    let mut settled = None;
    for _ in 0..150 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let (listed, _) = engine
            .orders()
            .list_settlements(merchant, &Default::default(), 1, 10)
            .unwrap();
        if let Some(first) = listed.into_iter().next() {
            settled = Some(first);
            break;
        }
    }
    let settlement = settled.expect("the daily run created a settlement");
    assert_eq!(settlement.settlement_date, "2026-11-21");
    assert!(settlement.ref_code.starts_with("STL-261121-"));
    assert_eq!(settlement.order_count, 1);
    assert_eq!(settlement.gross_amount.get(), 1_000_000);
    assert_eq!(
        settlement.period_end_ms,
        "2026-11-21T17:00:00Z"
            .parse::<DateTime<Utc>>()
            .unwrap()
            .timestamp_millis()
    );
    let after = engine
        .orders()
        .order_by_merchant_order_id(merchant, paygate_engine::domain::Source::Api, "after-midnight")
        .unwrap()
        .unwrap();
    assert!(!after.is_settled);
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_transfers_and_short_nets_carry_into_the_next_settlement() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock_at("2026-11-21T03:00:00Z");
    let engine = open(dir.path(), clock.clone()).await;
    // The sandbox bank rejects this account.
    let merchant = manual_merchant(&engine, "0000000000").await;
    paid_order(&engine, merchant, "A", 10_000_000, "QRIS").await;
    clock.advance_ms(1_000);
    let first = engine
        .orders()
        .run_settlements(Some(merchant), None)
        .await
        .unwrap()
        .remove(0);
    let transfer = first.net_payout.get() + first.disbursement_fee.get();
    assert_eq!(transfer, 10_000_000 - 70_000);
    let mut failed = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if engine.orders().settlement_for(merchant, first.id).unwrap().status == SettlementStatus::Failed {
            failed = true;
            break;
        }
    }
    assert!(failed);
    // A small order whose net does not cover the fee: not paid, carried.
    paid_order(&engine, merchant, "B", 100_000, "QRIS").await;
    clock.advance_ms(1_000);
    let second = engine
        .orders()
        .run_settlements(Some(merchant), None)
        .await
        .unwrap()
        .remove(0);
    assert_eq!(second.carried_over.get(), transfer, "the failed transfer comes back");
    assert_eq!(second.net_payout.get(), transfer + (100_000 - 700) - 250_000);
    assert_eq!(second.status, SettlementStatus::Pending);
    let report = engine.merchants().verify_ledger().await.unwrap();
    assert!(report.balanced, "{:?}", report.problems);
    engine.shutdown().await;
}
