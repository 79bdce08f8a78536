//! Property test of paying out exactly once: disbursements go
//! to an in-process payout vendor answering as each case scripts it (taken,
//! refused, unknown, hanging), and the engine is crashed at random points,
//! vendor calls included. The vendor's own record is the model: a payout is
//! never submitted again unless the vendor said 404 to an inquiry in between,
//! every acknowledged disbursement survives, each ends in the vendor's final
//! status, and the wallet and the ledger agree. This file holds the cases,
//! the engine's lives and the check; vendor.rs the scripted vendor.

#[path = "../engine_setup/mod.rs"]
mod engine_setup;
mod vendor;

use futures::future::BoxFuture;
use paygate_engine::clock::SystemClock;
use paygate_engine::disbursements::NewDisbursement;
use paygate_engine::domain::{Destination, Disbursement, DisbursementStatus, SettlementType};
use paygate_engine::vendor::{AccountCheck, Inquiry, PayoutReport, PayoutStatus, PayoutVendor, Submission};
use paygate_engine::{Engine, EngineConfig, MinorUnits, NewMerchant};
use paygate_engine::{LimitField, LimitOverrides};
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestRunner};
use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use uuid::Uuid;
use vendor::*;

const VENDOR: &str = "scripted";
/// The engine gives a call this plus one second before it counts as unanswered.
const VENDOR_TIMEOUT: Duration = Duration::from_millis(50);
/// The inquiry schedule (1, 5, 15 min, then hourly; 10 s after an unknown
/// answer) shrunk to 12, 60, 180 ms, then every 720 ms; 2 ms.
const RETRY_SCALE: f64 = 0.0002;
/// Never the limit: only the vendor decides what comes back.
const FUNDING: i64 = 1_000_000_000_000;
/// Every request amount stays below the review threshold, so each one goes
/// straight to the vendor.
const AMOUNT_MAX: i64 = 1_000_000;
/// How long the engine may take to finish every payout once the vendor is
/// honest (it takes under 3 s: a hang's 1.05 s, then an inquiry every 720 ms).
const SETTLE_TIMEOUT: Duration = Duration::from_secs(15);
/// A bound on each engine call, so a wedged engine fails the case instead of hanging.
const CALL_TIMEOUT: Duration = Duration::from_secs(20);

/// A vendor's final status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Final {
    Success,
    Failed,
}

/// How the vendor answers one submit of a payout it does not hold.
#[derive(Clone, Copy, Debug)]
enum Answer {
    /// 2xx ACCEPTED: taken, to end as planned when decided.
    Accepted(Final),
    /// 2xx SUCCESS: taken and paid.
    Success,
    /// 2xx FAILED: taken and failed.
    Failed,
    /// 4xx: refused, not taken.
    Refused,
    /// 5xx after taking it.
    UnknownTaken(Final),
    /// 5xx without taking it.
    UnknownUntaken,
    /// Taken, and never answered.
    HangTaken(Final),
    /// Never answered, not taken.
    HangUntaken,
}

/// How the vendor answers one inquiry instead of the truth.
#[derive(Clone, Copy, Debug)]
enum InquiryFault {
    Unknown,
    Hang,
}

#[derive(Clone, Debug)]
enum Op {
    Create {
        amount: i64,
    },
    /// Answers for the next submits, first first.
    Answers(Vec<Answer>),
    InquiryFaults(Vec<InquiryFault>),
    /// Crashes the engine now, whatever it is doing.
    CrashNow,
    /// The next vendor call never returns and the engine is crashed before it
    /// could record anything; a submit is taken first when `taken` is set.
    CrashAtNextCall {
        taken: Option<Final>,
    },
    /// The vendor settles one payout it holds as ACCEPTED.
    Decide {
        pick: usize,
    },
    Wait {
        ms: u64,
    },
}

#[derive(Clone, Debug)]
struct Case {
    /// How the vendor answers when nothing is scripted, and once it is honest.
    usual: Answer,
    ops: Vec<Op>,
}

fn final_status() -> impl Strategy<Value = Final> {
    prop_oneof![3 => Just(Final::Success), 1 => Just(Final::Failed)]
}

fn answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        4 => final_status().prop_map(Answer::Accepted),
        3 => Just(Answer::Success),
        1 => Just(Answer::Failed),
        2 => Just(Answer::Refused),
        2 => final_status().prop_map(Answer::UnknownTaken),
        2 => Just(Answer::UnknownUntaken),
        // A hang costs the engine a second: rare.
        1 => prop_oneof![final_status().prop_map(Answer::HangTaken), Just(Answer::HangUntaken)],
    ]
}

fn usual_answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        final_status().prop_map(Answer::Accepted),
        Just(Answer::Success),
        Just(Answer::Failed),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (1..AMOUNT_MAX).prop_map(|amount| Op::Create { amount }),
        4 => prop::collection::vec(answer(), 1..5).prop_map(Op::Answers),
        2 => prop::collection::vec(
            prop_oneof![4 => Just(InquiryFault::Unknown), 1 => Just(InquiryFault::Hang)],
            1..4
        )
        .prop_map(Op::InquiryFaults),
        1 => Just(Op::CrashNow),
        2 => prop::option::of(final_status()).prop_map(|taken| Op::CrashAtNextCall { taken }),
        2 => (0usize..16).prop_map(|pick| Op::Decide { pick }),
        3 => (0u64..150).prop_map(|ms| Op::Wait { ms }),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (usual_answer(), prop::collection::vec(op(), 1..25)).prop_map(|(usual, ops)| Case { usual, ops })
}

/// What the cases exercised, summed over all of them.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    disbursements: u64,
    submits: u64,
    resubmits_after_404: u64,
    inquiries: u64,
    not_received: u64,
    refusals: u64,
    unknowns: u64,
    hangs: u64,
    crashes: u64,
    crashes_in_submit_taken: u64,
    crashes_in_submit_untaken: u64,
    crashes_in_inquiry: u64,
    ended_success: u64,
    ended_failed: u64,
}

impl Tally {
    fn add(&mut self, other: &Tally) {
        self.disbursements += other.disbursements;
        self.submits += other.submits;
        self.resubmits_after_404 += other.resubmits_after_404;
        self.inquiries += other.inquiries;
        self.not_received += other.not_received;
        self.refusals += other.refusals;
        self.unknowns += other.unknowns;
        self.hangs += other.hangs;
        self.crashes += other.crashes;
        self.crashes_in_submit_taken += other.crashes_in_submit_taken;
        self.crashes_in_submit_untaken += other.crashes_in_submit_untaken;
        self.crashes_in_inquiry += other.crashes_in_inquiry;
        self.ended_success += other.ended_success;
        self.ended_failed += other.ended_failed;
    }
}

/// An acknowledged disbursement.
#[derive(Clone, Debug)]
struct Made {
    id: Uuid,
    amount: i64,
    final_amount: i64,
}

/// One life of the engine, on a runtime of its own so it can die at once.
struct Running {
    runtime: tokio::runtime::Runtime,
    engine: Engine,
}

impl Running {
    fn open(dir: &Path, vendor: &Arc<ScriptedVendor>) -> Result<Running, TestCaseError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let mut config = EngineConfig::new(dir);
        config.checkpoint_interval = Duration::from_millis(20);
        config.payout_vendor = Some(vendor.clone() as Arc<dyn PayoutVendor>);
        config.vendor_retry_scale = RETRY_SCALE;
        let engine = runtime
            .block_on(Engine::open(config, Arc::new(SystemClock)))
            .map_err(|e| TestCaseError::fail(format!("engine does not open: {e}")))?;
        Ok(Running { runtime, engine })
    }

    fn call<T>(&self, call: impl std::future::Future<Output = T>) -> Result<T, TestCaseError> {
        self.runtime
            .block_on(async { tokio::time::timeout(CALL_TIMEOUT, call).await })
            .map_err(|_| TestCaseError::fail(format!("an engine call took over {CALL_TIMEOUT:?}")))
    }

    /// Sleeps, waking early when a vendor call waits for a crash.
    fn wait(&self, vendor: &ScriptedVendor, duration: Duration) {
        self.runtime.block_on(async {
            tokio::select! {
                _ = tokio::time::sleep(duration) => {}
                _ = vendor.crashing.notified() => {}
            }
        });
    }

    /// Kills every task mid-step: no shutdown, no final checkpoint. Dropping
    /// the runtime ends the engine's tasks; its journal threads finish what
    /// was queued, whose records hold the store (and so sled's lock) until
    /// applied, so the next open waits for them.
    fn crash(self) {
        let Running { runtime, engine } = self;
        drop(engine);
        drop(runtime);
    }
}

/// Crashes and reopens; every acknowledged disbursement is still there.
fn restart(
    running: Running,
    dir: &Path,
    vendor: &Arc<ScriptedVendor>,
    merchant_id: Uuid,
    made: &[Made],
) -> Result<Running, TestCaseError> {
    running.crash();
    {
        let mut truth = vendor.truth();
        truth.tally.crashes += 1;
        truth.crash_requested = false;
        truth.crash_at_next_call = None;
    }
    let running = Running::open(dir, vendor)?;
    for ack in made {
        let stored = running
            .engine
            .disbursements()
            .disbursement_for(merchant_id, &ack.id.to_string())
            .map_err(|e| TestCaseError::fail(format!("acknowledged {} lost in a crash: {e}", ack.id)))?;
        prop_assert_eq!(stored.request_amount.get(), ack.amount);
        prop_assert_eq!(stored.final_amount.get(), ack.final_amount);
    }
    Ok(running)
}

/// A final status only ever comes from the vendor: none is reached on a guess.
fn check_no_guess(
    running: &Running,
    vendor: &ScriptedVendor,
    merchant_id: Uuid,
    made: &[Made],
) -> Result<(), TestCaseError> {
    for ack in made {
        let status = running
            .engine
            .disbursements()
            .disbursement_for(merchant_id, &ack.id.to_string())
            .map_err(|e| TestCaseError::fail(format!("{} unreadable: {e}", ack.id)))?
            .status;
        prop_assert!(
            !matches!(status, DisbursementStatus::InReview | DisbursementStatus::Rejected),
            "{} is {:?}",
            ack.id,
            status
        );
        if status.is_terminal() {
            // Read after the engine's status: the vendor's truth only moves on.
            let truth = vendor.truth();
            let payout = truth.payouts.get(&ack.id).cloned().unwrap_or_default();
            prop_assert_eq!(
                Some(status),
                payout.expected(),
                "{}: the vendor has {:?}",
                ack.id,
                payout
            );
        }
    }
    Ok(())
}

fn bank(amount: i64, n: usize) -> NewDisbursement {
    engine_setup::bank_request(format!("payout-{n}"), amount)
}

fn run(case: Case, tally: &Mutex<Tally>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().expect("a temporary dir");
    let vendor = Arc::new(ScriptedVendor::new(case.usual));
    let mut running = Running::open(dir.path(), &vendor)?;
    let engine = running.engine.clone();
    let merchant_id = running.call(async move {
        let (merchant, _) = engine
            .merchants()
            .create_merchant(NewMerchant {
                limits: LimitOverrides::parse([(LimitField::ReviewThresholdMinor, Some(AMOUNT_MAX))])
                    .expect("valid limits"),
                ..NewMerchant::new("m", SettlementType::Wallet)
            })
            .await
            .expect("merchant created");
        engine
            .merchants()
            .credit_wallet(merchant.id, MinorUnits::new(FUNDING), "fund", None)
            .await
            .expect("wallet funded");
        merchant.id
    })?;
    let mut made: Vec<Made> = Vec::new();

    for op in case.ops {
        match op {
            Op::Create { amount } => {
                let engine = running.engine.clone();
                let new = bank(amount, made.len());
                let created = running
                    .call(async move { engine.disbursements().create_disbursement(merchant_id, new).await })?
                    .map_err(|e| TestCaseError::fail(format!("create failed: {e}")))?;
                prop_assert_eq!(created.request_amount.get(), amount);
                made.push(Made {
                    id: created.id,
                    amount,
                    final_amount: created.final_amount.get(),
                });
            }
            Op::Answers(answers) => vendor.truth().answers.extend(answers),
            Op::InquiryFaults(faults) => vendor.truth().inquiry_faults.extend(faults),
            Op::CrashNow => running = restart(running, dir.path(), &vendor, merchant_id, &made)?,
            Op::CrashAtNextCall { taken } => vendor.truth().crash_at_next_call = Some(taken),
            Op::Decide { pick } => vendor.truth().decide(pick, &made),
            Op::Wait { ms } => running.wait(&vendor, Duration::from_millis(ms)),
        }
        if vendor.crash_requested() {
            running = restart(running, dir.path(), &vendor, merchant_id, &made)?;
        }
        check_no_guess(&running, &vendor, merchant_id, &made)?;
    }

    // The vendor heals; a call already waiting for its crash gets it.
    vendor.truth().crash_at_next_call = None;
    if vendor.crash_requested() {
        running = restart(running, dir.path(), &vendor, merchant_id, &made)?;
    }
    vendor.truth().become_honest();
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    let mut finals = Vec::with_capacity(made.len());
    for ack in &made {
        let disbursement = loop {
            let current = running
                .engine
                .disbursements()
                .disbursement_for(merchant_id, &ack.id.to_string())
                .map_err(|e| TestCaseError::fail(format!("{} unreadable: {e}", ack.id)))?;
            if current.status.is_terminal() {
                break current;
            }
            let violations = vendor.truth().violations.clone();
            prop_assert!(violations.is_empty(), "{:#?}", violations);
            if Instant::now() >= deadline {
                let payout = vendor.truth().payouts.get(&ack.id).cloned();
                return Err(TestCaseError::fail(format!(
                    "{} still {:?} {SETTLE_TIMEOUT:?} after the vendor healed; the vendor has {payout:?}",
                    ack.id, current.status
                )));
            }
            running.wait(&vendor, Duration::from_millis(10));
        };
        finals.push(disbursement);
    }

    let truth = vendor.truth();
    prop_assert!(truth.violations.is_empty(), "{:#?}", truth.violations);
    let mut spent = 0i64;
    let mut case_tally = truth.tally;
    case_tally.disbursements = made.len() as u64;
    for (ack, disbursement) in made.iter().zip(&finals) {
        let payout = truth.payouts.get(&ack.id).cloned().unwrap_or_default();
        prop_assert_eq!(
            Some(disbursement.status),
            payout.expected(),
            "{} ended {:?}; the vendor has {:?}",
            ack.id,
            disbursement.status,
            payout
        );
        prop_assert!(
            payout.amounts.iter().all(|amount| *amount == ack.amount),
            "{}: submitted {:?}, asked for {}",
            ack.id,
            payout.amounts,
            ack.amount
        );
        match disbursement.status {
            DisbursementStatus::Success => {
                spent += ack.final_amount;
                case_tally.ended_success += 1;
            }
            _ => case_tally.ended_failed += 1,
        }
    }
    for id in truth.payouts.keys() {
        prop_assert!(
            made.iter().any(|ack| ack.id == *id),
            "the vendor was sent {}, unknown to the test",
            id
        );
    }
    drop(truth);

    let engine = running.engine.clone();
    let (wallet, report) = running.call(async move {
        let wallet = engine
            .merchants()
            .wallet_balance(merchant_id)
            .await
            .expect("wallet readable");
        (
            wallet,
            engine.merchants().verify_ledger().await.expect("ledger readable"),
        )
    })?;
    prop_assert_eq!(wallet.get(), FUNDING - spent);
    prop_assert!(report.balanced, "{:?}", report.problems);
    let engine = running.engine.clone();
    running.call(async move { engine.shutdown().await })?;
    tally.lock().expect("tally lock").add(&case_tally);
    Ok(())
}

#[test]
fn payouts_are_sent_again_only_after_a_404_and_end_in_the_vendors_status_through_crashes() {
    let started = Instant::now();
    let config = ProptestConfig {
        // `PROPTEST_CASES` runs a deeper search than the suite's 24 cases.
        cases: engine_setup::property_cases(24),
        // A case takes about a second, a stuck one SETTLE_TIMEOUT: keep a
        // failure's shrinking bounded.
        max_shrink_iters: 64,
        max_shrink_time: 180_000,
        source_file: Some(file!()),
        ..ProptestConfig::default()
    };
    let tally = Mutex::new(Tally::default());
    let mut runner = TestRunner::new(config);
    if let Err(failure) = runner.run(&case(), |case| run(case, &tally)) {
        panic!("{failure}");
    }
    let tally = *tally.lock().expect("tally lock");
    eprintln!("{tally:#?} in {:?}", started.elapsed());
    // Each is expected a dozen times: none at all means the cases no longer
    // reach what they are about.
    assert!(
        tally.crashes_in_submit_taken + tally.crashes_in_submit_untaken > 0,
        "no crash while a submit was in flight"
    );
    assert!(tally.resubmits_after_404 > 0, "no payout was sent again after a 404");
}
