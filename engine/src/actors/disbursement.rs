//! `DisbursementActor`: one per disbursement in flight. It decides when a
//! disbursement moves (review, hand-over to the vendor, the vendor's
//! outcome); the merchant actor records each move, so money and status stay
//! with the merchant's single writer. Stops once there is nothing to wait for.

use crate::domain::{Disbursement, DisbursementStatus};
use crate::engine::Engine;
use crate::error::EngineError;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use uuid::Uuid;

/// What a disbursement actor is told.
pub enum DisbursementMsg {
    /// Look at the stored status and take the next step.
    Advance,
    /// Take the first step of a disbursement just created (as `Advance`,
    /// without reading back what the creator already has).
    Start(Box<Disbursement>),
    /// Wait for a vendor that settles on its own schedule (after an
    /// operator's approval handed it over).
    SettleAfter(std::time::Duration, DisbursementStatus),
    /// The vendor's outcome arrived.
    Settle(DisbursementStatus),
}

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
        let keep_running = match message {
            DisbursementMsg::Advance => match state.engine.stored_disbursement(state.id)? {
                Some(disbursement) => advance(state, disbursement).await?,
                None => false,
            },
            DisbursementMsg::Start(created) => advance(state, *created).await?,
            DisbursementMsg::SettleAfter(delay, outcome) => {
                state
                    .engine
                    .timers()
                    .disbursement_outcome_after(state.id, delay, outcome);
                false
            }
            DisbursementMsg::Settle(outcome) => {
                // A sandbox "complete" may have settled it first: then nothing to do.
                match state
                    .engine
                    .move_disbursement_by_id(state.id, outcome, None, Some(outcome_reason(outcome)))
                    .await
                {
                    Ok(_) | Err(EngineError::InvalidStatus(_)) | Err(EngineError::DisbursementNotFound) => false,
                    Err(error) => return Err(error.into()),
                }
            }
        };
        if !keep_running {
            state.engine.forget_disbursement_actor(state.id, &myself);
            myself.stop(None);
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

/// Returns whether there is still something to wait for.
async fn advance(state: &DisbursementArgs, disbursement: Disbursement) -> Result<bool, ActorProcessingErr> {
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
                return Ok(false);
            }
            submit(state, &disbursement).await
        }
        // After a restart: ask the vendor again when it will settle.
        DisbursementStatus::OnProcess => schedule_outcome(state, &disbursement),
        _ => Ok(false),
    }
}

async fn submit(state: &DisbursementArgs, disbursement: &Disbursement) -> Result<bool, ActorProcessingErr> {
    let Some(vendor) = state.engine.payout_vendor() else {
        return Ok(false);
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
            if !ignore_lost_race(moved)? {
                return Ok(false);
            }
            if let Some((delay, outcome)) = submission.settles {
                // The timer task brings the outcome back; no actor waits meanwhile.
                state
                    .engine
                    .timers()
                    .disbursement_outcome_after(state.id, delay, outcome);
            }
            Ok(false)
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
            Ok(false)
        }
    }
}

fn schedule_outcome(state: &DisbursementArgs, disbursement: &Disbursement) -> Result<bool, ActorProcessingErr> {
    let Some(vendor) = state.engine.payout_vendor() else {
        return Ok(false);
    };
    match vendor.submit(disbursement) {
        Ok(submission) => {
            if let Some((delay, outcome)) = submission.settles {
                state
                    .engine
                    .timers()
                    .disbursement_outcome_after(state.id, delay, outcome);
            }
            Ok(false)
        }
        Err(_) => Ok(false),
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
