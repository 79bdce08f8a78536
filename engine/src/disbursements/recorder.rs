//! `MoveRecorder`: the moves of one merchant's disbursement actors,
//! recorded together. An actor asks and waits; the merchant's runner
//! (`host.rs`) sends every move asked for since its last message as one
//! message to the merchant's actor, once it has polled every actor it had
//! ready, and while one is in flight the next gathers. So under load a
//! thousand hand-overs cost one message and one journal record, not a
//! thousand, and a quiet merchant's single move goes at once, with no task
//! in between.

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

/// Moves asked for together, each asker's with where its answer goes.
pub type Asked = Vec<(Vec<DisbursementMove>, oneshot::Sender<MovesResult>)>;

/// One merchant's batching of disbursement moves.
pub struct MoveRecorder {
    merchant_id: Uuid,
    merchants: MerchantHandle,
    /// Asked for and not yet sent.
    asked: Mutex<Asked>,
}

impl MoveRecorder {
    /// A recorder of `merchant_id`'s moves.
    pub fn new(merchant_id: Uuid, merchants: MerchantHandle) -> MoveRecorder {
        MoveRecorder {
            merchant_id,
            merchants,
            asked: Mutex::new(Vec::new()),
        }
    }

    /// Records `moves` (in order, durable when it returns) with whatever
    /// other moves are asked for before the runner sends them. An asker
    /// whose runner is gone hears `ShuttingDown`.
    pub async fn record(&self, moves: Vec<DisbursementMove>) -> MovesResult {
        if moves.is_empty() {
            return Ok(Vec::new());
        }
        let (tell, told) = oneshot::channel();
        self.asked.lock().expect("move recorder lock").push((moves, tell));
        told.await.unwrap_or(Err(EngineError::ShuttingDown))
    }

    /// Every move asked for since the last call, if any, to send as one.
    pub fn take_asked(&self) -> Option<Asked> {
        let mut asked = self.asked.lock().expect("move recorder lock");
        (!asked.is_empty()).then(|| std::mem::take(&mut *asked))
    }

    /// Sends one batch to the merchant's actor as one message and answers
    /// each asker.
    pub async fn send(&self, batch: Asked) {
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
