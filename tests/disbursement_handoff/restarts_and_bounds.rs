//! Mail left for the next start, inquiries of payouts taken again, and
//! the bound on open disbursements.

use super::*;

/// Stopping while a disbursement's hand-over hangs and more of its mail
/// waits: the hand-over in hand finishes, the waiting mail is left for the
/// next start (its caller hears the engine is stopping), and the engine
/// stops at once instead of waiting out the host's stop limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_leaves_waiting_mail_for_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, vendor, mut entered_rx) = engine_with_holding_vendor(dir.path()).await;
    let merchant_id = wallet_merchant(&engine, "stopping").await;
    let held = create_held(&engine, merchant_id, &mut entered_rx).await;
    let completing = complete_on_a_task(&engine, merchant_id, held.id);
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
    let engine = engine_with(dir.path(), SANDBOX).await;
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
    config.payout_vendor = Some(Arc::new(SANDBOX));
    config.disbursements_open_max = 5;
    let engine = Engine::open(config, Arc::new(SystemClock)).await.unwrap();
    let merchant = engine_setup::wallet_merchant(&engine, "bounded", LimitOverrides::default(), Some(FUNDING)).await;
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
        .create_disbursement_batch(
            merchant.id,
            IdempotencyKey::parse("busy-batch").unwrap(),
            vec![Ok(request(6)), Ok(request(8))],
        )
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
