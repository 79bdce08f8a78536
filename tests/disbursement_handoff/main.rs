//! Disbursement actors' first steps (engine level): many disbursements
//! created at once are each taken one step exactly once (ON_PROCESS,
//! IN_REVIEW at the review threshold, FAILED with the money back when the
//! vendor refuses), and the moves of one merchant share journal records
//! instead of one record each. Each disbursement handles its messages one
//! at a time.
//! The sandbox vendor never refuses at hand-over (its failing account fails
//! later), so the vendor here is the sandbox with a refusal put in front.
//! Merchants do not wait on each other: hand-overs that hang hold up only
//! their own merchants.
//! This file holds the vendors and the engine set-up its modules share.

use futures::future::BoxFuture;
use paygate_engine::clock::SystemClock;
use paygate_engine::disbursements::NewDisbursement;
use paygate_engine::domain::{Destination, Disbursement, DisbursementStatus};
use paygate_engine::input::IdempotencyKey;
use paygate_engine::store::journal;
use paygate_engine::store::record::JournalRecord;
use paygate_engine::vendor::{
    AccountCheck, Inquiry, PayoutReport, PayoutStatus, PayoutVendor, SandboxPayoutVendor, Submission,
};
use paygate_engine::{Engine, EngineConfig, EngineError};
use paygate_engine::{LimitField, LimitOverrides};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

#[path = "../engine_setup/mod.rs"]
mod engine_setup;

mod hand_over;
mod isolation;
mod restarts_and_bounds;

const FUNDING: i64 = 100_000_000_000;
const FEE: i64 = 250_000;
const REVIEW_THRESHOLD: i64 = 5_000_000;
const DISBURSEMENTS: usize = 300;

/// The sandbox, refusing the hand-over of its failing account outright.
struct RefusingVendor(SandboxPayoutVendor);

/// A test vendor's methods other than `submit`: the sandbox's, with `timeout`.
macro_rules! sandbox_but_submit {
    ($timeout:expr) => {
        fn name(&self) -> &str {
            SANDBOX.name()
        }

        fn pays_out_for_real(&self) -> bool {
            false
        }

        fn timeout(&self) -> Duration {
            $timeout
        }

        fn inquire<'a>(&'a self, disbursement: &'a Disbursement) -> BoxFuture<'a, Inquiry> {
            SANDBOX.inquire(disbursement)
        }

        fn check_account<'a>(&'a self, destination: &'a Destination) -> BoxFuture<'a, AccountCheck> {
            SANDBOX.check_account(destination)
        }
    };
}

/// The sandbox the test vendors stand in front of.
const SANDBOX: SandboxPayoutVendor = SandboxPayoutVendor {
    delay: Duration::from_secs(3600),
};

impl PayoutVendor for RefusingVendor {
    sandbox_but_submit!(Duration::from_secs(60));

    fn submit<'a>(&'a self, disbursement: &'a Disbursement) -> BoxFuture<'a, Submission> {
        if disbursement.destination.account() == "0000000000" {
            return Box::pin(std::future::ready(Submission::Refused("account not found".into())));
        }
        self.0.submit(disbursement)
    }
}

/// The sandbox, panicking on the hand-over of one account.
struct PanickingVendor(SandboxPayoutVendor);

impl PayoutVendor for PanickingVendor {
    sandbox_but_submit!(Duration::from_secs(60));

    fn submit<'a>(&'a self, disbursement: &'a Disbursement) -> BoxFuture<'a, Submission> {
        Box::pin(async move {
            assert_ne!(disbursement.destination.account(), "0000000000", "vendor bug (test)");
            self.0.submit(disbursement).await
        })
    }
}

/// Every 10th is at the review threshold, every 7th (not 10th) goes to the
/// sandbox's failing account, the rest to a good one.
fn request(n: usize) -> NewDisbursement {
    request_to(n, None)
}

/// `request(n)`, to `account` when one is given.
fn request_to(n: usize, account: Option<&str>) -> NewDisbursement {
    let amount = if n % 10 == 0 {
        REVIEW_THRESHOLD
    } else {
        1_000_000 + n as i64
    };
    let account = account.unwrap_or(if n % 7 == 0 && n % 10 != 0 {
        "0000000000"
    } else {
        "1234567890"
    });
    NewDisbursement::to_bank(format!("handoff-{n}"), "BCA", account, "Budi Santoso", amount)
        .expect("a valid disbursement")
}

fn expected_status(n: usize) -> DisbursementStatus {
    if n % 10 == 0 {
        DisbursementStatus::InReview
    } else if n % 7 == 0 {
        DisbursementStatus::Failed
    } else {
        DisbursementStatus::OnProcess
    }
}

/// The disbursement versions each journal record carries, by record.
fn versions(record: &JournalRecord) -> Vec<&Disbursement> {
    match record {
        JournalRecord::DisbursementUpdated(one) => vec![one],
        JournalRecord::DisbursementReversed { disbursement, .. } => vec![disbursement],
        JournalRecord::DisbursementsUpdated(many) => many.iter().map(|one| &**one).collect(),
        JournalRecord::Evented { record, .. } => versions(record),
        _ => Vec::new(),
    }
}

/// The sandbox, holding the hand-over of one account until the test lets
/// it go: a vendor call that hangs.
struct HoldingVendor {
    sandbox: SandboxPayoutVendor,
    entered: tokio::sync::mpsc::UnboundedSender<()>,
    release: tokio::sync::Semaphore,
}

const HELD_ACCOUNT: &str = "5555555555";

impl PayoutVendor for HoldingVendor {
    sandbox_but_submit!(Duration::from_secs(60));

    fn submit<'a>(&'a self, disbursement: &'a Disbursement) -> BoxFuture<'a, Submission> {
        Box::pin(async move {
            if disbursement.destination.account() == HELD_ACCOUNT {
                let _ = self.entered.send(());
                if let Ok(Ok(permit)) = tokio::time::timeout(Duration::from_secs(30), self.release.acquire()).await {
                    permit.forget();
                }
            }
            self.sandbox.submit(disbursement).await
        })
    }
}

/// `request(1)` to `HELD_ACCOUNT`: its hand-over hangs until the test lets it go.
fn held_request() -> NewDisbursement {
    request_to(1, Some(HELD_ACCOUNT))
}

/// Creates `held_request()` for `merchant_id` and waits until its hand-over
/// reaches the vendor.
async fn create_held(
    engine: &Engine,
    merchant_id: Uuid,
    entered_rx: &mut tokio::sync::mpsc::UnboundedReceiver<()>,
) -> Arc<Disbursement> {
    let held = engine
        .disbursements()
        .create_disbursement(merchant_id, held_request())
        .await
        .unwrap();
    let entered = tokio::time::timeout(Duration::from_secs(10), entered_rx.recv()).await;
    assert!(matches!(entered, Ok(Some(()))), "the hand-over reached the vendor");
    held
}

/// Completes `id` as SUCCESS on a task of its own, which waits while the
/// hand-over in hand lasts.
fn complete_on_a_task(
    engine: &Engine,
    merchant_id: Uuid,
    id: Uuid,
) -> tokio::task::JoinHandle<Result<Disbursement, EngineError>> {
    let engine = engine.clone();
    tokio::spawn(async move {
        engine
            .disbursements()
            .complete_disbursement(merchant_id, &id.to_string(), DisbursementStatus::Success)
            .await
    })
}

/// An engine whose vendor holds hand-overs to `HELD_ACCOUNT`; the receiver
/// hears each one reach it.
async fn engine_with_holding_vendor(
    dir: &std::path::Path,
) -> (Engine, Arc<HoldingVendor>, tokio::sync::mpsc::UnboundedReceiver<()>) {
    let (entered_tx, entered_rx) = tokio::sync::mpsc::unbounded_channel();
    let vendor = Arc::new(HoldingVendor {
        sandbox: SANDBOX,
        entered: entered_tx,
        release: tokio::sync::Semaphore::new(0),
    });
    let mut config = EngineConfig::new(dir);
    config.payout_vendor = Some(vendor.clone());
    let engine = Engine::open(config, Arc::new(SystemClock)).await.unwrap();
    (engine, vendor, entered_rx)
}

/// Disbursements still awaiting their first step once it has had time to
/// finish (its moves are visible a moment before it ends).
async fn handoffs_finished(engine: &Engine) -> usize {
    for _ in 0..2000 {
        if engine.disbursements().disbursements_awaiting_handoff() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    engine.disbursements().disbursements_awaiting_handoff()
}

/// A WALLET merchant named `name` with `FUNDING` in its wallet; returns its id.
async fn wallet_merchant(engine: &Engine, name: &str) -> Uuid {
    engine_setup::wallet_merchant(engine, name, LimitOverrides::default(), Some(FUNDING))
        .await
        .id
}

/// An engine on `dir` handing its payouts to `vendor`.
async fn engine_with(dir: &std::path::Path, vendor: impl PayoutVendor + 'static) -> Engine {
    let mut config = EngineConfig::new(dir);
    config.payout_vendor = Some(Arc::new(vendor));
    Engine::open(config, Arc::new(SystemClock)).await.unwrap()
}

async fn status_after_handoff(engine: &Engine, merchant_id: Uuid, id: Uuid) -> DisbursementStatus {
    let mut status = DisbursementStatus::Pending;
    for _ in 0..2000 {
        status = engine
            .disbursements()
            .disbursement_for(merchant_id, &id.to_string())
            .unwrap()
            .status;
        if status != DisbursementStatus::Pending {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    status
}

/// The sandbox, never answering a hand-over, with a short timeout.
struct SilentVendor;

impl PayoutVendor for SilentVendor {
    sandbox_but_submit!(Duration::from_millis(100));

    fn submit<'a>(&'a self, _: &'a Disbursement) -> BoxFuture<'a, Submission> {
        Box::pin(std::future::pending())
    }
}

/// The value of one of the engine's own metrics.
fn metric(engine: &Engine, name: &str) -> u64 {
    let text = engine.operations().metrics_text();
    let line = text
        .lines()
        .find(|line| line.split(' ').next() == Some(name))
        .unwrap_or_else(|| panic!("metric {name} missing"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// A vendor with lagging reads: it takes every payout (ACCEPTED, the same
/// reference each time), says it never received it at the first inquiry,
/// and reports it paid at every later one.
#[derive(Default)]
struct LaggingVendor {
    submits: std::sync::atomic::AtomicU32,
    inquiries: std::sync::atomic::AtomicU32,
}

impl PayoutVendor for LaggingVendor {
    fn name(&self) -> &str {
        "lagging"
    }

    fn pays_out_for_real(&self) -> bool {
        true
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(5)
    }

    fn submit<'a>(&'a self, _: &'a Disbursement) -> BoxFuture<'a, Submission> {
        self.submits.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Box::pin(std::future::ready(Submission::Taken(PayoutReport {
            status: PayoutStatus::Accepted,
            reference: Some("REF-1".into()),
            failure_reason: None,
            settles: None,
        })))
    }

    fn inquire<'a>(&'a self, _: &'a Disbursement) -> BoxFuture<'a, Inquiry> {
        let asked = self.inquiries.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let answer = if asked == 0 {
            Inquiry::NeverReceived
        } else {
            Inquiry::Found(PayoutReport {
                status: PayoutStatus::Success,
                reference: Some("REF-1".into()),
                failure_reason: None,
                settles: None,
            })
        };
        Box::pin(std::future::ready(answer))
    }

    fn check_account<'a>(&'a self, destination: &'a Destination) -> BoxFuture<'a, AccountCheck> {
        SANDBOX.check_account(destination)
    }
}
