//! Order timers across restarts, with an injected clock: an order that falls
//! due while the engine is down is EXPIRED as soon as it opens again; one
//! that falls due while it runs is expired by the sweep; paid ones never are.

use chrono::{DateTime, Utc};
use paygate_engine::clock::ManualClock;
use paygate_engine::domain::{OrderStatus, PaymentMethod, SettlementType};
use paygate_engine::orders::{ExpireMinutes, NewOrder};
use paygate_engine::{Engine, EngineConfig, NewMerchant};
use std::sync::Arc;
use std::time::Duration;

async fn open(dir: &std::path::Path, clock: Arc<ManualClock>) -> Engine {
    let mut config = EngineConfig::new(dir);
    config.sandbox_refund_delay = Some(Duration::from_secs(3600));
    Engine::open(config, clock).await.expect("engine opens")
}

fn order(id: &str, expire_minutes: i64) -> NewOrder {
    NewOrder {
        expire_minutes: ExpireMinutes::parse(Some(expire_minutes)).unwrap(),
        ..NewOrder::new(id, 10_000, PaymentMethod::Qris).unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orders_due_while_stopped_are_expired_at_start_and_the_sweep_expires_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let start: DateTime<Utc> = "2026-11-21T10:00:00Z".parse().unwrap();
    let clock = Arc::new(ManualClock::new(start));
    let engine = open(dir.path(), clock.clone()).await;
    let merchant = engine
        .merchants()
        .create_merchant(NewMerchant::new("m", SettlementType::Wallet))
        .await
        .unwrap()
        .0
        .id;
    let (soon, _) = engine.orders().create_order(merchant, order("soon", 5)).await.unwrap();
    let (paid, _) = engine.orders().create_order(merchant, order("paid", 5)).await.unwrap();
    let (later, _) = engine
        .orders()
        .create_order(merchant, order("later", 30))
        .await
        .unwrap();
    engine.orders().pay_order(&paid, None).await.unwrap();
    // Killed without a final checkpoint: the journal is replayed.
    engine.halt_without_checkpoint().await;
    drop(engine);

    clock.advance_ms(10 * 60_000);
    let engine = open(dir.path(), clock.clone()).await;
    let status = |engine: &Engine, id| engine.orders().stored_order(id).unwrap().unwrap().status;
    assert_eq!(status(&engine, soon.id), OrderStatus::Expired, "due while stopped");
    assert_eq!(status(&engine, paid.id), OrderStatus::Paid, "paid orders never expire");
    assert_eq!(status(&engine, later.id), OrderStatus::Pending);

    clock.advance_ms(25 * 60_000);
    let mut expired = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if status(&engine, later.id) == OrderStatus::Expired {
            expired = true;
            break;
        }
    }
    assert!(expired, "the running sweep expires an order that falls due");
    let paid_now = engine.orders().stored_order(paid.id).unwrap().unwrap();
    assert_eq!(paid_now.status, OrderStatus::Paid);
    assert!(engine.merchants().verify_ledger().await.unwrap().balanced);
    engine.shutdown().await;
}
