//! Property test: random orders, payments (some twice), expiries, refunds
//! (some over the refundable amount, some beyond the wallet, some with a
//! reused key), refund successes and failures, and restarts, against a model.
//! Refunded never exceeds an order's amount, every status matches the model,
//! the wallet matches it, its statement (`GET /v1/balance/history`) is
//! exactly the model's lines and chains to it, and the ledger verifies.

#[path = "statement_check/mod.rs"]
mod statement_check;

#[path = "engine_setup/mod.rs"]
mod engine_setup;
use paygate_engine::clock::SystemClock;
use paygate_engine::domain::{OrderStatus, PaymentMethod, RefundStatus};
use paygate_engine::ledger::statement::LineType;
use paygate_engine::ledger::LedgerError;
use paygate_engine::orders::NewOrder;
use paygate_engine::LimitOverrides;
use paygate_engine::{Engine, EngineConfig, EngineError};
use proptest::prelude::*;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

#[derive(Debug, Clone)]
enum Op {
    Create {
        amount: i64,
        bank_transfer: bool,
    },
    Pay {
        pick: usize,
    },
    Expire {
        pick: usize,
    },
    Refund {
        pick: usize,
        amount: i64,
        key: u8,
    },
    SettleRefund {
        pick: usize,
        success: bool,
    },
    /// 0: clean; 1: no final checkpoint (replay); 2: sled state lost (journal only).
    Restart(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (1i64..3_000_000, any::<bool>()).prop_map(|(amount, bank_transfer)| Op::Create { amount, bank_transfer }),
        3 => any::<usize>().prop_map(|pick| Op::Pay { pick }),
        1 => any::<usize>().prop_map(|pick| Op::Expire { pick }),
        5 => (any::<usize>(), 1i64..1_500_000, 0u8..16).prop_map(|(pick, amount, key)| Op::Refund { pick, amount, key }),
        3 => (any::<usize>(), any::<bool>()).prop_map(|(pick, success)| Op::SettleRefund { pick, success }),
        1 => (0u8..3).prop_map(Op::Restart),
    ]
}

#[derive(Debug, Clone)]
struct ModelOrder {
    id: Uuid,
    ref_code: String,
    amount: i64,
    net: i64,
    status: OrderStatus,
    refunded: i64,
}

#[derive(Debug, Clone)]
struct ModelRefund {
    id: Uuid,
    order: usize,
    amount: i64,
    key: u8,
    status: RefundStatus,
}

async fn open(dir: &Path) -> Engine {
    let mut config = EngineConfig::new(dir);
    config.checkpoint_interval = Duration::from_millis(20);
    // Refunds settle only when the test says so.
    config.sandbox_refund_delay = Some(Duration::from_secs(3600));
    Engine::open(config, Arc::new(SystemClock)).await.expect("engine opens")
}

fn status_for(amount: i64, refunded: i64) -> OrderStatus {
    if refunded == 0 {
        OrderStatus::Paid
    } else if refunded >= amount {
        OrderStatus::Refunded
    } else {
        OrderStatus::PartiallyRefunded
    }
}

async fn run(ops: Vec<Op>, funding: i64) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = open(dir.path()).await;
    let merchant = engine_setup::wallet_merchant(&engine, "m", LimitOverrides::default(), Some(funding)).await;
    let id = merchant.id;
    let fees = merchant.fees.clone();
    let mut wallet = funding;
    let mut lines = vec![(LineType::WalletCredit, funding)];
    let mut orders: Vec<ModelOrder> = Vec::new();
    let mut refunds: Vec<ModelRefund> = Vec::new();

    for (step, op) in ops.into_iter().enumerate() {
        match op {
            Op::Create { amount, bank_transfer } => {
                let method = if bank_transfer { "BANK_TRANSFER" } else { "QRIS" };
                let method = PaymentMethod::parse(method).expect("a payment method");
                let new = NewOrder::new(&format!("o-{step}"), amount, method).expect("a valid order");
                let (order, _) = engine
                    .orders()
                    .create_order(id, new)
                    .await
                    .map_err(|e| TestCaseError::fail(format!("create failed: {e}")))?;
                let split = paygate_engine::domain::FeeSplit::of(order.amount, order.payment_method, &fees);
                orders.push(ModelOrder {
                    id: order.id,
                    ref_code: order.ref_code,
                    amount,
                    net: split.net.get(),
                    status: OrderStatus::Pending,
                    refunded: 0,
                });
            }
            Op::Pay { pick } | Op::Expire { pick } if !orders.is_empty() => {
                let index = pick % orders.len();
                let target = orders[index].clone();
                let stored = engine.orders().order_for(id, &target.ref_code).unwrap();
                let paying = matches!(op, Op::Pay { .. });
                let result = if paying {
                    engine.orders().pay_order(&stored, None).await
                } else {
                    engine.orders().expire_order(&stored).await
                };
                if target.status == OrderStatus::Pending {
                    let changed = result.map_err(|e| TestCaseError::fail(format!("move failed: {e}")))?;
                    let next = if paying {
                        OrderStatus::Paid
                    } else {
                        OrderStatus::Expired
                    };
                    prop_assert_eq!(changed.status, next);
                    if paying {
                        wallet += target.net;
                        // A net of 0 (the fees took it all) posts nothing to the wallet.
                        if target.net > 0 {
                            lines.push((LineType::OrderPayment, target.net));
                        }
                    }
                    orders[index].status = next;
                } else {
                    prop_assert!(matches!(result, Err(EngineError::InvalidStatus(_))), "{:?}", result);
                }
            }
            Op::Refund { pick, amount, key } if !orders.is_empty() => {
                let index = pick % orders.len();
                let target = orders[index].clone();
                let new = engine_setup::refund_request(format!("rk-{key}"), amount);
                let result = engine.orders().create_refund(id, &target.ref_code, new).await;
                if let Some(existing) = refunds.iter().find(|r| r.key == key) {
                    match result {
                        Err(EngineError::DuplicateRefund(found)) => prop_assert_eq!(found.id, existing.id),
                        other => prop_assert!(false, "expected a duplicate, got {:?}", other),
                    }
                } else if !matches!(target.status, OrderStatus::Paid | OrderStatus::PartiallyRefunded) {
                    prop_assert!(matches!(result, Err(EngineError::InvalidStatus(_))), "{:?}", result);
                } else if amount > target.amount - target.refunded {
                    prop_assert!(matches!(result, Err(EngineError::AmountExceedsOrder)), "{:?}", result);
                } else if amount > wallet {
                    prop_assert!(
                        matches!(result, Err(EngineError::Ledger(LedgerError::InsufficientBalance))),
                        "{:?}",
                        result
                    );
                } else {
                    let refund = result.map_err(|e| TestCaseError::fail(format!("refund failed: {e}")))?;
                    prop_assert_eq!(refund.status, RefundStatus::Pending);
                    wallet -= amount;
                    lines.push((LineType::Refund, -amount));
                    orders[index].refunded += amount;
                    orders[index].status = status_for(target.amount, orders[index].refunded);
                    refunds.push(ModelRefund {
                        id: refund.id,
                        order: index,
                        amount,
                        key,
                        status: RefundStatus::Pending,
                    });
                }
            }
            Op::SettleRefund { pick, success } if !refunds.is_empty() => {
                let index = pick % refunds.len();
                let target = refunds[index].clone();
                let outcome = if success {
                    RefundStatus::Success
                } else {
                    RefundStatus::Failed
                };
                let stored = engine.orders().refund_for(id, target.id).unwrap();
                let result = engine.orders().settle_refund(&stored, outcome).await;
                if target.status == RefundStatus::Pending {
                    let settled = result.map_err(|e| TestCaseError::fail(format!("settle failed: {e}")))?;
                    prop_assert_eq!(settled.status, outcome);
                    refunds[index].status = outcome;
                    if !success {
                        wallet += target.amount;
                        lines.push((LineType::RefundReversal, target.amount));
                        let order = &mut orders[target.order];
                        order.refunded -= target.amount;
                        order.status = status_for(order.amount, order.refunded);
                    }
                } else {
                    prop_assert!(matches!(result, Err(EngineError::InvalidStatus(_))), "{:?}", result);
                }
            }
            Op::Restart(kind) => {
                engine_setup::stop_for_restart(engine, kind, dir.path()).await;
                engine = open(dir.path()).await;
            }
            _ => {}
        }
        prop_assert_eq!(engine.merchants().wallet_balance(id).await.unwrap().get(), wallet);
        statement_check::check(&engine, id, &lines, wallet, 1 + lines.len() % 4)?;
        for model in &orders {
            let stored = engine.orders().order_for(id, &model.ref_code).unwrap();
            prop_assert_eq!(stored.id, model.id);
            prop_assert_eq!(stored.status, model.status, "order {}", model.ref_code);
            prop_assert_eq!(stored.refunded_amount.get(), model.refunded);
            prop_assert!(stored.refunded_amount.get() <= stored.amount.get());
        }
        for model in &refunds {
            prop_assert_eq!(engine.orders().refund_for(id, model.id).unwrap().status, model.status);
        }
    }
    engine_setup::finish(engine).await
}

engine_setup::model_property!(
    orders_and_refunds_match_the_model_through_restarts,
    1..50,
    0i64..2_000_000
);
