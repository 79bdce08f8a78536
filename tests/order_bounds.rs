//! Order actors are bounded (README "Limits and protections"): past the most
//! that may be live, work that needs a new one is `Busy` (503 with
//! `Retry-After` over HTTP) and changes nothing; once some stop, it goes on.

use paygate_engine::clock::SystemClock;
use paygate_engine::domain::{OrderStatus, SettlementType};
use paygate_engine::orders::NewOrder;
use paygate_engine::{Engine, EngineConfig, EngineError, NewMerchant};
use std::sync::Arc;
use std::time::Duration;

fn order(n: u32) -> NewOrder {
    NewOrder {
        merchant_order_id: format!("bounded-{n}"),
        amount_minor: 1_000_000,
        payment_method: "QRIS".into(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_bound_on_live_order_actors_order_work_is_busy_until_some_stop() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.sandbox_refund_delay = Some(Duration::from_secs(3600));
    config.actor_idle_timeout = Duration::from_millis(300);
    config.order_actors_live_max = 2;
    let engine = Engine::open(config, Arc::new(SystemClock)).await.unwrap();
    let (merchant, _) = engine
        .create_merchant(NewMerchant {
            name: "bounded".into(),
            settlement_type: Some(SettlementType::Wallet),
            ..Default::default()
        })
        .await
        .unwrap();
    let mut orders = Vec::new();
    for n in 0..3 {
        orders.push(engine.create_order(merchant.id, order(n)).await.unwrap().0);
    }
    // Paying an order takes its actor, which lives on until idle.
    for paid in &orders[..2] {
        assert_eq!(engine.pay_order(paid, None).await.unwrap().status, OrderStatus::Paid);
    }
    assert!(engine.metrics_text().contains("paygate_order_actors_live 2"));
    let refused = engine.pay_order(&orders[2], None).await;
    assert!(matches!(refused, Err(EngineError::Busy)), "{refused:?}");
    let unchanged = engine.order_for(merchant.id, &orders[2].ref_code).unwrap();
    assert_eq!(unchanged.status, OrderStatus::Pending, "nothing changed");
    let balance = engine.wallet_balance(merchant.id).await.unwrap();

    // Once idle actors stop there is room again.
    let mut paid = None;
    for _ in 0..100 {
        match engine.pay_order(&orders[2], None).await {
            Ok(order) => {
                paid = Some(order);
                break;
            }
            Err(EngineError::Busy) => tokio::time::sleep(Duration::from_millis(50)).await,
            Err(other) => panic!("{other:?}"),
        }
    }
    assert_eq!(paid.expect("room once actors stopped").status, OrderStatus::Paid);
    assert!(engine.wallet_balance(merchant.id).await.unwrap().get() > balance.get());
    engine.shutdown().await;
}
