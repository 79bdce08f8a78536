//! `MoveRecorder`: the moves of one merchant's disbursement actors,
//! recorded together. An actor that asks while no message to the
//! merchant's actor is in flight sends it, with every move asked for by
//! then; those that ask meanwhile wait, and the sender sends their moves
//! next. So under load a thousand hand-overs cost one message and one
//! journal record, not a thousand, and a quiet merchant's single move goes
//! at once, with no task in between.

use crate::actors::merchant::DisbursementMove;
use crate::actors::MerchantHandle;
use crate::domain::Disbursement;
use crate::error::EngineError;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;
use uuid::Uuid;

/// Each move's disbursement after it, or why it could not move; or why
/// none was recorded.
pub type MovesResult = Result<Vec<Result<Arc<Disbursement>, EngineError>>, EngineError>;

/// Moves asked for and not yet sent, and whether an asker is sending.
#[derive(Default)]
struct Pending {
    asked: Vec<(Vec<DisbursementMove>, oneshot::Sender<MovesResult>)>,
    sending: bool,
}

/// One merchant's batching of disbursement moves.
pub struct MoveRecorder {
    merchant_id: Uuid,
    merchants: MerchantHandle,
    pending: Mutex<Pending>,
}

/// Ends a sender's turn even if its future is dropped mid-send: the moves
/// still waiting are answered with `ShuttingDown` rather than never.
struct SendingTurn<'a>(&'a MoveRecorder);

impl Drop for SendingTurn<'_> {
    fn drop(&mut self) {
        let mut pending = self.0.pending.lock().expect("move recorder lock");
        pending.sending = false;
        pending.asked.clear();
    }
}

impl MoveRecorder {
    /// A recorder of `merchant_id`'s moves.
    pub fn new(merchant_id: Uuid, merchants: MerchantHandle) -> MoveRecorder {
        MoveRecorder {
            merchant_id,
            merchants,
            pending: Mutex::new(Pending::default()),
        }
    }

    /// Records `moves` (in order, durable when it returns) with whatever
    /// other moves are asked for meanwhile.
    pub async fn record(&self, moves: Vec<DisbursementMove>) -> MovesResult {
        if moves.is_empty() {
            return Ok(Vec::new());
        }
        let (tell, told) = oneshot::channel();
        let sends = {
            let mut pending = self.pending.lock().expect("move recorder lock");
            pending.asked.push((moves, tell));
            !std::mem::replace(&mut pending.sending, true)
        };
        if sends {
            let turn = SendingTurn(self);
            loop {
                let batch = std::mem::take(&mut self.pending.lock().expect("move recorder lock").asked);
                if batch.is_empty() {
                    break;
                }
                self.send(batch).await;
            }
            drop(turn);
        }
        told.await.unwrap_or(Err(EngineError::ShuttingDown))
    }

    /// Sends one batch to the merchant's actor as one message and answers
    /// each asker.
    async fn send(&self, batch: Vec<(Vec<DisbursementMove>, oneshot::Sender<MovesResult>)>) {
        let mut sizes = Vec::with_capacity(batch.len());
        let mut tellers = Vec::with_capacity(batch.len());
        let mut moves = Vec::new();
        for (asked, tell) in batch {
            sizes.push(asked.len());
            moves.extend(asked);
            tellers.push(tell);
        }
        match self.merchants.move_disbursements(self.merchant_id, moves).await {
            Ok(results) => {
                let mut results = results.into_iter();
                for (size, tell) in sizes.into_iter().zip(tellers) {
                    let own: Vec<_> = results.by_ref().take(size).collect();
                    let _ = tell.send(Ok(own));
                }
            }
            Err(error) => {
                tracing::warn!(%error, merchant_id = %self.merchant_id, "disbursement moves not recorded");
                for tell in tellers {
                    let _ = tell.send(Err(same_failure(&error)));
                }
            }
        }
    }
}

/// A failed call to a merchant's actor, told to each of its askers
/// (`EngineError` is not `Clone`: the call fails only in these ways).
fn same_failure(error: &EngineError) -> EngineError {
    match error {
        EngineError::Timeout => EngineError::Timeout,
        EngineError::MerchantNotFound => EngineError::MerchantNotFound,
        _ => EngineError::ShuttingDown,
    }
}
