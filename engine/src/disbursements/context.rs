//! `PayoutContext`: what a disbursement actor may reach, and nothing more:
//! stored state to read, its merchant's actor to record moves, the timers,
//! and the payout vendors of each route.

use crate::actors::MerchantHandle;
use crate::clock::SharedClock;
use crate::domain::catalog::VendorKind;
use crate::domain::{Catalog, Channel, Disbursement, MerchantRecord};
use crate::limits;
use crate::store::Store;
use crate::timers::Timers;
use crate::vendor::{HttpPayoutVendor, PayoutVendor};
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// A vendor's call may overrun its own timeout by this much before it is
/// taken as unanswered (the HTTP vendor stops itself at its timeout).
const CALL_GRACE: Duration = Duration::from_secs(1);

/// The narrow handle of disbursement actors and account inquiries.
pub struct PayoutContext {
    /// State to read.
    pub store: Arc<Store>,
    /// Merchant actors, the only writers of money.
    pub merchants: MerchantHandle,
    /// Deadlines.
    pub timers: Timers,
    /// Time.
    pub clock: SharedClock,
    /// The built-in payout vendor (the sandbox's, in sandbox mode).
    pub builtin_vendor: Option<Arc<dyn PayoutVendor>>,
    /// Shared by HTTP vendors.
    pub http_client: reqwest::Client,
    /// Multiplier of the inquiry schedule (tests shorten it).
    pub retry_scale: f64,
}

impl PayoutContext {
    /// A merchant's record.
    pub fn merchant(&self, merchant_id: Uuid) -> Option<Arc<MerchantRecord>> {
        self.store.directory().get(&merchant_id)
    }

    /// The vendors a disbursement of `organization_id` on `channel` goes
    /// to, in order: the configured route, else the built-in vendor (the
    /// sandbox's, in sandbox mode), else none.
    pub fn route(&self, organization_id: Uuid, channel: Channel) -> Vec<Arc<dyn PayoutVendor>> {
        let names = self
            .store
            .catalog()
            .payout_routes
            .get(&(organization_id, channel))
            .cloned();
        match names {
            Some(names) => names.iter().filter_map(|name| self.vendor_named(name)).collect(),
            None => self.builtin_vendor.clone().into_iter().collect(),
        }
    }

    /// A payout vendor by name: the built-in one, or an HTTP vendor
    /// configured with `payouts: true`.
    pub fn vendor_named(&self, name: &str) -> Option<Arc<dyn PayoutVendor>> {
        if let Some(builtin) = self.builtin_vendor.clone().filter(|v| v.name() == name) {
            return Some(builtin);
        }
        let config = self.store.catalog().payment_vendors.get(name).cloned()?;
        if !config.payouts {
            return None;
        }
        HttpPayoutVendor::new(&config, self.http_client.clone()).map(|v| Arc::new(v) as Arc<dyn PayoutVendor>)
    }

    /// Whether `name` may stand in a payout route: the built-in vendor, or
    /// an HTTP vendor with `payouts: true`.
    pub fn may_route_to(&self, name: &str) -> bool {
        self.is_payout_vendor(&self.store.catalog(), name)
    }

    /// Whether `route` would name any vendor, without making one: what a
    /// new disbursement's validation needs on every request.
    pub fn has_route(&self, organization_id: Uuid, channel: Channel) -> bool {
        let catalog = self.store.catalog();
        match catalog.payout_routes.get(&(organization_id, channel)) {
            Some(names) => names.iter().any(|name| self.is_payout_vendor(&catalog, name)),
            None => self.builtin_vendor.is_some(),
        }
    }

    /// `vendor_named` would find `name` (the same test, against `catalog`).
    fn is_payout_vendor(&self, catalog: &Catalog, name: &str) -> bool {
        let builtin = self.builtin_vendor.as_ref().is_some_and(|v| v.name() == name);
        builtin
            || catalog
                .payment_vendors
                .get(name)
                .is_some_and(|v| v.payouts && matches!(v.kind, VendorKind::Http { .. }))
    }

    /// `delay` times the vendor retry scale.
    pub fn scaled(&self, delay: Duration) -> Duration {
        delay.mul_f64(self.retry_scale)
    }

    /// How long until the next scheduled inquiry of an ON_PROCESS payout:
    /// 1 min, 5 min, 15 min, then hourly, counted from when it became
    /// ON_PROCESS (times the vendor retry scale).
    pub fn next_inquiry_delay(&self, disbursement: &Disbursement) -> Duration {
        let since = disbursement.on_process_at_ms.unwrap_or(disbursement.updated_at_ms);
        self.next_on_schedule(since)
    }

    /// The next point of the payout schedule after now, counted from `since_ms`.
    pub fn next_on_schedule(&self, since_ms: i64) -> Duration {
        let now_ms = self.clock.now().timestamp_millis();
        let elapsed = Duration::from_millis(now_ms.saturating_sub(since_ms).max(0) as u64);
        let hour = self.scaled(Duration::from_secs(3600));
        let fixed = limits::PAYOUT_INQUIRY_SCHEDULE.iter().map(|step| self.scaled(*step));
        let next = fixed
            .chain((1u32..).map(|hours| hour * hours))
            .find(|point| *point > elapsed)
            .expect("hourly points never end");
        next - elapsed
    }
}

/// Calls the vendor, bounded by its timeout: a call that never completes
/// is `unanswered`. An answer ready at once (the sandbox's) sets no timer.
pub async fn bounded<T>(
    vendor: &dyn PayoutVendor,
    call: impl std::future::Future<Output = T>,
    unanswered: impl FnOnce(String) -> T,
) -> T {
    let mut call = std::pin::pin!(call);
    if let Some(answer) = futures_util::FutureExt::now_or_never(call.as_mut()) {
        return answer;
    }
    match tokio::time::timeout(vendor.timeout() + CALL_GRACE, call).await {
        Ok(answer) => answer,
        Err(_) => unanswered(format!("{}: no answer within its timeout", vendor.name())),
    }
}
