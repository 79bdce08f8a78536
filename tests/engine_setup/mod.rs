//! What the engine-level tests share: a WALLET merchant made and funded
//! through the engine, a BANK disbursement request, and the end of a
//! property case (a balanced ledger, then a clean shutdown).
#![allow(dead_code)]

use paygate_engine::LimitOverrides;

use paygate_engine::clock::SystemClock;
use paygate_engine::disbursements::NewDisbursement;
use paygate_engine::domain::{MerchantRecord, SettlementType};
use paygate_engine::input::{IdempotencyKey, PositiveAmount};
use paygate_engine::orders::{NewRefund, RefundReason};
use paygate_engine::vendor::SandboxPayoutVendor;
use paygate_engine::{Engine, EngineConfig, MinorUnits, NewMerchant};
use proptest::prelude::*;
use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// A WALLET merchant named `name` with `limits` over the defaults; with
/// `funding`, its wallet credited that much.
pub async fn wallet_merchant(
    engine: &Engine,
    name: &str,
    limits: LimitOverrides,
    funding: Option<i64>,
) -> MerchantRecord {
    let (merchant, _) = engine
        .merchants()
        .create_merchant(NewMerchant {
            limits,
            ..NewMerchant::new(name, SettlementType::Wallet)
        })
        .await
        .unwrap();
    if let Some(funding) = funding {
        engine
            .merchants()
            .credit_wallet(merchant.id, MinorUnits::new(funding), "fund", None)
            .await
            .unwrap();
    }
    merchant
}

/// A BANK disbursement of `amount` to BCA 1234567890 (Budi).
pub fn bank_request(idempotency_key: String, amount: i64) -> NewDisbursement {
    NewDisbursement::to_bank(idempotency_key, "BCA", "1234567890", "Budi", amount).expect("a valid disbursement")
}

/// A refund of `amount` under `idempotency_key`, for the default reason.
pub fn refund_request(idempotency_key: String, amount: i64) -> NewRefund {
    NewRefund {
        amount: PositiveAmount::parse(amount).expect("a positive amount"),
        reason: RefundReason::parse(None, None).expect("the default reason"),
        idempotency_key: IdempotencyKey::parse(idempotency_key).expect("a valid key"),
    }
}

/// A batch's key, checked as the API checks it.
pub fn batch_key(key: String) -> IdempotencyKey {
    IdempotencyKey::parse(key).expect("a valid key")
}

/// Stops `engine` on `data_dir` the way a model's restart `kind` says:
/// 0 a clean shutdown, 1 a halt without checkpoint, 2 that halt with the
/// state directory removed too, so the journal alone must rebuild it (test
/// journals stay in one segment). The caller opens the engine again.
pub async fn stop_for_restart(engine: Engine, kind: u8, data_dir: &Path) {
    if kind == 0 {
        engine.shutdown().await;
    } else {
        engine.halt_without_checkpoint().await;
    }
    drop(engine);
    if kind == 2 {
        std::fs::remove_dir_all(data_dir.join("state")).unwrap();
    }
}

/// The end of a property case: the ledger balances, and the engine stops.
pub async fn finish(engine: Engine) -> Result<(), TestCaseError> {
    let report = engine.merchants().verify_ledger().await.unwrap();
    prop_assert!(report.balanced, "{:?}", report.problems);
    engine.shutdown().await;
    Ok(())
}

/// A sandbox payout vendor that settles nothing by itself (not for an hour).
pub fn idle_sandbox() -> SandboxPayoutVendor {
    SandboxPayoutVendor {
        delay: Duration::from_secs(3600),
    }
}

/// An engine on `dir` checkpointing every 20 ms, with `idle_sandbox` as
/// its payout vendor: outcomes come from the test, no money comes back by itself.
pub async fn open_with_idle_vendor(dir: &Path) -> Engine {
    let mut config = EngineConfig::new(dir);
    config.checkpoint_interval = Duration::from_millis(20);
    config.payout_vendor = Some(Arc::new(idle_sandbox()));
    Engine::open(config, Arc::new(SystemClock)).await.expect("engine opens")
}

/// Runs one property case on a runtime of its own with two workers.
pub fn on_two_workers(case: impl Future<Output = Result<(), TestCaseError>>) -> Result<(), TestCaseError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(case)
}

/// How many cases a property runs: `default`, or `PROPTEST_CASES` where
/// it is set, for a deeper search than the suite's (say 1000 before a
/// release). An explicit `cases` in a proptest config would override it.
pub fn property_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(default)
}

/// The property of a model test: `$name` runs `run(ops, funding)` (the
/// caller's `run` and `op`) on two workers for 16 cases (or
/// `PROPTEST_CASES`), `ops` a sequence of `$count` operations and `funding`
/// drawn from `$funding`.
#[allow(unused_macros)]
macro_rules! model_property {
    ($name:ident, $count:expr, $funding:expr) => {
        proptest! {
            #![proptest_config(ProptestConfig { cases: engine_setup::property_cases(16), .. ProptestConfig::default() })]

            #[test]
            fn $name(ops in prop::collection::vec(op(), $count), funding in $funding) {
                engine_setup::on_two_workers(run(ops, funding))?;
            }
        }
    };
}
#[allow(unused_imports)]
pub(crate) use model_property;
