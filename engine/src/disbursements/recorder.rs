//! `MoveRecorder`: the moves of one merchant's disbursement actors,
//! recorded together. Each actor asks for its moves and waits; while one
//! message to the merchant's actor is in flight the next batch gathers, so
//! under load a thousand hand-overs cost one message and one journal record,
//! not a thousand, and a quiet merchant's single move goes at once.

use crate::actors::merchant::DisbursementMove;
use crate::actors::MerchantHandle;
use crate::domain::Disbursement;
use crate::error::EngineError;
use std::future::Future;
use std::sync::{Arc, Mutex};
use tokio::sync::{oneshot, Notify};
use uuid::Uuid;

/// Each move's disbursement after it, or why it could not move; or why
/// none was recorded.
pub type MovesResult = Result<Vec<Result<Arc<Disbursement>, EngineError>>, EngineError>;

/// Moves asked for and not yet sent, each request with its waiter.
type Pending = Vec<(Vec<DisbursementMove>, oneshot::Sender<MovesResult>)>;

/// One merchant's batching of disbursement moves.
pub struct MoveRecorder {
    merchant_id: Uuid,
    merchants: MerchantHandle,
    pending: Mutex<Pending>,
    asked: Notify,
}

impl MoveRecorder {
    /// A recorder of `merchant_id`'s moves.
    pub fn new(merchant_id: Uuid, merchants: MerchantHandle) -> MoveRecorder {
        MoveRecorder {
            merchant_id,
            merchants,
            pending: Mutex::new(Vec::new()),
            asked: Notify::new(),
        }
    }

    /// Records `moves` (in order, durable when it returns) with whatever
    /// other moves are asked for meanwhile.
    pub async fn record(&self, moves: Vec<DisbursementMove>) -> MovesResult {
        if moves.is_empty() {
            return Ok(Vec::new());
        }
        let (tell, told) = oneshot::channel();
        let first = {
            let mut pending = self.pending.lock().expect("move recorder lock");
            pending.push((moves, tell));
            pending.len() == 1
        };
        if first {
            self.asked.notify_one();
        }
        told.await.unwrap_or(Err(EngineError::ShuttingDown))
    }

    /// Resolves once moves are waiting (at once if some already are).
    pub async fn asked(&self) {
        self.asked.notified().await
    }

    /// Takes every move waiting; the returned future sends them to the
    /// merchant's actor as one message and answers each asker.
    pub fn flush(&self) -> Option<impl Future<Output = ()> + Send + 'static> {
        let batch = std::mem::take(&mut *self.pending.lock().expect("move recorder lock"));
        if batch.is_empty() {
            return None;
        }
        let (merchants, merchant_id) = (self.merchants.clone(), self.merchant_id);
        Some(async move {
            let mut sizes = Vec::with_capacity(batch.len());
            let mut tellers = Vec::with_capacity(batch.len());
            let mut moves = Vec::new();
            for (asked, tell) in batch {
                sizes.push(asked.len());
                moves.extend(asked);
                tellers.push(tell);
            }
            match merchants.move_disbursements(merchant_id, moves).await {
                Ok(results) => {
                    let mut results = results.into_iter();
                    for (size, tell) in sizes.into_iter().zip(tellers) {
                        let own: Vec<_> = results.by_ref().take(size).collect();
                        let _ = tell.send(Ok(own));
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, %merchant_id, "disbursement moves not recorded");
                    for tell in tellers {
                        let _ = tell.send(Err(same_failure(&error)));
                    }
                }
            }
        })
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
