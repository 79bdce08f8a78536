//! Each disbursement handed over once, in shared journal records, whatever
//! its caller or a panicking hand-over does.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_disbursements_are_each_handed_over_once_in_shared_records() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_with(dir.path(), RefusingVendor(SANDBOX)).await;
    let limits =
        LimitOverrides::parse([(LimitField::ReviewThresholdMinor, Some(REVIEW_THRESHOLD))]).expect("valid limits");
    let merchant_id = engine_setup::wallet_merchant(&engine, "handoff", limits, Some(FUNDING))
        .await
        .id;

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
    let engine = engine_with(dir.path(), SANDBOX).await;
    let merchant = engine_setup::wallet_merchant(&engine, "gone", LimitOverrides::default(), Some(FUNDING)).await;
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
    let status = status_after_handoff(&engine, merchant.id, id).await;
    assert_eq!(status, DisbursementStatus::OnProcess);
    assert_eq!(handoffs_finished(&engine).await, 0);
    engine.shutdown().await;
}

/// A vendor that panics on one hand-over does not stop later ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_over_that_panics_does_not_stop_later_ones() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_with(dir.path(), PanickingVendor(SANDBOX)).await;
    let merchant = engine_setup::wallet_merchant(&engine, "panics", LimitOverrides::default(), Some(FUNDING)).await;
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
    let status = status_after_handoff(&engine, merchant.id, later.id).await;
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
