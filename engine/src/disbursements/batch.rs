//! Disbursement batches: the items validated as single
//! disbursements are, then all of a batch sent to the merchant actor in one
//! message (one journal record); a batch key used before answers with its
//! batch; and a batch's figures by status.

use super::Disbursements;
use crate::actors::{BatchDraft, BatchOutcome, MerchantMsg};
use crate::disbursements::NewDisbursement;
use crate::domain::{BatchItem, Disbursement, DisbursementBatch, DisbursementStatus, BATCH_ITEMS_MAX};
use crate::error::EngineError;
use crate::input::IdempotencyKey;
use std::sync::Arc;
use uuid::Uuid;

/// A batch's answer: the batch, and each item's disbursement or refusal,
/// in request order.
#[derive(Debug)]
pub struct BatchAnswer {
    /// The batch's id.
    pub id: Uuid,
    /// When the batch was made, Unix ms.
    pub created_at_ms: i64,
    /// One per item: the disbursement it created, or why not (a reused key:
    /// `DuplicateDisbursement` with the disbursement holding it).
    pub items: Vec<Result<Arc<Disbursement>, EngineError>>,
    /// True when the key had made this batch before (nothing done now).
    pub replayed: bool,
}

/// A batch's figures, over its accepted items.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchSummary {
    /// The batch's id.
    pub id: Uuid,
    /// When it was made, Unix ms.
    pub created_at_ms: i64,
    /// Items in the request.
    pub total_items: usize,
    /// Items that created a disbursement.
    pub accepted: usize,
    /// Items refused.
    pub refused: usize,
    /// Per current status of the accepted items (only statuses they are
    /// in, in lifecycle order): how many, and their request amounts summed.
    pub by_status: Vec<(DisbursementStatus, StatusTotal)>,
}

/// Disbursements in one status: how many, and their request amounts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatusTotal {
    /// How many.
    pub count: usize,
    /// Their request amounts (fees excluded), summed.
    pub amount_minor: i64,
}

impl Disbursements {
    /// Creates a batch of disbursements under `idempotency_key`: each item
    /// (a disbursement, or the refusal the caller's parsing already met) is
    /// validated and created on its own, with the single creation's rules,
    /// and the created ones debited in one journal record with the batch.
    /// A key used before answers with its batch, each created item in its
    /// current state. Refused whole (nothing recorded): a bad key, 0 or
    /// more than `BATCH_ITEMS_MAX` items, a merchant that is not WALLET.
    pub async fn create_disbursement_batch(
        &self,
        merchant_id: Uuid,
        idempotency_key: IdempotencyKey,
        items: Vec<Result<NewDisbursement, EngineError>>,
    ) -> Result<BatchAnswer, EngineError> {
        self.core.ensure_writable()?;
        let idempotency_key = idempotency_key.into_string();
        if items.is_empty() || items.len() > BATCH_ITEMS_MAX {
            return Err(EngineError::invalid(
                "items",
                format!("must hold 1 to {BATCH_ITEMS_MAX} disbursements"),
            ));
        }
        self.wallet_merchant(merchant_id)?;
        // A retry of a durable batch needs no validation and no actor.
        if let Some(batch) = self
            .core
            .store()
            .disbursement_batch_by_key(&merchant_id, &idempotency_key)?
        {
            return self.replay(&batch);
        }
        // Whole batches in or out: no item is refused for room alone.
        self.room_for_disbursements(items.len())?;
        let mut answers: Vec<Option<Result<Arc<Disbursement>, EngineError>>> = Vec::with_capacity(items.len());
        let mut draft = BatchDraft {
            idempotency_key,
            items: Vec::with_capacity(items.len()),
        };
        for item in items {
            match item.and_then(|new| self.validate_disbursement(merchant_id, new)) {
                Ok(request) => {
                    draft.items.push(Ok(request));
                    answers.push(None);
                }
                Err(refusal) => {
                    draft.items.push(Err(refusal.refusal()));
                    answers.push(Some(Err(refusal)));
                }
            }
        }
        let outcome = self
            .core
            .call_merchant(merchant_id, |reply| MerchantMsg::CreateDisbursements {
                draft: draft.clone(),
                reply,
            })
            .await??;
        match outcome {
            BatchOutcome::Existing(batch) => self.replay(&batch),
            BatchOutcome::Made { batch, results } => {
                let mut results = results.into_iter();
                let items = answers
                    .into_iter()
                    .map(|answer| {
                        answer.unwrap_or_else(|| {
                            results
                                .next()
                                .unwrap_or_else(|| Err(EngineError::Internal("a batch item got no result".into())))
                        })
                    })
                    .collect();
                Ok(BatchAnswer {
                    id: batch.id,
                    created_at_ms: batch.created_at_ms,
                    items,
                    replayed: false,
                })
            }
        }
    }

    /// The answer of a batch made before, as it was first given: each
    /// created disbursement as its creation answered it; a refused item's
    /// refusal, with the disbursement holding a reused key as it is now.
    fn replay(&self, batch: &DisbursementBatch) -> Result<BatchAnswer, EngineError> {
        let mut items = Vec::with_capacity(batch.items.len());
        for item in &batch.items {
            items.push(match item {
                BatchItem::Created(id) => match self.core.store().disbursement(id)? {
                    Some(disbursement) => Ok(Arc::new(disbursement.as_created())),
                    None => Err(EngineError::Internal(format!(
                        "disbursement {id} of a batch is missing"
                    ))),
                },
                BatchItem::Refused(refusal) => {
                    let existing = match refusal {
                        crate::domain::BatchRefusal::Duplicate(id) => self.core.store().disbursement(id)?,
                        _ => None,
                    };
                    Err(EngineError::from_refusal(refusal.clone(), existing))
                }
            });
        }
        Ok(BatchAnswer {
            id: batch.id,
            created_at_ms: batch.created_at_ms,
            items,
            replayed: true,
        })
    }

    /// A merchant's batch's figures: counts, and per current status of its
    /// accepted items their count and request amounts.
    pub fn disbursement_batch_for(&self, merchant_id: Uuid, id: Uuid) -> Result<BatchSummary, EngineError> {
        let batch = self
            .core
            .store()
            .disbursement_batch(&id)?
            .filter(|batch| batch.merchant_id == merchant_id)
            .ok_or(EngineError::BatchNotFound)?;
        let mut totals: Vec<(DisbursementStatus, StatusTotal)> = Vec::new();
        for item in &batch.items {
            let BatchItem::Created(id) = item else { continue };
            let disbursement = self
                .core
                .store()
                .disbursement(id)?
                .ok_or_else(|| EngineError::Internal(format!("disbursement {id} of a batch is missing")))?;
            let at = match totals.iter().position(|(status, _)| *status == disbursement.status) {
                Some(at) => at,
                None => {
                    totals.push((disbursement.status, StatusTotal::default()));
                    totals.len() - 1
                }
            };
            let total = &mut totals[at].1;
            total.count += 1;
            total.amount_minor = total.amount_minor.saturating_add(disbursement.request_amount.get());
        }
        totals.sort_by_key(|(status, _)| lifecycle_rank(*status));
        let accepted = batch.accepted();
        Ok(BatchSummary {
            id: batch.id,
            created_at_ms: batch.created_at_ms,
            total_items: batch.items.len(),
            accepted,
            refused: batch.items.len() - accepted,
            by_status: totals,
        })
    }
}

/// Where a status comes in a disbursement's life, for a stable order.
fn lifecycle_rank(status: DisbursementStatus) -> u8 {
    match status {
        DisbursementStatus::Pending => 0,
        DisbursementStatus::InReview => 1,
        DisbursementStatus::OnProcess => 2,
        DisbursementStatus::Success => 3,
        DisbursementStatus::Failed => 4,
        DisbursementStatus::Rejected => 5,
    }
}
