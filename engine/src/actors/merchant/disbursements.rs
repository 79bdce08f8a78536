//! The merchant actor's side of disbursements: creation against limits,
//! balance and the idempotency key (the debit in the same record), and the
//! moves of their lives through the lifecycle table, a move that gives money
//! back recorded with its reversal.

use super::{DisbursementMove, MerchantState};
use crate::domain::disbursement::lifecycle::{self, DisbursementEvent, Money};
use crate::domain::disbursement::{wib_day, WIB_OFFSET_SECONDS};
use crate::domain::{Channel, Disbursement, DisbursementRequest, DisbursementStatus};
use crate::error::EngineError;
use crate::ledger::{
    reversal_idempotency_key, Account, Entry, EntryKind, EntryProposal, EntryResource, LedgerError, Posting,
    ResourceKind,
};
use crate::money::MinorUnits;
use crate::store::record::JournalRecord;
use ractor::{ActorProcessingErr, RpcReplyPort};
use std::sync::Arc;
use uuid::Uuid;

/// A disbursement after an event: the new version, the reversal entry of a
/// move that gave the money back, and whether the status changed.
struct Moved {
    disbursement: Arc<Disbursement>,
    reversal: Option<Arc<Entry>>,
    status_changed: bool,
}

impl MerchantState {
    /// Validates a disbursement against limits, balance and the idempotency
    /// key, and applies its debit to the book.
    pub(super) fn create_disbursement(
        &mut self,
        request: DisbursementRequest,
    ) -> Result<(Arc<Disbursement>, Arc<Entry>), EngineError> {
        let key_hash = self.args.store.key_hash(&request.idempotency_key);
        if let Some(existing) = self.disbursement_by_key(key_hash, &request.idempotency_key)? {
            return Err(EngineError::DuplicateDisbursement(Box::new(existing)));
        }
        let limits = self.profile.limits.clone();
        let request_amount = request.request_amount;
        if request_amount.get() > limits.per_transaction_minor {
            return Err(EngineError::AmountExceedsLimit);
        }
        let now = self.args.clock.now();
        let day = wib_day(now.timestamp_millis());
        let day_total = self.day_total(day)?;
        let day_total_after = day_total.saturating_add(request_amount);
        if day_total_after.get() > limits.daily_minor {
            return Err(EngineError::DailyLimitExceeded);
        }
        let fee = MinorUnits::new(match request.destination.channel() {
            Channel::Bank => self.profile.fees.disbursement_fee_bank_minor,
            Channel::Ewallet => self.profile.fees.disbursement_fee_ewallet_minor,
        });
        let final_amount = request_amount.checked_add(fee).ok_or(LedgerError::Overflow)?;
        let id = crate::cluster::new_id_in(self.args.shard);
        let mut postings = vec![
            Posting::debit(Account::Wallet, final_amount),
            Posting::credit(Account::PayoutClearing, request_amount),
        ];
        if fee.is_positive() {
            postings.push(Posting::credit(Account::DisbursementFeeRevenue, fee));
        }
        // Random codes: one handed out to a request refused below is no gap.
        let store = self.args.store.clone();
        let ref_code = self
            .args
            .ref_codes
            .next("DSB", now, |code| store.disbursement_ref_exists(code).unwrap_or(true));
        let proposal = EntryProposal {
            kind: EntryKind::Disbursement,
            // The disbursement's own idempotency key guards the debit; a
            // ledger key derived from an id made just now could never repeat,
            // and indexing one per disbursement would grow the key index for nothing.
            idempotency_key: None,
            memo: format!("disbursement {id}"),
            postings,
            reverses: None,
            resource: Some(EntryResource {
                kind: ResourceKind::Disbursement,
                id,
                ref_code: ref_code.clone(),
            }),
        };
        let (entry, _) = self.record_entry(proposal)?;
        let now_ms = now.timestamp_millis();
        let disbursement = Arc::new(Disbursement {
            id,
            ref_code,
            merchant_id: self.args.merchant_id,
            idempotency_key: request.idempotency_key,
            destination: request.destination,
            request_amount,
            fee,
            final_amount,
            vendor_disbursement_id: None,
            payout_vendor: None,
            on_process_at_ms: None,
            source: request.source,
            status: DisbursementStatus::Pending,
            notify_url: request.notify_url,
            beneficiary_id: request.beneficiary_id,
            failure_reason: None,
            debit_seq: entry.seq,
            reversal_seq: None,
            wib_day: day,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
        });
        self.daily_total = Some((day, day_total_after));
        self.remember_disbursement(key_hash, disbursement.clone());
        Ok((disbursement, entry))
    }

    /// Moves disbursements; the moves that change no money share one record,
    /// so a batch handed to the vendor costs one append, not one each. A
    /// move that gives money back is its own record, with its reversal.
    pub(super) async fn move_disbursements(
        &mut self,
        moves: Vec<DisbursementMove>,
        reply: RpcReplyPort<Vec<Result<Arc<Disbursement>, EngineError>>>,
    ) -> Result<(), ActorProcessingErr> {
        let mut results = Vec::with_capacity(moves.len());
        let mut updated = Vec::new();
        let mut events = Vec::new();
        let waited = moves.iter().any(|step| step.waited);
        for step in moves {
            if lifecycle::may_give_money_back(&step.event) {
                // Its reversal must find room among the entries memory keeps.
                self.wait_for_room().await?;
            }
            match self.move_disbursement(step.id, &step.event) {
                Ok(Moved {
                    disbursement,
                    reversal,
                    status_changed,
                }) => {
                    // A move that keeps the status (a hand-over noted, a
                    // reference learned) is no status change to announce.
                    let event = status_changed.then(|| self.status_event(&disbursement)).flatten();
                    match reversal {
                        Some(entry) => {
                            // Versions are applied in record order: moves
                            // before this one (its own ON_PROCESS, say) go first.
                            if let Some(record) = updated_record(&mut updated, &mut events) {
                                self.journal_move(record, waited, Box::new(|| {})).await?;
                            }
                            let record = JournalRecord::DisbursementReversed {
                                disbursement: disbursement.clone(),
                                entry: (*entry).clone(),
                            };
                            let record = JournalRecord::with_events(record, event.into_iter().collect());
                            self.journal_move(record, waited, Box::new(|| {})).await?;
                        }
                        None => {
                            updated.push(disbursement.clone());
                            events.extend(event);
                        }
                    }
                    results.push(Ok(disbursement));
                }
                Err(refusal) => results.push(Err(refusal)),
            }
        }
        let Some(record) = updated_record(&mut updated, &mut events) else {
            return self.reply_when_durable(reply, results).await;
        };
        // Records of one actor become durable in order: this last one's
        // completion means every move of the batch is durable.
        self.journal_move(record, waited, Box::new(move || drop(reply.send(results))))
            .await
    }

    /// The webhook event of a disbursement's new status, if it has
    /// somewhere to go (its notify URL or the merchant's default).
    fn status_event(&self, disbursement: &Arc<Disbursement>) -> Option<crate::domain::WebhookEvent> {
        let url = disbursement
            .notify_url
            .clone()
            .or_else(|| self.profile.default_notify_url.clone())?;
        Some(crate::domain::WebhookEvent::new(
            disbursement.merchant_id,
            disbursement.updated_at_ms,
            Some(url),
            crate::domain::EventResource::Disbursement(disbursement.clone()),
        ))
    }

    /// Applies `event` to a disbursement by the lifecycle table; a move
    /// that gives the money back applies its reversal of the full amount to
    /// the book. Returns the new version, its reversal, and whether the
    /// status changed.
    fn move_disbursement(&mut self, id: Uuid, event: &DisbursementEvent) -> Result<Moved, EngineError> {
        let current = match self.disbursements.get(&id) {
            Some(current) => current.clone(),
            None => Arc::new(
                self.args
                    .store
                    .disbursement(&id)?
                    .filter(|d| d.merchant_id == self.args.merchant_id)
                    .ok_or(EngineError::DisbursementNotFound)?,
            ),
        };
        let now_ms = self.args.clock.now().timestamp_millis();
        let (mut next, money) = lifecycle::apply(&current, event, now_ms)
            .map_err(|refusal| EngineError::InvalidStatus(refusal.status.as_str().into()))?;
        let mut reversal = None;
        if money == Money::GoesBack {
            let mut postings = vec![
                Posting::credit(Account::Wallet, current.final_amount),
                Posting::debit(Account::PayoutClearing, current.request_amount),
            ];
            if current.fee.is_positive() {
                postings.push(Posting::debit(Account::DisbursementFeeRevenue, current.fee));
            }
            let proposal = EntryProposal {
                kind: EntryKind::Reversal,
                idempotency_key: Some(reversal_idempotency_key(current.debit_seq)),
                memo: format!("disbursement {id} {}", next.status.as_str()),
                postings,
                reverses: Some(current.debit_seq),
                resource: Some(EntryResource {
                    kind: ResourceKind::Disbursement,
                    id,
                    ref_code: current.ref_code.clone(),
                }),
            };
            let (entry, _) = self.record_entry(proposal)?;
            next.reversal_seq = Some(entry.seq);
            if let Some((day, total)) = self.daily_total.as_mut() {
                // The day's total holds this request, so taking it out cannot go below zero.
                if *day == current.wib_day {
                    *total = total.checked_sub(current.request_amount).unwrap_or(*total);
                }
            }
            reversal = Some(entry);
        }
        let status_changed = next.status != current.status;
        let key_hash = self.args.store.key_hash(&next.idempotency_key);
        let next = Arc::new(next);
        self.remember_disbursement(key_hash, next.clone());
        Ok(Moved {
            disbursement: next,
            reversal,
            status_changed,
        })
    }

    fn disbursement_by_key(&self, key_hash: u128, key: &str) -> Result<Option<Disbursement>, EngineError> {
        if let Some(id) = self.disbursement_keys.get(&key_hash) {
            if let Some(found) = self.disbursements.get(id).filter(|d| d.idempotency_key == key) {
                return Ok(Some(Disbursement::clone(found)));
            }
        }
        if !self.known_disbursement_keys.may_contain(key_hash) {
            return Ok(None);
        }
        Ok(self.args.store.disbursement_by_key(&self.args.merchant_id, key)?)
    }

    fn remember_disbursement(&mut self, key_hash: u128, disbursement: Arc<Disbursement>) {
        self.disbursement_keys.insert(key_hash, disbursement.id);
        self.known_disbursement_keys.insert(key_hash);
        self.disbursements.insert(disbursement.id, disbursement);
    }

    /// The WIB day's sum of request amounts not reversed: from storage the
    /// first time a day is seen (nothing of a new day is in flight then).
    fn day_total(&mut self, day: i64) -> Result<MinorUnits, EngineError> {
        if let Some((cached_day, total)) = self.daily_total {
            if cached_day == day {
                return Ok(total);
            }
        }
        let start_ms = (day * 86_400 - WIB_OFFSET_SECONDS) * 1000;
        let end_ms = start_ms + 86_400_000;
        let mut total = MinorUnits::ZERO;
        let (disbursements, _) = self.args.store.merchant_disbursements(
            &self.args.merchant_id,
            start_ms,
            end_ms,
            |d| !d.status.is_reversed(),
            0,
            usize::MAX,
        )?;
        for disbursement in disbursements {
            total = total.saturating_add(disbursement.request_amount);
        }
        self.daily_total = Some((day, total));
        Ok(total)
    }
}

/// One record of the moves gathered in `updated` that change no money,
/// with their `events`; both are taken. None when there are none.
fn updated_record(
    updated: &mut Vec<Arc<Disbursement>>,
    events: &mut Vec<crate::domain::WebhookEvent>,
) -> Option<JournalRecord> {
    let record = match updated.len() {
        0 => return None,
        1 => JournalRecord::DisbursementUpdated(updated.pop().expect("one")),
        _ => JournalRecord::DisbursementsUpdated(std::mem::take(updated)),
    };
    Some(JournalRecord::with_events(record, std::mem::take(events)))
}
