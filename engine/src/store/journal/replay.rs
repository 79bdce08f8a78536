//! Replay: every record of the segment files from a sequence number on,
//! in order; a torn tail cut, damage anywhere else refused.

use super::{list_segments, JournalError, ReplayOutcome, CRC32C, FRAME_HEADER_BYTES, SEQ_BYTES};
use crate::limits;
use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::path::Path;

/// Reads every record with `seq >= from_seq` in order and passes it to
/// `visit`. A damaged frame at the tail of the last segment (a write the
/// crash interrupted) is cut off the file; damage anywhere else is an error,
/// because records after it were acknowledged and must not be dropped.
pub fn replay(
    dir: &Path,
    from_seq: u64,
    mut visit: impl FnMut(u64, &[u8]) -> Result<(), JournalError>,
) -> Result<ReplayOutcome, JournalError> {
    fs::create_dir_all(dir)?;
    let segments = list_segments(dir)?;
    let mut outcome = ReplayOutcome {
        next_seq: from_seq.max(1),
        records_replayed: 0,
        torn_bytes_cut: 0,
    };
    let mut expected_seq: Option<u64> = None;
    let count = segments.len();
    for (index, (first_seq, path)) in segments.iter().enumerate() {
        let is_last = index + 1 == count;
        // A whole segment below the checkpoint needs no reading, as long as
        // the next one starts at or below `from_seq`.
        if let Some((next_first, _)) = segments.get(index + 1) {
            if *next_first <= from_seq {
                continue;
            }
        }
        let mut bytes = Vec::new();
        File::open(path)?.read_to_end(&mut bytes)?;
        let mut offset = 0usize;
        let mut damage: Option<String> = None;
        // A whole frame with the wrong sequence number is not torn: records are missing.
        let mut out_of_sequence = false;
        while offset < bytes.len() {
            match decode_frame(&bytes[offset..]) {
                Ok((seq, _, payload, frame_len)) => {
                    let want = expected_seq.unwrap_or(*first_seq);
                    if seq != want {
                        damage = Some(format!("sequence {seq} where {want} was expected"));
                        out_of_sequence = true;
                        break;
                    }
                    expected_seq = Some(seq + 1);
                    if seq >= from_seq {
                        visit(seq, payload)?;
                        outcome.records_replayed += 1;
                    }
                    offset += frame_len;
                }
                Err(reason) => {
                    damage = Some(reason);
                    break;
                }
            }
        }
        if let Some(reason) = damage {
            let corrupt = |reason: String| JournalError::Corrupt {
                path: path.clone(),
                offset: offset as u64,
                reason,
            };
            if !is_last || out_of_sequence {
                return Err(corrupt(reason));
            }
            // Only the one write not yet synced when the process died can be
            // torn. Records a checkpoint covers were synced long before, and a
            // whole record past what that write can hold was synced after it
            // (and `fdatasync` had made this one durable too): either way the
            // damage is not a torn tail, and cutting would drop acknowledged records.
            let want = expected_seq.unwrap_or(*first_seq);
            if want < from_seq {
                return Err(corrupt(format!(
                    "{reason}, in record {want}, below the checkpoint at {from_seq}"
                )));
            }
            if let Some((at, seq)) = later_write_frame(&bytes, offset, want) {
                return Err(corrupt(format!(
                    "{reason}; a whole record {seq} follows at byte {at}, written after the damaged one was synced"
                )));
            }
            tracing::warn!(path = %path.display(), offset, reason, "cutting torn journal tail");
            let file = OpenOptions::new().write(true).open(path)?;
            file.set_len(offset as u64)?;
            file.sync_all()?;
            outcome.torn_bytes_cut = (bytes.len() - offset) as u64;
        }
        if expected_seq.is_none() {
            // An empty segment still fixes where numbering continues.
            expected_seq = Some(*first_seq);
        }
    }
    if let Some(next) = expected_seq {
        outcome.next_seq = outcome.next_seq.max(next);
    }
    Ok(outcome)
}

/// A whole frame after the damage at `damage_at` (whose record would have
/// been `want`) that cannot be part of the same write: one that says it
/// went out in a later write, or one further than one write's bytes
/// (`JOURNAL_BATCH_BYTES_MAX`, or the damaged record's own length when its
/// header is whole and it was bigger) or records (`JOURNAL_BATCH_RECORDS_MAX`)
/// away. Returns its offset and sequence.
///
/// A record's payload may hold anything a merchant sent, frames included,
/// so the search starts after the damaged record's own length when its
/// header is whole (a crash tears a record's end, not its header: a record
/// cut short by the end of the file is never searched), and a frame counts
/// only if every record between could fit before it (16 bytes at least each).
fn later_write_frame(bytes: &[u8], damage_at: usize, want: u64) -> Option<(usize, u64)> {
    const SMALLEST_FRAME: usize = FRAME_HEADER_BYTES + SEQ_BYTES;
    let damaged_len = bytes
        .get(damage_at..damage_at + 4)
        .map(|b| FRAME_HEADER_BYTES + u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize)
        .filter(|len| (SMALLEST_FRAME..=SMALLEST_FRAME + limits::JOURNAL_RECORD_BYTES_MAX).contains(len));
    let search_from = damage_at + damaged_len.unwrap_or(1);
    let bytes_bound = damage_at + limits::JOURNAL_BATCH_BYTES_MAX.max(damaged_len.unwrap_or(0));
    let records_bound = want.saturating_add(limits::JOURNAL_BATCH_RECORDS_MAX as u64);
    let last_start = bytes.len().checked_sub(SMALLEST_FRAME)?;
    (search_from..=last_start).find_map(|at| {
        // The sequence number first: it rules out nearly every offset cheaply.
        let seq = u64::from_le_bytes(
            bytes[at + FRAME_HEADER_BYTES..at + FRAME_HEADER_BYTES + 8]
                .try_into()
                .ok()?,
        );
        let records_before = seq.checked_sub(want).filter(|gap| *gap > 0)?;
        if records_before > ((at - damage_at) / SMALLEST_FRAME) as u64 {
            return None;
        }
        match decode_frame(&bytes[at..]) {
            Ok((decoded, write_first, _, _)) if decoded == seq => {
                let later_write = write_first > want && write_first <= seq;
                (later_write || at >= bytes_bound || seq >= records_bound).then_some((at, seq))
            }
            _ => None,
        }
    })
}

/// Decodes the frame at the start of `bytes`: `(seq, its write's first
/// seq, payload, frame length)`.
pub(super) fn decode_frame(bytes: &[u8]) -> Result<(u64, u64, &[u8], usize), String> {
    if bytes.len() < FRAME_HEADER_BYTES {
        return Err("truncated frame header".into());
    }
    let body_len = u32::from_le_bytes(bytes[0..4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes"));
    if !(SEQ_BYTES..=limits::JOURNAL_RECORD_BYTES_MAX + SEQ_BYTES).contains(&body_len) {
        return Err(format!("implausible frame length {body_len}"));
    }
    let end = FRAME_HEADER_BYTES + body_len;
    if bytes.len() < end {
        return Err("truncated frame body".into());
    }
    let body = &bytes[FRAME_HEADER_BYTES..end];
    if CRC32C.checksum(body) != crc {
        return Err("checksum mismatch".into());
    }
    let seq = u64::from_le_bytes(body[0..8].try_into().expect("8 bytes"));
    let write_first = u64::from_le_bytes(body[8..16].try_into().expect("8 bytes"));
    Ok((seq, write_first, &body[SEQ_BYTES..], end))
}
