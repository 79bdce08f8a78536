//! Index runs against a `BTreeMap` model: lookups, ranges, newest-wins,
//! merges, reloads, and merges a crash cut short.

use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// 16-byte random keys (ids, hashes) with 16-byte values, filtered.
const LOOKUP: RunSpec = RunSpec {
    tag: b'l',
    key_len: 16,
    value_len: 16,
    random_at: Some(8),
};

/// 8-byte ordered keys, no values, scanned by range only.
const SCANNED: RunSpec = RunSpec {
    tag: b's',
    key_len: 8,
    value_len: 0,
    random_at: None,
};

fn tree() -> sled::Tree {
    sled::Config::new()
        .temporary(true)
        .open()
        .unwrap()
        .open_tree("runs")
        .unwrap()
}

fn key(n: u64) -> [u8; 16] {
    // Low bytes ordered, high bytes spread like a hash's.
    let mut key = [0u8; 16];
    key[..8].copy_from_slice(&n.to_be_bytes());
    key[8..].copy_from_slice(&n.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes());
    key
}

fn value(n: u64, version: u64) -> [u8; 16] {
    let mut value = [0u8; 16];
    value[..8].copy_from_slice(&n.to_be_bytes());
    value[8..].copy_from_slice(&version.to_be_bytes());
    value
}

/// Writes `entries` as one run, as a checkpoint would.
fn write_run(set: &mut RunSet, tree: &sled::Tree, entries: &[(u64, u64)]) {
    let mut builder = RunBuilder::new(set.spec);
    for (n, version) in entries {
        builder.push(&key(*n), &value(*n, *version));
    }
    stage_and_add(set, tree, &builder);
}

/// What a checkpoint does with a run: chunks, then its metadata, then visible.
fn stage_and_add(set: &mut RunSet, tree: &sled::Tree, builder: &RunBuilder) {
    let mut sink = |key: Vec<u8>, chunk: Vec<u8>| {
        tree.insert(key, chunk)?;
        Ok(())
    };
    let staged = set.stage(builder, &mut sink).unwrap();
    let (key, meta) = staged.meta_entry();
    tree.insert(key, meta).unwrap();
    set.add(staged);
}

fn assert_matches(set: &RunSet, tree: &sled::Tree, model: &BTreeMap<u64, u64>, space: u64) {
    for n in 0..space {
        let expected = model.get(&n).map(|version| value(n, *version).to_vec());
        assert_eq!(set.get(|| tree, &key(n)).unwrap(), expected, "key {n}");
    }
    let all = set.range(tree, &[0u8; 16], &[0xffu8; 16]).unwrap();
    let expected: Vec<(Vec<u8>, Vec<u8>)> = model
        .iter()
        .map(|(n, version)| (key(*n).to_vec(), value(*n, *version).to_vec()))
        .collect();
    assert_eq!(all, expected);
}

#[test]
fn a_run_answers_every_key_it_holds_and_none_it_does_not() {
    let tree = tree();
    let mut set = RunSet::load(&tree, LOOKUP).unwrap();
    let entries: Vec<(u64, u64)> = (0..5_000).map(|n| (n * 2, 1)).collect();
    write_run(&mut set, &tree, &entries);
    assert!(set.runs[0].meta.chunks > 1, "cut into chunks");
    for n in 0..10_000u64 {
        let found = set.get(|| &tree, &key(n)).unwrap();
        assert_eq!(found, (n % 2 == 0).then(|| value(n, 1).to_vec()), "key {n}");
    }
    let middle = set.range(&tree, &key(1_000), &key(1_010)).unwrap();
    let keys: Vec<Vec<u8>> = middle.into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys, [1_000, 1_002, 1_004, 1_006, 1_008].map(|n| key(n).to_vec()));
}

/// A key above the last of every run this process wrote (an id newer than
/// any indexed, as time-ordered ids are) is answered without a read: the
/// tree is never asked for. After a reload the last keys are not known,
/// and the same keys are still found by reading.
#[test]
fn a_key_above_every_runs_last_is_answered_without_a_read() {
    let tree = tree();
    let mut set = RunSet::load(&tree, LOOKUP).unwrap();
    write_run(&mut set, &tree, &(0..3_000).map(|n| (n, 1)).collect::<Vec<_>>());
    write_run(&mut set, &tree, &(3_000..3_100).map(|n| (n, 1)).collect::<Vec<_>>());
    let no_read = || -> &sled::Tree { panic!("the tree was asked for") };
    for n in 3_100..13_100 {
        assert_eq!(set.get(no_read, &key(n)).unwrap(), None, "key {n}");
    }
    assert_eq!(set.get(|| &tree, &key(3_099)).unwrap(), Some(value(3_099, 1).to_vec()));
    let reloaded = RunSet::load(&tree, LOOKUP).unwrap();
    assert!(reloaded.runs.iter().all(|run| run.last_key.is_none()));
    assert_eq!(
        reloaded.get(|| &tree, &key(3_099)).unwrap(),
        Some(value(3_099, 1).to_vec())
    );
    assert_eq!(
        reloaded.get(|| &tree, &key(2_999)).unwrap(),
        Some(value(2_999, 1).to_vec())
    );
}

/// A run written in key order as records come is the run `stage` makes of
/// the same records: every key found by lookup and range, and a reload
/// sees it too.
#[test]
fn a_run_written_in_key_order_answers_as_a_staged_one() {
    let tree = tree();
    let mut set = RunSet::load(&tree, LOOKUP).unwrap();
    write_run(&mut set, &tree, &[(1, 1), (3, 1)]);
    let mut sink = |key: Vec<u8>, chunk: Vec<u8>| {
        tree.insert(key, chunk)?;
        Ok(())
    };
    let mut run = set.stage_in_order(2_000, &mut sink);
    for n in (0..4_000).step_by(2) {
        run.push(&key(n), &value(n, 2)).unwrap();
    }
    let staged = run.finish().unwrap();
    let (head, meta) = staged.meta_entry();
    tree.insert(head, meta).unwrap();
    set.add(staged);
    let mut model: BTreeMap<u64, u64> = (0..4_000).step_by(2).map(|n| (n, 2)).collect();
    model.insert(1, 1);
    model.insert(3, 1);
    assert_matches(&set, &tree, &model, 4_100);
    assert_matches(&RunSet::load(&tree, LOOKUP).unwrap(), &tree, &model, 4_100);
}

#[test]
#[should_panic(expected = "records in key order")]
fn a_run_written_in_key_order_refuses_a_key_out_of_order() {
    let tree = tree();
    let set = RunSet::load(&tree, LOOKUP).unwrap();
    let mut sink = |_: Vec<u8>, _: Vec<u8>| Ok(());
    let mut run = set.stage_in_order(2, &mut sink);
    run.push(&key(2), &value(2, 1)).unwrap();
    run.push(&key(1), &value(1, 1)).unwrap();
}

#[test]
fn the_newest_run_wins_and_a_reload_sees_the_same() {
    let tree = tree();
    let mut set = RunSet::load(&tree, LOOKUP).unwrap();
    write_run(&mut set, &tree, &[(1, 1), (2, 1), (3, 1)]);
    write_run(&mut set, &tree, &[(2, 2), (4, 2)]);
    // In one run, the last pushed of a key wins.
    write_run(&mut set, &tree, &[(3, 3), (3, 4)]);
    let model = BTreeMap::from([(1, 1), (2, 2), (3, 4), (4, 2)]);
    assert_matches(&set, &tree, &model, 6);
    let reloaded = RunSet::load(&tree, LOOKUP).unwrap();
    assert_eq!(reloaded.run_count(), 3);
    assert_matches(&reloaded, &tree, &model, 6);
}

#[test]
fn merges_keep_every_answer_and_few_runs() {
    let tree = tree();
    let mut set = RunSet::load(&tree, LOOKUP).unwrap();
    let mut model = BTreeMap::new();
    for checkpoint in 0..64u64 {
        let entries: Vec<(u64, u64)> = (0..50)
            .map(|i| ((checkpoint * 37 + i * 11) % 1_500, checkpoint))
            .collect();
        for (n, version) in &entries {
            model.insert(*n, *version);
        }
        write_run(&mut set, &tree, &entries);
        set.compact(&tree).unwrap();
    }
    assert!(set.run_count() <= 2 * FANOUT, "{} runs", set.run_count());
    assert_matches(&set, &tree, &model, 1_600);
    let reloaded = RunSet::load(&tree, LOOKUP).unwrap();
    assert_matches(&reloaded, &tree, &model, 1_600);
    // Replaced runs leave nothing behind.
    let chunks = tree.scan_prefix([PREFIX, CHUNK_MARK, LOOKUP.tag]).count() as u32;
    assert_eq!(chunks, set.runs.iter().map(|run| run.meta.chunks).sum::<u32>());
    let parts = tree.scan_prefix([PREFIX, PART_MARK, LOOKUP.tag]).count();
    let expected: usize = set
        .runs
        .iter()
        .map(|run| run.meta.part_bytes().len().div_ceil(CHUNK_BYTES))
        .sum();
    assert_eq!(parts, expected);
}

#[test]
fn a_merge_cut_short_is_undone_or_finished_on_load() {
    for finished_swap in [false, true] {
        let tree = tree();
        let mut set = RunSet::load(&tree, LOOKUP).unwrap();
        write_run(&mut set, &tree, &[(1, 1), (2, 1)]);
        write_run(&mut set, &tree, &[(2, 2), (3, 2)]);
        let model = BTreeMap::from([(1, 1), (2, 2), (3, 2)]);
        let old: Vec<u64> = set.runs.iter().map(|run| run.id).collect();
        // A merge wrote its run's chunk and intent, then the crash: with
        // the metadata swapped or not.
        let new_id = set.next_id;
        let intent = Intent {
            writes: new_id,
            replaces: old.clone(),
        };
        tree.insert(intent_key(LOOKUP.tag), encode_plain(&intent)).unwrap();
        let mut chunk = Vec::new();
        for (n, version) in &model {
            chunk.extend_from_slice(&key(*n));
            chunk.extend_from_slice(&value(*n, *version));
        }
        tree.insert(chunk_key(LOOKUP.tag, new_id, 0), chunk).unwrap();
        let merged = Run {
            id: new_id,
            meta: RunMeta {
                len: 3,
                chunks: 1,
                fences: key(1).to_vec(),
                bloom: set.runs[0]
                    .meta
                    .bloom
                    .iter()
                    .zip(&set.runs[1].meta.bloom)
                    .map(|(a, b)| a | b)
                    .collect(),
            },
            last_key: None,
        };
        for (index, part) in merged.meta.part_bytes().chunks(CHUNK_BYTES).enumerate() {
            tree.insert(part_key(LOOKUP.tag, new_id, index as u32), part).unwrap();
        }
        if finished_swap {
            let mut swap = sled::Batch::default();
            let (head, value) = merged.head_entry(LOOKUP.tag);
            swap.insert(head, value);
            for id in &old {
                swap.remove(head_key(LOOKUP.tag, *id).to_vec());
            }
            tree.apply_batch(swap).unwrap();
        }
        let loaded = RunSet::load(&tree, LOOKUP).unwrap();
        let ids: Vec<u64> = loaded.runs.iter().map(|run| run.id).collect();
        assert_eq!(ids, if finished_swap { vec![new_id] } else { old.clone() });
        assert_matches(&loaded, &tree, &model, 5);
        assert!(tree.get(intent_key(LOOKUP.tag)).unwrap().is_none());
        let chunk_ids: std::collections::BTreeSet<u64> = tree
            .scan_prefix([PREFIX, CHUNK_MARK, LOOKUP.tag])
            .keys()
            .map(|k| u64::from_be_bytes(k.unwrap()[3..11].try_into().unwrap()))
            .collect();
        let part_ids: std::collections::BTreeSet<u64> = tree
            .scan_prefix([PREFIX, PART_MARK, LOOKUP.tag])
            .keys()
            .map(|k| u64::from_be_bytes(k.unwrap()[3..11].try_into().unwrap()))
            .collect();
        assert_eq!(chunk_ids, ids.iter().copied().collect());
        assert_eq!(part_ids, ids.into_iter().collect());
    }
}

/// Rewrites every run's head and parts as one whole-metadata value, as a
/// data dir written before the parts holds them.
fn to_whole_metadata(set: &RunSet, tree: &sled::Tree) {
    for run in &set.runs {
        tree.remove(head_key(set.spec.tag, run.id)).unwrap();
        for part in tree.scan_prefix(part_prefix(set.spec.tag, run.id)).keys() {
            tree.remove(part.unwrap()).unwrap();
        }
        tree.insert(whole_meta_key(set.spec.tag, run.id), encode_plain(&run.meta))
            .unwrap();
    }
}

#[test]
fn runs_with_whole_metadata_as_older_data_dirs_hold_them_load_and_merge_away() {
    let tree = tree();
    let mut set = RunSet::load(&tree, LOOKUP).unwrap();
    let mut model = BTreeMap::new();
    for run in 0..3u64 {
        let entries: Vec<(u64, u64)> = (0..40).map(|i| ((run * 13 + i * 7) % 200, run)).collect();
        model.extend(entries.iter().copied());
        write_run(&mut set, &tree, &entries);
    }
    to_whole_metadata(&set, &tree);
    assert_eq!(tree.scan_prefix([PREFIX, HEAD_MARK, LOOKUP.tag]).count(), 0);
    let mut loaded = RunSet::load(&tree, LOOKUP).unwrap();
    assert_eq!(loaded.run_count(), 3);
    assert_matches(&loaded, &tree, &model, 220);

    // A fourth run of the same tier, in parts, merges all four into one.
    let entries: Vec<(u64, u64)> = (0..40).map(|i| ((i * 5) % 200, 9)).collect();
    model.extend(entries.iter().copied());
    write_run(&mut loaded, &tree, &entries);
    loaded.compact(&tree).unwrap();
    assert_eq!(loaded.run_count(), 1);
    assert_eq!(tree.scan_prefix([PREFIX, WHOLE_META_MARK, LOOKUP.tag]).count(), 0);
    assert_matches(&loaded, &tree, &model, 220);
    assert_matches(&RunSet::load(&tree, LOOKUP).unwrap(), &tree, &model, 220);
}

#[test]
fn a_big_runs_metadata_is_stored_in_parts_no_bigger_than_a_chunk() {
    let tree = tree();
    let mut set = RunSet::load(&tree, LOOKUP).unwrap();
    let entries: Vec<(u64, u64)> = (0..60_000).map(|n| (n, 1)).collect();
    write_run(&mut set, &tree, &entries);
    let meta = &set.runs[0].meta;
    let bytes = meta.fences.len() + meta.bloom.len() * 8;
    assert!(bytes > 8 * CHUNK_BYTES, "{bytes} bytes of metadata");
    let parts: Vec<usize> = tree
        .scan_prefix(part_prefix(LOOKUP.tag, set.runs[0].id))
        .values()
        .map(|part| part.unwrap().len())
        .collect();
    assert_eq!(parts.len(), bytes.div_ceil(CHUNK_BYTES));
    assert!(parts.iter().all(|len| *len <= CHUNK_BYTES), "{parts:?}");
    let head = tree.get(head_key(LOOKUP.tag, set.runs[0].id)).unwrap().unwrap();
    assert!(head.len() < 32, "the head is {} bytes", head.len());
    let reloaded = RunSet::load(&tree, LOOKUP).unwrap();
    assert_eq!(reloaded.runs[0].meta.fences, meta.fences);
    assert_eq!(reloaded.runs[0].meta.bloom, meta.bloom);

    // A part lost is an error, not a run read short.
    let last = part_key(LOOKUP.tag, set.runs[0].id, parts.len() as u32 - 1);
    tree.remove(last).unwrap();
    assert!(matches!(RunSet::load(&tree, LOOKUP), Err(StoreError::Format(_))));
}

#[test]
fn a_run_staged_but_never_made_visible_is_not_seen_and_its_id_is_reused() {
    let tree = tree();
    let mut set = RunSet::load(&tree, LOOKUP).unwrap();
    write_run(&mut set, &tree, &[(1, 1)]);
    // A checkpoint wrote chunks, then failed before its marker.
    let mut builder = RunBuilder::new(LOOKUP);
    for n in 0..1_000 {
        builder.push(&key(n), &value(n, 9));
    }
    let mut sink = |key: Vec<u8>, chunk: Vec<u8>| {
        tree.insert(key, chunk)?;
        Ok(())
    };
    let abandoned = set.stage(&builder, &mut sink).unwrap();
    drop(abandoned);
    let mut set = RunSet::load(&tree, LOOKUP).unwrap();
    assert_matches(&set, &tree, &BTreeMap::from([(1, 1)]), 1_000);
    write_run(&mut set, &tree, &[(2, 2)]);
    let model = BTreeMap::from([(1, 1), (2, 2)]);
    assert_matches(&set, &tree, &model, 1_000);
    assert_matches(&RunSet::load(&tree, LOOKUP).unwrap(), &tree, &model, 1_000);
}

#[test]
fn a_range_within_a_limit_gives_up_past_it() {
    let tree = tree();
    let mut set = RunSet::load(&tree, LOOKUP).unwrap();
    write_run(&mut set, &tree, &(0..100).map(|n| (n, 1)).collect::<Vec<_>>());
    write_run(&mut set, &tree, &(100..200).map(|n| (n, 1)).collect::<Vec<_>>());
    let (from, to) = (key(50), key(150));
    assert_eq!(set.range_within(&tree, &from, &to, 100).unwrap().unwrap().len(), 100);
    assert_eq!(set.range_within(&tree, &from, &to, 99).unwrap(), None);
}

#[test]
fn an_index_without_a_filter_is_scanned_by_range() {
    let tree = tree();
    let mut set = RunSet::load(&tree, SCANNED).unwrap();
    for part in 0..6u64 {
        let mut builder = RunBuilder::new(SCANNED);
        for n in (part..3_000).step_by(6) {
            builder.push(&n.to_be_bytes(), &[]);
        }
        stage_and_add(&mut set, &tree, &builder);
        set.compact(&tree).unwrap();
    }
    let found = set.range(&tree, &100u64.to_be_bytes(), &200u64.to_be_bytes()).unwrap();
    let found: Vec<u64> = found
        .iter()
        .map(|(k, _)| u64::from_be_bytes(k[..].try_into().unwrap()))
        .collect();
    assert_eq!(found, (100..200).collect::<Vec<_>>());
    assert!(set.runs.iter().all(|run| run.meta.bloom.is_empty()));
}

#[test]
fn memory_per_entry_stays_small() {
    let tree = tree();
    let mut set = RunSet::load(&tree, LOOKUP).unwrap();
    for checkpoint in 0..20u64 {
        let entries: Vec<(u64, u64)> = (0..5_000).map(|i| (checkpoint * 5_000 + i, 1)).collect();
        write_run(&mut set, &tree, &entries);
        set.compact(&tree).unwrap();
    }
    let per_entry = set.memory_bytes() as f64 / set.entries() as f64;
    // 10 filter bits and a 16-byte fence per chunk of 128 records.
    assert!(per_entry < 1.5, "{per_entry} bytes an entry");
}

/// What a test run does to the index.
#[derive(Clone, Debug)]
enum Step {
    /// A checkpoint's run: (key, version) pairs.
    Run(Vec<(u64, u64)>),
    Compact,
    Reload,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => proptest::collection::vec((0u64..400, 0u64..1_000), 0..200).prop_map(Step::Run),
        2 => Just(Step::Compact),
        1 => Just(Step::Reload),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Any sequence of runs, merges and reloads answers as the model does.
    #[test]
    fn runs_answer_as_the_model_does(steps in proptest::collection::vec(step(), 1..30)) {
        let tree = tree();
        let mut set = RunSet::load(&tree, LOOKUP).unwrap();
        let mut model = BTreeMap::new();
        for step in steps {
            match step {
                Step::Run(entries) => {
                    for (n, version) in &entries {
                        model.insert(*n, *version);
                    }
                    write_run(&mut set, &tree, &entries);
                }
                Step::Compact => set.compact(&tree).unwrap(),
                Step::Reload => set = RunSet::load(&tree, LOOKUP).unwrap(),
            }
        }
        assert_matches(&set, &tree, &model, 410);
    }
}

/// Runs on disk were written with probe `i` at `(h1 + i * h2) % bits`:
/// the stepped computation must give exactly those bits, or a lookup
/// would miss keys an older run holds.
#[test]
fn filter_bits_are_the_layout_runs_were_written_with() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for words in [1usize, 2, 3, 7, 64, 1000, 156_250, 1 << 20] {
        for _ in 0..2000 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let random = random_bytes(&state.to_le_bytes(), 0);
            let (h1, h2) = (random & 0xffff_ffff, (random >> 32) | 1);
            let bits = (words * 64) as u64;
            let written: Vec<usize> = (0..BLOOM_PROBES)
                .map(|i| (h1.wrapping_add(i.wrapping_mul(h2)) % bits) as usize)
                .collect();
            let stepped: Vec<usize> = crate::bloom::probe_bits(random, words, BLOOM_PROBES).collect();
            assert_eq!(stepped, written, "words {words}, key {state:#x}");
        }
    }
}

proptest! {
    /// The halving search over concatenated records finds what the slice's
    /// own `partition_point` finds, for every probe, present or not.
    #[test]
    fn sorted_partition_agrees_with_partition_point(
        mut keys in proptest::collection::vec(any::<[u8; 3]>(), 0..64),
        probe in any::<[u8; 3]>(),
    ) {
        keys.sort();
        let concatenated: Vec<u8> = keys.concat();
        for probe in keys.iter().copied().chain([probe]) {
            let at_or_before = sorted_partition(&concatenated, 3, |key| key <= &probe[..]);
            prop_assert_eq!(at_or_before, keys.partition_point(|key| *key <= probe));
            let before = sorted_partition(&concatenated, 3, |key| key < &probe[..]);
            prop_assert_eq!(before, keys.partition_point(|key| *key < probe));
        }
    }
}
