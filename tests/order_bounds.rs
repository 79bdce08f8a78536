//! Order actors are bounded (README "Limits and protections"): past the most
//! that may be live, work that needs a new one is `Busy` (503 with
//! `Retry-After` over HTTP) and changes nothing; once some stop, it goes on.
//! An order's actor lives only while it has work: a payment's stops once
//! paid, a refund's while the vendor has not answered.

#[path = "engine_setup/mod.rs"]
mod engine_setup;

use paygate_engine::LimitOverrides;

use paygate_engine::clock::SystemClock;
use paygate_engine::domain::{OrderStatus, PaymentMethod};
use paygate_engine::orders::NewOrder;
use paygate_engine::{Engine, EngineConfig, EngineError};
use std::sync::Arc;
use std::time::Duration;

fn order(n: u32) -> NewOrder {
    NewOrder::new(&format!("bounded-{n}"), 1_000_000, PaymentMethod::Qris).expect("a valid order")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_bound_on_live_order_actors_order_work_is_busy_until_some_stop() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    // The sandbox answers refunds after this long: their actors wait so long.
    config.sandbox_refund_delay = Some(Duration::from_secs(3));
    config.order_actors_live_max = 2;
    let engine = Engine::open(config, Arc::new(SystemClock)).await.unwrap();
    let merchant = engine_setup::wallet_merchant(&engine, "bounded", LimitOverrides::default(), None).await;
    let mut orders = Vec::new();
    for n in 0..3 {
        orders.push(engine.orders().create_order(merchant.id, order(n)).await.unwrap().0);
    }
    // Paying an order takes its actor for the payment only.
    for paid in &orders[..2] {
        assert_eq!(
            engine.orders().pay_order(paid, None).await.unwrap().status,
            OrderStatus::Paid
        );
    }
    let mut live = String::new();
    for _ in 0..100 {
        live = engine.operations().metrics_text();
        if live.contains("paygate_order_actors_live 0") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        live.contains("paygate_order_actors_live 0"),
        "paid orders keep no actor"
    );
    // A refund the vendor has not answered holds its order's actor.
    for (n, paid) in orders[..2].iter().enumerate() {
        let refund = engine_setup::refund_request(format!("bounded-refund-{n}"), 100_000);
        engine
            .orders()
            .create_refund(merchant.id, &paid.ref_code, refund)
            .await
            .unwrap();
    }
    assert!(engine
        .operations()
        .metrics_text()
        .contains("paygate_order_actors_live 2"));
    let refused = engine.orders().pay_order(&orders[2], None).await;
    assert!(matches!(refused, Err(EngineError::Busy)), "{refused:?}");
    let unchanged = engine.orders().order_for(merchant.id, &orders[2].ref_code).unwrap();
    assert_eq!(unchanged.status, OrderStatus::Pending, "nothing changed");
    let balance = engine.merchants().wallet_balance(merchant.id).await.unwrap();

    // Once the vendor answers the refunds, their actors stop: room again.
    let mut paid = None;
    for _ in 0..200 {
        match engine.orders().pay_order(&orders[2], None).await {
            Ok(order) => {
                paid = Some(order);
                break;
            }
            Err(EngineError::Busy) => tokio::time::sleep(Duration::from_millis(50)).await,
            Err(other) => panic!("{other:?}"),
        }
    }
    assert_eq!(paid.expect("room once actors stopped").status, OrderStatus::Paid);
    assert!(engine.merchants().wallet_balance(merchant.id).await.unwrap().get() > balance.get());
    engine.shutdown().await;
}

/// Actors stop as soon as their work is done: 200 orders paid and refunded
/// at once, each payment's actor gone before its refund comes and a new one
/// taking the refund and waiting for the vendor's answer. Every refund
/// settles, and no actor is left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refunds_right_after_payment_all_settle_and_no_actor_stays() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.sandbox_refund_delay = Some(Duration::from_millis(20));
    let engine = Arc::new(Engine::open(config, Arc::new(SystemClock)).await.unwrap());
    let merchant = engine_setup::wallet_merchant(&engine, "busy refunds", LimitOverrides::default(), None).await;
    let mut orders = Vec::new();
    for n in 0..200 {
        orders.push(engine.orders().create_order(merchant.id, order(n)).await.unwrap().0);
    }
    let refunds = futures::future::join_all(orders.iter().enumerate().map(|(n, order)| {
        let engine = engine.clone();
        async move {
            engine.orders().pay_order(order, None).await.unwrap();
            let refund = engine_setup::refund_request(format!("right-after-{n}"), 1_000);
            engine
                .orders()
                .create_refund(merchant.id, &order.ref_code, refund)
                .await
                .unwrap()
        }
    }))
    .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    for refund in &refunds {
        loop {
            let now = engine.orders().refund_for(merchant.id, refund.id).unwrap();
            if now.status == paygate_engine::domain::RefundStatus::Success {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "refund {} still {:?}",
                refund.id,
                now.status
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let mut live = String::new();
    for _ in 0..200 {
        live = engine.operations().metrics_text();
        if live.contains("paygate_order_actors_live 0") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(live.contains("paygate_order_actors_live 0"), "an order actor stayed");
    engine.shutdown().await;
}
