//! Hand-overs that hang hold up only their own merchants, a vendor call
//! ends at its timeout, and one disbursement's messages go one at a time.

use super::*;

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
        let disbursement = engine
            .disbursements()
            .create_disbursement(merchant_id, held_request())
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
    let held = create_held(&engine, merchant_id, &mut entered_rx).await;

    let completing = complete_on_a_task(&engine, merchant_id, held.id);
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
