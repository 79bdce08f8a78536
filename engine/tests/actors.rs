//! Merchant actors: idle ones stop and come back from storage on demand with
//! the same book; concurrent writers to one merchant never overspend.

use paygate_engine::{LimitField, LimitOverrides};

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
    let new = NewMerchant::new("m", SettlementType::Wallet);
    engine.merchants().create_merchant(new).await.unwrap().0.id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_merchant_actors_stop_and_are_rebuilt_from_storage_on_demand() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_with_idle_timeout(dir.path(), Duration::from_millis(200)).await;
    let merchant = wallet_merchant(&engine).await;
    engine
        .merchants()
        .credit_wallet(merchant, MinorUnits::new(900), "fund", Some("k1".into()))
        .await
        .unwrap();
    assert_eq!(engine.operations().live_merchant_actors(), 1);
    let mut stopped = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if engine.operations().live_merchant_actors() == 0 {
            stopped = true;
            break;
        }
    }
    assert!(stopped, "the idle actor never stopped");
    // Rebuilt from storage: same balance, same idempotency memory.
    assert_eq!(
        engine.merchants().wallet_balance(merchant).await.unwrap(),
        MinorUnits::new(900)
    );
    assert_eq!(engine.operations().live_merchant_actors(), 1);
    let again = engine
        .merchants()
        .credit_wallet(merchant, MinorUnits::new(900), "fund", Some("k1".into()))
        .await;
    assert!(
        matches!(again, Err(EngineError::Ledger(LedgerError::DuplicateIdempotencyKey(1)))),
        "{again:?}"
    );
    let book = engine.merchants().book(merchant).await.unwrap();
    assert_eq!(book.last_seq, 1);
    engine.shutdown().await;
}

/// A live actor keeps an entry's idempotency key only while the entry may
/// not be in storage yet; a key used long before is still refused, whether
/// storage holds it in the overlay or in a checkpoint, and an unused key
/// still moves money.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_merchant_refuses_keys_it_no_longer_keeps_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_with_idle_timeout(dir.path(), Duration::from_secs(60)).await;
    let merchant = wallet_merchant(&engine).await;
    let credit = |key: &str| {
        engine
            .merchants()
            .credit_wallet(merchant, MinorUnits::new(10), "fund", Some(key.into()))
    };
    for i in 1..=50 {
        credit(&format!("k{i}")).await.unwrap();
    }
    // Each credit was durable before the next came, so the actor forgot it.
    let again = credit("k1").await;
    assert!(
        matches!(again, Err(EngineError::Ledger(LedgerError::DuplicateIdempotencyKey(1)))),
        "{again:?}"
    );
    engine.operations().checkpoint().await.unwrap();
    let again = credit("k7").await;
    assert!(
        matches!(again, Err(EngineError::Ledger(LedgerError::DuplicateIdempotencyKey(7)))),
        "{again:?}"
    );
    credit("k51").await.unwrap();
    assert_eq!(
        engine.merchants().wallet_balance(merchant).await.unwrap(),
        MinorUnits::new(510)
    );
    assert_eq!(
        engine.operations().live_merchant_actors(),
        1,
        "the same actor answered throughout"
    );
    engine.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_debits_of_one_wallet_never_overspend() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_with_idle_timeout(dir.path(), Duration::from_secs(60)).await;
    let merchant = wallet_merchant(&engine).await;
    engine
        .merchants()
        .credit_wallet(merchant, MinorUnits::new(100), "fund", None)
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for i in 0..200 {
        let engine = engine.clone();
        tasks.push(tokio::spawn(async move {
            engine
                .merchants()
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
        engine
            .merchants()
            .book(merchant)
            .await
            .unwrap()
            .balance(Account::Wallet),
        MinorUnits::ZERO
    );
    assert!(engine.merchants().verify_ledger().await.unwrap().balanced);
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
                .merchants()
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
    assert_eq!(
        engine.merchants().wallet_balance(merchant).await.unwrap(),
        MinorUnits::new(10)
    );
    engine.shutdown().await;
}

/// Past `RECENT_ENTRIES_MAX` disbursements the merchant actor forgets the
/// ones storage holds; duplicates and moves of early ones still work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merchant_actors_forget_old_disbursements_and_still_find_them() {
    use paygate_engine::disbursements::NewDisbursement;
    use paygate_engine::domain::DisbursementStatus;
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.payout_vendor = Some(Arc::new(paygate_engine::vendor::SandboxPayoutVendor {
        delay: Duration::from_secs(3600),
    }));
    let engine = Engine::open(config, Arc::new(SystemClock)).await.unwrap();
    let new = NewMerchant {
        limits: LimitOverrides::parse([(LimitField::DailyMinor, Some(i64::MAX / 4))]).expect("valid limits"),
        ..NewMerchant::new("m", SettlementType::Wallet)
    };
    let merchant = engine.merchants().create_merchant(new).await.unwrap().0.id;
    engine
        .merchants()
        .credit_wallet(merchant, MinorUnits::new(1_000_000_000_000), "fund", None)
        .await
        .unwrap();
    let count = paygate_engine::limits::RECENT_ENTRIES_MAX + 500;
    let disbursement =
        |key: usize| NewDisbursement::to_bank(format!("k-{key}"), "BCA", "1234567890", "Budi", 10_000).unwrap();
    let mut tasks = Vec::new();
    for worker in 0..64 {
        let engine = engine.clone();
        tasks.push(tokio::spawn(async move {
            let mut first = None;
            for key in (worker..count).step_by(64) {
                let created = engine
                    .disbursements()
                    .create_disbursement(merchant, disbursement(key))
                    .await
                    .unwrap();
                first.get_or_insert(created.id);
            }
            first
        }));
    }
    let mut firsts = Vec::new();
    for task in tasks {
        firsts.extend(task.await.unwrap());
    }
    match engine
        .disbursements()
        .create_disbursement(merchant, disbursement(0))
        .await
    {
        Err(EngineError::DuplicateDisbursement(existing)) => assert_eq!(existing.idempotency_key, "k-0"),
        other => panic!("expected a duplicate, got {other:?}"),
    }
    let early = firsts[0];
    let failed = engine
        .disbursements()
        .complete_disbursement(merchant, &early.to_string(), DisbursementStatus::Failed)
        .await
        .unwrap();
    assert_eq!(failed.status, DisbursementStatus::Failed);
    let expected = 1_000_000_000_000 - (count as i64) * (10_000 + 250_000) + 260_000;
    assert_eq!(
        engine.merchants().wallet_balance(merchant).await.unwrap().get(),
        expected
    );
    assert!(engine.merchants().verify_ledger().await.unwrap().balanced);
    engine.shutdown().await;
}
