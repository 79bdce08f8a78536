//! Checkpoints against sled: records written through them, reopens between
//! and during them, and checkpoints a crash cut short.

use super::*;
use crate::domain::Disbursement;
use crate::ledger::{wallet_credit, MerchantBook};
use crate::money::MinorUnits;
use crate::store::record::JournalRecord;
use crate::store::tests::{assert_disbursements_stored, test_disbursement};

/// Merchant and catalog records are applied while sled reopens, without
/// waiting for it (the applier never reaches sled), and the checkpoint
/// after it writes them to their trees, where the next open finds them.
#[test]
fn merchant_and_catalog_records_apply_during_a_reopen_and_reach_sled_at_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let merchant = crate::store::stored::tests::merchant();
    let bank = crate::domain::Bank {
        id: Uuid::from_u128(3),
        name: "Bank Negara Indonesia".into(),
        short_code: "BNI".into(),
        is_enabled: true,
    };
    {
        let store = Store::open(dir.path()).unwrap();
        let records = [
            JournalRecord::MerchantSaved(Box::new(merchant.clone())),
            JournalRecord::BankSaved(bank.clone()),
        ];
        let reopening = store.sled.hold_as_a_reopen();
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                for (seq, record) in (1..).zip(&records) {
                    store.apply(seq, record, &record.encode()).unwrap();
                }
                let _ = done.send(());
            });
            let applied = finished.recv_timeout(std::time::Duration::from_secs(10));
            drop(reopening);
            assert_eq!(applied, Ok(()), "applied while sled was held");
        });
        assert_eq!(store.directory().get(&merchant.id).as_deref(), Some(&merchant));
        assert!(store.merchants_tree().get(merchant.id.as_bytes()).unwrap().is_none());
        store.checkpoint().unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.checkpoint_seq().unwrap(), 3, "the records are covered");
    assert_eq!(store.directory().get(&merchant.id).as_deref(), Some(&merchant));
    assert_eq!(store.catalog().banks.get("BNI"), Some(&bank));
}

/// A checkpoint that reopens sled keeps what it wrote readable from
/// memory until sled is open again: the newest versions, by id and by
/// ref code, are read while the reopen holds sled, and the reopen is
/// reported; what was checkpointed before is read from sled after it.
#[test]
fn what_a_checkpoint_wrote_is_read_without_waiting_for_its_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let merchant = Uuid::new_v4();
    let disbursements: Vec<Disbursement> = (0..200).map(|n| test_disbursement(merchant, n)).collect();
    for (seq, disbursement) in (1..).zip(&disbursements) {
        let record = JournalRecord::DisbursementUpdated(Arc::new(disbursement.clone()));
        store.apply(seq, &record, &record.encode()).unwrap();
        if seq == 100 {
            store.checkpoint().unwrap();
        }
    }
    let (older, written) = disbursements.split_at(100);
    let (holding, reopen_holds) = std::sync::mpsc::channel();
    let (go_on, reopen_waits) = std::sync::mpsc::channel();
    store.sled.pause_next_reopen((holding, reopen_waits));
    let store = &store;
    std::thread::scope(|scope| {
        let checkpoint = scope.spawn(|| store.checkpoint_and_reopen_sled());
        assert_eq!(reopen_holds.recv_timeout(std::time::Duration::from_secs(10)), Ok(()));
        let (read, reads_done) = std::sync::mpsc::channel();
        scope.spawn(move || {
            for disbursement in written {
                let by_id = store.disbursement(&disbursement.id).unwrap();
                let by_ref = store.disbursement_by_ref(&disbursement.ref_code).unwrap();
                assert_eq!(by_id.as_ref(), Some(disbursement));
                assert_eq!(by_ref.as_ref(), Some(disbursement));
            }
            let _ = read.send(());
        });
        let reads = reads_done.recv_timeout(std::time::Duration::from_secs(10));
        go_on.send(()).unwrap();
        assert_eq!(reads, Ok(()), "read while the reopen held sled");
        let (covers_below, reopened) = checkpoint.join().unwrap().unwrap();
        assert_eq!(covers_below, 201);
        assert!(matches!(reopened, Ok(Some(_))), "reopened: {reopened:?}");
    });
    for disbursement in older.iter().chain(written) {
        assert_eq!(
            store.disbursement(&disbursement.id).unwrap().as_ref(),
            Some(disbursement)
        );
    }
    assert_eq!(store.checkpoint_seq().unwrap(), 201);
}

/// sled closed and reopened between checkpoints: readers on other
/// threads read all along and always find what was checkpointed; a
/// handle held out defers the reopen instead of blocking on it; what
/// is written after a reopen lands, and all of it opens again.
#[test]
fn sled_reopened_between_checkpoints_keeps_every_record_readable() {
    use std::sync::atomic::{AtomicBool, AtomicU64};
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(dir.path()).unwrap());
    let merchant = Uuid::new_v4();
    let disbursements: Vec<Disbursement> = (0..2000).map(|n| test_disbursement(merchant, n)).collect();
    let (first, second) = disbursements.split_at(1000);
    let apply = |store: &Store, from_seq: u64, part: &[Disbursement]| {
        for (index, disbursement) in part.iter().enumerate() {
            let record = JournalRecord::DisbursementUpdated(Arc::new(disbursement.clone()));
            store.apply(from_seq + index as u64, &record, &record.encode()).unwrap();
        }
    };
    apply(&store, 1, first);
    store.checkpoint().unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..2)
        .map(|reader| {
            let (store, stop, reads) = (store.clone(), stop.clone(), reads.clone());
            let ids: Vec<Uuid> = first.iter().skip(reader).step_by(7).map(|d| d.id).collect();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    for id in &ids {
                        let found = store.disbursement(id).unwrap().expect("a checkpointed disbursement");
                        assert_eq!(found.id, *id);
                        reads.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    while reads.load(Ordering::Relaxed) == 0 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let mut reopened = 0;
    for _ in 0..200 {
        if store.reopen_sled().unwrap().is_some() {
            reopened += 1;
            if reopened == 5 {
                break;
            }
        }
    }
    let reads_by_then = reads.load(Ordering::Relaxed);
    while reads.load(Ordering::Relaxed) == reads_by_then {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    stop.store(true, Ordering::Release);
    for reader in readers {
        reader.join().expect("no reader failed");
    }
    assert_eq!(reopened, 5, "reopens found moments with no handle out");

    let held = store.ledger_tree();
    assert_eq!(store.reopen_sled().unwrap(), None, "a handle out defers the reopen");
    drop(held);
    assert!(store.reopen_sled().unwrap().is_some());

    apply(&store, 1001, second);
    store.checkpoint().unwrap();
    assert!(store.reopen_sled().unwrap().is_some());
    for disbursement in &disbursements {
        assert_eq!(
            store.disbursement(&disbursement.id).unwrap().unwrap().id,
            disbursement.id
        );
    }
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.checkpoint_seq().unwrap(), 2001);
    for disbursement in &disbursements {
        let found = store
            .disbursement(&disbursement.id)
            .unwrap()
            .expect("found after a restart");
        assert_eq!(found.ref_code, disbursement.ref_code);
    }
}

/// A checkpoint that stops after some of its batches (as a crash would)
/// leaves sled with part of a layer and the old marker; replaying the
/// journal's records over it gives exactly the state of an unbroken run.
#[test]
fn a_checkpoint_cut_between_batches_is_repaired_by_replay() {
    use crate::domain::Beneficiary;
    use crate::store::tests::test_beneficiary;
    let dir = tempfile::tempdir().unwrap();
    let merchants = [Uuid::new_v4(), Uuid::new_v4()];
    // The journal, as the records it would hold.
    let mut records: Vec<JournalRecord> = Vec::new();
    for (index, merchant) in merchants.iter().enumerate() {
        let mut book = MerchantBook::new(*merchant);
        for n in 0..(1500 * (index + 1)) {
            let proposal = wallet_credit(MinorUnits::new(1), "x".repeat(100), Some(format!("k{n}")));
            let entry = book.prepare(proposal, 0).unwrap();
            book.apply(&entry).unwrap();
            records.push(JournalRecord::EntryPosted(entry));
        }
    }
    let beneficiaries: Vec<Beneficiary> = (0..1500).map(|n| test_beneficiary(merchants[n % 2], n)).collect();
    records.extend(
        beneficiaries
            .chunks(10)
            .map(|chunk| JournalRecord::BeneficiariesSaved(chunk.to_vec())),
    );
    // Disbursements: every one PENDING, then every third SUCCESS (a
    // second version, in the same layer).
    let disbursements: Vec<Disbursement> = (0..3000).map(|n| test_disbursement(merchants[n % 2], n)).collect();
    for disbursement in &disbursements {
        records.push(JournalRecord::DisbursementUpdated(Arc::new(disbursement.clone())));
    }
    for disbursement in disbursements.iter().step_by(3) {
        let mut done = disbursement.clone();
        done.status = crate::domain::DisbursementStatus::Success;
        records.push(JournalRecord::DisbursementUpdated(Arc::new(done)));
    }
    let apply_all = |store: &Store, from_seq: u64| {
        for (index, record) in records.iter().enumerate() {
            let seq = index as u64 + 1;
            if seq >= from_seq {
                store.apply(seq, record, &record.encode()).unwrap();
            }
        }
    };
    {
        let store = Store::open(dir.path()).unwrap();
        apply_all(&store, 1);
        // The first batch holds both merchants and the first resources.
        store.fail_after_batches.store(1, Ordering::Release);
        assert!(
            store.checkpoint().is_err(),
            "the checkpoint is cut after its first batch"
        );
        assert_eq!(store.checkpoint_seq().unwrap(), 0, "the marker did not move");
    }
    // Restart: replay everything from the old marker, then checkpoint.
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(
        store.durable_book(&merchants[0]).unwrap().last_seq,
        1500,
        "the cut checkpoint left its first batch (books and entries) behind"
    );
    let from = store.checkpoint_seq().unwrap().max(1);
    apply_all(&store, from);
    store.checkpoint().unwrap();
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    for (index, merchant) in merchants.iter().enumerate() {
        let expected = 1500 * (index as u64 + 1);
        let entries = store.entries_after(merchant, 0).unwrap();
        assert_eq!(entries.len() as u64, expected);
        assert!(entries.iter().enumerate().all(|(i, e)| e.seq == i as u64 + 1));
        let book = store.durable_book(merchant).unwrap();
        assert_eq!(book.last_seq, expected);
        assert_eq!(book.balance(crate::ledger::Account::Wallet).get(), expected as i64);
        let index_keys = store.idempotency_index(merchant, usize::MAX).unwrap().unwrap();
        assert_eq!(index_keys.len() as u64, expected, "every key indexed once");
        // The first merchant's book was in the cut checkpoint's first
        // batch: replay skipped its entries and kept their keys.
        let first_key = store.key_hash("k0");
        assert_eq!(store.overlay_key_lookup(merchant, first_key), None);
        assert_eq!(store.checkpointed_key_lookup(merchant, first_key).unwrap(), Some(1));
        assert_eq!(store.merchant_beneficiaries(merchant).unwrap().len(), 750);
        let (page, total) = store
            .merchant_disbursements(merchant, 0, i64::MAX, |_| true, 0, 10)
            .unwrap();
        assert_eq!(total, 1500);
        assert_eq!(page[0].id, disbursements[2998 + index].id, "newest first");
        assert_eq!(store.disbursement_key_hashes(merchant, usize::MAX).unwrap().len(), 1500);
    }
    assert_disbursements_stored(&store, &disbursements);
}
