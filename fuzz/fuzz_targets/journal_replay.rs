//! Arbitrary bytes as a journal segment: replay (from an arbitrary
//! checkpoint) either gives records in sequence, cuts a torn tail or
//! reports corruption; it never panics, and each record it gives decodes
//! or is refused, never panics either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use paygate_engine::store::journal;
use paygate_engine::store::record::JournalRecord;

fuzz_target!(|data: &[u8]| {
    let Some((&from, segment)) = data.split_first() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("journal-00000000000000000001.log"), segment).expect("segment written");
    let mut last = 0u64;
    let outcome = journal::replay(dir.path(), u64::from(from % 8), |seq, payload| {
        assert!(seq > last, "records come in order");
        last = seq;
        let _ = JournalRecord::decode(payload);
        Ok(())
    });
    if let Ok(outcome) = outcome {
        assert!(outcome.next_seq > last);
        // What is left replays the same, with nothing more to cut.
        let again = journal::replay(dir.path(), u64::from(from % 8), |_, _| Ok(())).expect("a cut journal replays");
        assert_eq!(again.torn_bytes_cut, 0);
    }
});
