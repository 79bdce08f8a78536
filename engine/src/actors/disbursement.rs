//! `DisbursementActor`: one per disbursement with a step to take after its
//! hand-over: the vendor's outcome, or a resume after a restart. (The first
//! step of new disbursements, review or hand-over, is taken in batches by
//! `handoffs.rs`.) The merchant actor records each move, so money and status
//! stay with the merchant's single writer. Each message is one step, after
//! which the actor stops: a vendor's outcome is waited for in the timer heap
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
/// A PENDING disbursement's first step is the hand-off round's (`handoffs.rs`).
async fn advance(state: &DisbursementArgs, disbursement: Disbursement) -> Result<OutcomeDue, ActorProcessingErr> {
    match disbursement.status {
        // After a restart: ask the vendor again when it will settle.
        DisbursementStatus::OnProcess => {
            let Some(vendor) = state.engine.payout_vendor() else {
                return Ok(None);
            };
            Ok(vendor
                .submit(&disbursement)
                .await
                .ok()
                .and_then(|submission| submission.settles))
        }
        _ => Ok(None),
    }
}
