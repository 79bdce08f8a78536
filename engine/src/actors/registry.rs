//! Spawns actors on first use and forgets them when they stop, so memory
//! follows live work: merchant, order and disbursement actors.

use crate::error::EngineError;
use foldhash::{HashMap, HashMapExt};
use ractor::{ActorId, ActorRef, Message};
use std::future::Future;
use std::sync::RwLock;
use uuid::Uuid;

/// Live actors of one kind by resource id.
pub struct ActorRegistry<M: Message> {
    live: RwLock<HashMap<Uuid, ActorRef<M>>>,
    // Spawns of one id are serialized so two callers never build two actors
    // for it; ids are spread over shards so unrelated spawns do not queue.
    spawn_locks: Box<[tokio::sync::Mutex<()>]>,
}

const SPAWN_LOCK_SHARDS: usize = 64;

impl<M: Message> Default for ActorRegistry<M> {
    fn default() -> Self {
        ActorRegistry {
            live: RwLock::new(HashMap::new()),
            spawn_locks: (0..SPAWN_LOCK_SHARDS).map(|_| tokio::sync::Mutex::new(())).collect(),
        }
    }
}

impl<M: Message> ActorRegistry<M> {
    /// Asks the actor of `id` (got or spawned by `actor`) and waits. An actor
    /// that stopped (idle) between lookup and send never processed the
    /// message, so it is forgotten and the message sent again to a new one.
    pub async fn call<T, Fut>(
        &self,
        id: Uuid,
        actor: impl Fn() -> Fut,
        build: impl Fn(ractor::RpcReplyPort<T>) -> M,
    ) -> Result<T, EngineError>
    where
        T: Send + 'static,
        Fut: Future<Output = Result<ActorRef<M>, EngineError>>,
    {
        use ractor::rpc::CallResult;
        for _ in 0..crate::limits::ACTOR_CALL_RETRIES_MAX {
            let actor = actor().await?;
            match actor.call(&build, Some(crate::limits::ACTOR_CALL_TIMEOUT)).await {
                Ok(CallResult::Success(value)) => return Ok(value),
                Ok(CallResult::Timeout) => return Err(EngineError::Timeout),
                Ok(CallResult::SenderError) | Err(_) => {
                    self.remove(&id, actor.get_id());
                }
            }
        }
        Err(EngineError::ShuttingDown)
    }

    /// The live actor for `id`, if any.
    pub fn get(&self, id: &Uuid) -> Option<ActorRef<M>> {
        self.live.read().expect("registry lock").get(id).cloned()
    }

    /// The live actor for `id`, spawning it with `spawn` if there is none.
    pub async fn get_or_spawn<F, Fut>(&self, id: Uuid, spawn: F) -> Result<ActorRef<M>, EngineError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<ActorRef<M>, EngineError>>,
    {
        if let Some(actor) = self.get(&id) {
            return Ok(actor);
        }
        let shard = (id.as_u128() % SPAWN_LOCK_SHARDS as u128) as usize;
        let _guard = self.spawn_locks[shard].lock().await;
        if let Some(actor) = self.get(&id) {
            return Ok(actor);
        }
        let actor = spawn().await?;
        self.live.write().expect("registry lock").insert(id, actor.clone());
        Ok(actor)
    }

    /// Forgets `id` if it is still the actor `actor_id`; the actor calls this
    /// just before it stops itself. Returns whether it was removed.
    pub fn remove(&self, id: &Uuid, actor_id: ActorId) -> bool {
        let mut live = self.live.write().expect("registry lock");
        if live.get(id).map(|a| a.get_id()) == Some(actor_id) {
            live.remove(id);
            true
        } else {
            false
        }
    }

    /// How many actors are live.
    pub fn len(&self) -> usize {
        self.live.read().expect("registry lock").len()
    }

    /// Forgets every actor (shutdown); returns them so they can be stopped.
    pub fn drain(&self) -> Vec<ActorRef<M>> {
        self.live
            .write()
            .expect("registry lock")
            .drain()
            .map(|(_, a)| a)
            .collect()
    }
}
