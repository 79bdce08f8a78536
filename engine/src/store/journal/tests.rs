//! The journal's tests: replay of damaged segments, the writer's batches and
//! segments, and writes the disk refuses (through the writer's fault seam).

use super::writer::Fault;
use super::*;
use std::io::Write;
use std::time::{Duration, Instant};

fn replay_all(dir: &Path) -> (Vec<(u64, Vec<u8>)>, ReplayOutcome) {
    let mut seen = Vec::new();
    let outcome = replay(dir, 0, |seq, payload| {
        seen.push((seq, payload.to_vec()));
        Ok(())
    })
    .unwrap();
    (seen, outcome)
}

fn write_records(dir: &Path, count: u64) {
    let outcome = replay(dir, 0, |_, _| Ok(())).unwrap();
    let journal = Journal::start(dir, outcome.next_seq).unwrap();
    let (tell, told) = mpsc::channel();
    for i in 0..count {
        let tell = tell.clone();
        journal
            .append_blocking(
                format!("record-{i}").into_bytes(),
                Box::new(move |seq, _| {
                    tell.send(seq).unwrap();
                    None
                }),
            )
            .unwrap();
    }
    for _ in 0..count {
        told.recv().unwrap();
    }
    journal.shutdown_blocking();
}

#[test]
fn records_come_back_in_order_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    write_records(dir.path(), 100);
    write_records(dir.path(), 5);
    let (seen, outcome) = replay_all(dir.path());
    assert_eq!(seen.len(), 105);
    assert_eq!(seen[0], (1, b"record-0".to_vec()));
    assert_eq!(seen[104], (105, b"record-4".to_vec()));
    assert_eq!(outcome.next_seq, 106);
}

/// A record above the old 16 MiB replay limit (a big settlement) is
/// written and comes back; one above the limit is refused before it is
/// written, so no acknowledged record is ever cut at replay.
#[test]
fn big_records_replay_and_oversized_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::start(dir.path(), 1).unwrap();
    let big = vec![7u8; 20 * 1024 * 1024];
    let (tell, told) = mpsc::channel();
    journal
        .append_blocking(
            big.clone(),
            Box::new(move |seq, _| {
                tell.send(seq).unwrap();
                None
            }),
        )
        .unwrap();
    assert_eq!(told.recv().unwrap(), 1);
    let oversized = vec![0u8; limits::JOURNAL_RECORD_BYTES_MAX + 1];
    let refused = journal.append_blocking(oversized, Box::new(|_, _| None));
    assert!(matches!(refused, Err(JournalError::TooLarge(n)) if n == limits::JOURNAL_RECORD_BYTES_MAX + 1));
    journal.shutdown_blocking();
    let (seen, outcome) = replay_all(dir.path());
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].1, big);
    assert_eq!(outcome.torn_bytes_cut, 0);
}

#[test]
fn a_truncated_last_record_is_cut_and_the_rest_kept() {
    let dir = tempfile::tempdir().unwrap();
    write_records(dir.path(), 10);
    let (_, path) = list_segments(dir.path()).unwrap().pop().unwrap();
    let len = fs::metadata(&path).unwrap().len();
    OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len - 3)
        .unwrap();
    let (seen, outcome) = replay_all(dir.path());
    assert_eq!(seen.len(), 9);
    assert_eq!(outcome.next_seq, 10);
    assert!(outcome.torn_bytes_cut > 0);
    // Appending after the cut continues the numbering cleanly.
    write_records(dir.path(), 1);
    let (seen, _) = replay_all(dir.path());
    assert_eq!(seen.len(), 10);
    assert_eq!(seen[9], (10, b"record-0".to_vec()));
}

#[test]
fn a_corrupted_last_record_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    write_records(dir.path(), 4);
    let (_, path) = list_segments(dir.path()).unwrap().pop().unwrap();
    let mut bytes = fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xFF;
    fs::write(&path, &bytes).unwrap();
    let (seen, outcome) = replay_all(dir.path());
    assert_eq!(seen.len(), 3);
    assert_eq!(outcome.next_seq, 4);
}

/// A segment of `count` records of `payload_len` bytes written directly,
/// as frames of one write; returns its path and each frame's offset.
fn segment_of(dir: &Path, count: u64, payload_len: usize) -> (PathBuf, Vec<usize>) {
    let mut bytes = Vec::new();
    let mut offsets = Vec::new();
    for seq in 1..=count {
        offsets.push(bytes.len());
        encode_frame(seq, 1, &vec![(seq % 251) as u8; payload_len], &mut bytes);
    }
    let path = segment_path(dir, 1);
    fs::write(&path, &bytes).unwrap();
    (path, offsets)
}

fn flip_byte(path: &Path, at: usize) {
    let mut bytes = fs::read(path).unwrap();
    bytes[at] ^= 0xFF;
    fs::write(path, &bytes).unwrap();
}

fn corrupt_at(result: Result<ReplayOutcome, JournalError>, frame_offset: usize) -> String {
    match result {
        Err(JournalError::Corrupt { offset, reason, .. }) => {
            assert_eq!(offset, frame_offset as u64, "{reason}");
            reason
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn a_write_stays_within_the_batch_cap_unless_it_is_one_record() {
    let cap = limits::JOURNAL_BATCH_BYTES_MAX;
    let frame = FRAME_HEADER_BYTES + SEQ_BYTES;
    assert!(!opens_next_batch(0, 3 * cap), "a record alone goes, however big");
    assert!(!opens_next_batch(100, cap - 100 - frame), "exactly at the cap");
    assert!(opens_next_batch(100, cap - 100 - frame + 1));
    assert!(opens_next_batch(cap / 2, cap));
}

#[test]
fn damage_followed_by_more_records_than_one_write_holds_is_corruption_not_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let records = limits::JOURNAL_BATCH_RECORDS_MAX as u64 + 100;
    let (path, offsets) = segment_of(dir.path(), records, 8);
    flip_byte(&path, offsets[50] + FRAME_HEADER_BYTES + SEQ_BYTES);
    let before = fs::metadata(&path).unwrap().len();
    let reason = corrupt_at(replay(dir.path(), 0, |_, _| Ok(())), offsets[50]);
    assert!(reason.contains("checksum mismatch"), "{reason}");
    assert_eq!(fs::metadata(&path).unwrap().len(), before, "nothing is cut");
}

#[test]
fn damage_followed_by_records_further_than_one_write_reaches_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    // 2 KiB records: 8 MiB of them is far fewer than the record bound.
    let count = (limits::JOURNAL_BATCH_BYTES_MAX / 2048) as u64 + 200;
    let (path, offsets) = segment_of(dir.path(), count, 2048);
    flip_byte(&path, offsets[10] + 100);
    corrupt_at(replay(dir.path(), 0, |_, _| Ok(())), offsets[10]);
}

#[test]
fn damage_in_records_a_checkpoint_covers_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let (path, offsets) = segment_of(dir.path(), 10, 8);
    flip_byte(&path, offsets[5] + FRAME_HEADER_BYTES + SEQ_BYTES);
    // Record 6 is damaged; the checkpoint covers up to 7.
    corrupt_at(replay(dir.path(), 8, |_, _| Ok(())), offsets[5]);
}

#[test]
fn a_whole_record_out_of_sequence_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = Vec::new();
    for seq in [1, 2, 3, 7, 8] {
        encode_frame(seq, seq, b"payload", &mut bytes);
    }
    fs::write(segment_path(dir.path(), 1), &bytes).unwrap();
    let reason = match replay(dir.path(), 0, |_, _| Ok(())) {
        Err(JournalError::Corrupt { reason, .. }) => reason,
        other => panic!("expected Corrupt, got {other:?}"),
    };
    assert!(reason.contains("sequence 7 where 4 was expected"), "{reason}");
}

/// A record whose payload holds what look like whole frames, as a
/// merchant's text may: `count` fake frames with sequences from `first_fake_seq`.
fn payload_of_fake_frames(first_fake_seq: u64, count: u64) -> Vec<u8> {
    let mut payload = Vec::new();
    for seq in first_fake_seq..first_fake_seq + count {
        encode_frame(seq, seq, b"fake", &mut payload);
    }
    payload
}

#[test]
fn frames_inside_a_record_cut_short_by_a_crash_are_not_taken_for_later_writes() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = Vec::new();
    for seq in 1..=3 {
        encode_frame(seq, seq, b"whole", &mut bytes);
    }
    let whole = bytes.len();
    // A far-off sequence, and one as far on as whole records between could reach.
    let mut payload = payload_of_fake_frames(0x7f7f_7f7f, 10);
    payload.extend(vec![b' '; 600 * 1024]);
    payload.extend(payload_of_fake_frames(4 + limits::JOURNAL_BATCH_RECORDS_MAX as u64, 10));
    encode_frame(4, 4, &payload, &mut bytes);
    // The crash cut the record short, just before its end.
    bytes.truncate(bytes.len() - 3);
    fs::write(segment_path(dir.path(), 1), &bytes).unwrap();
    let (seen, outcome) = replay_all(dir.path());
    assert_eq!(seen.len(), 3);
    assert_eq!(outcome.next_seq, 4);
    assert_eq!(fs::metadata(segment_path(dir.path(), 1)).unwrap().len(), whole as u64);
}

#[test]
fn a_frame_whose_sequence_no_records_between_could_reach_is_not_a_later_write() {
    let dir = tempfile::tempdir().unwrap();
    let (path, offsets) = segment_of(dir.path(), 10, 8);
    // A damaged header (no usable length), then a fake frame far ahead in sequence.
    let mut bytes = fs::read(&path).unwrap();
    bytes.truncate(offsets[5]);
    bytes.extend_from_slice(&[0xFF; 8]);
    bytes.extend(payload_of_fake_frames(6 + limits::JOURNAL_BATCH_RECORDS_MAX as u64, 1));
    fs::write(&path, &bytes).unwrap();
    let (seen, _) = replay_all(dir.path());
    assert_eq!(seen.len(), 5, "cut as a torn tail");
}

/// Records 1-5 went out in one write and 6-10 in the next.
fn two_writes(dir: &Path) -> (PathBuf, Vec<usize>) {
    let mut bytes = Vec::new();
    let mut offsets = Vec::new();
    for seq in 1..=10u64 {
        offsets.push(bytes.len());
        encode_frame(seq, if seq <= 5 { 1 } else { 6 }, b"a record", &mut bytes);
    }
    let path = segment_path(dir, 1);
    fs::write(&path, &bytes).unwrap();
    (path, offsets)
}

#[test]
fn damage_followed_by_a_record_of_a_later_write_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let (path, offsets) = two_writes(dir.path());
    flip_byte(&path, offsets[2] + FRAME_HEADER_BYTES + SEQ_BYTES);
    let before = fs::metadata(&path).unwrap().len();
    let reason = corrupt_at(replay(dir.path(), 0, |_, _| Ok(())), offsets[2]);
    assert!(reason.contains("a whole record 6 follows"), "{reason}");
    assert_eq!(fs::metadata(&path).unwrap().len(), before, "nothing is cut");
    // The same damage in the last write is its torn tail.
    let dir = tempfile::tempdir().unwrap();
    let (path, offsets) = two_writes(dir.path());
    flip_byte(&path, offsets[7] + FRAME_HEADER_BYTES + SEQ_BYTES);
    let (seen, _) = replay_all(dir.path());
    assert_eq!(seen.len(), 7);
    assert_eq!(fs::metadata(&path).unwrap().len(), offsets[7] as u64);
}

#[test]
fn damage_inside_the_last_write_is_a_torn_tail_even_with_whole_records_after_it() {
    // Pages of one unsynced write may reach the disk out of order.
    let dir = tempfile::tempdir().unwrap();
    let (path, offsets) = segment_of(dir.path(), 40, 64);
    flip_byte(&path, offsets[30] + FRAME_HEADER_BYTES + SEQ_BYTES);
    let (seen, outcome) = replay_all(dir.path());
    assert_eq!(seen.len(), 30);
    assert_eq!(outcome.next_seq, 31);
    assert_eq!(fs::metadata(&path).unwrap().len(), offsets[30] as u64);
}

#[test]
fn garbage_zeroes_after_the_last_record_are_cut() {
    let dir = tempfile::tempdir().unwrap();
    write_records(dir.path(), 2);
    let (_, path) = list_segments(dir.path()).unwrap().pop().unwrap();
    let mut file = OpenOptions::new().append(true).open(&path).unwrap();
    file.write_all(&[0u8; 64]).unwrap();
    let (seen, outcome) = replay_all(dir.path());
    assert_eq!(seen.len(), 2);
    assert_eq!(outcome.torn_bytes_cut, 64);
}

#[test]
fn replay_skips_records_below_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    write_records(dir.path(), 10);
    let mut seen = Vec::new();
    let outcome = replay(dir.path(), 8, |seq, _| {
        seen.push(seq);
        Ok(())
    })
    .unwrap();
    assert_eq!(seen, vec![8, 9, 10]);
    assert_eq!(outcome.next_seq, 11);
}

#[test]
fn segments_rotate_and_covered_ones_are_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::start_with_segment_limit(dir.path(), 1, 64).unwrap();
    let (tell, told) = mpsc::channel();
    for i in 0..40u64 {
        let tell = tell.clone();
        let done: Completion = Box::new(move |seq, payload| {
            tell.send((seq, payload.to_vec())).unwrap();
            None
        });
        journal
            .append_blocking(format!("record-{i:02}-padding").into_bytes(), done)
            .unwrap();
        told.recv().unwrap();
    }
    let segments = list_segments(dir.path()).unwrap();
    assert!(segments.len() > 5, "{segments:?}");
    // Everything below 21 is covered: only segments ending below it go.
    journal.drop_segments_below(21).unwrap();
    let left = list_segments(dir.path()).unwrap();
    assert!(left.len() < segments.len());
    assert!(left[0].0 <= 21, "a segment holding record 21 was dropped: {left:?}");
    journal.shutdown_blocking();
    let mut seen = Vec::new();
    let outcome = replay(dir.path(), 21, |seq, _| {
        seen.push(seq);
        Ok(())
    })
    .unwrap();
    assert_eq!(seen, (21..=40).collect::<Vec<_>>());
    assert_eq!(outcome.next_seq, 41);
}

#[test]
fn frames_reject_bad_checksums() {
    let mut frame = Vec::new();
    encode_frame(5, 5, b"hello", &mut frame);
    assert_eq!(decode_frame(&frame).unwrap().0, 5);
    frame[9] ^= 1;
    assert!(decode_frame(&frame).is_err());
}

/// The frame checksum is CRC-32C (Castagnoli) whatever table computes it:
/// the catalogue's check value, and a frame's checksum field as a journal
/// written by any earlier binary holds it, so old segments still replay.
#[test]
fn the_frame_checksum_is_crc32c() {
    assert_eq!(CRC32C.checksum(b"123456789"), 0xE306_9283);
    let mut frame = Vec::new();
    encode_frame(7, 3, b"payload", &mut frame);
    let mut body = Vec::new();
    body.extend_from_slice(&7u64.to_le_bytes());
    body.extend_from_slice(&3u64.to_le_bytes());
    body.extend_from_slice(b"payload");
    let byte_at_a_time = Crc::<u32>::new(&CRC_32_ISCSI).checksum(&body);
    assert_eq!(frame[4..8], byte_at_a_time.to_le_bytes());
}

/// Queues `record-{n}`; its completion tells `(seq, payload)`.
fn append_told(journal: &Journal, tell: &mpsc::Sender<(u64, Vec<u8>)>, n: u64) {
    let tell = tell.clone();
    journal
        .append_blocking(
            format!("record-{n}").into_bytes(),
            Box::new(move |seq, payload| {
                tell.send((seq, payload.to_vec())).unwrap();
                None
            }),
        )
        .unwrap();
}

/// Records 1..=count as the journal holds them: `record-{seq - 1}`.
fn records_through(count: u64) -> Vec<(u64, Vec<u8>)> {
    (1..=count)
        .map(|seq| (seq, format!("record-{}", seq - 1).into_bytes()))
        .collect()
}

fn wait_until(what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Copies the journal as a crash now would leave it and replays the copy.
fn replay_copy(dir: &Path) -> Result<Vec<(u64, Vec<u8>)>, JournalError> {
    let copy = tempfile::tempdir().unwrap();
    for (_, path) in list_segments(dir).unwrap() {
        fs::copy(&path, copy.path().join(path.file_name().unwrap())).unwrap();
    }
    let mut seen = Vec::new();
    replay(copy.path(), 0, |seq, payload| {
        seen.push((seq, payload.to_vec()));
        Ok(())
    })?;
    Ok(seen)
}

/// Three records go through; then every attempt meets `fault` while five
/// more are queued: none of them completes, the journal says it is not
/// writable, and a crash meanwhile would replay cleanly with every
/// acknowledged record. Once the fault clears, the five complete once each,
/// in order, and replay reads each of the eight exactly once.
fn refused_writes_are_held_until_the_disk_takes_them(fault: Fault, segment_bytes_max: u64) {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::start_with_segment_limit(dir.path(), 1, segment_bytes_max).unwrap();
    let (tell, told) = mpsc::channel();
    for n in 0..3 {
        append_told(&journal, &tell, n);
    }
    let acknowledged: Vec<_> = (0..3)
        .map(|_| told.recv_timeout(Duration::from_secs(10)).unwrap())
        .collect();
    assert_eq!(acknowledged, records_through(3));
    assert!(journal.is_writable());

    journal.inner.faults.set(Some(fault));
    for n in 3..8 {
        append_told(&journal, &tell, n);
    }
    wait_until("the journal is down", || !journal.is_writable());
    // 100 ms, then 200 ms between attempts: three failures take a third of a second.
    wait_until("three attempts failed", || {
        journal.stats().failed_writes.load(Ordering::Relaxed) >= 3
    });
    assert!(!journal.is_writable());
    assert!(told.try_recv().is_err(), "a record the disk refused was acknowledged");
    assert_eq!(journal.durable_seq(), 3);
    let after_crash = replay_copy(dir.path()).expect("what a crash would leave replays");
    assert!(after_crash.len() >= 3, "{after_crash:?}");
    assert_eq!(after_crash, records_through(after_crash.len() as u64), "a clean prefix");

    journal.inner.faults.set(None);
    let held: Vec<_> = (3..8)
        .map(|_| told.recv_timeout(Duration::from_secs(10)).unwrap())
        .collect();
    assert_eq!(held, records_through(8)[3..].to_vec(), "once each, in order");
    assert!(journal.is_writable());
    assert_eq!(journal.durable_seq(), 8);
    drop(tell);
    journal.shutdown_blocking();
    assert!(
        matches!(told.try_recv(), Err(mpsc::TryRecvError::Disconnected)),
        "no completion ran twice"
    );
    let (seen, outcome) = replay_all(dir.path());
    assert_eq!(seen, records_through(8), "no record twice, none torn");
    assert_eq!(outcome.torn_bytes_cut, 0);
    assert_eq!(outcome.next_seq, 9);
}

#[test]
fn a_torn_write_is_held_and_written_again_whole_once_the_disk_takes_it() {
    refused_writes_are_held_until_the_disk_takes_them(Fault::TornWrite, limits::JOURNAL_SEGMENT_BYTES_MAX);
}

/// The failed attempt left the whole batch in the file: written again
/// without first cutting it back, replay would find it twice.
#[test]
fn a_failed_sync_is_written_again_in_place_not_appended_twice() {
    refused_writes_are_held_until_the_disk_takes_them(Fault::FailedSync, limits::JOURNAL_SEGMENT_BYTES_MAX);
}

/// Every batch fills a segment, so each write needs a new one first.
#[test]
fn a_new_segment_the_disk_refuses_holds_the_batch_until_it_can_be_made() {
    refused_writes_are_held_until_the_disk_takes_them(Fault::FailedRollOver, 1);
}

#[test]
fn every_segment_is_named_after_its_first_record_after_refused_roll_overs() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::start_with_segment_limit(dir.path(), 1, 1).unwrap();
    let (tell, told) = mpsc::channel();
    for n in 0..6 {
        if n % 2 == 1 {
            journal.inner.faults.set(Some(Fault::FailedRollOver));
        }
        append_told(&journal, &tell, n);
        if n % 2 == 1 {
            wait_until("the journal is down", || !journal.is_writable());
            journal.inner.faults.set(None);
        }
        told.recv_timeout(Duration::from_secs(10)).unwrap();
    }
    journal.shutdown_blocking();
    for (first_seq, path) in list_segments(dir.path()).unwrap() {
        let bytes = fs::read(&path).unwrap();
        if let Ok((seq, ..)) = decode_frame(&bytes) {
            assert_eq!(seq, first_seq, "{}", path.display());
        }
    }
    assert_eq!(replay_all(dir.path()).0, records_through(6));
}

#[test]
fn closing_while_the_disk_refuses_gives_up_without_acknowledging() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::start(dir.path(), 1).unwrap();
    let (tell, told) = mpsc::channel();
    append_told(&journal, &tell, 0);
    told.recv_timeout(Duration::from_secs(10)).unwrap();
    journal.inner.faults.set(Some(Fault::TornWrite));
    append_told(&journal, &tell, 1);
    append_told(&journal, &tell, 2);
    wait_until("the journal is down", || !journal.is_writable());
    drop(tell);
    let started = Instant::now();
    journal.shutdown_blocking();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "shutdown waited for the disk"
    );
    assert!(
        matches!(told.try_recv(), Err(mpsc::TryRecvError::Disconnected)),
        "a record the disk refused was acknowledged"
    );
    assert!(matches!(
        journal.append_blocking(b"late".to_vec(), Box::new(|_, _| None)),
        Err(JournalError::Closed)
    ));
    // Whole records of the torn attempt may come back (never acknowledged,
    // like any write a crash interrupts); its torn end is cut.
    let (seen, _) = replay_all(dir.path());
    assert!((1..=3).contains(&seen.len()), "{seen:?}");
    assert_eq!(seen, records_through(seen.len() as u64), "a clean prefix");
}

/// Sends `payload` through `Journal::queue_append` from a test
/// runtime; the receiver hears its sequence once it is durable.
fn append_on(runtime: &tokio::runtime::Runtime, journal: &Journal, payload: &str, waited: bool) -> mpsc::Receiver<u64> {
    let (tell, told) = mpsc::channel();
    let done: Completion = Box::new(move |seq, _| {
        tell.send(seq).unwrap();
        None
    });
    runtime.block_on(async {
        let payload = payload.as_bytes().to_vec();
        journal.queue_append(payload, done, waited).await.unwrap();
    });
    told
}

/// A record nobody waits on shares the sync of a waited-on one queued
/// within `JOURNAL_BACKGROUND_WAIT`, and alone it still becomes durable,
/// once that wait is over.
#[test]
fn a_background_record_waits_for_company_but_not_for_ever() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let journal = Journal::start(dir.path(), 1).unwrap();
    let syncs = || journal.stats().syncs.load(Ordering::Relaxed);

    let started = Instant::now();
    let alone = append_on(&runtime, &journal, "alone", false);
    assert_eq!(alone.recv_timeout(Duration::from_secs(10)).unwrap(), 1);
    assert!(started.elapsed() >= limits::JOURNAL_BACKGROUND_WAIT);
    assert_eq!(syncs(), 1);

    let background = append_on(&runtime, &journal, "background", false);
    let waited = append_on(&runtime, &journal, "waited", true);
    assert_eq!(background.recv_timeout(Duration::from_secs(10)).unwrap(), 2);
    assert_eq!(waited.recv_timeout(Duration::from_secs(10)).unwrap(), 3);
    assert_eq!(syncs(), 2, "the two records shared one sync");

    // A barrier is waited on too: it ends a background record's wait.
    let started = Instant::now();
    let background = append_on(&runtime, &journal, "before a barrier", false);
    assert_eq!(runtime.block_on(journal.sync_point()).unwrap(), 4);
    assert_eq!(background.recv_timeout(Duration::from_secs(10)).unwrap(), 4);
    assert_eq!(syncs(), 3);
    assert!(started.elapsed() < Duration::from_secs(1));

    journal.shutdown_blocking();
    let (seen, _) = replay_all(dir.path());
    let payloads: Vec<&[u8]> = seen.iter().map(|(_, payload)| payload.as_slice()).collect();
    assert_eq!(payloads, [&b"alone"[..], b"background", b"waited", b"before a barrier"]);
}
