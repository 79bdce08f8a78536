//! An engine holding one shard: everything it acknowledges is in the
//! shard's journal of record, a new owner opened on a fresh directory
//! recovers all of it, and the old owner, fenced, writes nothing more.

use super::test_postgres::TestPostgres;
use super::{Database, Leases, ShardRecords};
use crate::clock::SystemClock;
use crate::disbursements::NewDisbursement;
use crate::domain::{DisbursementStatus, SettlementType};
use crate::vendor::SandboxPayoutVendor;
use crate::{Engine, EngineConfig, MinorUnits, NewMerchant, ShardJournal};
use std::sync::Arc;
use std::time::Duration;

async fn open_on_shard(dir: &std::path::Path, records: ShardRecords, epoch: i64) -> Engine {
    let mut config = EngineConfig::new(dir);
    config.shard_journal = Some(ShardJournal {
        records,
        shard: 9,
        epoch,
    });
    // The payout stays with the vendor, so the new owner finds it open.
    config.payout_vendor = Some(Arc::new(SandboxPayoutVendor {
        delay: Duration::from_secs(3600),
    }));
    Engine::open(config, Arc::new(SystemClock)).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_owner_recovers_every_acknowledged_change_and_the_old_one_writes_nothing_more() {
    let Some(pg) = TestPostgres::start() else { return };
    let database = Database::connect(&pg.url()).await.unwrap();
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    assert_eq!(
        Leases::new(database.clone(), "a").acquire(&[9]).await.unwrap(),
        vec![(9, 1)]
    );
    let a = open_on_shard(dir_a.path(), ShardRecords::new(database.clone(), "a"), 1).await;

    let new = NewMerchant::new("Toko Shard", SettlementType::Wallet);
    let (merchant, _) = a.merchants().create_merchant(new).await.unwrap();
    a.merchants()
        .credit_wallet(merchant.id, MinorUnits::new(5_000_000), "funding", None)
        .await
        .unwrap();
    let disbursement = a
        .disbursements()
        .create_disbursement(
            merchant.id,
            NewDisbursement::to_bank("shard-1", "BCA", "1234567890", "Budi Santoso", 1_000_000).unwrap(),
        )
        .await
        .unwrap();
    let balance = a.merchants().wallet_balance(merchant.id).await.unwrap();
    assert_eq!(balance.get(), 5_000_000 - disbursement.final_amount.get());

    // The hand-over to the vendor is a record of its own, after the 201:
    // wait for it, so the new owner has an ON_PROCESS payout to find.
    let handed_over = std::time::Instant::now();
    while a
        .disbursements()
        .disbursement_for(merchant.id, &disbursement.id.to_string())
        .unwrap()
        .status
        != DisbursementStatus::OnProcess
    {
        assert!(
            handed_over.elapsed() < Duration::from_secs(10),
            "never handed to the vendor"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // Node b takes the shard after a's lease ran out.
    database
        .client()
        .await
        .unwrap()
        .execute("UPDATE shard_leases SET expires_at = now() WHERE shard = 9", &[])
        .await
        .unwrap();
    assert_eq!(
        Leases::new(database.clone(), "b").acquire(&[9]).await.unwrap(),
        vec![(9, 2)]
    );

    // a, paused meanwhile, tries to write: refused, and nothing reaches the
    // shard's records.
    let records = ShardRecords::new(database.clone(), "b");
    let before = records.last_seq(9).await.unwrap();
    let stale = a
        .merchants()
        .credit_wallet(merchant.id, MinorUnits::new(777), "after losing the shard", None)
        .await;
    assert!(stale.is_err(), "{stale:?}");
    assert_eq!(records.last_seq(9).await.unwrap(), before);

    let b = open_on_shard(dir_b.path(), records, 2).await;
    assert_eq!(b.merchants().merchant(merchant.id).unwrap().name, "Toko Shard");
    assert_eq!(b.merchants().wallet_balance(merchant.id).await.unwrap(), balance);
    let found = b
        .disbursements()
        .disbursement_for(merchant.id, &disbursement.id.to_string())
        .unwrap();
    assert_eq!(found.status, DisbursementStatus::OnProcess);
    assert_eq!(found.final_amount, disbursement.final_amount);
    // The idempotency key replays on the new owner (the API answers with
    // the first disbursement).
    let replay = b
        .disbursements()
        .create_disbursement(
            merchant.id,
            NewDisbursement::to_bank("shard-1", "BCA", "1234567890", "Budi Santoso", 1_000_000).unwrap(),
        )
        .await;
    assert!(
        matches!(replay, Err(crate::EngineError::DuplicateDisbursement(ref first)) if first.id == disbursement.id),
        "{replay:?}"
    );
    b.merchants()
        .credit_wallet(merchant.id, MinorUnits::new(1), "b writes", None)
        .await
        .unwrap();
    assert_eq!(
        b.merchants().wallet_balance(merchant.id).await.unwrap().get(),
        balance.get() + 1
    );
    assert!(b.merchants().verify_ledger().await.unwrap().balanced);
    a.shutdown().await;
    b.shutdown().await;
}
