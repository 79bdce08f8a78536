//! The engine's order operations: validation, failover across the routed
//! vendors, creation through the merchant actor, payment, expiry and failure
//! through the order actor, refunds, queries, and the expiry sweep that
//! makes timers survive restarts. Vendor routing, configuration and signed
//! callbacks are `vendors.rs`.

use crate::actors::{OrderCommand, OrderOutcome};
use crate::core::Core;
use crate::domain::{Order, OrderStatus, PaymentMethod, Refund, RefundStatus, Source};
use crate::input::{CustomerPhone, EmailAddress, HttpUrl};
use actor::OrderMsg;
use std::sync::Arc;

pub(crate) mod actor;
mod commands;
mod vendors;

use crate::error::EngineError;
use crate::limits;
use crate::money::MinorUnits;
use crate::qris;
use crate::vendor::payment::PaymentRequest;
pub use commands::{
    Customer, ExpireMinutes, MerchantOrderId, NewOrder, NewRefund, OrderAmount, RefundReason, ORDER_AMOUNT_MAX_MINOR,
};

use uuid::Uuid;

/// Filters of `GET /v1/orders`.
pub type OrderFilter = crate::input::ListFilter<OrderStatus>;

/// How `create_order` answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Creation {
    /// A new order.
    Created,
    /// The `Idempotency-Key` was seen with the same body: the first answer again.
    Replayed,
}

/// The orders handle: orders, refunds, payment vendors and settlements; cheap to clone.
#[derive(Clone)]
pub struct Orders {
    pub(crate) core: Arc<Core>,
}

impl Orders {
    pub(crate) fn new(core: Arc<Core>) -> Orders {
        Orders { core }
    }

    /// The catalog of this engine: banks for settlements, vendor settings.
    pub(crate) fn catalog(&self) -> crate::catalog::PlatformCatalog {
        crate::catalog::PlatformCatalog::new(self.core.clone())
    }

    /// This engine's disbursements, whose vendor callbacks come in beside
    /// the payment vendors'.
    pub(crate) fn disbursements(&self) -> crate::disbursements::Disbursements {
        crate::disbursements::Disbursements::new(self.core.clone())
    }
}

impl Orders {
    /// Validates an order, has a vendor accept it (trying the configured
    /// vendors in order) and records it through the merchant actor.
    pub async fn create_order(&self, merchant_id: Uuid, new: NewOrder) -> Result<(Order, Creation), EngineError> {
        self.core.ensure_writable()?;
        let merchant = self.core.merchant(merchant_id).ok_or(EngineError::MerchantNotFound)?;
        let mut order = self.validate_order(merchant_id, &new)?;
        // Concurrent repeats of one order wait here, then find the first in
        // the check below: the vendor is asked once, not once per repeat.
        let creation = (merchant_id, order.source, order.merchant_order_id.clone());
        let _one_at_a_time = self.core.order_creations().lock(&creation).await;
        // Early answers without a vendor round trip, from the actor's memory;
        // the actor decides for good at creation.
        if let OrderOutcome::Replayed(first) = self
            .order_command(merchant_id, OrderCommand::Check(Box::new(order.clone())))
            .await?
        {
            return Ok((first, Creation::Replayed));
        }
        let vendors = self.payment_vendors(merchant.organization_id, order.payment_method);
        if vendors.is_empty() {
            return Err(EngineError::NoVendor);
        }
        let request = PaymentRequest {
            order_id: order.id,
            ref_code: order.ref_code.clone(),
            amount: order.amount,
            method: order.payment_method,
            expires_at_ms: order.expires_at_ms,
        };
        let mut failures = Vec::new();
        let mut accepted = None;
        for vendor in &vendors {
            match vendor.create_payment(&request).await {
                Ok(acceptance) => {
                    accepted = Some((vendor.name().to_string(), acceptance));
                    break;
                }
                Err(reason) => {
                    tracing::warn!(vendor = vendor.name(), %reason, "payment vendor failed; trying the next");
                    failures.push(reason.message);
                }
            }
        }
        let Some((vendor_name, acceptance)) = accepted else {
            return Err(EngineError::VendorError(failures.join("; ")));
        };
        order.vendor = vendor_name;
        order.vendor_reference = Some(acceptance.reference);
        match order.payment_method {
            PaymentMethod::Qris => {
                order.qris_string = Some(qris::build(&qris::QrisRequest {
                    merchant_id,
                    merchant_name: &merchant.name,
                    merchant_city: "JAKARTA",
                    amount: order.amount,
                    ref_code: &order.ref_code,
                }));
            }
            PaymentMethod::BankTransfer => order.virtual_account = acceptance.virtual_account,
        }
        match self
            .order_command(merchant_id, OrderCommand::Create(Box::new(order)))
            .await?
        {
            OrderOutcome::Order(order) => Ok((order, Creation::Created)),
            OrderOutcome::Replayed(order) => Ok((order, Creation::Replayed)),
            OrderOutcome::Refund(changed) => Ok((changed.0, Creation::Created)),
            OrderOutcome::Settled(_) => Err(EngineError::OrderNotFound),
        }
    }

    fn validate_order(&self, merchant_id: Uuid, new: &NewOrder) -> Result<Order, EngineError> {
        if let Some(url) = &new.notify_url {
            self.core.ensure_public_notify_url("notify_url", url)?;
        }
        let now = self.core.clock().now();
        let now_ms = now.timestamp_millis();
        let store = self.core.store().clone();
        let ref_code = self
            .core
            .ref_codes()
            .next("ORD", now, |code| store.order_ref_exists(code).unwrap_or(true));
        Ok(Order {
            id: crate::cluster::new_id_in(self.core.shard()),
            ref_code,
            merchant_id,
            merchant_order_id: new.merchant_order_id.as_str().to_string(),
            source: new.source,
            payment_method: new.payment_method,
            amount: new.amount.minor(),
            status: OrderStatus::Pending,
            qris_string: None,
            virtual_account: None,
            vendor: String::new(),
            vendor_reference: None,
            expires_at_ms: Some(now_ms + new.expire_minutes.get() * 60_000),
            paid_at_ms: None,
            vendor_rrn: None,
            is_settled: false,
            customer_name: new.customer.name.clone(),
            customer_email: new.customer.email.clone().map(EmailAddress::into_string),
            customer_phone: new.customer.phone.clone().map(CustomerPhone::into_string),
            notify_url: new.notify_url.clone().map(HttpUrl::into_string),
            return_url: new.return_url.clone().map(HttpUrl::into_string),
            metadata: new.metadata.clone(),
            fees: None,
            payment_seq: None,
            refunded_amount: MinorUnits::ZERO,
            idempotency: new
                .idempotency
                .clone()
                .map(|(key, body_hash)| (key.into_string(), body_hash)),
            failure_reason: None,
            settlement_id: None,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
        })
    }

    /// Sends an order command to the merchant's actor.
    pub(crate) async fn order_command(
        &self,
        merchant_id: Uuid,
        command: OrderCommand,
    ) -> Result<OrderOutcome, EngineError> {
        self.core.order_context().order_command(merchant_id, command).await
    }

    /// A merchant's order by ref code (another merchant's is not found).
    pub fn order_for(&self, merchant_id: Uuid, ref_code: &str) -> Result<Order, EngineError> {
        self.core
            .store()
            .order_by_ref(ref_code)?
            .filter(|o| o.merchant_id == merchant_id)
            .ok_or(EngineError::OrderNotFound)
    }

    /// An order by ref code, whoever owns it (the QR image needs no key).
    pub fn order_by_ref(&self, ref_code: &str) -> Result<Option<Order>, EngineError> {
        Ok(self.core.store().order_by_ref(ref_code)?)
    }

    /// An order by id.
    pub fn stored_order(&self, id: Uuid) -> Result<Option<Order>, EngineError> {
        Ok(self.core.store().order(&id)?)
    }

    /// A refund by id.
    pub fn stored_refund(&self, id: Uuid) -> Result<Option<Refund>, EngineError> {
        Ok(self.core.store().refund(&id)?)
    }

    /// A merchant's order by its own id in one API.
    pub fn order_by_merchant_order_id(
        &self,
        merchant_id: Uuid,
        source: Source,
        merchant_order_id: &str,
    ) -> Result<Option<Order>, EngineError> {
        Ok(self
            .core
            .store()
            .order_by_merchant_order_id(&merchant_id, source, merchant_order_id)?)
    }

    /// An order's refunds, oldest first.
    pub fn order_refunds(&self, order_id: Uuid) -> Result<Vec<Refund>, EngineError> {
        Ok(self.core.store().order_refunds(&order_id)?)
    }

    /// A page of a merchant's orders, newest first, and the total.
    pub fn list_orders(
        &self,
        merchant_id: Uuid,
        filter: &OrderFilter,
        page: usize,
        limit: usize,
    ) -> Result<(Vec<Order>, usize), EngineError> {
        let (from, to) = filter.created.half_open();
        let offset = page.saturating_sub(1).saturating_mul(limit);
        let status = filter.status;
        Ok(self.core.store().merchant_orders(
            &merchant_id,
            from,
            to,
            |o| status.is_none_or(|s| o.status == s),
            offset,
            limit,
        )?)
    }

    /// Confirms an order's payment (sandbox or vendor callback): PAID once,
    /// with one entry; a second confirmation is refused as `INVALID_STATUS`.
    pub async fn pay_order(&self, order: &Order, vendor_rrn: Option<String>) -> Result<Order, EngineError> {
        self.core.ensure_writable()?;
        if let Some(rrn) = &vendor_rrn {
            if rrn.is_empty() || rrn.len() > 64 || rrn.chars().any(char::is_control) {
                return Err(EngineError::invalid(
                    "vendor_rrn",
                    "must be 1 to 64 printable characters",
                ));
            }
        }
        self.call_order(order, |reply| OrderMsg::Pay {
            vendor_rrn: vendor_rrn.clone(),
            reply: Some(reply),
        })
        .await
    }

    /// Expires a PENDING order now (sandbox).
    pub async fn expire_order(&self, order: &Order) -> Result<Order, EngineError> {
        self.core.ensure_writable()?;
        self.call_order(order, |reply| OrderMsg::Expire {
            force: true,
            reply: Some(reply),
        })
        .await
    }

    /// Fails a PENDING order.
    pub async fn fail_order(&self, order: &Order, reason: &str) -> Result<Order, EngineError> {
        self.core.ensure_writable()?;
        self.call_order(order, |reply| OrderMsg::Fail {
            reason: reason.to_string(),
            reply: Some(reply),
        })
        .await
    }

    /// Whether a refund of the order may be asked for now: storage takes
    /// writes and the order is the merchant's. The API asks this before it
    /// reads the body, so that a refund of no order is 404 whatever it says.
    pub fn ensure_refundable_order(&self, merchant_id: Uuid, ref_code: &str) -> Result<(), EngineError> {
        self.core.ensure_writable()?;
        self.order_for(merchant_id, ref_code).map(drop)
    }

    /// Creates a refund of a paid order; WALLET merchants are debited at
    /// once. The vendor is asked afterwards, by the order's actor.
    pub async fn create_refund(
        &self,
        merchant_id: Uuid,
        ref_code: &str,
        new: NewRefund,
    ) -> Result<Refund, EngineError> {
        self.core.ensure_writable()?;
        let order = self.order_for(merchant_id, ref_code)?;
        let idempotency_key = new.idempotency_key.into_string();
        if let Some(existing) = self.core.store().refund_by_key(&merchant_id, &idempotency_key)? {
            return Err(EngineError::DuplicateRefund(Box::new(existing)));
        }
        if !matches!(order.status, OrderStatus::Paid | OrderStatus::PartiallyRefunded) {
            return Err(EngineError::InvalidStatus(order.status.as_str().into()));
        }
        if !self.vendor_supports_refund(&order.vendor) {
            return Err(EngineError::RefundNotSupported);
        }
        let now_ms = self.core.clock().now().timestamp_millis();
        let refund = Refund {
            id: crate::cluster::new_id_in(self.core.shard()),
            order_id: order.id,
            order_ref_code: order.ref_code.clone(),
            merchant_id,
            amount: new.amount.minor(),
            reason: new.reason.category,
            reason_detail: new.reason.detail,
            idempotency_key,
            status: RefundStatus::Pending,
            vendor_refund_id: None,
            failure_reason: None,
            debit_seq: None,
            reversal_seq: None,
            settlement_id: None,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
        };
        let refund = match self
            .order_command(merchant_id, OrderCommand::CreateRefund(Box::new(refund)))
            .await?
        {
            OrderOutcome::Refund(changed) => changed.1,
            _ => return Err(EngineError::RefundNotFound),
        };
        self.tell_order(&order, OrderMsg::SubmitRefund(refund.id)).await;
        Ok(refund)
    }

    /// A merchant's refund by id.
    pub fn refund_for(&self, merchant_id: Uuid, id: Uuid) -> Result<Refund, EngineError> {
        self.core
            .store()
            .refund(&id)?
            .filter(|r| r.merchant_id == merchant_id)
            .ok_or(EngineError::RefundNotFound)
    }

    /// Settles a PENDING refund (vendor callback or sandbox): SUCCESS, or
    /// FAILED with the money given back.
    pub async fn settle_refund(&self, refund: &Refund, outcome: RefundStatus) -> Result<Refund, EngineError> {
        self.core.ensure_writable()?;
        if outcome == RefundStatus::Pending {
            return Err(EngineError::invalid("status", "must be SUCCESS or FAILED"));
        }
        let order = self.stored_order(refund.order_id)?.ok_or(EngineError::OrderNotFound)?;
        let reason = (outcome == RefundStatus::Failed).then(|| "the vendor reported the refund failed".to_string());
        let refund_id = refund.id;
        self.call_order(&order, |reply| OrderMsg::SettleRefund {
            refund_id,
            outcome,
            vendor_refund_id: None,
            reason: reason.clone(),
            reply: Some(reply),
        })
        .await
    }

    /// Expires every PENDING order that is due. Runs at start (so an order
    /// that expired while the server was down is EXPIRED right after) and
    /// every `ORDER_EXPIRY_SWEEP_INTERVAL`.
    pub async fn expire_due_orders(&self) -> Result<usize, EngineError> {
        // While storage cannot take writes the sweep waits for the next one:
        // an expiry would be held in the journal, unacknowledged, anyway.
        if !self.core.storage_writable() {
            return Ok(0);
        }
        let mut expired = 0;
        loop {
            let now_ms = self.core.clock().now().timestamp_millis();
            let due = self.core.store().orders_due(now_ms, limits::ORDER_EXPIRY_SWEEP_BATCH)?;
            let batch = due.len();
            let mut expired_now = 0;
            for id in due {
                let Some(order) = self.stored_order(id)? else { continue };
                match self
                    .call_order(&order, |reply| OrderMsg::Expire {
                        force: false,
                        reply: Some(reply),
                    })
                    .await
                {
                    Ok(_) => expired_now += 1,
                    Err(EngineError::InvalidStatus(_)) | Err(EngineError::OrderNotFound) => {}
                    Err(error) => return Err(error),
                }
            }
            expired += expired_now;
            // A full batch that moved nothing is orders changing right now:
            // the next sweep sees them settled.
            if batch < limits::ORDER_EXPIRY_SWEEP_BATCH || expired_now == 0 {
                return Ok(expired);
            }
        }
    }

    /// Hands every PENDING refund to its order's actor again (after a restart).
    pub(crate) async fn resume_refunds(&self) -> Result<usize, EngineError> {
        let open = self.core.store().open_refunds()?;
        for refund in &open {
            if let Some(order) = self.stored_order(refund.order_id)? {
                self.tell_order(&order, OrderMsg::SubmitRefund(refund.id)).await;
            }
        }
        Ok(open.len())
    }

    /// Asks an order's actor and waits, retrying when it stopped (idle)
    /// between lookup and send: such a message was never processed.
    async fn call_order<T: Send + 'static>(
        &self,
        order: &Order,
        build: impl Fn(ractor::RpcReplyPort<Result<T, EngineError>>) -> OrderMsg,
    ) -> Result<T, EngineError> {
        let ctx = self.core.order_context();
        ctx.actors
            .call(order.id, || ctx.actor(order.id, order.merchant_id), build)
            .await?
    }

    async fn tell_order(&self, order: &Order, message: OrderMsg) {
        self.core
            .order_context()
            .tell(order.id, order.merchant_id, message)
            .await;
    }
}
