//! `OrderActor`: one per order with work in hand (virtual: spawned by a
//! message for the order, stopped as soon as it has handled what it holds
//! and waits for no refund retry). It takes an order's events one at a
//! time: expiry, payment confirmation, failure, and its refunds' trips to
//! the vendor. The merchant actor records each change, so money and status
//! stay with the merchant's single writer.
//!
//! An actor stops by draining: it leaves the registry, then handles every
//! message already admitted and refuses the rest, which its sender hands to
//! the order's next actor (`OrderContext::tell`, the registry's `call`).
//! Timers go through the context, not the actor, so one set by an actor
//! that has stopped since reaches the next.
//!
//! `OrderContext` is what order actors may reach, and nothing more: stored
//! orders and refunds, the merchant's actor (the only writer of money),
//! their own registry (spawning an order's actor when a message comes for
//! it), and the payment vendors that refund.

use crate::actors::{ActorRegistry, MerchantHandle, MerchantMsg, OrderCommand, OrderOutcome};
use crate::domain::catalog::SANDBOX_VENDOR;
use crate::domain::{Order, Refund, RefundStatus};
use crate::error::EngineError;
use crate::store::Store;
use crate::vendor::payment::{
    HttpPaymentVendor, PaymentVendor, RefundAcceptance, RefundRequest, SandboxPaymentVendor, VendorError,
};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// What an order actor is told.
pub enum OrderMsg {
    /// Expiry (due, or forced by the sandbox).
    Expire {
        /// Before `expires_at` too.
        force: bool,
        /// The order after, if someone waits.
        reply: Option<RpcReplyPort<Result<Order, EngineError>>>,
    },
    /// The vendor confirmed the payment.
    Pay {
        /// Retrieval reference.
        vendor_rrn: Option<String>,
        /// The order after.
        reply: Option<RpcReplyPort<Result<Order, EngineError>>>,
    },
    /// The vendor reported the payment failed.
    Fail {
        /// Why.
        reason: String,
        /// The order after.
        reply: Option<RpcReplyPort<Result<Order, EngineError>>>,
    },
    /// Hand a PENDING refund to the vendor.
    SubmitRefund(Uuid),
    /// Ask the vendor again, after a failure whose outcome was unknown.
    RetryRefund(Uuid),
    /// A refund's outcome.
    SettleRefund {
        /// Which refund.
        refund_id: Uuid,
        /// SUCCESS or FAILED.
        outcome: RefundStatus,
        /// Vendor reference.
        vendor_refund_id: Option<String>,
        /// Why it failed.
        reason: Option<String>,
        /// The refund after.
        reply: Option<RpcReplyPort<Result<Refund, EngineError>>>,
    },
}

/// The actor behaviour.
pub struct OrderActor;

/// What it needs to start.
pub struct OrderArgs {
    /// Which order.
    pub id: Uuid,
    /// Its merchant.
    pub merchant_id: Uuid,
    /// What it may reach.
    pub ctx: std::sync::Arc<OrderContext>,
}

/// Its state.
pub struct OrderState {
    args: OrderArgs,
    /// Refund timers set by this actor and not yet come back: it stays
    /// while there are any, so its retry counts hold.
    timers_armed: usize,
    /// Failed submissions so far of each refund being retried.
    refund_attempts: std::collections::HashMap<Uuid, u32>,
}

/// When to ask a refund's vendor again after a failure whose outcome is
/// unknown (a timeout, a 5xx): after the last, the refund fails.
const REFUND_RETRY_DELAYS: [Duration; 4] = [
    Duration::from_secs(1),
    Duration::from_secs(10),
    Duration::from_secs(60),
    Duration::from_secs(600),
];

impl Actor for OrderActor {
    type Msg = OrderMsg;
    type State = OrderState;
    type Arguments = OrderArgs;

    async fn pre_start(&self, _myself: ActorRef<OrderMsg>, args: OrderArgs) -> Result<OrderState, ActorProcessingErr> {
        Ok(OrderState {
            args,
            timers_armed: 0,
            refund_attempts: Default::default(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<OrderMsg>,
        message: OrderMsg,
        state: &mut OrderState,
    ) -> Result<(), ActorProcessingErr> {
        let id = state.args.id;
        match message {
            OrderMsg::Expire { force, reply } => {
                let result = state.order_change(OrderCommand::Expire { id, force }).await;
                answer(reply, result);
            }
            OrderMsg::Pay { vendor_rrn, reply } => {
                let result = state.order_change(OrderCommand::Pay { id, vendor_rrn }).await;
                answer(reply, result);
            }
            OrderMsg::Fail { reason, reply } => {
                let result = state.order_change(OrderCommand::Fail { id, reason }).await;
                answer(reply, result);
            }
            OrderMsg::SubmitRefund(refund_id) => state.submit_refund(refund_id).await?,
            OrderMsg::RetryRefund(refund_id) => {
                state.timers_armed = state.timers_armed.saturating_sub(1);
                state.submit_refund(refund_id).await?
            }
            OrderMsg::SettleRefund {
                refund_id,
                outcome,
                vendor_refund_id,
                reason,
                reply,
            } => {
                state.timers_armed = state.timers_armed.saturating_sub(usize::from(reply.is_none()));
                let command = OrderCommand::SettleRefund {
                    id: refund_id,
                    outcome,
                    vendor_refund_id,
                    reason,
                };
                let result = match state.args.ctx.order_command(state.args.merchant_id, command).await {
                    Ok(OrderOutcome::Refund(changed)) => Ok(changed.1),
                    Ok(_) => Err(EngineError::RefundNotFound),
                    Err(error) => Err(error),
                };
                match reply {
                    Some(reply) => drop(reply.send(result)),
                    None => log_unexpected(result),
                }
            }
        }
        if state.timers_armed == 0 {
            state.args.ctx.forget_order_actor(id, &myself);
            // Err only when it is stopping already.
            let _ = myself.drain();
        }
        Ok(())
    }
}

fn answer<T: Send + 'static>(reply: Option<RpcReplyPort<Result<T, EngineError>>>, result: Result<T, EngineError>) {
    match reply {
        Some(reply) => drop(reply.send(result)),
        None => log_unexpected(result),
    }
}

/// Without a caller, a refusal such as "already paid" is a lost race, not a
/// problem; anything else is logged.
fn log_unexpected<T>(result: Result<T, EngineError>) {
    match result {
        Ok(_) | Err(EngineError::InvalidStatus(_)) | Err(EngineError::OrderNotFound) => {}
        Err(error) => tracing::error!(%error, "order event failed"),
    }
}

impl OrderState {
    async fn order_change(&self, command: OrderCommand) -> Result<Order, EngineError> {
        match self.args.ctx.order_command(self.args.merchant_id, command).await? {
            OrderOutcome::Order(order) | OrderOutcome::Replayed(order) => Ok(order),
            OrderOutcome::Refund(changed) => Ok(changed.0),
            OrderOutcome::Settled(_) => Err(EngineError::OrderNotFound),
        }
    }

    /// Sends a PENDING refund to the vendor that took the order. A vendor
    /// that cannot be reached fails the refund, which gives the money back.
    async fn submit_refund(&mut self, refund_id: Uuid) -> Result<(), ActorProcessingErr> {
        let ctx = &self.args.ctx;
        let Some(refund) = ctx.store.refund(&refund_id)? else {
            return Ok(());
        };
        // Settled, or taken by a vendor that will call back (after a
        // restart): asking again could refund twice, or fail a refund the
        // vendor is paying.
        if refund.status != RefundStatus::Pending || refund.vendor_refund_id.is_some() {
            return Ok(());
        }
        let Some(order) = ctx.store.order(&refund.order_id)? else {
            return Ok(());
        };
        let (order_id, merchant_id) = (self.args.id, self.args.merchant_id);
        let settle = move |outcome, vendor_refund_id, reason| OrderMsg::SettleRefund {
            refund_id,
            outcome,
            vendor_refund_id,
            reason,
            reply: None,
        };
        let submitted = ctx.submit_refund_to_vendor(&order, &refund).await;
        if submitted.is_ok() {
            // A retry that got through starts the count afresh.
            self.refund_attempts.remove(&refund_id);
        }
        match submitted {
            Ok(acceptance) => match (acceptance.status, acceptance.settles_after) {
                (RefundStatus::Pending, Some((delay, outcome))) => {
                    self.timers_armed += 1;
                    let message = settle(outcome, Some(acceptance.reference), None);
                    ctx.tell_after(order_id, merchant_id, delay, message);
                }
                // Waits for the vendor's callback, its reference kept first.
                (RefundStatus::Pending, None) => {
                    let command = OrderCommand::RefundAccepted {
                        id: refund_id,
                        vendor_refund_id: acceptance.reference,
                    };
                    match ctx.order_command(self.args.merchant_id, command).await {
                        // A callback may have settled it already.
                        Ok(_) | Err(EngineError::InvalidStatus(_)) => {}
                        Err(error) => {
                            tracing::error!(%error, %refund_id, "recording a vendor's refund reference failed")
                        }
                    }
                }
                (outcome, _) => {
                    self.timers_armed += 1;
                    let message = settle(outcome, Some(acceptance.reference), None);
                    ctx.tell_after(order_id, merchant_id, Duration::ZERO, message);
                }
            },
            Err(error) => {
                let attempts = self.refund_attempts.entry(refund_id).or_insert(0);
                *attempts += 1;
                let retry_after = REFUND_RETRY_DELAYS
                    .get(*attempts as usize - 1)
                    .filter(|_| error.retryable);
                self.timers_armed += 1;
                match retry_after {
                    // The vendor may have it, or never saw it: the same refund id again.
                    Some(delay) => {
                        tracing::warn!(%refund_id, %error, ?delay, "refund vendor failed; asking again");
                        ctx.tell_after(order_id, merchant_id, *delay, OrderMsg::RetryRefund(refund_id));
                    }
                    None => {
                        tracing::warn!(%refund_id, %error, "refund vendor failed; the refund fails");
                        self.refund_attempts.remove(&refund_id);
                        let message = settle(RefundStatus::Failed, None, Some(error.message));
                        ctx.tell_after(order_id, merchant_id, Duration::ZERO, message);
                    }
                }
            }
        }
        Ok(())
    }
}

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
