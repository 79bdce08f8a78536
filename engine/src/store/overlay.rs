//! The durable changes not yet written to sled: per merchant, the latest
//! durable book, the entries and the idempotency key hashes since the last
//! checkpoint, and the newest versions of resources. Readers see them at
//! once; a checkpoint writes them to sled (in small batches, its marker
//! last), so the hot path never pays a sled insert.

use super::blocks::append_to_block;
use super::history::{Kind, KIND_COUNT};
use crate::ledger::{Entry, MerchantBook};
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;
use uuid::Uuid;

/// One merchant's changes since the last checkpoint.
#[derive(Clone, Debug)]
pub struct MerchantLayer {
    /// The book after every entry applied so far.
    pub book: MerchantBook,
    /// Entries as sled blocks, each keyed by its first entry's sequence
    /// number: length-prefixed encoded `EntryPosted` records. Blocks are cut
    /// at `ENTRY_BLOCK_BYTES_MAX`, so a busy merchant never grows (and
    /// copies) one huge buffer, nor writes one huge sled value.
    pub blocks: Vec<(u64, Vec<u8>)>,
    /// Hashes of the idempotency keys used, with their entries.
    pub keys: HashMap<u128, u64>,
}

/// Changes of many merchants covering the journal up to `through_seq`.
#[derive(Debug, Default)]
pub struct Layer {
    /// The last journal sequence applied into this layer.
    pub through_seq: u64,
    /// Entries, disbursement versions and resource writes applied into this
    /// layer (a checkpoint is due early when they pile up).
    pub entry_count: usize,
    /// Per merchant.
    pub merchants: HashMap<Uuid, MerchantLayer>,
    /// Open-work keys (a PENDING order's expiry, what waits for a
    /// settlement, an open refund or settlement, a webhook's due time) and
    /// their values; `None` removes the key.
    pub resources: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    /// Resource keys first written in this layer that neither an older
    /// layer nor sled can hold (a webhook event's new due time): removing
    /// one drops its entry, so no removal of a key sled never had is
    /// carried to the checkpoint or walked over by readers of the range.
    pub fresh: HashSet<Vec<u8>>,
    /// Per versioned kind (indexed by `Kind`), the newest version of each
    /// resource changed in this layer, written to the kind's blocks.
    pub versions: [HashMap<Uuid, LayerVersion>; KIND_COUNT],
    /// Merchant and catalog records for their own trees, the newest of each
    /// key. The applier never writes sled itself (a write there waits while
    /// sled reopens): the checkpoint does, with the rest of the layer.
    pub tree_records: BTreeMap<(RecordTree, Vec<u8>), Vec<u8>>,
}

/// The sled trees besides the ledger's, each holding one record a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RecordTree {
    /// Merchant records, by merchant id.
    Merchants,
    /// Platform catalog records (banks, e-wallets, vendors, routing,
    /// organizations, users), by `catalog_key`.
    Catalog,
}

impl Layer {
    /// An empty layer after `previous`, its maps with room for as many
    /// keys as `previous` holds: under a steady load one layer fills about
    /// as far as the last, so the applier does not grow its tables by
    /// doubling (a rehash and fresh memory each time) at every checkpoint.
    pub fn sized_like(previous: &Layer) -> Layer {
        Layer {
            through_seq: previous.through_seq,
            entry_count: 0,
            merchants: HashMap::with_capacity(previous.merchants.len()),
            resources: BTreeMap::new(),
            fresh: HashSet::with_capacity(previous.fresh.len()),
            versions: std::array::from_fn(|kind| HashMap::with_capacity(previous.versions[kind].len())),
            tree_records: BTreeMap::new(),
        }
    }

    /// A copy (only on the rare path of a failed checkpoint).
    pub fn clone_of(layer: &Layer) -> Layer {
        Layer {
            through_seq: layer.through_seq,
            entry_count: layer.entry_count,
            merchants: layer.merchants.clone(),
            resources: layer.resources.clone(),
            fresh: layer.fresh.clone(),
            versions: layer.versions.clone(),
            tree_records: layer.tree_records.clone(),
        }
    }

    /// Sets a merchant or catalog record (a later one of a key replaces it).
    pub fn put_tree_record(&mut self, tree: RecordTree, key: Vec<u8>, value: Vec<u8>) {
        self.tree_records.insert((tree, key), value);
        self.entry_count += 1;
    }

    /// Sets resource keys (a later write of a key replaces the earlier one).
    pub fn put_resources(&mut self, writes: impl IntoIterator<Item = (Vec<u8>, Option<Vec<u8>>)>) {
        for (key, value) in writes {
            if value.is_none() && self.fresh.remove(&key) {
                self.resources.remove(&key);
                continue;
            }
            self.resources.insert(key, value);
            self.entry_count += 1;
        }
    }

    /// Sets a resource key that no older layer and no checkpoint can hold
    /// (see `fresh`).
    pub fn put_fresh_resource(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.fresh.insert(key.clone());
        self.resources.insert(key, Some(value));
        self.entry_count += 1;
    }

    /// Sets the newest version of a resource of `kind`, with its encoding.
    pub fn put_version(&mut self, kind: Kind, id: Uuid, version: Arc<dyn Any + Send + Sync>, encoded: Box<[u8]>) {
        self.versions[kind as usize].insert(id, LayerVersion { version, encoded });
        self.entry_count += 1;
    }

    /// The newest version of `id` of `kind` in this layer.
    pub fn version<T: Clone + 'static>(&self, kind: Kind, id: &Uuid) -> Option<T> {
        let found = self.versions[kind as usize].get(id)?;
        found.version.downcast_ref::<T>().cloned()
    }

    /// Puts a failed checkpoint's versions under this (newer) layer's.
    pub fn keep_newer_versions_over(&mut self, older: &mut Layer) {
        for (newer, older) in self.versions.iter_mut().zip(older.versions.iter_mut()) {
            older.extend(std::mem::take(newer));
        }
    }

    /// Puts a newer layer of one merchant on top of this one.
    pub fn merge_newer(&mut self, merchant_id: Uuid, newer: MerchantLayer) {
        match self.merchants.get_mut(&merchant_id) {
            Some(older) => {
                older.book = newer.book;
                // A newer layer that continued the older one's tail block
                // holds all of it: keep one block under that key.
                if let (Some((older_first, _)), Some((newer_first, _))) = (older.blocks.last(), newer.blocks.first()) {
                    if older_first == newer_first {
                        older.blocks.pop();
                    }
                }
                older.blocks.extend(newer.blocks);
                older.keys.extend(newer.keys);
            }
            None => {
                self.merchants.insert(merchant_id, newer);
            }
        }
    }
}

/// A resource's newest version in a layer, with its bytes as
/// `encode_value` writes them (the span of the journal record that carried
/// it, when it had one), which the checkpoint writes as they are.
#[derive(Clone, Debug)]
pub struct LayerVersion {
    /// The version: the domain type of its kind.
    pub version: Arc<dyn Any + Send + Sync>,
    /// Its encoding.
    pub encoded: Box<[u8]>,
}

/// The active layer (being written by the journal's applier) and the layer
/// a checkpoint is writing to sled, if one is.
#[derive(Debug, Default)]
pub struct Overlay {
    /// Receives new durable changes.
    pub active: Layer,
    /// Being written to sled; still read until that is done.
    pub flushing: Option<Arc<Layer>>,
    /// What sled holds of merchants a checkpoint wrote, so the applier
    /// starts a merchant's next layer without reading sled: a read there
    /// waits while sled reopens, and the applier holds the overlay's lock,
    /// so every writer and reader would wait with it. Invariant: a merchant
    /// is here only while neither layer holds it, and then its book is
    /// sled's book of the merchant and its tail, if any, byte for byte
    /// sled's newest `E` block of the merchant. Set when a checkpoint has
    /// written a layer and the active layer does not hold the merchant;
    /// taken out when a layer starts holding it. At most
    /// `REMEMBERED_BOOKS_MAX` merchants; beyond it, books are read from sled.
    remembered: HashMap<Uuid, WrittenBelow>,
    /// Bytes of the remembered tails, at most `REMEMBERED_TAIL_BYTES_MAX`.
    tail_bytes: usize,
}

/// A merchant's book and newest entry block (its first sequence number and
/// bytes) as the layers below a new active layer of the merchant hold them.
#[derive(Debug)]
pub struct WrittenBelow {
    /// The book the new layer starts from.
    pub book: MerchantBook,
    /// The block it continues, when small enough to (see
    /// `MerchantLayer::continuing`): the applier then extends it without
    /// reading sled.
    pub tail: Option<(u64, Vec<u8>)>,
}

impl Overlay {
    /// What a new active layer of `merchant_id` starts from, if the overlay
    /// knows it: the flushing layer's book and newest block (newer than
    /// sled's), else the remembered ones, which are forgotten either way as
    /// the active layer is about to hold the merchant.
    pub fn take_below(&mut self, merchant_id: &Uuid) -> Option<WrittenBelow> {
        let remembered = self.remembered.remove(merchant_id);
        if let Some((_, block)) = remembered.as_ref().and_then(|written| written.tail.as_ref()) {
            self.tail_bytes -= block.len();
        }
        match self
            .flushing
            .as_ref()
            .and_then(|layer| layer.merchants.get(merchant_id))
        {
            Some(flushing) => Some(WrittenBelow {
                book: flushing.book.clone(),
                tail: flushing
                    .blocks
                    .last()
                    .filter(|(_, block)| block.len() < CONTINUED_TAIL_BYTES_MAX)
                    .cloned(),
            }),
            None => remembered,
        }
    }

    /// The book sled holds of a merchant no layer holds, if remembered.
    pub fn remembered_book(&self, merchant_id: &Uuid) -> Option<&MerchantBook> {
        self.remembered.get(merchant_id).map(|written| &written.book)
    }

    /// After `written` is in sled: remembers the book and newest block of
    /// each of its merchants that the active layer does not hold (the block
    /// when small enough).
    pub fn remember_written(&mut self, written: &Layer) {
        for (merchant_id, layer) in &written.merchants {
            if let Some((_, block)) = self.remembered.remove(merchant_id).and_then(|old| old.tail) {
                self.tail_bytes -= block.len();
            }
            if self.active.merchants.contains_key(merchant_id) || self.remembered.len() >= REMEMBERED_BOOKS_MAX {
                continue;
            }
            let tail = layer.blocks.last().filter(|(_, block)| {
                block.len() < CONTINUED_TAIL_BYTES_MAX && self.tail_bytes + block.len() <= REMEMBERED_TAIL_BYTES_MAX
            });
            if let Some((_, block)) = tail {
                self.tail_bytes += block.len();
            }
            let below = WrittenBelow {
                book: layer.book.clone(),
                tail: tail.cloned(),
            };
            self.remembered.insert(*merchant_id, below);
        }
    }
}

/// What a reader needs of one merchant from the overlay, taken under one
/// lock so a concurrent checkpoint cannot hide anything between layers.
pub struct MerchantView {
    /// From the layer being flushed.
    pub flushing: Option<MerchantLayer>,
    /// From the active layer.
    pub active: Option<MerchantLayer>,
}

impl MerchantView {
    /// Both layers, oldest first.
    pub fn layers(&self) -> impl Iterator<Item = &MerchantLayer> {
        self.flushing.iter().chain(self.active.iter())
    }
}

impl MerchantLayer {
    /// A layer starting from `book`.
    pub fn new(book: MerchantBook) -> MerchantLayer {
        MerchantLayer {
            book,
            blocks: Vec::new(),
            keys: HashMap::new(),
        }
    }

    /// A layer starting from `book` that extends `tail`, the merchant's
    /// newest block below this layer (its first sequence number and its
    /// bytes), instead of opening a new one: a merchant that posts a few
    /// entries a checkpoint then fills a block over several checkpoints,
    /// and sled holds one key (and a tree node's share) per block. The
    /// checkpoint writes the extended block over the old one under the same
    /// key, so sled and the overlay never cut the same entries two ways.
    pub fn continuing(book: MerchantBook, tail: (u64, Vec<u8>)) -> MerchantLayer {
        MerchantLayer {
            book,
            blocks: vec![tail],
            keys: HashMap::new(),
        }
    }

    /// Adds an entry already applied to `book`.
    pub fn push_entry(&mut self, entry: &Entry, payload: &[u8], key_hash: Option<u128>) {
        let full = self
            .blocks
            .last()
            .is_none_or(|(_, block)| block.len() >= ENTRY_BLOCK_BYTES_MAX);
        if full {
            // Grown as entries come: most merchants post a few entries a
            // checkpoint, so a whole block reserved for each active merchant
            // at every checkpoint would be mostly fresh pages never used.
            self.blocks.push((entry.seq, Vec::new()));
        }
        let (_, block) = self.blocks.last_mut().expect("a block was just ensured");
        append_to_block(block, payload);
        if let Some(hash) = key_hash {
            self.keys.insert(hash, entry.seq);
        }
    }
}

/// Where an entry block is cut: small enough to copy and write cheaply, and
/// for a full sled leaf (16 values) to stay under sled's blob threshold (a
/// quarter of its 512 KiB segment; bigger nodes become separate blob files,
/// see `blocks::BLOCK_BYTES`); large enough that a merchant's
/// history is a few sled values per hundred entries.
pub const ENTRY_BLOCK_BYTES_MAX: usize = 4 * 1024;

/// A checkpointed tail block is continued by the next layer while it is
/// under this size: a longer one is left as it is, as copying it to add a
/// few entries would cost more than a new key.
pub const CONTINUED_TAIL_BYTES_MAX: usize = ENTRY_BLOCK_BYTES_MAX / 2;

/// How many bytes of tail blocks the overlay remembers to continue, so
/// very many merchants hold no more than this on their account (beyond
/// it, merchants start new blocks).
pub const REMEMBERED_TAIL_BYTES_MAX: usize = 8 << 20;

/// How many merchants' books the overlay remembers (about 128 bytes each,
/// 4 MiB in all), so the applier reads no book from sled for up to this
/// many merchants active since the last checkpoint.
pub const REMEMBERED_BOOKS_MAX: usize = 32 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_layer_is_empty_with_room_for_what_the_last_held() {
        let mut last = Layer {
            through_seq: 41,
            ..Layer::default()
        };
        for n in 0..3000u128 {
            let encoded = vec![1u8; 8].into_boxed_slice();
            last.put_version(Kind::Disbursements, Uuid::from_u128(n), Arc::new(n), encoded);
        }
        last.put_fresh_resource(b"due".to_vec(), Vec::new());
        let next = Layer::sized_like(&last);
        assert_eq!(next.through_seq, 41);
        assert_eq!(next.entry_count, 0);
        assert!(next.versions.iter().all(HashMap::is_empty));
        assert!(next.resources.is_empty() && next.fresh.is_empty() && next.merchants.is_empty());
        assert!(next.versions[Kind::Disbursements as usize].capacity() >= 3000);
        assert!(next.fresh.capacity() >= 1);
    }

    /// A merchant layer holding one block per `(first_seq, length)`.
    fn merchant_with_blocks(merchant_id: Uuid, blocks: &[(u64, usize)]) -> MerchantLayer {
        MerchantLayer {
            book: MerchantBook::new(merchant_id),
            blocks: blocks.iter().map(|(seq, len)| (*seq, vec![7u8; *len])).collect(),
            keys: HashMap::new(),
        }
    }

    /// What is remembered of a merchant is only ever sled's book and newest
    /// block of a merchant no layer holds: one the active layer holds is
    /// not remembered, a block too long to continue is not kept, a flushing
    /// layer's newer book and block win, and taking them forgets them.
    #[test]
    fn books_and_tails_are_remembered_only_for_merchants_no_layer_holds() {
        let (quiet, busy, big) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        let with_last_seq = |merchant_id, blocks: &[(u64, usize)], last_seq| {
            let mut layer = merchant_with_blocks(merchant_id, blocks);
            layer.book.last_seq = last_seq;
            layer
        };
        let below = |below: Option<WrittenBelow>| {
            below.map(|below| {
                let tail = below.tail.map(|(seq, block)| (seq, block.len()));
                (below.book.last_seq, tail)
            })
        };
        let mut written = Layer::default();
        written
            .merchants
            .insert(quiet, with_last_seq(quiet, &[(1, 4000), (5, 300)], 6));
        written.merchants.insert(busy, with_last_seq(busy, &[(2, 300)], 2));
        written
            .merchants
            .insert(big, with_last_seq(big, &[(3, CONTINUED_TAIL_BYTES_MAX)], 3));
        let mut overlay = Overlay::default();
        overlay
            .active
            .merchants
            .insert(busy, with_last_seq(busy, &[(2, 500)], 4));
        overlay.remember_written(&written);
        assert_eq!(overlay.tail_bytes, 300);
        assert_eq!(overlay.remembered_book(&busy), None, "the active layer's book is newer");
        assert_eq!(
            below(overlay.take_below(&busy)),
            None,
            "the active layer's block is newer"
        );
        assert_eq!(overlay.remembered_book(&quiet).map(|book| book.last_seq), Some(6));
        assert_eq!(below(overlay.take_below(&big)), Some((3, None)), "too long to continue");
        assert_eq!(below(overlay.take_below(&quiet)), Some((6, Some((5, 300)))));
        assert_eq!(below(overlay.take_below(&quiet)), None, "taken once");
        assert_eq!(overlay.remembered_book(&quiet), None);
        assert_eq!(overlay.tail_bytes, 0);

        // A flushing layer that holds the merchant has its newer book and block.
        overlay.remember_written(&written);
        let mut flushing = Layer::default();
        flushing.merchants.insert(quiet, with_last_seq(quiet, &[(5, 600)], 9));
        overlay.flushing = Some(Arc::new(flushing));
        assert_eq!(below(overlay.take_below(&quiet)), Some((9, Some((5, 600)))));
        assert_eq!(overlay.tail_bytes, 0, "the stale one is forgotten too");
        overlay.flushing = None;
        assert_eq!(below(overlay.take_below(&quiet)), None);
    }

    /// A failed checkpoint puts its layer back under the active one: a newer
    /// layer that continued the older one's last block replaces it (one
    /// block a key), and one that did not is appended after it.
    #[test]
    fn merging_a_newer_layer_keeps_one_block_a_first_sequence_number() {
        let merchant = Uuid::from_u128(1);
        let blocks = |layer: &Layer| -> Vec<(u64, usize)> {
            layer.merchants[&merchant]
                .blocks
                .iter()
                .map(|(seq, block)| (*seq, block.len()))
                .collect()
        };
        let mut continued = Layer::default();
        continued
            .merchants
            .insert(merchant, merchant_with_blocks(merchant, &[(1, 4000), (5, 300)]));
        continued.merge_newer(merchant, merchant_with_blocks(merchant, &[(5, 900), (9, 100)]));
        assert_eq!(blocks(&continued), [(1, 4000), (5, 900), (9, 100)]);

        let mut appended = Layer::default();
        appended
            .merchants
            .insert(merchant, merchant_with_blocks(merchant, &[(1, 4000), (5, 300)]));
        appended.merge_newer(merchant, merchant_with_blocks(merchant, &[(9, 100)]));
        assert_eq!(blocks(&appended), [(1, 4000), (5, 300), (9, 100)]);
    }
}
