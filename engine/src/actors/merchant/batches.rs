//! The merchant actor's side of disbursement batches: every
//! item through the single creation's checks (limits, balance, its own
//! key), a refusal stopping only its item; the created ones and the batch
//! in one journal record; a batch key answered from memory until storage
//! holds its batch, so two requests with one key make one batch.

use super::MerchantState;
use crate::domain::{BatchItem, BatchRefusal, Disbursement, DisbursementBatch, DisbursementRequest};
use crate::error::EngineError;
use crate::limits;
use crate::store::record::JournalRecord;
use ractor::{ActorProcessingErr, RpcReplyPort};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use uuid::Uuid;

/// A batch as the engine hands it to the merchant actor: in request order,
/// each item validated into a request, or the refusal it already met.
#[derive(Clone, Debug)]
pub struct BatchDraft {
    /// The batch's own idempotency key.
    pub idempotency_key: String,
    /// One per item of the request.
    pub items: Vec<Result<DisbursementRequest, BatchRefusal>>,
}

/// What a batch message came to, once durable.
#[derive(Debug)]
pub enum BatchOutcome {
    /// Made now.
    Made {
        /// The batch as stored.
        batch: Arc<DisbursementBatch>,
        /// One per request of the draft (its `Ok` items, in order): the
        /// disbursement created, or why not.
        results: Vec<Result<Arc<Disbursement>, EngineError>>,
    },
    /// The key had made this batch before; nothing was done.
    Existing(Arc<DisbursementBatch>),
}

impl MerchantState {
    /// Makes a batch, or finds the one its key made; replies once durable.
    pub(super) async fn create_disbursement_batch(
        &mut self,
        draft: BatchDraft,
        reply: RpcReplyPort<Result<BatchOutcome, EngineError>>,
    ) -> Result<(), ActorProcessingErr> {
        let requests = draft.items.iter().filter(|item| item.is_ok()).count();
        self.wait_for_room_for(requests).await?;
        let key_hash = self.args.store.key_hash(&draft.idempotency_key);
        match self.batch_by_key(key_hash, &draft.idempotency_key) {
            Ok(None) => {}
            Ok(Some(existing)) => {
                return self
                    .reply_when_durable(reply, Ok(BatchOutcome::Existing(existing)))
                    .await
            }
            Err(error) => return self.reply_when_durable(reply, Err(error)).await,
        }
        let mut items = Vec::with_capacity(draft.items.len());
        let mut created = Vec::with_capacity(requests);
        let mut results = Vec::with_capacity(requests);
        for item in draft.items {
            match item.map(|request| self.create_disbursement(request)) {
                Ok(Ok((disbursement, entry))) => {
                    items.push(BatchItem::Created(disbursement.id));
                    created.push((disbursement.clone(), crate::ledger::Entry::clone(&entry)));
                    results.push(Ok(disbursement));
                }
                Ok(Err(refusal)) => {
                    items.push(BatchItem::Refused(refusal.refusal()));
                    results.push(Err(refusal));
                }
                Err(refusal) => items.push(BatchItem::Refused(refusal)),
            }
        }
        let batch = Arc::new(DisbursementBatch {
            id: Uuid::new_v4(),
            merchant_id: self.args.merchant_id,
            idempotency_key: draft.idempotency_key,
            created_at_ms: self.args.clock.now().timestamp_millis(),
            items,
        });
        self.recent_batches.insert(key_hash, batch.clone());
        // Each entry the record carries counts as one in flight: every entry
        // not yet durable must stay among those memory keeps.
        let weight = created.len().max(1);
        let handed: Vec<Arc<Disbursement>> = created.iter().map(|(d, _)| d.clone()).collect();
        let record = JournalRecord::DisbursementBatchCreated {
            disbursements: created,
            batch: batch.clone(),
        };
        // As for a single creation, each goes to its own actor from here,
        // once durable: a caller that gives up waiting must not strand them.
        let to_actor = self.args.created.clone();
        let outcome = BatchOutcome::Made { batch, results };
        let then = move || {
            drop(reply.send(Ok(outcome)));
            for disbursement in handed {
                to_actor(disbursement);
            }
        };
        self.journal_record_weighted(record, weight, Box::new(then)).await
    }

    /// The batch key `key` (hashed `key_hash`) made, if any: from memory
    /// while its record may be in flight, else from storage.
    fn batch_by_key(&self, key_hash: u128, key: &str) -> Result<Option<Arc<DisbursementBatch>>, EngineError> {
        if let Some(batch) = self.recent_batches.get(&key_hash) {
            if batch.idempotency_key == key {
                return Ok(Some(batch.clone()));
            }
        }
        let stored = self.args.store.disbursement_batch_by_key(&self.args.merchant_id, key)?;
        Ok(stored.map(Arc::new))
    }

    /// Backpressure for a record of `entries` entries: waits while they
    /// would take the entries in flight past `MERCHANT_IN_FLIGHT_MAX`.
    async fn wait_for_room_for(&self, entries: usize) -> Result<(), ActorProcessingErr> {
        if self.in_flight.load(Ordering::Acquire) + entries > limits::MERCHANT_IN_FLIGHT_MAX {
            self.args.journal.sync_point().await?;
        }
        Ok(())
    }
}
