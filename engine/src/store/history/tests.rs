//! The disbursement history through the store: found after checkpoints and
//! reopening without reading the blocks, merged runs, and a data dir from
//! before the runs filled once.

use super::super::tests::{assert_disbursements_stored, test_disbursement};
use super::super::{KeyPrefix, Store};
use crate::domain::{Disbursement, DisbursementStatus};
use crate::store::record::JournalRecord;
use std::sync::Arc;
use uuid::Uuid;

/// Applies versions as durable records, numbering them on from `seq`.
fn apply(store: &Store, seq: &mut u64, disbursement: &Disbursement) {
    *seq += 1;
    let record = JournalRecord::DisbursementUpdated(Arc::new(disbursement.clone()));
    store.apply(*seq, &record, &record.encode()).unwrap();
}

/// 3,000 disbursements of one merchant over 30 checkpoints, every third
/// then SUCCESS (as `assert_disbursements_stored` expects).
fn fill(store: &Store, seq: &mut u64, merchant: Uuid) -> Vec<Disbursement> {
    let disbursements: Vec<Disbursement> = (0..3000).map(|n| test_disbursement(merchant, n)).collect();
    for (n, disbursement) in disbursements.iter().enumerate() {
        apply(store, seq, disbursement);
        if n % 100 == 99 {
            store.checkpoint().unwrap();
        }
    }
    for disbursement in disbursements.iter().step_by(3) {
        let mut done = disbursement.clone();
        done.status = DisbursementStatus::Success;
        apply(store, seq, &done);
    }
    store.checkpoint().unwrap();
    disbursements
}

#[test]
fn history_is_found_after_reopening_without_reading_the_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let merchant = Uuid::new_v4();
    let mut seq = 0;
    let disbursements = {
        let store = Store::open(dir.path()).unwrap();
        let disbursements = fill(&store, &mut seq, merchant);
        assert_eq!(
            store
                .kind(super::Kind::Disbursements)
                .recent
                .read()
                .unwrap()
                .recent_count(),
            0,
            "all in the runs"
        );
        let runs = store.kind(super::Kind::Disbursements).runs.read().unwrap().run_count();
        assert!(runs <= 4 * 8, "merged: {runs} runs for 31 checkpoints");
        assert_disbursements_stored(&store, &disbursements);
        disbursements
    };
    let store = Store::open(dir.path()).unwrap();
    assert_disbursements_stored(&store, &disbursements);
    let (page, total) = store
        .merchant_disbursements(&merchant, 0, i64::MAX, |_| true, 0, 10)
        .unwrap();
    assert_eq!(total, 3000);
    assert_eq!(page[0].id, disbursements[2999].id, "newest first");
    assert_eq!(
        store.disbursement_key_hashes(&merchant, usize::MAX).unwrap().len(),
        3000
    );
    assert!(
        store.disbursement_key_hashes(&merchant, 2999).is_none(),
        "over the limit"
    );
    let memory = store
        .kind(super::Kind::Disbursements)
        .runs
        .read()
        .unwrap()
        .memory_bytes();
    assert!(memory < 3000 * 12, "{memory} bytes in memory for 3,000 disbursements");
    // Opening reads no block: one made unreadable is found only when read.
    let first_block = store
        .ledger_tree()
        .scan_prefix([KeyPrefix::DisbursementBlock.byte()])
        .next();
    let (key, _) = first_block.unwrap().unwrap();
    store.ledger_tree().insert(&key, &b"not a block"[..]).unwrap();
    store.flush().unwrap();
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.open_disbursement_count(), 2000);
    // Which disbursements the first block holds depends on the checkpoint's
    // (hashed) order; its part of the first checkpoint's hundred, less the
    // third written again as SUCCESS later, is now unreadable, the rest not.
    let unreadable = disbursements
        .iter()
        .filter(|disbursement| store.disbursement(&disbursement.id).is_err())
        .count();
    assert!((1..100).contains(&unreadable), "{unreadable} in the damaged block");
    let last = store.disbursement(&disbursements[2999].id).unwrap().unwrap();
    assert_eq!(last.id, disbursements[2999].id);
}

#[test]
fn a_data_dir_from_before_the_runs_is_filled_from_its_blocks_once() {
    let dir = tempfile::tempdir().unwrap();
    let merchant = Uuid::new_v4();
    let mut seq = 0;
    let disbursements = {
        let store = Store::open(dir.path()).unwrap();
        let disbursements = fill(&store, &mut seq, merchant);
        // What a data dir written before the runs holds: blocks, no runs.
        let history: Vec<_> = store
            .ledger_tree()
            .scan_prefix([KeyPrefix::IndexRun.byte()])
            .keys()
            .collect();
        for key in history {
            store.ledger_tree().remove(key.unwrap()).unwrap();
        }
        store.flush().unwrap();
        disbursements
    };
    let store = Store::open(dir.path()).unwrap();
    assert_disbursements_stored(&store, &disbursements);
    assert!(store.kind(super::Kind::Disbursements).runs.read().unwrap().run_count() > 0);
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    assert_disbursements_stored(&store, &disbursements);
}

/// A checkpoint that fails keeps the recent disbursements it was to write
/// findable (their generation stays sealed), and the next one writes them
/// with those created since: every one is then in the runs, found by id,
/// ref code, key and listing, before and after reopening.
#[test]
fn a_failed_checkpoint_keeps_its_recent_disbursements_for_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let merchant = Uuid::new_v4();
    let mut seq = 0;
    let disbursements: Vec<Disbursement> = (0..3000).map(|n| test_disbursement(merchant, n)).collect();
    let check = |store: &Store, count: usize| {
        for disbursement in &disbursements[..count] {
            let by_ref = store.disbursement_by_ref(&disbursement.ref_code).unwrap().unwrap();
            assert_eq!(by_ref.id, disbursement.id);
            let by_key = store
                .disbursement_by_key(&merchant, &disbursement.idempotency_key)
                .unwrap()
                .unwrap();
            assert_eq!(by_key.id, disbursement.id);
        }
        let (_, total) = store
            .merchant_disbursements(&merchant, 0, i64::MAX, |_| true, 0, 10)
            .unwrap();
        assert_eq!(total, count);
        assert_eq!(
            store.disbursement_key_hashes(&merchant, usize::MAX).unwrap().len(),
            count
        );
    };
    {
        let store = Store::open(dir.path()).unwrap();
        for disbursement in &disbursements[..1000] {
            apply(&store, &mut seq, disbursement);
        }
        store.checkpoint().unwrap();
        for disbursement in &disbursements[1000..2000] {
            apply(&store, &mut seq, disbursement);
        }
        store.fail_checkpoints_after(1);
        assert!(store.checkpoint().is_err());
        assert!(store.checkpoint().is_err(), "a second failure seals nothing twice");
        assert_eq!(
            store
                .kind(super::Kind::Disbursements)
                .recent
                .read()
                .unwrap()
                .recent_count(),
            1000
        );
        check(&store, 2000);
        for disbursement in &disbursements[2000..] {
            apply(&store, &mut seq, disbursement);
        }
        assert_eq!(
            store
                .kind(super::Kind::Disbursements)
                .recent
                .read()
                .unwrap()
                .recent_count(),
            2000
        );
        check(&store, 3000);
        store.fail_checkpoints_after(usize::MAX);
        store.checkpoint().unwrap();
        assert_eq!(
            store
                .kind(super::Kind::Disbursements)
                .recent
                .read()
                .unwrap()
                .recent_count(),
            0,
            "all in the runs"
        );
        check(&store, 3000);
    }
    let store = Store::open(dir.path()).unwrap();
    check(&store, 3000);
}

/// The open set and the format marker are read back under the keys written
/// before the prefixes were named.
#[test]
fn the_history_keys_keep_their_on_disk_bytes() {
    assert_eq!(&super::open_set::WHOLE_KEY, b"Hopen");
    assert_eq!(&super::open_set::CHANGES_PREFIX, b"Hopen+");
    assert_eq!(super::DISBURSEMENTS.format_key, b"Hformat");
    assert_eq!(super::ORDERS.format_key, b"Hformat-orders");
}

/// Each seal leaves a filling generation with room for what the sealed one
/// held, and a seal with nothing new drops that room: a server gone quiet
/// after a burst keeps none of it.
#[test]
fn a_seal_sizes_the_next_generation_and_a_quiet_one_frees_it() {
    use super::{Generation, RecentEntry, RecentIndex, LOOKUPS_MAX};
    let mut index = RecentIndex::default();
    let merchant = Uuid::new_v4();
    for n in 0..20_000u128 {
        let entry = RecentEntry {
            merchant_id: merchant,
            listed_under: merchant,
            ref_hash: Some(n),
            lookups: [None; LOOKUPS_MAX],
            created_ms: n as i64,
        };
        index.filling.insert(Uuid::from_u128(n), entry);
    }
    index.seal();
    assert_eq!(index.sealed.len(), 1);
    assert!(index.filling.entries.is_empty());
    assert!(index.filling.entries.capacity() >= 20_000, "room for the next burst");
    let _ = index.forget_sealed();
    index.seal();
    assert!(index.sealed.is_empty(), "nothing new to seal");
    assert_eq!(
        index.filling.entries.capacity(),
        Generation::default().entries.capacity(),
        "a quiet seal keeps no room"
    );
}
