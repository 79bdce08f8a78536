//! Merchant actors: idle ones stop and come back from storage on demand with
//! the same book; concurrent writers to one merchant never overspend.

use paygate_engine::clock::SystemClock;
use paygate_engine::domain::SettlementType;
use paygate_engine::ledger::{self, Account, LedgerError};
use paygate_engine::{Engine, EngineConfig, EngineError, MinorUnits, NewMerchant};
use std::sync::Arc;
use std::time::Duration;

async fn engine_with_idle_timeout(dir: &std::path::Path, idle: Duration) -> Engine {
    let mut config = EngineConfig::new(dir);
    config.actor_idle_timeout = idle;
    Engine::open(config, Arc::new(SystemClock)).await.unwrap()
}

async fn wallet_merchant(engine: &Engine) -> uuid::Uuid {
    let new = NewMerchant {
        name: "m".into(),
        settlement_type: Some(SettlementType::Wallet),
        ..Default::default()
    };
    engine.create_merchant(new).await.unwrap().0.id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_merchant_actors_stop_and_are_rebuilt_from_storage_on_demand() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_with_idle_timeout(dir.path(), Duration::from_millis(200)).await;
    let merchant = wallet_merchant(&engine).await;
    engine
        .credit_wallet(merchant, MinorUnits::new(900), "fund", Some("k1".into()))
        .await
        .unwrap();
    assert_eq!(engine.live_merchant_actors(), 1);
    let mut stopped = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if engine.live_merchant_actors() == 0 {
            stopped = true;
            break;
        }
    }
    assert!(stopped, "the idle actor never stopped");
    // Rebuilt from storage: same balance, same idempotency memory.
    assert_eq!(engine.wallet_balance(merchant).await.unwrap(), MinorUnits::new(900));
    assert_eq!(engine.live_merchant_actors(), 1);
    let again = engine
        .credit_wallet(merchant, MinorUnits::new(900), "fund", Some("k1".into()))
        .await;
    assert!(
        matches!(again, Err(EngineError::Ledger(LedgerError::DuplicateIdempotencyKey(1)))),
        "{again:?}"
    );
    let book = engine.book(merchant).await.unwrap();
    assert_eq!(book.last_seq, 1);
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_debits_of_one_wallet_never_overspend() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_with_idle_timeout(dir.path(), Duration::from_secs(60)).await;
    let merchant = wallet_merchant(&engine).await;
    engine
        .credit_wallet(merchant, MinorUnits::new(100), "fund", None)
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for i in 0..200 {
        let engine = engine.clone();
        tasks.push(tokio::spawn(async move {
            engine
                .post_entry(
                    merchant,
                    ledger::wallet_debit(MinorUnits::new(1), "d".into(), Some(format!("d{i}"))),
                )
                .await
        }));
    }
    let mut accepted = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(receipt) => {
                accepted += 1;
                assert!(receipt.wallet_balance.get() >= 0);
            }
            Err(EngineError::Ledger(LedgerError::InsufficientBalance)) => {}
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(accepted, 100);
    assert_eq!(
        engine.book(merchant).await.unwrap().balance(Account::Wallet),
        MinorUnits::ZERO
    );
    assert!(engine.verify_ledger().await.unwrap().balanced);
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_idempotency_key_moves_money_once_under_concurrency() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_with_idle_timeout(dir.path(), Duration::from_secs(60)).await;
    let merchant = wallet_merchant(&engine).await;
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let engine = engine.clone();
        tasks.push(tokio::spawn(async move {
            engine
                .credit_wallet(merchant, MinorUnits::new(10), "once", Some("same-key".into()))
                .await
        }));
    }
    let mut accepted = 0;
    for task in tasks {
        if task.await.unwrap().is_ok() {
            accepted += 1;
        }
    }
    assert_eq!(accepted, 1);
    assert_eq!(engine.wallet_balance(merchant).await.unwrap(), MinorUnits::new(10));
    engine.shutdown().await;
}
