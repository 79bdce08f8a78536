//! `OrderContext`: what order actors may reach, and nothing more: stored
//! orders and refunds, the merchant's actor (the only writer of money),
//! their own registry (spawning an order's actor when a message comes for
//! it), and the payment vendors that refund.

use super::actor::{OrderActor, OrderArgs, OrderMsg};
use crate::actors::{ActorRegistry, MerchantHandle, MerchantMsg, OrderCommand, OrderOutcome};
use crate::domain::catalog::SANDBOX_VENDOR;
use crate::domain::{Order, Refund};
use crate::error::EngineError;
use crate::store::Store;
use crate::vendor::payment::{
    HttpPaymentVendor, PaymentVendor, RefundAcceptance, RefundRequest, SandboxPaymentVendor, VendorError,
};
use ractor::{Actor, ActorRef};
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// The narrow handle of order actors.
pub struct OrderContext {
    /// State to read.
    pub store: Arc<Store>,
    /// Merchant actors.
    pub merchants: MerchantHandle,
    /// Live order actors.
    pub actors: ActorRegistry<OrderMsg>,
    /// Sandbox mode: the built-in sandbox payment vendor exists and settles
    /// refunds after this long.
    pub sandbox_refund_delay: Option<Duration>,
    /// Shared by HTTP vendors.
    pub http_client: reqwest::Client,
    /// Live order actors at most; past it, work needing a new one is Busy.
    pub live_max: usize,
}

impl OrderContext {
    /// Sends an order command to the merchant's actor.
    pub async fn order_command(&self, merchant_id: Uuid, command: OrderCommand) -> Result<OrderOutcome, EngineError> {
        self.merchants
            .call(merchant_id, |reply| MerchantMsg::Order {
                command: command.clone(),
                reply,
            })
            .await?
    }

    /// A payment vendor by name: the sandbox's (in sandbox mode) or a
    /// configured HTTP vendor.
    pub fn payment_vendor_named(&self, name: &str) -> Option<Box<dyn PaymentVendor>> {
        if name == SANDBOX_VENDOR {
            return self
                .sandbox_refund_delay
                .map(|refund_delay| Box::new(SandboxPaymentVendor { refund_delay }) as Box<dyn PaymentVendor>);
        }
        let config = self.store.catalog().payment_vendors.get(name).cloned()?;
        HttpPaymentVendor::new(&config, self.http_client.clone()).map(|v| Box::new(v) as Box<dyn PaymentVendor>)
    }

    /// Asks the vendor that took `order` to refund.
    pub async fn submit_refund_to_vendor(
        &self,
        order: &Order,
        refund: &Refund,
    ) -> Result<RefundAcceptance, VendorError> {
        let vendor = self
            .payment_vendor_named(&order.vendor)
            .ok_or_else(|| VendorError::refused(format!("vendor {} is no longer configured", order.vendor)))?;
        let request = RefundRequest {
            refund_id: refund.id,
            ref_code: order.ref_code.clone(),
            vendor_reference: order.vendor_reference.clone(),
            amount: refund.amount,
        };
        vendor.refund(&request).await
    }

    /// Called by an order actor just before it stops.
    pub fn forget_order_actor(&self, id: Uuid, actor: &ractor::ActorRef<OrderMsg>) {
        self.actors.remove(&id, actor.get_id());
    }

    /// Order `id`'s live actor, spawned if it has none.
    pub async fn actor(self: &Arc<Self>, id: Uuid, merchant_id: Uuid) -> Result<ActorRef<OrderMsg>, EngineError> {
        if self.actors.get(&id).is_none() && self.actors.len() >= self.live_max {
            return Err(EngineError::Busy);
        }
        let ctx = self.clone();
        self.actors
            .get_or_spawn(id, || async move {
                let args = OrderArgs { id, merchant_id, ctx };
                let (actor, _) = Actor::spawn(None, OrderActor, args).await.map_err(|error| {
                    tracing::error!(%error, %id, "order actor failed to start");
                    EngineError::ShuttingDown
                })?;
                Ok(actor)
            })
            .await
    }

    /// Hands `message` to order `id`'s actor without waiting for it. A
    /// message an actor refuses (it stops after what it holds, see
    /// `OrderActor`) goes to the next actor of the order, so none is lost
    /// while the engine runs.
    pub async fn tell(self: &Arc<Self>, id: Uuid, merchant_id: Uuid, mut message: OrderMsg) {
        for _ in 0..crate::limits::ACTOR_CALL_RETRIES_MAX {
            let actor = match self.actor(id, merchant_id).await {
                Ok(actor) => actor,
                Err(error) => {
                    tracing::error!(%error, order = %id, "order actor unavailable; its work is resumed at the next start");
                    return;
                }
            };
            match actor.cast(message) {
                Ok(()) => return,
                Err(ractor::MessagingErr::SendErr(refused)) => {
                    self.actors.remove(&id, actor.get_id());
                    message = refused;
                }
                Err(_) => break,
            }
        }
        tracing::warn!(order = %id, "order actors kept stopping before a message; it is resumed at the next start");
    }

    /// `message` for order `id`'s actor after `delay`, whichever actor the
    /// order has by then: a timer outlives the actor that set it, but not
    /// the engine (it holds the context weakly, so a stopped engine's store
    /// closes; the next start resumes every refund still PENDING).
    pub fn tell_after(self: &Arc<Self>, id: Uuid, merchant_id: Uuid, delay: Duration, message: OrderMsg) {
        let ctx = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            if let Some(ctx) = ctx.upgrade() {
                ctx.tell(id, merchant_id, message).await;
            }
        });
    }
}
