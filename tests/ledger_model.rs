//! Property test: random credits, debits (some refused), reversals, reused
//! idempotency keys and restarts, against a simple reference model. After
//! every step the engine's answer matches the model; after every restart the
//! books rebuilt from disk equal the live ones; the ledger always verifies.

#[path = "engine_setup/mod.rs"]
mod engine_setup;

use paygate_engine::clock::SystemClock;
use paygate_engine::domain::SettlementType;
use paygate_engine::ledger::{self, Account, LedgerError, MerchantBook};
use paygate_engine::{Engine, EngineConfig, EngineError, MinorUnits, NewMerchant};
use proptest::prelude::*;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

const MERCHANTS: usize = 3;

#[derive(Debug, Clone, Copy)]
enum RestartKind {
    /// Shutdown with a final checkpoint.
    Clean,
    /// No final checkpoint: the next open replays the journal onto sled.
    NoCheckpoint,
    /// sled's state is lost entirely (as if nothing of it reached the disk):
    /// everything is rebuilt from the journal alone. Valid here because test
    /// journals never grow past one segment, so none has been dropped.
    LoseState,
}

#[derive(Debug, Clone)]
enum Op {
    Credit {
        merchant: usize,
        amount: i64,
        key: Option<u8>,
    },
    Debit {
        merchant: usize,
        amount: i64,
        key: Option<u8>,
    },
    Reverse {
        merchant: usize,
        pick: usize,
    },
    Restart(RestartKind),
}

fn op() -> impl Strategy<Value = Op> {
    let key = prop::option::of(0u8..6);
    prop_oneof![
        4 => (0..MERCHANTS, 1i64..10_000, key.clone()).prop_map(|(merchant, amount, key)| Op::Credit { merchant, amount, key }),
        4 => (0..MERCHANTS, 1i64..15_000, key).prop_map(|(merchant, amount, key)| Op::Debit { merchant, amount, key }),
        2 => (0..MERCHANTS, 0usize..64).prop_map(|(merchant, pick)| Op::Reverse { merchant, pick }),
        1 => prop_oneof![Just(RestartKind::Clean), Just(RestartKind::NoCheckpoint), Just(RestartKind::LoseState)]
            .prop_map(Op::Restart),
    ]
}

#[derive(Debug, Clone)]
struct ModelEntry {
    /// Effect on the wallet.
    wallet_delta: i64,
    is_reversal: bool,
    reversed: bool,
}

#[derive(Debug, Default, Clone)]
struct ModelMerchant {
    wallet: i64,
    funding: i64,
    payout_clearing: i64,
    entries: Vec<ModelEntry>,
    keys: std::collections::HashSet<String>,
}

impl ModelMerchant {
    fn record(&mut self, wallet_delta: i64, funding_delta: i64, payout_delta: i64, is_reversal: bool) {
        self.wallet += wallet_delta;
        self.funding += funding_delta;
        self.payout_clearing += payout_delta;
        self.entries.push(ModelEntry {
            wallet_delta,
            is_reversal,
            reversed: false,
        });
    }
}

async fn open(dir: &Path) -> Engine {
    let mut config = EngineConfig::new(dir);
    // Checkpoints race with the operations on purpose.
    config.checkpoint_interval = Duration::from_millis(15);
    // A tiny key memory forces lookups through the overlay and the entry key runs.
    config.idempotency_keys_in_memory = 3;
    Engine::open(config, Arc::new(SystemClock)).await.expect("engine opens")
}

fn key_name(key: Option<u8>) -> Option<String> {
    key.map(|k| format!("key-{k}"))
}

fn check_book(book: &MerchantBook, model: &ModelMerchant) -> Result<(), TestCaseError> {
    prop_assert_eq!(book.balance(Account::Wallet).get(), model.wallet);
    prop_assert_eq!(book.balance(Account::Funding).get(), model.funding);
    prop_assert_eq!(book.balance(Account::PayoutClearing).get(), model.payout_clearing);
    prop_assert_eq!(book.last_seq, model.entries.len() as u64);
    prop_assert!(book.balance(Account::Wallet).get() >= 0);
    prop_assert_eq!(book.total(), 0);
    Ok(())
}

/// The refusal of a key the merchant already used.
fn expect_duplicate<T: std::fmt::Debug>(result: &Result<T, EngineError>) -> Result<(), TestCaseError> {
    prop_assert!(
        matches!(
            result,
            Err(EngineError::Ledger(LedgerError::DuplicateIdempotencyKey(_)))
        ),
        "{:?}",
        result
    );
    Ok(())
}

fn expect_refusal(
    result: Result<paygate_engine::PostReceipt, EngineError>,
    want: LedgerError,
) -> Result<(), TestCaseError> {
    match result {
        Err(EngineError::Ledger(got)) => prop_assert_eq!(got, want),
        other => prop_assert!(false, "expected {:?}, got {:?}", want, other),
    }
    Ok(())
}

async fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = open(dir.path()).await;
    let mut ids: Vec<Uuid> = Vec::new();
    for index in 0..MERCHANTS {
        let (merchant, _) = engine
            .merchants()
            .create_merchant(NewMerchant::new(format!("m{index}"), SettlementType::Wallet))
            .await
            .unwrap();
        ids.push(merchant.id);
    }
    let mut model = vec![ModelMerchant::default(); MERCHANTS];

    for op in ops {
        match op {
            Op::Credit { merchant, amount, key } => {
                let m = &mut model[merchant];
                let result = engine
                    .merchants()
                    .credit_wallet(ids[merchant], MinorUnits::new(amount), "credit", key_name(key))
                    .await;
                let name = key_name(key);
                if let Some(k) = name.as_ref().filter(|k| m.keys.contains(*k)) {
                    let _ = k;
                    expect_duplicate(&result)?;
                } else {
                    let receipt = result.map_err(|e| TestCaseError::fail(format!("credit failed: {e}")))?;
                    m.record(amount, -amount, 0, false);
                    if let Some(k) = name {
                        m.keys.insert(k);
                    }
                    prop_assert_eq!(receipt.wallet_balance.get(), m.wallet);
                    prop_assert_eq!(receipt.seq, m.entries.len() as u64);
                }
            }
            Op::Debit { merchant, amount, key } => {
                let m = &mut model[merchant];
                let name = key_name(key).map(|k| format!("debit-{k}"));
                let proposal = ledger::wallet_debit(MinorUnits::new(amount), "debit".into(), name.clone());
                let result = engine.merchants().post_entry(ids[merchant], proposal).await;
                if name.as_ref().is_some_and(|k| m.keys.contains(k)) {
                    expect_duplicate(&result)?;
                } else if amount > m.wallet {
                    expect_refusal(result, LedgerError::InsufficientBalance)?;
                } else {
                    let receipt = result.map_err(|e| TestCaseError::fail(format!("debit failed: {e}")))?;
                    m.record(-amount, 0, amount, false);
                    if let Some(k) = name {
                        m.keys.insert(k);
                    }
                    prop_assert_eq!(receipt.wallet_balance.get(), m.wallet);
                }
            }
            Op::Reverse { merchant, pick } => {
                let m = &mut model[merchant];
                let seq = (pick % (m.entries.len() + 1)) as u64;
                let result = engine.merchants().reverse_entry(ids[merchant], seq, "reverse").await;
                if seq == 0 {
                    expect_refusal(result, LedgerError::EntryNotFound(0))?;
                    continue;
                }
                let original = m.entries[seq as usize - 1].clone();
                if original.is_reversal {
                    expect_refusal(result, LedgerError::ReversalOfReversal(seq))?;
                } else if original.reversed {
                    expect_duplicate(&result)?;
                } else if m.wallet - original.wallet_delta < 0 {
                    expect_refusal(result, LedgerError::InsufficientBalance)?;
                } else {
                    let receipt = result.map_err(|e| TestCaseError::fail(format!("reversal failed: {e}")))?;
                    let delta = -original.wallet_delta;
                    // A reversed credit gives back funding; a reversed debit takes back the payout.
                    if original.wallet_delta > 0 {
                        m.record(delta, -delta, 0, true);
                    } else {
                        m.record(delta, 0, -delta, true);
                    }
                    m.entries[seq as usize - 1].reversed = true;
                    prop_assert_eq!(receipt.wallet_balance.get(), m.wallet);
                }
            }
            Op::Restart(kind) => {
                let mut live = Vec::new();
                for id in &ids {
                    live.push(engine.merchants().book(*id).await.unwrap());
                }
                match kind {
                    RestartKind::Clean => engine.shutdown().await,
                    RestartKind::NoCheckpoint | RestartKind::LoseState => engine.halt_without_checkpoint().await,
                }
                drop(engine);
                if let RestartKind::LoseState = kind {
                    std::fs::remove_dir_all(dir.path().join("state")).unwrap();
                }
                engine = open(dir.path()).await;
                for (index, id) in ids.iter().enumerate() {
                    let rebuilt = engine.merchants().book(*id).await.unwrap();
                    prop_assert_eq!(
                        &rebuilt,
                        &live[index],
                        "book rebuilt from disk differs from the live one"
                    );
                }
            }
        }
    }

    for (index, id) in ids.iter().enumerate() {
        check_book(&engine.merchants().book(*id).await.unwrap(), &model[index])?;
    }
    let report = engine.merchants().verify_ledger().await.unwrap();
    prop_assert!(report.balanced, "{:?}", report.problems);
    let total_entries: usize = model.iter().map(|m| m.entries.len()).sum();
    prop_assert_eq!(report.entries, total_entries as u64);
    engine.shutdown().await;
    Ok(())
}

proptest! {
    // `PROPTEST_CASES` runs a deeper search than the suite's 24 cases.
    #![proptest_config(ProptestConfig { cases: engine_setup::property_cases(24), .. ProptestConfig::default() })]

    #[test]
    fn ledger_matches_the_reference_model_across_restarts(ops in prop::collection::vec(op(), 1..48)) {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(run(ops))?;
    }
}
