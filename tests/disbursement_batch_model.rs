//! Property test: random disbursement batches (items valid, invalid,
//! unreadable, over the per-transaction limit, over the balance, reusing
//! keys of earlier items or batches), replayed batch keys and restarts,
//! against a model of the wallet and the keys. Each item comes to what the
//! model says, a batch debits exactly the sum of its accepted items
//! (request + fee), a replay moves nothing and answers as the first time,
//! and the ledger stays balanced.

#[path = "engine_setup/mod.rs"]
mod engine_setup;
use paygate_engine::disbursements::{BatchAnswer, NewDisbursement};
use paygate_engine::ledger::LedgerError;
use paygate_engine::{Engine, EngineError};
use paygate_engine::{LimitField, LimitOverrides};
use proptest::prelude::*;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use uuid::Uuid;

const FEE: i64 = 250_000;
const PER_TRANSACTION: i64 = 1_000_000;

#[derive(Debug, Clone)]
enum Item {
    /// A bank disbursement under item key `key`.
    Bank { key: u8, amount: i64 },
    /// What the caller could not read as a disbursement body.
    Unreadable,
}

#[derive(Debug, Clone)]
enum Op {
    Batch {
        key: u8,
        items: Vec<Item>,
    },
    /// 0: clean; 1: no final checkpoint (replay); 2: sled state lost (journal only).
    Restart(u8),
}

fn item() -> impl Strategy<Value = Item> {
    let amount = prop_oneof![
        1 => -5i64..=0,
        8 => 1i64..=PER_TRANSACTION,
        1 => PER_TRANSACTION + 1..2 * PER_TRANSACTION,
    ];
    prop_oneof![
        12 => (0u8..40, amount).prop_map(|(key, amount)| Item::Bank { key, amount }),
        1 => Just(Item::Unreadable),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..5, prop::collection::vec(item(), 1..25)).prop_map(|(key, items)| Op::Batch { key, items }),
        1 => (0u8..3).prop_map(Op::Restart),
    ]
}

/// What an item came to, as the model predicts it and as the engine says it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Created(Uuid),
    Invalid,
    Duplicate(Uuid),
    OverLimit,
    Insufficient,
    Other(String),
}

fn outcome_of(item: &Result<Arc<paygate_engine::domain::Disbursement>, EngineError>) -> Outcome {
    match item {
        Ok(disbursement) => Outcome::Created(disbursement.id),
        Err(EngineError::InvalidInput { .. }) => Outcome::Invalid,
        Err(EngineError::DuplicateDisbursement(existing)) => Outcome::Duplicate(existing.id),
        Err(EngineError::AmountExceedsLimit) => Outcome::OverLimit,
        Err(EngineError::Ledger(LedgerError::InsufficientBalance)) => Outcome::Insufficient,
        Err(other) => Outcome::Other(other.to_string()),
    }
}

async fn open(dir: &Path) -> Engine {
    engine_setup::open_with_idle_vendor(dir).await
}

fn requests(items: &[Item]) -> Vec<Result<NewDisbursement, EngineError>> {
    items
        .iter()
        .map(|item| match item {
            Item::Bank { key, amount } => {
                NewDisbursement::to_bank(format!("item-{key}"), "BCA", "1234567890", "Budi", *amount)
            }
            Item::Unreadable => Err(EngineError::invalid("item", "must be a JSON object")),
        })
        .collect()
}

async fn run(ops: Vec<Op>, funding: i64) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = open(dir.path()).await;
    let limits =
        LimitOverrides::parse([(LimitField::PerTransactionMinor, Some(PER_TRANSACTION))]).expect("valid limits");
    let id = engine_setup::wallet_merchant(&engine, "m", limits, Some(funding))
        .await
        .id;
    let mut wallet = funding;
    // Item key -> the disbursement holding it; batch key -> (id, outcomes).
    let mut keys: HashMap<u8, Uuid> = HashMap::new();
    let mut batches: HashMap<u8, (Uuid, Vec<Outcome>)> = HashMap::new();

    for op in ops {
        match op {
            Op::Batch { key, items } => {
                let before = engine.merchants().wallet_balance(id).await.unwrap().get();
                let answer: BatchAnswer = engine
                    .disbursements()
                    .create_disbursement_batch(id, engine_setup::batch_key(format!("batch-{key}")), requests(&items))
                    .await
                    .map_err(|e| TestCaseError::fail(format!("batch refused whole: {e}")))?;
                let after = engine.merchants().wallet_balance(id).await.unwrap().get();
                let got: Vec<Outcome> = answer.items.iter().map(outcome_of).collect();
                if let Some((first_id, first)) = batches.get(&key) {
                    prop_assert!(answer.replayed);
                    prop_assert_eq!(answer.id, *first_id);
                    prop_assert_eq!(&got, first);
                    prop_assert_eq!(after, before, "a replay moves no money");
                    continue;
                }
                prop_assert!(!answer.replayed);
                prop_assert_eq!(got.len(), items.len());
                let mut debited = 0;
                for ((item, got), answered) in items.iter().zip(&got).zip(&answer.items) {
                    let expected = match item {
                        Item::Unreadable => Outcome::Invalid,
                        Item::Bank { amount, .. } if *amount < 1 => Outcome::Invalid,
                        Item::Bank { key, .. } if keys.contains_key(key) => Outcome::Duplicate(keys[key]),
                        Item::Bank { amount, .. } if *amount > PER_TRANSACTION => Outcome::OverLimit,
                        Item::Bank { amount, .. } if amount + FEE > wallet => Outcome::Insufficient,
                        Item::Bank { key, amount } => {
                            let Outcome::Created(created) = got else {
                                return Err(TestCaseError::fail(format!("expected {item:?} created, got {got:?}")));
                            };
                            let disbursement = answered.as_ref().unwrap();
                            prop_assert_eq!(disbursement.request_amount.get(), *amount);
                            prop_assert_eq!(disbursement.final_amount.get(), amount + FEE);
                            debited += disbursement.final_amount.get();
                            wallet -= amount + FEE;
                            keys.insert(*key, *created);
                            Outcome::Created(*created)
                        }
                    };
                    prop_assert_eq!(got, &expected, "item {:?}", item);
                }
                // The batch debited exactly its accepted items' final amounts.
                prop_assert_eq!(before - after, debited);
                batches.insert(key, (answer.id, got));
                let summary = engine.disbursements().disbursement_batch_for(id, answer.id).unwrap();
                let accepted = answer.items.iter().filter(|item| item.is_ok()).count();
                prop_assert_eq!(summary.accepted, accepted);
                prop_assert_eq!(summary.refused, items.len() - accepted);
                let requested: i64 = summary.by_status.iter().map(|(_, total)| total.amount_minor).sum();
                prop_assert_eq!(requested + FEE * accepted as i64, debited);
            }
            Op::Restart(kind) => {
                engine_setup::stop_for_restart(engine, kind, dir.path()).await;
                engine = open(dir.path()).await;
                for (first_id, _) in batches.values() {
                    let found = engine.disbursements().disbursement_batch_for(id, *first_id);
                    prop_assert!(found.is_ok(), "batch {} lost: {:?}", first_id, found);
                }
            }
        }
        prop_assert_eq!(engine.merchants().wallet_balance(id).await.unwrap().get(), wallet);
    }
    engine_setup::finish(engine).await
}

engine_setup::model_property!(
    a_batch_debits_exactly_its_accepted_items_and_the_ledger_stays_balanced,
    1..16,
    1_000_000i64..30_000_000
);
