//! The merchant actor's journaling: records queued with their effect
//! already in memory, replies released only once what they reveal is
//! durable, backpressure on records in flight, and forgetting what storage
//! holds so the actor's memory stays bounded.

use super::{forget_all, forget_entries, MerchantState};
use crate::ledger::Entry;
use crate::limits;
use crate::store::journal::{Completion, Continuation};
use crate::store::record::{self, JournalRecord};
use crate::store::StoreError;
use ractor::{ActorProcessingErr, RpcReplyPort};
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl MerchantState {
    /// Keeps the recent disbursements, orders, refunds and entries bounded.
    /// Once nothing this actor queued is in flight, storage answers for all
    /// of them: the entries are forgotten then, and the rest once there are
    /// `RECENT_ROOM_KEPT` of a kind. Under a steady load that moment may not
    /// come, so at `RECENT_ENTRIES_MAX` the actor waits for it. (Forgetting
    /// only at `RECENT_ENTRIES_MAX` let each of many merchants keep
    /// thousands.) Below `RECENT_ROOM_KEPT` they stay: the next move of a
    /// disbursement just created is then answered from memory, not from
    /// storage.
    pub(super) async fn forget_what_storage_has(&mut self) -> Result<(), ActorProcessingErr> {
        let in_flight = self.in_flight.load(Ordering::Acquire) > 0;
        if !in_flight {
            self.forget_recent_entries();
        }
        let recent = self
            .disbursements
            .len()
            .max(self.orders.len())
            .max(self.recent_batches.len())
            .max(self.recent_keys.len());
        if recent < limits::RECENT_ROOM_KEPT || (in_flight && recent < limits::RECENT_ENTRIES_MAX) {
            return Ok(());
        }
        if in_flight {
            self.args.journal.sync_point().await?;
        }
        self.forget_recent_records();
        Ok(())
    }

    /// Forgets every recent record when nothing is in flight: a merchant
    /// that went quiet keeps none of its busiest moment.
    pub(super) fn forget_if_settled(&mut self) {
        if self.in_flight.load(Ordering::Acquire) == 0 {
            self.forget_recent_records();
        }
    }

    /// The entries and their idempotency keys: storage holds them once
    /// applied.
    fn forget_recent_entries(&mut self) {
        forget_entries(&mut self.recent_entries);
        forget_all(&mut self.recent_keys);
    }

    fn forget_recent_records(&mut self) {
        self.forget_recent_entries();
        forget_all(&mut self.disbursements);
        forget_all(&mut self.disbursement_keys);
        forget_all(&mut self.recent_batches);
        self.orders.clear();
    }

    /// Backpressure: a merchant with too many records not yet durable waits.
    pub(super) async fn wait_for_room(&self) -> Result<(), ActorProcessingErr> {
        if self.in_flight.load(Ordering::Acquire) >= limits::MERCHANT_IN_FLIGHT_MAX {
            self.args.journal.sync_point().await?;
        }
        Ok(())
    }

    pub(super) async fn journal_entry(
        &mut self,
        entry: Arc<Entry>,
        then: Continuation,
    ) -> Result<(), ActorProcessingErr> {
        let payload = record::encode_entry(&entry);
        let store = self.args.store.clone();
        self.journal(payload, 1, then, move |seq, payload| {
            store.apply_entry(seq, &entry, payload)
        })
        .await
    }

    pub(super) async fn journal_record(
        &mut self,
        record: JournalRecord,
        then: Continuation,
    ) -> Result<(), ActorProcessingErr> {
        self.journal_record_weighted(record, 1, then).await
    }

    /// `journal_record` for a record that counts as `weight` in flight
    /// (a batch's record, one for each entry it carries).
    pub(super) async fn journal_record_weighted(
        &mut self,
        record: JournalRecord,
        weight: usize,
        then: Continuation,
    ) -> Result<(), ActorProcessingErr> {
        self.journal_record_as(record, weight, then, true).await
    }

    /// `journal_record` for a disbursement's move: a background record
    /// unless `waited` (see `DisbursementMove::waited`).
    pub(super) async fn journal_move(
        &mut self,
        record: JournalRecord,
        waited: bool,
        then: Continuation,
    ) -> Result<(), ActorProcessingErr> {
        self.journal_record_as(record, 1, then, waited).await
    }

    async fn journal_record_as(
        &mut self,
        record: JournalRecord,
        weight: usize,
        then: Continuation,
        waited: bool,
    ) -> Result<(), ActorProcessingErr> {
        let (payload, spans) = record.encode_with_spans();
        let store = self.args.store.clone();
        let apply = move |seq, payload: &[u8]| store.apply_encoded(seq, &record, payload, &spans);
        self.journal_as(payload, weight, then, apply, waited).await
    }

    /// Queues a record whose effect is already in this actor's memory; `apply`
    /// runs once it is durable, then `then`. It counts as `weight` in flight
    /// until then. If the journal refuses, memory is ahead of the disk, so
    /// the actor stops and is rebuilt from storage.
    pub(super) async fn journal(
        &mut self,
        payload: Vec<u8>,
        weight: usize,
        then: Continuation,
        apply: impl FnOnce(u64, &[u8]) -> Result<(), StoreError> + Send + 'static,
    ) -> Result<(), ActorProcessingErr> {
        self.journal_as(payload, weight, then, apply, true).await
    }

    /// `journal`, as a background record unless `waited`.
    async fn journal_as(
        &mut self,
        payload: Vec<u8>,
        weight: usize,
        then: Continuation,
        apply: impl FnOnce(u64, &[u8]) -> Result<(), StoreError> + Send + 'static,
        waited: bool,
    ) -> Result<(), ActorProcessingErr> {
        let in_flight = self.in_flight.clone();
        in_flight.fetch_add(weight, Ordering::AcqRel);
        let done: Completion = Box::new(move |seq, payload| {
            if let Err(error) = apply(seq, payload) {
                tracing::error!(%error, "applying a durable record failed; aborting (the journal will replay it)");
                std::process::abort();
            }
            Some(Box::new(move || {
                in_flight.fetch_sub(weight, Ordering::AcqRel);
                then();
            }))
        });
        self.args.journal.queue_append(payload, done, waited).await?;
        Ok(())
    }

    /// Replies at once when nothing is in flight, else once everything this
    /// actor queued is durable: a reply never reveals state the disk could lose.
    pub(super) async fn reply_when_durable<T: Send + 'static>(
        &self,
        reply: RpcReplyPort<T>,
        value: T,
    ) -> Result<(), ActorProcessingErr> {
        if self.in_flight.load(Ordering::Acquire) == 0 {
            let _ = reply.send(value);
            return Ok(());
        }
        self.args
            .journal
            .barrier(Box::new(move |_, _| Some(Box::new(move || drop(reply.send(value))))))
            .await?;
        Ok(())
    }
}
