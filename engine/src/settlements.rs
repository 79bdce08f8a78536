//! Settlements for MANUAL merchants: the daily run at 00:00
//! WIB for the previous day, runs on demand, the transfer's lifecycle
//! through the sandbox payout vendor, and queries.

use crate::actors::{OrderCommand, OrderOutcome, SettlementDraft};
use crate::clock::wib_format;
use crate::domain::disbursement::{wib_day, WIB_OFFSET_SECONDS};
use crate::domain::{Settlement, SettlementStatus, SettlementType};
use crate::error::EngineError;
use crate::limits;
use crate::orders::Orders;
use crate::vendor::SANDBOX_FAILING_ACCOUNT;
use uuid::Uuid;

/// 00:00 WIB of WIB day `day`, Unix ms.
pub fn wib_midnight_ms(day: i64) -> i64 {
    (day * 86_400 - WIB_OFFSET_SECONDS) * 1000
}

/// Filters of `GET /v1/settlements`.
pub type SettlementFilter = crate::input::ListFilter<SettlementStatus>;

impl Orders {
    /// Settles every paid, unsettled order with `paid_at` before `period_end_ms`
    /// (default: now) of one MANUAL merchant, or of all of them. Runs one at
    /// a time; each merchant's actor takes its orders in one journal record,
    /// so an order is never settled twice.
    pub async fn run_settlements(
        &self,
        merchant_id: Option<Uuid>,
        period_end_ms: Option<i64>,
    ) -> Result<Vec<Settlement>, EngineError> {
        self.core.ensure_writable()?;
        let every_merchant = merchant_id.is_none();
        let merchants: Vec<Uuid> = match merchant_id {
            Some(id) => {
                let merchant = self.core.merchant(id).ok_or(EngineError::MerchantNotFound)?;
                if merchant.settlement_type != SettlementType::Manual {
                    return Err(EngineError::invalid(
                        "merchant_id",
                        "WALLET merchants have no settlements",
                    ));
                }
                vec![id]
            }
            None => {
                let mut ids: Vec<Uuid> = self
                    .core
                    .merchant_ids()
                    .into_iter()
                    .filter(|id| {
                        self.core
                            .merchant(*id)
                            .is_some_and(|m| m.settlement_type == SettlementType::Manual)
                    })
                    .collect();
                ids.sort();
                ids
            }
        };
        // "Now" includes this very millisecond: a refund or payment made just
        // before the run must not wait for the next one.
        let period_end_ms = period_end_ms.unwrap_or_else(|| self.core.clock().now().timestamp_millis() + 1);
        let _run = self.core.settlement_lock().lock().await;
        let mut created = Vec::new();
        for merchant_id in merchants {
            let Some(merchant) = self.core.merchant(merchant_id) else {
                continue;
            };
            let settlement_date = wib_format(period_end_ms - 1, "%Y-%m-%d");
            let prefix = format!("STL-{}-", wib_format(period_end_ms - 1, "%y%m%d"));
            // The run lock makes the daily sequence race-free.
            let sequence = self.core.store().settlement_refs_taken(|n| format!("{prefix}{n:05}"))? + 1;
            let draft = SettlementDraft {
                id: Uuid::new_v4(),
                ref_code: format!("{prefix}{sequence:05}"),
                settlement_date,
                period_end_ms,
                bank_id: merchant
                    .settlement_bank
                    .as_ref()
                    .and_then(|bank| self.catalog().bank(&bank.bank_short_code))
                    .map(|bank| bank.id),
            };
            let settled = match self
                .order_command(merchant_id, OrderCommand::Settle(Box::new(draft)))
                .await
            {
                Ok(settled) => settled,
                // One merchant's failure must not keep the others unsettled.
                Err(error) if every_merchant => {
                    tracing::error!(%error, %merchant_id, "settling a merchant failed; the run goes on");
                    continue;
                }
                Err(error) => return Err(error),
            };
            if let OrderOutcome::Settled(Some(settlement)) = settled {
                if settlement.status == SettlementStatus::Pending {
                    self.process_settlement(settlement.id);
                }
                created.push(*settlement);
            }
        }
        Ok(created)
    }

    /// The transfer of a PENDING settlement: PROCESSING, then after the
    /// sandbox vendor's delay PAID, or FAILED for account `0000000000` or no
    /// settlement bank. Outside the sandbox (no sandbox delay) it stays PENDING.
    fn process_settlement(&self, id: Uuid) {
        let Some(delay) = self.core.sandbox_refund_delay() else {
            return;
        };
        let engine = self.clone();
        tokio::spawn(async move {
            let Ok(Some(settlement)) = engine.core.store().settlement(&id) else {
                return;
            };
            let merchant_id = settlement.merchant_id;
            let move_to = |to, reason| OrderCommand::MoveSettlement { id, to, reason };
            if settlement.status == SettlementStatus::Pending {
                if let Err(error) = engine
                    .order_command(merchant_id, move_to(SettlementStatus::Processing, None))
                    .await
                {
                    tracing::warn!(%error, %id, "settlement could not start processing");
                    return;
                }
            }
            tokio::time::sleep(delay).await;
            let outcome = match settlement.destination.as_ref().map(|bank| bank.account_number.as_str()) {
                None => (SettlementStatus::Failed, Some("no settlement bank account".to_string())),
                Some(SANDBOX_FAILING_ACCOUNT) => (
                    SettlementStatus::Failed,
                    Some("the bank rejected the transfer".to_string()),
                ),
                Some(_) => (SettlementStatus::Paid, None),
            };
            match engine.order_command(merchant_id, move_to(outcome.0, outcome.1)).await {
                Ok(_) | Err(EngineError::InvalidStatus(_)) | Err(EngineError::ShuttingDown) => {}
                Err(error) => tracing::error!(%error, %id, "settlement outcome not recorded"),
            }
        });
    }

    /// Picks up settlements not yet final (after a restart).
    pub(crate) fn resume_settlements(&self) -> Result<usize, EngineError> {
        let open = self.core.store().open_settlements()?;
        for settlement in &open {
            self.process_settlement(settlement.id);
        }
        Ok(open.len())
    }

    /// The daily run: whenever the WIB day changes (and once at start, for a
    /// midnight passed while stopped), everything paid before 00:00 WIB of
    /// the new day is settled.
    pub(crate) fn start_daily_settlements(&self) {
        let settled_day = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(i64::MIN));
        self.core
            .every(limits::SETTLEMENT_CLOCK_POLL_INTERVAL, true, move |core| {
                let settled_day = settled_day.clone();
                async move {
                    let orders = Orders::new(core);
                    use std::sync::atomic::Ordering;
                    let today = wib_day(orders.core.now_ms());
                    if settled_day.load(Ordering::Acquire) == today {
                        return;
                    }
                    match orders.run_settlements(None, Some(wib_midnight_ms(today))).await {
                        Ok(created) => {
                            if !created.is_empty() {
                                tracing::info!(count = created.len(), "daily settlements created");
                            }
                            settled_day.store(today, Ordering::Release);
                        }
                        Err(error) => tracing::error!(%error, "daily settlement run failed; retrying"),
                    }
                }
            });
    }

    /// A merchant's settlement by id (another merchant's is not found).
    pub fn settlement_for(&self, merchant_id: Uuid, id: Uuid) -> Result<Settlement, EngineError> {
        self.core
            .store()
            .settlement(&id)?
            .filter(|s| s.merchant_id == merchant_id)
            .ok_or(EngineError::SettlementNotFound)
    }

    /// A page of a merchant's settlements, newest first, that have `status`
    /// (if given) and were created in `[from_ms, to_ms]`, and the total.
    pub fn list_settlements(
        &self,
        merchant_id: Uuid,
        filter: &SettlementFilter,
        page: usize,
        limit: usize,
    ) -> Result<(Vec<Settlement>, usize), EngineError> {
        let offset = page.saturating_sub(1).saturating_mul(limit);
        // A merchant has one settlement a day at most: filtering in memory is cheap.
        let (all, _) = self.core.store().merchant_settlements(&merchant_id, 0, usize::MAX)?;
        let kept: Vec<Settlement> = all
            .into_iter()
            .filter(|s| filter.status.is_none_or(|status| s.status == status))
            .filter(|s| filter.created.contains(s.created_at_ms))
            .collect();
        let total = kept.len();
        Ok((kept.into_iter().skip(offset).take(limit).collect(), total))
    }
}
