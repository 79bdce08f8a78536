//! The merchant actor's side of settlements: it takes the paid,
//! unsettled orders and the undeducted refunds, marks them settled and moves
//! the money out of pending settlement, all in one journal record, so no
//! order is settled twice whatever runs concurrently or restarts.

use super::MerchantState;
use crate::domain::{Order, Refund, RefundStatus, Settlement, SettlementStatus};
use crate::error::EngineError;
use crate::ledger::{reversal_idempotency_key, Account, EntryKind, EntryProposal, LedgerError, Posting};
use crate::money::MinorUnits;
use crate::store::record::JournalRecord;
use uuid::Uuid;

/// What the engine decided before asking the actor: identity and period.
#[derive(Clone, Debug)]
pub struct SettlementDraft {
    /// Id of the new settlement.
    pub id: Uuid,
    /// `STL-yymmdd-NNNNN`.
    pub ref_code: String,
    /// `YYYY-MM-DD` (WIB).
    pub settlement_date: String,
    /// Orders paid before this are taken, Unix ms.
    pub period_end_ms: i64,
    /// The destination bank's catalog id.
    pub bank_id: Option<Uuid>,
}

impl MerchantState {
    /// Builds a settlement of everything not yet settled before the period
    /// end; `None` when there is nothing (no orders, no refunds, and no carry
    /// that could be paid out now).
    pub(super) fn settle(
        &mut self,
        draft: SettlementDraft,
    ) -> Result<(Option<Box<Settlement>>, Option<JournalRecord>), EngineError> {
        let store = self.args.store.clone();
        let merchant_id = self.args.merchant_id;
        let orders: Vec<Order> = store.unsettled_orders(&merchant_id, draft.period_end_ms)?;
        // A FAILED refund here was deducted by an earlier settlement and is
        // given back by this one (see `settle_refund`); any other is deducted.
        let refunds: Vec<Refund> = store
            .unsettled_refunds(&merchant_id, draft.period_end_ms)?
            .into_iter()
            .filter(|r| r.status != RefundStatus::Failed || r.reversal_seq.is_some())
            .collect();
        let (previous, _) = store.merchant_settlements(&merchant_id, 0, usize::MAX)?;
        let carried: i64 = previous.iter().map(|s| s.carry_out.get()).sum::<i64>()
            - previous.iter().map(|s| s.carried_over.get()).sum::<i64>();
        if orders.is_empty() && refunds.is_empty() && carried == 0 {
            return Ok((None, None));
        }
        let sum = |f: &dyn Fn(&Order) -> i64| orders.iter().map(f).sum::<i64>();
        let gross = sum(&|o| o.amount.get());
        let mdr = sum(&|o| o.fees.map_or(0, |f| f.mdr.get()));
        let platform_fee = sum(&|o| o.fees.map_or(0, |f| f.platform_fee.get()));
        let aggregator_fee = sum(&|o| o.fees.map_or(0, |f| f.aggregator_fee.get()));
        let net_of_orders = sum(&|o| o.fees.map_or(o.amount.get(), |f| f.net.get()));
        let refunds_where = |failed: bool| {
            refunds
                .iter()
                .filter(|r| (r.status == RefundStatus::Failed) == failed)
                .map(|r| r.amount.get())
                .sum::<i64>()
        };
        let (refunds_deducted, refunds_returned) = (refunds_where(false), refunds_where(true));
        // Negative when more is given back than deducted.
        let refund_total = refunds_deducted - refunds_returned;
        let before_fee = net_of_orders - refund_total + carried;
        let transfer_fee = self.profile.fees.disbursement_fee_bank_minor.max(0);
        let now_ms = self.args.clock.now().timestamp_millis();
        let period_start_ms = previous
            .iter()
            .map(|s| s.period_end_ms)
            .max()
            .or_else(|| orders.iter().filter_map(|o| o.paid_at_ms).min())
            .unwrap_or(draft.period_end_ms)
            .min(draft.period_end_ms);
        let bank = self.profile.settlement_bank.clone();
        let paid_out = before_fee - transfer_fee > 0;
        if orders.is_empty() && refunds.is_empty() && !paid_out {
            // Only a carry that still cannot be paid: a settlement now would
            // be one more CANCELLED copy of the last, at every run.
            return Ok((None, None));
        }
        let (fee, net, status, carry_out, failure_reason) = if paid_out {
            (
                transfer_fee,
                before_fee - transfer_fee,
                SettlementStatus::Pending,
                0,
                None,
            )
        } else {
            let reason = "net payout not above the transfer fee; carried into the next settlement";
            (
                0,
                before_fee,
                SettlementStatus::Cancelled,
                before_fee,
                Some(reason.to_string()),
            )
        };
        // Pending settlement gives up what this settlement pays, deducts or
        // charges; a carried shortfall stays in it until a later one.
        let mut postings = Vec::new();
        let mut debit = 0i64;
        for (account, amount) in [
            // What is given back is in pending settlement already: paid out below.
            (Account::RefundClearing, refunds_deducted),
            (Account::DisbursementFeeRevenue, fee),
            (Account::PayoutClearing, if paid_out { net } else { 0 }),
        ] {
            if amount > 0 {
                postings.push(Posting::credit(account, MinorUnits::new(amount)));
                debit += amount;
            }
        }
        let mut entry = None;
        if debit > 0 {
            postings.push(Posting::debit(Account::PendingSettlement, MinorUnits::new(debit)));
            let proposal = EntryProposal {
                kind: EntryKind::Settlement,
                resource: None,
                idempotency_key: Some(format!("settlement:{}", draft.id)),
                memo: format!("settlement {}", draft.ref_code),
                postings,
                reverses: None,
            };
            let (posted, _) = self.record_entry(proposal)?;
            entry = Some((*posted).clone());
        }
        let settlement = Settlement {
            id: draft.id,
            ref_code: draft.ref_code,
            merchant_id,
            settlement_date: draft.settlement_date,
            period_start_ms,
            period_end_ms: draft.period_end_ms,
            gross_amount: MinorUnits::new(gross),
            mdr_total: MinorUnits::new(mdr),
            platform_fee: MinorUnits::new(platform_fee),
            aggregator_fee: MinorUnits::new(aggregator_fee),
            refund_total: MinorUnits::new(refund_total),
            disbursement_fee: MinorUnits::new(fee),
            carried_over: MinorUnits::new(carried),
            net_payout: MinorUnits::new(net),
            order_count: orders.len() as u64,
            bank_id: draft.bank_id,
            destination: bank.clone(),
            status,
            failure_reason,
            carry_out: MinorUnits::new(carry_out),
            entry_seq: entry.as_ref().map(|e| e.seq),
            reversal_seq: None,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
        };
        let orders: Vec<Order> = orders
            .into_iter()
            .map(|mut order| {
                order.is_settled = true;
                order.settlement_id = Some(settlement.id);
                order.updated_at_ms = now_ms;
                order
            })
            .collect();
        let refunds: Vec<Refund> = refunds
            .into_iter()
            .map(|mut refund| {
                refund.settlement_id = Some(settlement.id);
                refund
            })
            .collect();
        // The actor's recent copies must not undo the settlement later.
        for order in &orders {
            self.remember_order(order.clone());
        }
        for refund in &refunds {
            self.remember_refund(refund.clone());
        }
        let record = JournalRecord::SettlementCreated {
            settlement: Box::new(settlement.clone()),
            orders,
            refunds,
            entry,
        };
        Ok((Some(Box::new(settlement)), Some(record)))
    }

    /// PENDING -> PROCESSING -> PAID | FAILED; a failed transfer goes back to
    /// pending settlement and carries into the next settlement.
    pub(super) fn move_settlement(
        &mut self,
        id: Uuid,
        to: SettlementStatus,
        reason: Option<String>,
    ) -> Result<(Option<Box<Settlement>>, Option<JournalRecord>), EngineError> {
        let mut settlement = self
            .args
            .store
            .settlement(&id)?
            .filter(|s| s.merchant_id == self.args.merchant_id)
            .ok_or(EngineError::SettlementNotFound)?;
        if !settlement.status.can_become(to) {
            return Err(EngineError::InvalidStatus(settlement.status.as_str().into()));
        }
        settlement.status = to;
        settlement.updated_at_ms = self.args.clock.now().timestamp_millis();
        let mut entry = None;
        if to == SettlementStatus::Failed {
            settlement.failure_reason = reason.or_else(|| Some("the transfer failed".into()));
            let transfer = settlement
                .net_payout
                .checked_add(settlement.disbursement_fee)
                .ok_or(LedgerError::Overflow)?;
            settlement.carry_out = transfer;
            if let Some(taken) = settlement.entry_seq {
                let mut postings = vec![
                    Posting::credit(Account::PendingSettlement, transfer),
                    Posting::debit(Account::PayoutClearing, settlement.net_payout),
                ];
                if settlement.disbursement_fee.is_positive() {
                    postings.push(Posting::debit(
                        Account::DisbursementFeeRevenue,
                        settlement.disbursement_fee,
                    ));
                }
                let proposal = EntryProposal {
                    kind: EntryKind::Reversal,
                    resource: None,
                    idempotency_key: Some(reversal_idempotency_key(taken)),
                    memo: format!("settlement {} transfer failed", settlement.ref_code),
                    postings,
                    reverses: Some(taken),
                };
                let (posted, _) = self.record_entry(proposal)?;
                settlement.reversal_seq = Some(posted.seq);
                entry = Some((*posted).clone());
            }
        } else if to == SettlementStatus::Cancelled {
            settlement.failure_reason = reason;
        }
        let record = JournalRecord::SettlementUpdated {
            settlement: Box::new(settlement.clone()),
            entry,
        };
        Ok((Some(Box::new(settlement)), Some(record)))
    }
}
