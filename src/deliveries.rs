//! The webhook dispatchers' own runtime: one thread, apart from the
//! workers that answer requests.
//!
//! A merchant waits on each request; nobody waits on a webhook the way a
//! caller waits on an answer. On the same workers, a burst of due webhooks
//! (a settlement's payouts completing, a backlog after an endpoint comes
//! back) queues requests behind it. Here deliveries take at most one
//! thread. It runs at the ordinary priority while the request workers run
//! lower (`cpu_priority`): on a saturated machine it takes the CPU it needs
//! first, so webhooks keep up and new requests slow down instead.
//!
//! Started from the main thread, never a request worker: a thread inherits
//! its creator's priority.

use paygate_api::AppState;
use tokio::runtime::{Handle, Runtime};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The runtime deliveries run on, while a server or cluster node runs.
/// Dropped anywhere, in an async context too (a stop cut short by a second
/// signal drops it there), it ends without waiting for its thread: tokio
/// refuses to drop a runtime where blocking is not allowed.
pub struct DeliveryRuntime(Option<Runtime>);

impl DeliveryRuntime {
    /// Starts its thread, named `webhooks`.
    pub fn new() -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("webhooks")
            .enable_all()
            .build()?;
        Ok(DeliveryRuntime(Some(runtime)))
    }

    /// What starts dispatchers on this runtime, from any task.
    pub fn dispatchers(&self) -> Dispatchers {
        let runtime = self.0.as_ref().expect("the runtime is taken only when dropped");
        Dispatchers(runtime.handle().clone())
    }

    /// Ends the runtime without waiting: call it once its dispatchers
    /// stopped. Deliveries still in flight are dropped; their events stay
    /// due and go out after the next start, as after a crash.
    pub fn shut_down(self) {
        drop(self);
    }
}

impl Drop for DeliveryRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// Starts webhook dispatchers on a [`DeliveryRuntime`].
#[derive(Clone)]
pub struct Dispatchers(Handle);

impl Dispatchers {
    /// The dispatcher of `state`'s engine, until `stop` turns true; every
    /// delivery it starts runs on the same runtime.
    pub fn start(&self, state: AppState, stop: watch::Receiver<bool>) -> JoinHandle<()> {
        self.0.spawn(paygate_api::webhooks::run(state, stop))
    }
}
