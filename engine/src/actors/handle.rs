//! `MerchantHandle`: the narrow way to a merchant's actor (get it, spawning
//! it on demand, and call it), for code that must not hold the engine:
//! disbursement actors, their host and the timers.

use super::merchant::{CreatedDisbursements, DisbursementMove, MerchantActor, MerchantArgs, MerchantMsg};
use super::registry::ActorRegistry;
use crate::clock::SharedClock;
use crate::domain::Disbursement;
use crate::error::EngineError;
use crate::refcode::RefCodes;
use crate::store::journal::Journal;
use crate::store::Store;
use ractor::{Actor, ActorRef, RpcReplyPort};
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// What a merchant actor is started with, besides its merchant.
pub struct MerchantActorSettings {
    /// sled state.
    pub store: Arc<Store>,
    /// The journal.
    pub journal: Journal,
    /// Time.
    pub clock: SharedClock,
    /// Stop after this long without a message.
    pub idle_timeout: Duration,
    /// Idempotency keys kept in memory.
    pub keys_in_memory: usize,
    /// Platform-wide reference codes.
    pub ref_codes: Arc<RefCodes>,
    /// Created disbursements, once durable.
    pub created: CreatedDisbursements,
    /// The cluster shard the engine serves, which new disbursement ids fall in.
    pub shard: Option<u16>,
}

/// Gets or spawns merchant actors and calls them; cheap to clone.
#[derive(Clone)]
pub struct MerchantHandle {
    registry: Arc<ActorRegistry<MerchantMsg>>,
    settings: Arc<MerchantActorSettings>,
}

impl MerchantHandle {
    /// A handle spawning actors with `settings`.
    pub fn new(settings: MerchantActorSettings) -> MerchantHandle {
        MerchantHandle {
            registry: Arc::default(),
            settings: Arc::new(settings),
        }
    }

    async fn actor(&self, merchant_id: Uuid) -> Result<ActorRef<MerchantMsg>, EngineError> {
        if self.settings.store.directory().get(&merchant_id).is_none() {
            return Err(EngineError::MerchantNotFound);
        }
        self.registry
            .get_or_spawn(merchant_id, || async {
                let settings = &self.settings;
                let args = MerchantArgs {
                    merchant_id,
                    store: settings.store.clone(),
                    journal: settings.journal.clone(),
                    clock: settings.clock.clone(),
                    registry: self.registry.clone(),
                    idle_timeout: settings.idle_timeout,
                    keys_in_memory: settings.keys_in_memory,
                    ref_codes: settings.ref_codes.clone(),
                    created: settings.created.clone(),
                    shard: settings.shard,
                };
                let (actor, _) = Actor::spawn(None, MerchantActor, args).await.map_err(|error| {
                    tracing::error!(%error, %merchant_id, "merchant actor failed to start");
                    EngineError::ShuttingDown
                })?;
                Ok(actor)
            })
            .await
    }

    /// Sends a message to a merchant's actor and waits for the reply,
    /// retrying when the actor stopped (idle) between lookup and send: such a
    /// message was never processed, so sending it again is safe.
    pub async fn call<T: Send + 'static>(
        &self,
        merchant_id: Uuid,
        build: impl Fn(RpcReplyPort<T>) -> MerchantMsg,
    ) -> Result<T, EngineError> {
        self.registry.call(merchant_id, || self.actor(merchant_id), build).await
    }

    /// Moves disbursements of one merchant together: one message to its
    /// actor, one result per move, all durable when it returns.
    pub async fn move_disbursements(
        &self,
        merchant_id: Uuid,
        moves: Vec<DisbursementMove>,
    ) -> Result<Vec<Result<Arc<Disbursement>, EngineError>>, EngineError> {
        self.call(merchant_id, |reply| MerchantMsg::MoveDisbursements {
            moves: moves.clone(),
            reply,
        })
        .await
    }

    /// How many merchant actors are live.
    pub fn live_count(&self) -> usize {
        self.registry.len()
    }

    /// Forgets every actor (shutdown); returns them so they can be stopped.
    pub fn drain(&self) -> Vec<ActorRef<MerchantMsg>> {
        self.registry.drain()
    }
}
