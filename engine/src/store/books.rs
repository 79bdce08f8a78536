//! Merchants' ledgers as stored: books, entries and idempotency keys,
//! the overlay's newest laid over the last checkpoint's.

use super::keys::{merchant_key, merchant_seq_key, KeyPrefix};
use super::overlay::{MerchantView, Overlay, WrittenBelow};
use super::record::{decode_value, JournalRecord};
use super::{Store, StoreError};
use crate::ledger::{Entry, MerchantBook};
use std::collections::HashMap;
use uuid::Uuid;

impl Store {
    /// What a merchant's new active layer starts from: the flushing
    /// layer's book and newest block, the ones remembered since the last
    /// checkpoint, or sled's book (and a new block). Call it only as the
    /// active layer starts holding the merchant (it takes the remembered
    /// ones).
    pub(super) fn below_active(&self, overlay: &mut Overlay, merchant_id: &Uuid) -> Result<WrittenBelow, StoreError> {
        match overlay.take_below(merchant_id) {
            Some(below) => Ok(below),
            None => Ok(WrittenBelow {
                book: self.sled_book(merchant_id)?,
                tail: None,
            }),
        }
    }

    fn sled_book(&self, merchant_id: &Uuid) -> Result<MerchantBook, StoreError> {
        Ok(
            match self.ledger_tree().get(merchant_key(KeyPrefix::Book, merchant_id))? {
                Some(bytes) => decode_value(&bytes)?,
                None => MerchantBook::new(*merchant_id),
            },
        )
    }

    fn merchant_view(&self, merchant_id: &Uuid) -> MerchantView {
        let overlay = self.overlay.lock().expect("overlay lock");
        MerchantView {
            flushing: overlay
                .flushing
                .as_ref()
                .and_then(|f| f.merchants.get(merchant_id).cloned()),
            active: overlay.active.merchants.get(merchant_id).cloned(),
        }
    }

    /// A merchant's book as of every durable entry applied so far.
    pub fn durable_book(&self, merchant_id: &Uuid) -> Result<MerchantBook, StoreError> {
        {
            let overlay = self.overlay.lock().expect("overlay lock");
            let newest = overlay
                .active
                .merchants
                .get(merchant_id)
                .or_else(|| overlay.flushing.as_ref().and_then(|f| f.merchants.get(merchant_id)));
            if let Some(layer) = newest {
                return Ok(layer.book.clone());
            }
            if let Some(book) = overlay.remembered_book(merchant_id) {
                return Ok(book.clone());
            }
        }
        self.sled_book(merchant_id)
    }

    /// A stored entry: one block read, wherever it is in the history.
    pub fn entry(&self, merchant_id: &Uuid, seq: u64) -> Result<Option<Entry>, StoreError> {
        match self
            .entries_newest_first(merchant_id, seq.saturating_add(1))
            .next()
            .transpose()?
        {
            Some(entry) if entry.seq == seq => Ok(Some(entry)),
            _ => Ok(None),
        }
    }

    /// Every durable entry of a merchant with `seq > after`, in order.
    pub fn entries_after(&self, merchant_id: &Uuid, after: u64) -> Result<Vec<Entry>, StoreError> {
        // The overlay first: anything a concurrent checkpoint moves to sled
        // after this point is then read from sled, and duplicates are dropped.
        let view = self.merchant_view(merchant_id);
        let first_wanted = after.saturating_add(1);
        let start = self
            .ledger_tree()
            .range(
                merchant_seq_key(KeyPrefix::EntryBlock, merchant_id, 0)
                    ..=merchant_seq_key(KeyPrefix::EntryBlock, merchant_id, first_wanted),
            )
            .next_back()
            .transpose()?
            .map(|(key, _)| key.to_vec())
            .unwrap_or_else(|| merchant_seq_key(KeyPrefix::EntryBlock, merchant_id, first_wanted).to_vec());
        let mut entries = Vec::new();
        let mut last = after;
        let mut take = |block: &[u8]| -> Result<(), StoreError> {
            for entry in decode_block(merchant_id, block)? {
                if entry.seq > last {
                    last = entry.seq;
                    entries.push(entry);
                }
            }
            Ok(())
        };
        for item in self
            .ledger_tree()
            .range(start..=merchant_seq_key(KeyPrefix::EntryBlock, merchant_id, u64::MAX).to_vec())
        {
            take(&item?.1)?;
        }
        for layer in view.layers() {
            for (_, block) in &layer.blocks {
                take(block)?;
            }
        }
        Ok(entries)
    }

    /// A merchant's durable entries with `seq < below`, newest first, read
    /// lazily a block (4 KiB) at a time: each block is found by a seek to
    /// `below`, never by a walk from either end, so a page deep in a long
    /// history costs what the first page does, and a busy merchant's
    /// overlay is never copied whole.
    pub fn entries_newest_first(&self, merchant_id: &Uuid, below: u64) -> EntriesNewestFirst<'_> {
        EntriesNewestFirst {
            store: self,
            merchant_id: *merchant_id,
            block: Vec::new().into_iter(),
            next_below: below,
        }
    }

    /// The newest block of a merchant's entries that holds any below
    /// `below`: the overlay's or sled's, whichever starts later. A
    /// checkpoint writes the overlay's blocks under the same first sequence
    /// numbers, so the two never hold different cuts of the same entries,
    /// and one moving to sled meanwhile is found there.
    fn newest_block_below(&self, merchant_id: &Uuid, below: u64) -> Result<Option<(u64, Vec<u8>)>, StoreError> {
        let in_overlay = {
            let overlay = self.overlay.lock().expect("overlay lock");
            let layers = [
                overlay.flushing.as_ref().and_then(|f| f.merchants.get(merchant_id)),
                overlay.active.merchants.get(merchant_id),
            ];
            layers
                .into_iter()
                .flatten()
                .filter_map(|layer| layer.blocks.iter().rev().find(|(first, _)| *first < below))
                .max_by_key(|(first, _)| *first)
                .map(|(first, block)| (*first, block.clone()))
        };
        let in_sled = self
            .ledger_tree()
            .range(
                merchant_seq_key(KeyPrefix::EntryBlock, merchant_id, 0)
                    ..merchant_seq_key(KeyPrefix::EntryBlock, merchant_id, below),
            )
            .next_back()
            .transpose()?
            .map(|(key, block)| (seq_of_block_key(&key), block.to_vec()));
        Ok(match (in_overlay, in_sled) {
            (Some(overlay), Some(sled)) => Some(if overlay.0 >= sled.0 { overlay } else { sled }),
            (one, other) => one.or(other),
        })
    }

    /// Every idempotency key hash of a merchant, or `None` when there are
    /// more than `limit` (the caller then looks keys up one at a time).
    pub fn idempotency_index(
        &self,
        merchant_id: &Uuid,
        limit: usize,
    ) -> Result<Option<HashMap<u128, u64>>, StoreError> {
        let mut index = HashMap::new();
        {
            let overlay = self.overlay.lock().expect("overlay lock");
            let flushing = overlay.flushing.as_ref().and_then(|f| f.merchants.get(merchant_id));
            for layer in flushing.into_iter().chain(overlay.active.merchants.get(merchant_id)) {
                index.extend(layer.keys.iter().map(|(hash, seq)| (*hash, *seq)));
            }
        }
        let within = self
            .entry_keys
            .add_merchant_keys(&self.ledger_tree(), merchant_id, &mut index, limit)?;
        Ok(within.then_some(index))
    }

    /// The entry that used an idempotency key hash, among the keys not yet
    /// checkpointed.
    pub fn overlay_key_lookup(&self, merchant_id: &Uuid, hash: u128) -> Option<u64> {
        let overlay = self.overlay.lock().expect("overlay lock");
        let flushing = overlay.flushing.as_ref().and_then(|f| f.merchants.get(merchant_id));
        flushing
            .into_iter()
            .chain(overlay.active.merchants.get(merchant_id))
            .find_map(|layer| layer.keys.get(&hash).copied())
    }

    /// The entry that used an idempotency key hash, among a merchant's
    /// checkpointed keys: the overlay's are `overlay_key_lookup`'s, looked
    /// up first (a checkpoint adds its run before its layer leaves the
    /// overlay, so no key is missed between the two).
    pub fn checkpointed_key_lookup(&self, merchant_id: &Uuid, hash: u128) -> Result<Option<u64>, StoreError> {
        self.entry_keys.get(|| self.ledger_tree(), merchant_id, hash)
    }
}

/// See `Store::entries_newest_first`.
pub struct EntriesNewestFirst<'a> {
    store: &'a Store,
    merchant_id: Uuid,
    /// The current block's entries still to give, newest last.
    block: std::vec::IntoIter<Entry>,
    /// Every entry given so far is at or above it; only older ones follow.
    next_below: u64,
}

impl Iterator for EntriesNewestFirst<'_> {
    type Item = Result<Entry, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(entry) = self.block.next_back() {
                if entry.seq < self.next_below {
                    self.next_below = entry.seq;
                    return Some(Ok(entry));
                }
                continue;
            }
            if self.next_below <= 1 {
                return None;
            }
            let found = self
                .store
                .newest_block_below(&self.merchant_id, self.next_below)
                .and_then(|found| match found {
                    Some((_, bytes)) => decode_block(&self.merchant_id, &bytes).map(Some),
                    None => Ok(None),
                });
            // A block found below `next_below` must give an entry below it,
            // or the next search would find the same block forever.
            let found = found.and_then(|entries| match entries {
                Some(entries) if entries.first().is_none_or(|e| e.seq >= self.next_below) => Err(StoreError::Corrupt {
                    merchant_id: self.merchant_id,
                    reason: format!("entry block below {} starts at or above it", self.next_below),
                }),
                other => Ok(other),
            });
            match found {
                Ok(Some(entries)) => self.block = entries.into_iter(),
                Ok(None) => {
                    self.next_below = 0;
                    return None;
                }
                Err(error) => {
                    self.next_below = 0;
                    return Some(Err(error));
                }
            }
        }
    }
}

/// The first sequence number in an entry block's key (its last 8 bytes).
fn seq_of_block_key(key: &[u8]) -> u64 {
    key.get(key.len().wrapping_sub(8)..)
        .and_then(|tail| <[u8; 8]>::try_from(tail).ok())
        .map_or(0, u64::from_be_bytes)
}

/// Decodes an entry block: length-prefixed encoded `EntryPosted` records.
fn decode_block(merchant_id: &Uuid, bytes: &[u8]) -> Result<Vec<Entry>, StoreError> {
    let corrupt = |reason: &str| StoreError::Corrupt {
        merchant_id: *merchant_id,
        reason: reason.to_string(),
    };
    let mut entries = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        if rest.len() < 4 {
            return Err(corrupt("truncated entry block"));
        }
        let len = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes")) as usize;
        let record = rest
            .get(4..4 + len)
            .ok_or_else(|| corrupt("truncated entry in block"))?;
        match JournalRecord::decode(record)? {
            JournalRecord::EntryPosted(entry) => entries.push(entry),
            _ => return Err(corrupt("non-entry in entries tree")),
        }
        rest = &rest[4 + len..];
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::{wallet_credit, MerchantBook};
    use crate::money::MinorUnits;
    use crate::store::overlay::CONTINUED_TAIL_BYTES_MAX;
    use crate::store::record;
    use std::fs;

    /// Posts wallet credits of one minor unit with memos of a set length,
    /// numbered as the journal would number them.
    struct Poster {
        book: MerchantBook,
        seq: u64,
        memo_len: usize,
    }

    impl Poster {
        fn new(merchant: Uuid, memo_len: usize) -> Poster {
            Poster {
                book: MerchantBook::new(merchant),
                seq: 0,
                memo_len,
            }
        }

        fn post(&mut self, store: &Store, count: usize) {
            for _ in 0..count {
                let memo = "x".repeat(self.memo_len);
                let entry = self
                    .book
                    .prepare(wallet_credit(MinorUnits::new(1), memo, None), 0)
                    .unwrap();
                self.book.apply(&entry).unwrap();
                self.seq += 1;
                store
                    .apply_entry(self.seq, &entry, &record::encode_entry(&entry))
                    .unwrap();
            }
        }
    }

    /// The merchant's durable wallet balance.
    fn wallet_balance(store: &Store, merchant: &Uuid) -> i64 {
        store
            .durable_book(merchant)
            .unwrap()
            .balance(crate::ledger::Account::Wallet)
            .get()
    }

    /// A temporary data dir and a new merchant to post entries for.
    fn one_merchant(memo_len: usize) -> (tempfile::TempDir, Uuid, Poster) {
        let merchant = Uuid::new_v4();
        (tempfile::tempdir().unwrap(), merchant, Poster::new(merchant, memo_len))
    }

    /// Sequence numbers of the merchant's entries below `below`, newest first.
    fn newest_first(store: &Store, merchant: &Uuid, below: u64) -> Vec<u64> {
        store
            .entries_newest_first(merchant, below)
            .map(|e| e.unwrap().seq)
            .collect()
    }

    #[test]
    fn entries_split_into_blocks_read_back_in_order_across_checkpoints_and_reopen() {
        let (dir, merchant, mut poster) = one_merchant(200);
        {
            let store = Store::open(dir.path()).unwrap();
            poster.post(&store, 1500);
            store.checkpoint().unwrap();
            poster.post(&store, 1500);
            let layer_blocks = store.overlay.lock().unwrap().active.merchants[&merchant].blocks.len();
            assert!(layer_blocks > 1, "a busy merchant's entries are cut into blocks");
            let entries = store.entries_after(&merchant, 0).unwrap();
            assert_eq!(entries.len(), 3000);
            assert!(entries.iter().enumerate().all(|(i, e)| e.seq == i as u64 + 1));
            assert_eq!(store.entries_after(&merchant, 2222).unwrap()[0].seq, 2223);
            // Newest first from anywhere, across the overlay and sled.
            for below in [u64::MAX, 3001, 2000, 1501, 1500, 777, 2, 1] {
                let seqs = newest_first(&store, &merchant, below);
                let expected: Vec<u64> = (1..below.min(3001)).rev().collect();
                assert_eq!(seqs, expected, "below {below}");
            }
            assert_eq!(store.entry(&merchant, 2999).unwrap().unwrap().seq, 2999);
            assert_eq!(store.entry(&merchant, 3001).unwrap(), None);
            store.checkpoint().unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        let entries = store.entries_after(&merchant, 0).unwrap();
        assert_eq!(entries.len(), 3000);
        assert!(entries.iter().enumerate().all(|(i, e)| e.seq == i as u64 + 1));
        assert_eq!(store.entry(&merchant, 1777).unwrap().unwrap().seq, 1777);
        let blobs = fs::read_dir(dir.path().join("blobs")).map_or(0, |files| files.count());
        assert_eq!(blobs, 0, "no tree node grew past sled's blob threshold");
        assert_eq!(wallet_balance(&store, &merchant), 3000);
    }

    /// While sled reopens after a checkpoint, the applier starts the next
    /// layer of a merchant the checkpoint wrote without reading sled (it
    /// holds the overlay's lock, so every writer and reader would wait), and
    /// a reader finds that merchant's book without sled too.
    #[test]
    fn after_a_checkpoint_a_merchants_next_entry_and_book_need_no_sled_read() {
        let (dir, merchant, mut poster) = one_merchant(10);
        let store = Store::open(dir.path()).unwrap();
        poster.post(&store, 3);
        store.checkpoint().unwrap();
        assert!(store.overlay.lock().unwrap().active.merchants.is_empty());
        let reopening = store.sled.hold_as_a_reopen();
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let balance = wallet_balance(&store, &merchant);
                poster.post(&store, 2);
                let _ = done.send((balance, wallet_balance(&store, &merchant)));
            });
            let answered = finished.recv_timeout(std::time::Duration::from_secs(10));
            drop(reopening);
            assert_eq!(answered, Ok((3, 5)), "answered while sled was held");
        });
        assert!(store.overlay.lock().unwrap().remembered_book(&merchant).is_none());
        store.checkpoint().unwrap();
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(wallet_balance(&store, &merchant), 5);
    }

    /// The sled keys of a merchant's entry blocks.
    fn entry_block_keys(store: &Store, merchant: &Uuid) -> usize {
        store
            .ledger_tree()
            .scan_prefix(merchant_key(KeyPrefix::EntryBlock, merchant))
            .count()
    }

    #[test]
    fn a_merchant_posting_a_few_entries_a_checkpoint_fills_blocks_across_checkpoints() {
        let (dir, merchant, mut poster) = one_merchant(150);
        let check = |store: &Store, count: u64| {
            let entries = store.entries_after(&merchant, 0).unwrap();
            assert!(
                entries.iter().map(|e| e.seq).eq(1..=count),
                "every entry once, in order"
            );
            for below in [u64::MAX, count, count / 2, 4, 3, 2] {
                let seqs = newest_first(store, &merchant, below);
                assert_eq!(
                    seqs,
                    (1..below.min(count + 1)).rev().collect::<Vec<u64>>(),
                    "below {below}"
                );
            }
            assert_eq!(wallet_balance(store, &merchant), count as i64);
        };
        {
            let store = Store::open(dir.path()).unwrap();
            for round in 1..=30u64 {
                poster.post(&store, 2);
                // Read while the layer continues a checkpointed block.
                check(&store, round * 2);
                store.checkpoint().unwrap();
            }
            let keys = entry_block_keys(&store, &merchant);
            assert!(keys < 30 / 2, "60 entries in 30 checkpoints share blocks: {keys} keys");
            let blocks: Vec<usize> = store
                .ledger_tree()
                .scan_prefix(merchant_key(KeyPrefix::EntryBlock, &merchant))
                .map(|item| item.unwrap().1.len())
                .collect();
            assert!(
                blocks[..blocks.len() - 1]
                    .iter()
                    .all(|len| *len >= CONTINUED_TAIL_BYTES_MAX),
                "every block but the last is filled before a new one starts: {blocks:?}"
            );
        }
        // Reopened, nothing is remembered: the next layer starts a block.
        let store = Store::open(dir.path()).unwrap();
        check(&store, 60);
        poster.post(&store, 2);
        check(&store, 62);
        store.checkpoint().unwrap();
        check(&store, 62);
        assert!(entry_block_keys(&store, &merchant) < 30 / 2);
    }
}
