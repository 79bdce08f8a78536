//! Property test: random disbursements (some refused for balance or limit),
//! vendor failures and successes, operator rejections, reused keys and
//! restarts, against a model of the wallet. The wallet always equals the
//! model, money comes back exactly once per failed or rejected disbursement,
//! its statement (`GET /v1/balance/history`) is exactly the model's lines
//! and chains to it, and the ledger verifies.

#[path = "statement_check/mod.rs"]
mod statement_check;

#[path = "engine_setup/mod.rs"]
mod engine_setup;
use paygate_engine::disbursements::NewDisbursement;
use paygate_engine::domain::DisbursementStatus;
use paygate_engine::ledger::statement::LineType;
use paygate_engine::ledger::LedgerError;
use paygate_engine::{Engine, EngineError};
use paygate_engine::{LimitField, LimitOverrides};
use proptest::prelude::*;
use std::path::Path;
use uuid::Uuid;

const FEE: i64 = 250_000;
const PER_TRANSACTION: i64 = 1_000_000;
const REVIEW_THRESHOLD: i64 = 800_000;

#[derive(Debug, Clone)]
enum Op {
    Create {
        amount: i64,
        key: u16,
    },
    /// Several created at once (keys of their own); which fit the wallet
    /// depends on the order the merchant's actor takes them in.
    Concurrent {
        amounts: Vec<i64>,
    },
    Fail {
        pick: usize,
    },
    Succeed {
        pick: usize,
    },
    Reject {
        pick: usize,
    },
    /// 0: clean; 1: no final checkpoint (replay); 2: sled state lost (journal only).
    Restart(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (1i64..1_200_000, 0u16..12).prop_map(|(amount, key)| Op::Create { amount, key }),
        1 => prop::collection::vec(1i64..700_000, 2..5).prop_map(|amounts| Op::Concurrent { amounts }),
        2 => any::<usize>().prop_map(|pick| Op::Fail { pick }),
        2 => any::<usize>().prop_map(|pick| Op::Succeed { pick }),
        2 => any::<usize>().prop_map(|pick| Op::Reject { pick }),
        1 => (0u8..3).prop_map(Op::Restart),
    ]
}

#[derive(Debug, Clone)]
struct ModelDisbursement {
    id: Uuid,
    key: u16,
    amount: i64,
    final_status: Option<DisbursementStatus>,
}

async fn open(dir: &Path) -> Engine {
    engine_setup::open_with_idle_vendor(dir).await
}

fn bank(key: u16, amount: i64) -> NewDisbursement {
    engine_setup::bank_request(format!("key-{key}"), amount)
}

async fn run(ops: Vec<Op>, funding: i64) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = open(dir.path()).await;
    let limits = LimitOverrides::parse([
        (LimitField::PerTransactionMinor, Some(PER_TRANSACTION)),
        (LimitField::ReviewThresholdMinor, Some(REVIEW_THRESHOLD)),
    ])
    .expect("valid limits");
    let id = engine_setup::wallet_merchant(&engine, "m", limits, Some(funding))
        .await
        .id;
    let mut wallet = funding;
    let mut lines = vec![(LineType::WalletCredit, funding)];
    let mut made: Vec<ModelDisbursement> = Vec::new();

    for op in ops {
        match op {
            Op::Create { amount, key } => {
                let result = engine.disbursements().create_disbursement(id, bank(key, amount)).await;
                if let Some(existing) = made.iter().find(|d| d.key == key) {
                    match result {
                        Err(EngineError::DuplicateDisbursement(found)) => prop_assert_eq!(found.id, existing.id),
                        other => prop_assert!(false, "expected a duplicate, got {:?}", other),
                    }
                } else if amount > PER_TRANSACTION {
                    prop_assert!(matches!(result, Err(EngineError::AmountExceedsLimit)), "{:?}", result);
                } else if amount + FEE > wallet {
                    prop_assert!(
                        matches!(result, Err(EngineError::Ledger(LedgerError::InsufficientBalance))),
                        "{:?}",
                        result
                    );
                } else {
                    let created = result.map_err(|e| TestCaseError::fail(format!("create failed: {e}")))?;
                    prop_assert_eq!(created.status, DisbursementStatus::Pending);
                    prop_assert_eq!(created.final_amount.get(), amount + FEE);
                    wallet -= amount + FEE;
                    lines.extend([(LineType::Disbursement, -amount), (LineType::DisbursementFee, -FEE)]);
                    made.push(ModelDisbursement {
                        id: created.id,
                        key,
                        amount,
                        final_status: None,
                    });
                }
            }
            Op::Concurrent { amounts } => {
                let first_key = 1_000 + made.len() as u16 * 8;
                let creations = amounts.iter().enumerate().map(|(n, amount)| {
                    let engine = engine.clone();
                    let new = bank(first_key + n as u16, *amount);
                    async move { engine.disbursements().create_disbursement(id, new).await }
                });
                let results = futures::future::join_all(creations).await;
                let mut created = Vec::new();
                let mut refused = Vec::new();
                for (n, result) in results.into_iter().enumerate() {
                    match result {
                        Ok(disbursement) => {
                            wallet -= amounts[n] + FEE;
                            prop_assert!(wallet >= 0, "a concurrent creation overdrew the wallet");
                            created.push((disbursement.debit_seq, first_key + n as u16, disbursement));
                        }
                        Err(EngineError::Ledger(LedgerError::InsufficientBalance)) => refused.push(amounts[n]),
                        Err(other) => prop_assert!(false, "{:?}", other),
                    }
                }
                // A refused one met the wallet as the others it came after
                // left it, which held at least what is left after all.
                for amount in refused {
                    prop_assert!(amount + FEE > wallet, "refused {} yet {} is left", amount, wallet);
                }
                // Their lines follow the order the actor debited them in.
                created.sort_by_key(|(seq, _, _)| *seq);
                for (_, key, disbursement) in created {
                    let amount = disbursement.request_amount.get();
                    lines.extend([(LineType::Disbursement, -amount), (LineType::DisbursementFee, -FEE)]);
                    made.push(ModelDisbursement {
                        id: disbursement.id,
                        key,
                        amount,
                        final_status: None,
                    });
                }
            }
            Op::Fail { pick } | Op::Succeed { pick } if !made.is_empty() => {
                let index = pick % made.len();
                let target = made[index].clone();
                let outcome = if matches!(op, Op::Fail { .. }) {
                    DisbursementStatus::Failed
                } else {
                    DisbursementStatus::Success
                };
                let result = engine
                    .disbursements()
                    .complete_disbursement(id, &target.id.to_string(), outcome)
                    .await;
                // Small ones go PENDING -> ON_PROCESS -> outcome; large ones wait IN_REVIEW.
                let settleable = target.final_status.is_none() && target.amount < REVIEW_THRESHOLD;
                // A large one is PENDING for an instant, then IN_REVIEW: completing
                // it is refused once it is IN_REVIEW, and allowed before.
                let done = changed(result, settleable, target.final_status.is_some(), "complete")?;
                if let Some(done) = done {
                    prop_assert_eq!(done.status, outcome);
                    if outcome == DisbursementStatus::Failed {
                        give_back(&mut wallet, &mut lines, target.amount);
                    }
                    made[index].final_status = Some(outcome);
                }
            }
            Op::Reject { pick } if !made.is_empty() => {
                let index = pick % made.len();
                let target = made[index].clone();
                let result = engine.disbursements().reject_disbursement(target.id, None).await;
                // A small one may still be PENDING (rejectable) or already ON_PROCESS.
                let rejectable = target.final_status.is_none() && target.amount >= REVIEW_THRESHOLD;
                let done = changed(result, rejectable, target.final_status.is_some(), "reject")?;
                if let Some(done) = done {
                    prop_assert_eq!(done.status, DisbursementStatus::Rejected);
                    give_back(&mut wallet, &mut lines, target.amount);
                    made[index].final_status = Some(DisbursementStatus::Rejected);
                }
            }
            Op::Restart(kind) => {
                engine_setup::stop_for_restart(engine, kind, dir.path()).await;
                engine = open(dir.path()).await;
                for made in &made {
                    let stored = engine.disbursements().disbursement_for(id, &made.id.to_string());
                    let stored = stored.map_err(|e| TestCaseError::fail(format!("{} lost: {e}", made.id)))?;
                    if let Some(status) = made.final_status {
                        prop_assert_eq!(stored.status, status);
                    }
                }
            }
            _ => {}
        }
        prop_assert_eq!(engine.merchants().wallet_balance(id).await.unwrap().get(), wallet);
        statement_check::check(&engine, id, &lines, wallet, 1 + lines.len() % 5)?;
    }
    engine_setup::finish(engine).await
}

/// What a change to a disbursement did: when it `must` go through, the
/// changed disbursement (failing the case naming `what` otherwise); once
/// the disbursement `is_final`, nothing (refused as `InvalidStatus`);
/// else either.
fn changed<T: std::fmt::Debug>(
    result: Result<T, EngineError>,
    must: bool,
    is_final: bool,
    what: &str,
) -> Result<Option<T>, TestCaseError> {
    if must {
        return Ok(Some(
            result.map_err(|e| TestCaseError::fail(format!("{what} failed: {e}")))?,
        ));
    }
    if is_final {
        prop_assert!(matches!(result, Err(EngineError::InvalidStatus(_))), "{:?}", result);
        return Ok(None);
    }
    match result {
        Err(EngineError::InvalidStatus(_)) => Ok(None),
        Ok(done) => Ok(Some(done)),
        Err(other) => {
            prop_assert!(false, "{:?}", other);
            Ok(None)
        }
    }
}

/// The model's reversal of a failed or rejected disbursement: its amount
/// and fee back in the wallet, as one line.
fn give_back(wallet: &mut i64, lines: &mut Vec<(LineType, i64)>, amount: i64) {
    *wallet += amount + FEE;
    lines.push((LineType::DisbursementReversal, amount + FEE));
}

engine_setup::model_property!(
    wallet_matches_the_model_through_disbursement_lifecycles_and_restarts,
    1..40,
    1_000_000i64..6_000_000
);
