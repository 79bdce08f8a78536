//! `OrderContext`: what order actors may reach, and nothing more: stored
//! orders and refunds, the merchant's actor (the only writer of money),
//! their own registry, and the payment vendors that refund.

use super::actor::OrderMsg;
use crate::actors::{ActorRegistry, MerchantHandle, MerchantMsg, OrderCommand, OrderOutcome};
use crate::domain::catalog::SANDBOX_VENDOR;
use crate::domain::{Order, Refund};
use crate::error::EngineError;
use crate::store::Store;
use crate::vendor::payment::{
    HttpPaymentVendor, PaymentVendor, RefundAcceptance, RefundRequest, SandboxPaymentVendor, VendorError,
};
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
}
