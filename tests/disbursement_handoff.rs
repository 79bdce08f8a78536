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

use futures::future::BoxFuture;
use paygate_engine::clock::SystemClock;
use paygate_engine::disbursements::NewDisbursement;
use paygate_engine::domain::{Destination, Disbursement, DisbursementStatus, LimitsPatch, SettlementType};
use paygate_engine::store::journal;
use paygate_engine::store::record::JournalRecord;
use paygate_engine::vendor::{
    AccountCheck, Inquiry, PayoutReport, PayoutStatus, PayoutVendor, SandboxPayoutVendor, Submission,
};
use paygate_engine::{Engine, EngineConfig, EngineError, MinorUnits, NewMerchant};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

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
    let amount = if n % 10 == 0 {
        REVIEW_THRESHOLD
    } else {
        1_000_000 + n as i64
    };
    let account = if n % 7 == 0 && n % 10 != 0 {
        "0000000000"
    } else {
        "1234567890"
    };
    NewDisbursement {
        idempotency_key: Some(format!("handoff-{n}")),
        channel: Some("BANK".into()),
        bank_short_code: Some("BCA".into()),
        account_number: Some(account.into()),
        account_name: Some("Budi Santoso".into()),
        amount_minor: Some(amount),
        ..Default::default()
    }
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_disbursements_are_each_handed_over_once_in_shared_records() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.payout_vendor = Some(Arc::new(RefusingVendor(SandboxPayoutVendor {
        delay: Duration::from_secs(3600),
    })));
    let engine = Engine::open(config, Arc::new(SystemClock)).await.unwrap();
    let (merchant, _) = engine
        .merchants()
        .create_merchant(NewMerchant {
            name: "handoff".into(),
            settlement_type: Some(SettlementType::Wallet),
            limits: LimitsPatch {
                review_threshold_minor: Some(REVIEW_THRESHOLD),
                ..Default::default()
            },
            ..Default::default()
        })
        .await
        .unwrap();
    let merchant_id = merchant.id;
    engine
        .merchants()
        .credit_wallet(merchant_id, MinorUnits::new(FUNDING), "fund", None)
        .await
        .unwrap();

    let tasks: Vec<_> = (0..DISBURSEMENTS)
        .map(|n| {
            let engine = engine.clone();
            tokio::spawn(async move {
                (
                    n,
                    engine
                        .disbursements()
                        .create_disbursement(merchant_id, request(n))
                        .await,
                )
            })
        })
        .collect();
    let mut created: HashMap<Uuid, usize> = HashMap::new();
    for task in tasks {
        let (n, result) = task.await.unwrap();
        let disbursement = result.unwrap();
        assert_eq!(disbursement.status, DisbursementStatus::Pending);
        created.insert(disbursement.id, n);
    }
    for _ in 0..2000 {
        if engine.disbursements().disbursements_awaiting_handoff() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(engine.disbursements().disbursements_awaiting_handoff(), 0);

    let mut still_debited = 0i64;
    for (id, n) in &created {
        let stored = engine
            .disbursements()
            .disbursement_for(merchant_id, &id.to_string())
            .unwrap();
        assert_eq!(stored.status, expected_status(*n), "disbursement {n}");
        match stored.status {
            DisbursementStatus::OnProcess => assert!(stored.vendor_disbursement_id.is_some()),
            DisbursementStatus::Failed => {
                assert_eq!(stored.failure_reason.as_deref(), Some("account not found"));
                assert!(stored.reversal_seq.is_some());
            }
            _ => assert_eq!(stored.vendor_disbursement_id, None),
        }
        if stored.status != DisbursementStatus::Failed {
            still_debited += stored.request_amount.get() + FEE;
        }
    }
    assert_eq!(
        engine.merchants().wallet_balance(merchant_id).await.unwrap().get(),
        FUNDING - still_debited
    );
    assert!(engine.merchants().verify_ledger().await.unwrap().balanced);
    engine.shutdown().await;

    // Each disbursement moved once after its creation; the moves that
    // change no money shared records.
    let mut moves: HashMap<Uuid, usize> = HashMap::new();
    let mut shared_records = 0;
    let mut moved_without_money = 0;
    journal::replay(&dir.path().join("journal"), 0, |_, payload| {
        let record = JournalRecord::decode(payload).unwrap();
        let moved: Vec<_> = versions(&record)
            .into_iter()
            .filter(|d| d.status != DisbursementStatus::Pending)
            .collect();
        let reversal = matches!(&record, JournalRecord::DisbursementReversed { .. });
        if !moved.is_empty() && !reversal {
            shared_records += 1;
            moved_without_money += moved.len();
        }
        for disbursement in moved {
            *moves.entry(disbursement.id).or_default() += 1;
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(moves.len(), DISBURSEMENTS);
    assert!(moves.values().all(|&count| count == 1), "a disbursement moved twice");
    let failed = (0..DISBURSEMENTS).filter(|n| expected_status(*n) == DisbursementStatus::Failed);
    assert_eq!(moved_without_money, DISBURSEMENTS - failed.count());
    assert!(
        shared_records * 4 <= moved_without_money,
        "{moved_without_money} moves took {shared_records} records"
    );
}

/// A caller that stops waiting (an HTTP client gone) once its request
/// reached the merchant actor does not strand the disbursement: it is
/// debited, so it must still be handed over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disbursement_whose_caller_stopped_waiting_is_still_handed_over() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.payout_vendor = Some(Arc::new(SandboxPayoutVendor {
        delay: Duration::from_secs(3600),
    }));
    let engine = Engine::open(config, Arc::new(SystemClock)).await.unwrap();
    let (merchant, _) = engine
        .merchants()
        .create_merchant(NewMerchant {
            name: "gone".into(),
            settlement_type: Some(SettlementType::Wallet),
            ..Default::default()
        })
        .await
        .unwrap();
    engine
        .merchants()
        .credit_wallet(merchant.id, MinorUnits::new(FUNDING), "fund", None)
        .await
        .unwrap();
    // The merchant actor is live (the credit), so one poll sends the request.
    let mut call = Box::pin(engine.disbursements().create_disbursement(merchant.id, request(1)));
    assert!(futures::poll!(&mut call).is_pending());
    let mut stored = None;
    for _ in 0..2000 {
        stored = engine
            .disbursements()
            .disbursement_by_idempotency_key(merchant.id, "handoff-1")
            .unwrap();
        if stored.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let id = stored.expect("the request reached the merchant actor").id;
    drop(call);
    let mut status = DisbursementStatus::Pending;
    for _ in 0..2000 {
        status = engine
            .disbursements()
            .disbursement_for(merchant.id, &id.to_string())
            .unwrap()
            .status;
        if status != DisbursementStatus::Pending {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(status, DisbursementStatus::OnProcess);
    assert_eq!(handoffs_finished(&engine).await, 0);
    engine.shutdown().await;
}

/// A vendor that panics on one hand-over does not stop later ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_over_that_panics_does_not_stop_later_ones() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.payout_vendor = Some(Arc::new(PanickingVendor(SandboxPayoutVendor {
        delay: Duration::from_secs(3600),
    })));
    let engine = Engine::open(config, Arc::new(SystemClock)).await.unwrap();
    let (merchant, _) = engine
        .merchants()
        .create_merchant(NewMerchant {
            name: "panics".into(),
            settlement_type: Some(SettlementType::Wallet),
            ..Default::default()
        })
        .await
        .unwrap();
    engine
        .merchants()
        .credit_wallet(merchant.id, MinorUnits::new(FUNDING), "fund", None)
        .await
        .unwrap();
    // request(7) goes to the failing account, on which this vendor panics.
    let panicked = engine
        .disbursements()
        .create_disbursement(merchant.id, request(7))
        .await
        .unwrap();
    for _ in 0..2000 {
        if engine.disbursements().disbursements_awaiting_handoff() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(engine.disbursements().disbursements_awaiting_handoff(), 0);
    let later = engine
        .disbursements()
        .create_disbursement(merchant.id, request(1))
        .await
        .unwrap();
    let mut status = DisbursementStatus::Pending;
    for _ in 0..2000 {
        status = engine
            .disbursements()
            .disbursement_for(merchant.id, &later.id.to_string())
            .unwrap()
            .status;
        if status != DisbursementStatus::Pending {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(status, DisbursementStatus::OnProcess);
    let stuck = engine
        .disbursements()
        .disbursement_for(merchant.id, &panicked.id.to_string())
        .unwrap();
    assert_eq!(
        stuck.status,
        DisbursementStatus::Pending,
        "debited, waiting for a vendor that works"
    );
    engine.shutdown().await;
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

/// An engine whose vendor holds hand-overs to `HELD_ACCOUNT`; the receiver
/// hears each one reach it.
async fn engine_with_holding_vendor(
    dir: &std::path::Path,
) -> (Engine, Arc<HoldingVendor>, tokio::sync::mpsc::UnboundedReceiver<()>) {
    let (entered_tx, entered_rx) = tokio::sync::mpsc::unbounded_channel();
    let vendor = Arc::new(HoldingVendor {
        sandbox: SandboxPayoutVendor {
            delay: Duration::from_secs(3600),
        },
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

async fn wallet_merchant(engine: &Engine, name: &str) -> Uuid {
    let (merchant, _) = engine
        .merchants()
        .create_merchant(NewMerchant {
            name: name.into(),
            settlement_type: Some(SettlementType::Wallet),
            ..Default::default()
        })
        .await
        .unwrap();
    engine
        .merchants()
        .credit_wallet(merchant.id, MinorUnits::new(FUNDING), "fund", None)
        .await
        .unwrap();
    merchant.id
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

/// Merchants whose hand-overs hang (their vendor calls) hold up only
/// themselves: another merchant's disbursements are handed over meanwhile,
/// with as many calls hanging as the runtime has workers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hand_overs_that_hang_hold_up_only_their_own_merchants() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, vendor, mut entered_rx) = engine_with_holding_vendor(dir.path()).await;
    let mut held = Vec::new();
    for name in ["held-1", "held-2"] {
        let merchant_id = wallet_merchant(&engine, name).await;
        let mut held_request = request(1);
        held_request.account_number = Some(HELD_ACCOUNT.into());
        let disbursement = engine
            .disbursements()
            .create_disbursement(merchant_id, held_request)
            .await
            .unwrap();
        held.push((merchant_id, disbursement.id));
    }
    for _ in 0..2 {
        let entered = tokio::time::timeout(Duration::from_secs(10), entered_rx.recv()).await;
        assert!(
            matches!(entered, Ok(Some(()))),
            "both held hand-overs reached the vendor"
        );
    }

    let other_merchant = wallet_merchant(&engine, "other").await;
    let other = engine
        .disbursements()
        .create_disbursement(other_merchant, request(2))
        .await
        .unwrap();
    assert_eq!(
        status_after_handoff(&engine, other_merchant, other.id).await,
        DisbursementStatus::OnProcess,
        "handed over while the other merchants' vendor calls hang"
    );
    for (merchant_id, id) in &held {
        let still = engine
            .disbursements()
            .disbursement_for(*merchant_id, &id.to_string())
            .unwrap();
        assert_eq!(still.status, DisbursementStatus::Pending);
    }

    vendor.release.add_permits(2);
    for (merchant_id, id) in held {
        assert_eq!(
            status_after_handoff(&engine, merchant_id, id).await,
            DisbursementStatus::OnProcess
        );
    }
    assert_eq!(handoffs_finished(&engine).await, 0);
    engine.shutdown().await;
}

/// The sandbox, never answering a hand-over, with a short timeout.
struct SilentVendor;

impl PayoutVendor for SilentVendor {
    sandbox_but_submit!(Duration::from_millis(100));

    fn submit<'a>(&'a self, _: &'a Disbursement) -> BoxFuture<'a, Submission> {
        Box::pin(std::future::pending())
    }
}

/// A vendor call that never completes is given up after the vendor's
/// timeout: the hand-over ends, and the disbursement is ON_PROCESS with an
/// unknown outcome (never FAILED on a guess), to be inquired.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vendor_call_that_never_completes_ends_its_hand_over_at_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.payout_vendor = Some(Arc::new(SilentVendor));
    let engine = Engine::open(config, Arc::new(SystemClock)).await.unwrap();
    let merchant_id = wallet_merchant(&engine, "silent").await;
    let disbursement = engine
        .disbursements()
        .create_disbursement(merchant_id, request(1))
        .await
        .unwrap();
    assert_eq!(
        status_after_handoff(&engine, merchant_id, disbursement.id).await,
        DisbursementStatus::OnProcess
    );
    let stored = engine
        .disbursements()
        .disbursement_for(merchant_id, &disbursement.id.to_string())
        .unwrap();
    assert_eq!(stored.vendor_disbursement_id, None, "the vendor gave no reference");
    assert_eq!(stored.payout_vendor.as_deref(), Some("sandbox"));
    assert_eq!(handoffs_finished(&engine).await, 0, "the hand-over ended");
    assert_eq!(
        engine.merchants().wallet_balance(merchant_id).await.unwrap().get(),
        FUNDING - stored.final_amount.get(),
        "still debited: the vendor may be paying it"
    );
    engine.shutdown().await;
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

/// One disbursement's messages are handled one at a time, in order: a
/// sandbox "complete" sent while its hand-over hangs at the vendor waits
/// for it, then settles the payout the vendor took. Its merchant's other
/// disbursements are handed over meanwhile, and once the work is done no
/// actor stays in memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disbursement_handles_its_messages_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, vendor, mut entered_rx) = engine_with_holding_vendor(dir.path()).await;
    let merchant_id = wallet_merchant(&engine, "serial").await;
    let mut held_request = request(1);
    held_request.account_number = Some(HELD_ACCOUNT.into());
    let held = engine
        .disbursements()
        .create_disbursement(merchant_id, held_request)
        .await
        .unwrap();
    let entered = tokio::time::timeout(Duration::from_secs(10), entered_rx.recv()).await;
    assert!(matches!(entered, Ok(Some(()))), "the hand-over reached the vendor");

    let completing = tokio::spawn({
        let engine = engine.clone();
        let id = held.id.to_string();
        async move {
            engine
                .disbursements()
                .complete_disbursement(merchant_id, &id, DisbursementStatus::Success)
                .await
        }
    });
    let other = engine
        .disbursements()
        .create_disbursement(merchant_id, request(2))
        .await
        .unwrap();
    assert_eq!(
        status_after_handoff(&engine, merchant_id, other.id).await,
        DisbursementStatus::OnProcess,
        "the same merchant's next disbursement does not wait for the hanging one"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !completing.is_finished(),
        "the complete waits for the hand-over in hand"
    );
    let waiting = engine
        .disbursements()
        .disbursement_for(merchant_id, &held.id.to_string())
        .unwrap();
    assert_eq!(waiting.status, DisbursementStatus::Pending);
    assert_eq!(metric(&engine, "paygate_disbursement_hosts_busy"), 1);

    vendor.release.add_permits(1);
    let completed = tokio::time::timeout(Duration::from_secs(10), completing)
        .await
        .expect("the complete is answered once the hand-over ends")
        .unwrap()
        .unwrap();
    assert_eq!(completed.status, DisbursementStatus::Success);
    assert_eq!(completed.payout_vendor.as_deref(), Some("sandbox"));
    assert!(
        completed.vendor_disbursement_id.is_some(),
        "settled after the hand-over, with the vendor's reference: {completed:?}"
    );
    assert_eq!(handoffs_finished(&engine).await, 0);
    let mut busy = u64::MAX;
    for _ in 0..200 {
        busy = metric(&engine, "paygate_disbursement_hosts_busy");
        if busy == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(busy, 0, "actors are dropped once their mailboxes are empty");
    engine.shutdown().await;
}

/// Stopping while a disbursement's hand-over hangs and more of its mail
/// waits: the hand-over in hand finishes, the waiting mail is left for the
/// next start (its caller hears the engine is stopping), and the engine
/// stops at once instead of waiting out the host's stop limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_leaves_waiting_mail_for_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, vendor, mut entered_rx) = engine_with_holding_vendor(dir.path()).await;
    let merchant_id = wallet_merchant(&engine, "stopping").await;
    let mut held_request = request(1);
    held_request.account_number = Some(HELD_ACCOUNT.into());
    let held = engine
        .disbursements()
        .create_disbursement(merchant_id, held_request)
        .await
        .unwrap();
    let entered = tokio::time::timeout(Duration::from_secs(10), entered_rx.recv()).await;
    assert!(matches!(entered, Ok(Some(()))), "the hand-over reached the vendor");
    let completing = tokio::spawn({
        let engine = engine.clone();
        let id = held.id.to_string();
        async move {
            engine
                .disbursements()
                .complete_disbursement(merchant_id, &id, DisbursementStatus::Success)
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let stopping = tokio::spawn({
        let engine = engine.clone();
        async move { engine.shutdown().await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    vendor.release.add_permits(1);
    tokio::time::timeout(Duration::from_secs(10), stopping)
        .await
        .expect("the engine stops once the hand-over in hand ends")
        .unwrap();
    let answer = completing.await.unwrap();
    assert!(
        matches!(answer, Err(EngineError::ShuttingDown)),
        "the waiting complete was left for the next start: {answer:?}"
    );
    drop(engine);
    let mut config = EngineConfig::new(dir.path());
    config.payout_vendor = Some(Arc::new(SandboxPayoutVendor {
        delay: Duration::from_secs(3600),
    }));
    let engine = Engine::open(config, Arc::new(SystemClock)).await.unwrap();
    let after = engine
        .disbursements()
        .disbursement_for(merchant_id, &held.id.to_string())
        .unwrap();
    assert_eq!(
        after.status,
        DisbursementStatus::OnProcess,
        "handed over before the stop"
    );
    engine.shutdown().await;
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

/// A payout sent again after a 404 and taken again with nothing new to
/// record (ON_PROCESS already, the same reference) is still followed up:
/// its next inquiry finds it paid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payout_taken_again_with_nothing_new_is_still_inquired() {
    let dir = tempfile::tempdir().unwrap();
    let vendor = Arc::new(LaggingVendor::default());
    let mut config = EngineConfig::new(dir.path());
    config.payout_vendor = Some(vendor.clone());
    // The inquiry schedule's first point, a minute, becomes 12 ms.
    config.vendor_retry_scale = 0.0002;
    let engine = Engine::open(config, Arc::new(SystemClock)).await.unwrap();
    let merchant_id = wallet_merchant(&engine, "lagging").await;
    let created = engine
        .disbursements()
        .create_disbursement(merchant_id, request(1))
        .await
        .unwrap();
    let mut status = DisbursementStatus::Pending;
    for _ in 0..1000 {
        status = engine
            .disbursements()
            .disbursement_for(merchant_id, &created.id.to_string())
            .unwrap()
            .status;
        if status.is_terminal() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(status, DisbursementStatus::Success);
    assert_eq!(
        vendor.submits.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "sent again once, after the 404"
    );
    engine.shutdown().await;
}

/// Work that outruns the vendors pushes back: past the bound on open
/// disbursements, creation (single, or a whole batch) is `Busy` (503 with
/// `Retry-After` over HTTP) and moves nothing; once some end, it goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_bound_on_open_disbursements_creation_is_busy_until_some_end() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EngineConfig::new(dir.path());
    config.payout_vendor = Some(Arc::new(SandboxPayoutVendor {
        delay: Duration::from_secs(3600),
    }));
    config.disbursements_open_max = 5;
    let engine = Engine::open(config, Arc::new(SystemClock)).await.unwrap();
    let (merchant, _) = engine
        .merchants()
        .create_merchant(NewMerchant {
            name: "bounded".into(),
            settlement_type: Some(SettlementType::Wallet),
            ..Default::default()
        })
        .await
        .unwrap();
    engine
        .merchants()
        .credit_wallet(merchant.id, MinorUnits::new(FUNDING), "fund", None)
        .await
        .unwrap();
    let mut made = Vec::new();
    for n in 0..5 {
        made.push(
            engine
                .disbursements()
                .create_disbursement(merchant.id, request(n))
                .await
                .unwrap(),
        );
    }
    let balance = engine.merchants().wallet_balance(merchant.id).await.unwrap();
    assert!(matches!(
        engine
            .disbursements()
            .create_disbursement(merchant.id, request(5))
            .await,
        Err(EngineError::Busy)
    ));
    let batch = engine
        .disbursements()
        .create_disbursement_batch(merchant.id, "busy-batch".into(), vec![Ok(request(6)), Ok(request(8))])
        .await;
    assert!(matches!(batch, Err(EngineError::Busy)), "{batch:?}");
    assert_eq!(
        engine.merchants().wallet_balance(merchant.id).await.unwrap(),
        balance,
        "nothing moved"
    );
    // One ends: room for one more.
    for _ in 0..200 {
        if engine.disbursements().disbursements_awaiting_handoff() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let first = &made[0];
    engine
        .disbursements()
        .complete_disbursement(merchant.id, &first.id.to_string(), DisbursementStatus::Success)
        .await
        .unwrap();
    engine
        .disbursements()
        .create_disbursement(merchant.id, request(5))
        .await
        .unwrap();
    assert!(matches!(
        engine
            .disbursements()
            .create_disbursement(merchant.id, request(9))
            .await,
        Err(EngineError::Busy)
    ));
    engine.shutdown().await;
}
