//! A run written as its records come, for one too big to gather first (a
//! data dir's whole index, brought to this layout once): the caller hands
//! records in key order and memory holds one chunk, not the run.

use super::{RunSet, RunWriter, StagedRun};
use crate::store::StoreError;

/// A run being written in key order; see `RunSet::stage_in_order`.
pub struct InOrderRun<'a> {
    writer: RunWriter<'a>,
    last_key: Option<Vec<u8>>,
    record: Vec<u8>,
}

impl RunSet {
    /// Starts a run whose records come in key order, one per key, writing
    /// chunks through `sink` as they fill; `expected` records size its
    /// filter (more only raise its false positives). Visible, like
    /// `stage`'s, once its `meta_entry` is applied and it is `add`ed.
    pub fn stage_in_order<'a>(
        &self,
        expected: u64,
        sink: &'a mut dyn FnMut(Vec<u8>, Vec<u8>) -> Result<(), StoreError>,
    ) -> InOrderRun<'a> {
        InOrderRun {
            writer: RunWriter::new(self.spec, self.next_id, expected, sink),
            last_key: None,
            record: Vec::with_capacity(self.spec.record_len()),
        }
    }
}

impl InOrderRun<'_> {
    /// Adds the next record. Panics on a key not above the last one, or of
    /// the wrong size (a caller's bug, never input).
    pub fn push(&mut self, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        let spec = self.writer.spec;
        assert_eq!(key.len(), spec.key_len, "index key size");
        assert_eq!(value.len(), spec.value_len, "index value size");
        assert!(
            self.last_key.as_deref().is_none_or(|last| last < key),
            "records in key order, one per key"
        );
        self.record.clear();
        self.record.extend_from_slice(key);
        self.record.extend_from_slice(value);
        self.writer.push(&self.record)?;
        match &mut self.last_key {
            Some(last) => last.copy_from_slice(key),
            None => self.last_key = Some(key.to_vec()),
        }
        Ok(())
    }

    /// Writes the last chunk and the metadata's parts.
    pub fn finish(self) -> Result<StagedRun, StoreError> {
        let tag = self.writer.spec.tag;
        Ok(StagedRun {
            tag,
            run: self.writer.finish()?,
        })
    }
}
