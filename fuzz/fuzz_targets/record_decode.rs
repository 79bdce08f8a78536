//! Arbitrary bytes as a stored record: decoding never panics, and a record
//! that decodes encodes back to bytes that decode to the same record.
#![no_main]

use libfuzzer_sys::fuzz_target;
use paygate_engine::store::record::JournalRecord;

fuzz_target!(|data: &[u8]| {
    if let Ok(record) = JournalRecord::decode(data) {
        let bytes = record.encode();
        assert_eq!(JournalRecord::decode(&bytes).expect("its own encoding decodes"), record);
        let (spanned, _) = record.encode_with_spans();
        assert_eq!(spanned, bytes, "the spanned encoding is the same bytes");
    }
});
