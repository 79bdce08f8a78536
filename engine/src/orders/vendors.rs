//! Payment vendors of orders: which vendors an organization's orders go
//! to, their configuration through the admin API, and the signed callbacks
//! of HTTP vendors (payments, refunds and payouts).

use super::Orders;
use crate::domain::catalog::{PaymentVendorConfig, VendorKind, VendorRouting, SANDBOX_VENDOR};
use crate::domain::{OrderStatus, PaymentMethod, RefundStatus};
use crate::error::EngineError;
use crate::input::validate_url;
use crate::store::record::JournalRecord;
use crate::vendor::payment::PaymentVendor;
use serde::Deserialize;
use uuid::Uuid;

/// A vendor callback's body (see `vendor::payment` and `vendor::payout`).
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Callback {
    Payment {
        ref_code: String,
        status: String,
        vendor_rrn: Option<String>,
    },
    Refund {
        refund_id: Uuid,
        status: String,
    },
    Payout {
        payout_id: Uuid,
        status: String,
        reference: Option<String>,
        failure_reason: Option<String>,
    },
}

impl Orders {
    /// The vendors an organization's orders of `method` go to, in order.
    /// Never configured: the sandbox vendor in sandbox mode, none in live mode.
    pub(super) fn payment_vendors(&self, organization_id: Uuid, method: PaymentMethod) -> Vec<Box<dyn PaymentVendor>> {
        let names = {
            let catalog = self.core.store().catalog();
            match catalog.vendor_routes.get(&(organization_id, method)) {
                Some(names) => names.clone(),
                None if self.core.order_context().sandbox_refund_delay.is_some() => vec![SANDBOX_VENDOR.to_string()],
                None => Vec::new(),
            }
        };
        names
            .iter()
            .filter_map(|name| self.payment_vendor_named(name))
            .collect()
    }

    pub(super) fn payment_vendor_named(&self, name: &str) -> Option<Box<dyn PaymentVendor>> {
        self.core.order_context().payment_vendor_named(name)
    }

    pub(super) fn vendor_supports_refund(&self, name: &str) -> bool {
        if name == SANDBOX_VENDOR {
            return true;
        }
        self.core
            .store()
            .catalog()
            .payment_vendors
            .get(name)
            .is_some_and(|config| config.supports_refund)
    }

    /// Adds or changes an HTTP payment vendor.
    pub async fn save_payment_vendor(&self, config: PaymentVendorConfig) -> Result<PaymentVendorConfig, EngineError> {
        self.core.ensure_writable()?;
        let name_ok = !config.name.is_empty()
            && config.name.len() <= 64
            && config
                .name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
        if !name_ok {
            return Err(EngineError::invalid("name", "must be 1 to 64 of a-z, 0-9, - and _"));
        }
        if config.name == SANDBOX_VENDOR {
            return Err(EngineError::invalid("name", "sandbox is the built-in sandbox vendor"));
        }
        match &config.kind {
            VendorKind::Http {
                url,
                secret,
                timeout_ms,
            } => {
                validate_url("url", url)?;
                if secret.is_empty() || secret.len() > 256 {
                    return Err(EngineError::invalid("secret", "must be 1 to 256 characters"));
                }
                if !(1..=60_000).contains(timeout_ms) {
                    return Err(EngineError::invalid("timeout_ms", "must be between 1 and 60000"));
                }
            }
            VendorKind::Sandbox => return Err(EngineError::invalid("kind", "must be HTTP")),
        }
        self.catalog()
            .write_catalog(JournalRecord::PaymentVendorSaved(config.clone()))
            .await?;
        Ok(config)
    }

    /// Sets the vendors an organization's orders of `method` go to, in order.
    pub async fn set_vendor_routing(&self, routing: VendorRouting) -> Result<VendorRouting, EngineError> {
        self.core.ensure_writable()?;
        {
            let catalog = self.core.store().catalog();
            if !catalog.organizations.contains_key(&routing.organization_id) {
                return Err(EngineError::invalid("organization_id", "no such organization"));
            }
            for name in &routing.vendors {
                let known = catalog.payment_vendors.contains_key(name)
                    || (name == SANDBOX_VENDOR && self.core.order_context().sandbox_refund_delay.is_some());
                if !known {
                    return Err(EngineError::invalid("vendors", format!("no vendor named {name}")));
                }
            }
        }
        self.catalog()
            .write_catalog(JournalRecord::VendorRoutingSaved(routing.clone()))
            .await?;
        Ok(routing)
    }

    /// A signed callback from HTTP vendor `vendor`: a payment's, a refund's
    /// or a payout's outcome. Repeats are answered as success and change nothing.
    pub async fn vendor_callback(
        &self,
        vendor: &str,
        body: &[u8],
        signature: Option<&str>,
    ) -> Result<String, EngineError> {
        self.core.ensure_writable()?;
        let config = self
            .core
            .store()
            .catalog()
            .payment_vendors
            .get(vendor)
            .cloned()
            .ok_or(EngineError::VendorNotFound)?;
        let VendorKind::Http { secret, .. } = &config.kind else {
            return Err(EngineError::VendorNotFound);
        };
        if !signature.is_some_and(|s| crate::signing::hmac_sha256_header_matches(secret, body, s)) {
            return Err(EngineError::InvalidSignature);
        }
        let callback: Callback =
            serde_json::from_slice(body).map_err(|e| EngineError::invalid("body", format!("not a callback: {e}")))?;
        match callback {
            Callback::Payment {
                ref_code,
                status,
                vendor_rrn,
            } => {
                let order = self
                    .core
                    .store()
                    .order_by_ref(&ref_code)?
                    .filter(|o| o.vendor == vendor)
                    .ok_or(EngineError::OrderNotFound)?;
                let paid = status == "PAID";
                let result = match status.as_str() {
                    "PAID" => self.pay_order(&order, vendor_rrn).await,
                    "FAILED" => self.fail_order(&order, "the vendor reported the payment failed").await,
                    _ => return Err(EngineError::invalid("status", "must be PAID or FAILED")),
                };
                match result {
                    Ok(order) => Ok(order.status.as_str().to_string()),
                    // A repeat: the order already moved on.
                    Err(EngineError::InvalidStatus(status)) => {
                        // A payment for an order that expired or failed: the
                        // vendor holds the payer's money, which no order takes.
                        if paid && status != OrderStatus::Paid.as_str() && !order.status.was_paid() {
                            tracing::warn!(
                                vendor,
                                ref_code = %order.ref_code,
                                status = %status,
                                "vendor reported a payment for an order that can no longer be paid; the payer must be refunded by the vendor"
                            );
                        }
                        Ok(status)
                    }
                    Err(error) => Err(error),
                }
            }
            Callback::Refund { refund_id, status } => {
                let refund = self
                    .core
                    .store()
                    .refund(&refund_id)?
                    .ok_or(EngineError::RefundNotFound)?;
                let order = self.stored_order(refund.order_id)?.ok_or(EngineError::OrderNotFound)?;
                if order.vendor != vendor {
                    return Err(EngineError::RefundNotFound);
                }
                let outcome = match status.as_str() {
                    "SUCCESS" => RefundStatus::Success,
                    "FAILED" => RefundStatus::Failed,
                    _ => return Err(EngineError::invalid("status", "must be SUCCESS or FAILED")),
                };
                match self.settle_refund(&refund, outcome).await {
                    Ok(refund) => Ok(refund.status.as_str().to_string()),
                    Err(EngineError::InvalidStatus(status)) => Ok(status),
                    Err(error) => Err(error),
                }
            }
            Callback::Payout {
                payout_id,
                status,
                reference,
                failure_reason,
            } => {
                self.disbursements()
                    .payout_callback(vendor, payout_id, &status, reference, failure_reason)
                    .await
            }
        }
    }
}
