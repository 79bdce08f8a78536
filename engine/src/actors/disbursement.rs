//! `DisbursementActor`: one per disbursement in flight. It decides when a
//! disbursement moves (review, hand-over to the vendor, the vendor's
//! outcome); the merchant actor records each move, so money and status stay
//! with the merchant's single writer. Each message is one step, after which
//! the actor stops: a vendor's outcome is waited for in the timer heap
//! (`timers.rs`), which starts a new actor when it is due.

use crate::domain::{Disbursement, DisbursementStatus};
use crate::engine::Engine;
use crate::error::EngineError;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use std::time::Duration;
use uuid::Uuid;

/// What a disbursement actor is told.
pub enum DisbursementMsg {
    /// Take the next step of this disbursement, as it is now (just created,
    /// or still open after a restart).
    Start(Box<Disbursement>),
    /// The vendor's outcome arrived.
    Settle(DisbursementStatus),
}

/// The vendor's outcome, due after a delay.
type OutcomeDue = Option<(Duration, DisbursementStatus)>;

/// The actor behaviour.
pub struct DisbursementActor;

/// What it needs to start.
pub struct DisbursementArgs {
    /// Which disbursement.
    pub id: Uuid,
    /// The engine, to read and move the disbursement.
    pub engine: Engine,
}

impl Actor for DisbursementActor {
    type Msg = DisbursementMsg;
    type State = DisbursementArgs;
    type Arguments = DisbursementArgs;

    async fn pre_start(
        &self,
        _: ActorRef<DisbursementMsg>,
        args: DisbursementArgs,
    ) -> Result<DisbursementArgs, ActorProcessingErr> {
        Ok(args)
    }

    async fn handle(
        &self,
        myself: ActorRef<DisbursementMsg>,
        message: DisbursementMsg,
        state: &mut DisbursementArgs,
    ) -> Result<(), ActorProcessingErr> {
        let outcome_due = match message {
            DisbursementMsg::Start(disbursement) => advance(state, *disbursement).await?,
            DisbursementMsg::Settle(outcome) => {
                // A sandbox "complete" may have settled it first: then nothing to do.
                match state
                    .engine
                    .move_disbursement_by_id(state.id, outcome, None, Some(outcome_reason(outcome)))
                    .await
                {
                    Ok(_) | Err(EngineError::InvalidStatus(_)) | Err(EngineError::DisbursementNotFound) => None,
                    Err(error) => return Err(error.into()),
                }
            }
        };
        // Unregistered before the outcome goes to the timer: a due outcome
        // must start a new actor, not land in this stopping one's mailbox.
        state.engine.forget_disbursement_actor(state.id, &myself);
        myself.stop(None);
        if let Some((delay, outcome)) = outcome_due {
            state
                .engine
                .timers()
                .disbursement_outcome_after(state.id, delay, outcome);
        }
        Ok(())
    }
}

fn outcome_reason(outcome: DisbursementStatus) -> String {
    match outcome {
        DisbursementStatus::Failed => "the payout vendor reported the transfer failed".into(),
        _ => String::new(),
    }
}

/// Takes the next step; returns the vendor's outcome to wait for, if any.
async fn advance(state: &DisbursementArgs, disbursement: Disbursement) -> Result<OutcomeDue, ActorProcessingErr> {
    match disbursement.status {
        DisbursementStatus::Pending => {
            let threshold = state
                .engine
                .merchant(disbursement.merchant_id)
                .map(|m| m.limits.review_threshold_minor);
            if threshold.is_some_and(|t| disbursement.request_amount.get() >= t) {
                let moved = state
                    .engine
                    .move_disbursement(
                        disbursement.merchant_id,
                        state.id,
                        DisbursementStatus::InReview,
                        None,
                        None,
                    )
                    .await;
                ignore_lost_race(moved)?;
                return Ok(None);
            }
            submit(state, &disbursement).await
        }
        // After a restart: ask the vendor again when it will settle.
        DisbursementStatus::OnProcess => Ok(state
            .engine
            .payout_vendor()
            .and_then(|vendor| vendor.submit(&disbursement).ok())
            .and_then(|submission| submission.settles)),
        _ => Ok(None),
    }
}

async fn submit(state: &DisbursementArgs, disbursement: &Disbursement) -> Result<OutcomeDue, ActorProcessingErr> {
    let Some(vendor) = state.engine.payout_vendor() else {
        return Ok(None);
    };
    match vendor.submit(disbursement) {
        Ok(submission) => {
            let moved = state
                .engine
                .move_disbursement(
                    disbursement.merchant_id,
                    state.id,
                    DisbursementStatus::OnProcess,
                    Some(submission.vendor_disbursement_id),
                    None,
                )
                .await;
            let moved_now = ignore_lost_race(moved)?;
            // The timer task brings the outcome back; no actor waits meanwhile.
            Ok(submission.settles.filter(|_| moved_now))
        }
        Err(reason) => {
            let moved = state
                .engine
                .move_disbursement(
                    disbursement.merchant_id,
                    state.id,
                    DisbursementStatus::Failed,
                    None,
                    Some(reason),
                )
                .await;
            ignore_lost_race(moved)?;
            Ok(None)
        }
    }
}

/// A move refused because someone else moved it first (an operator, the
/// sandbox) is not an error for the actor. Returns whether the move happened.
fn ignore_lost_race<T>(result: Result<T, EngineError>) -> Result<bool, ActorProcessingErr> {
    match result {
        Ok(_) => Ok(true),
        Err(EngineError::InvalidStatus(_)) | Err(EngineError::DisbursementNotFound) => Ok(false),
        Err(error) => Err(error.into()),
    }
}
