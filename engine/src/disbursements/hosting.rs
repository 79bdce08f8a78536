//! What the actors of one merchant share while its host holds them: the
//! narrow handle to the engine, the recorder of their moves, the
//! merchant's payout routes (looked up once per catalog version), and the
//! back-off of a disbursement whose handling keeps panicking.

use super::context::PayoutContext;
use super::recorder::MoveRecorder;
use crate::domain::Channel;
use crate::vendor::PayoutVendor;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use uuid::Uuid;

/// The vendors of one channel's route, in order.
type Route = (Channel, Vec<Arc<dyn PayoutVendor>>);

/// What the actors of one merchant share while hosted.
pub struct Hosting {
    /// The narrow handle to the rest of the engine.
    pub ctx: Arc<PayoutContext>,
    /// Their moves, recorded together.
    pub recorder: MoveRecorder,
    /// The merchant's routes, looked up once per channel and catalog
    /// version, not once per disbursement: (catalog version, routes).
    routes: Mutex<(u64, Vec<Route>)>,
    /// Panics in a row of each disbursement whose handling panicked (a
    /// vendor's bug, say): each next try waits twice as long, up to an hour.
    panics: Mutex<HashMap<Uuid, u32>>,
}

/// Disbursements whose panics are counted at most (per merchant); past it
/// the counts start over.
const PANICKING_MAX: usize = 1024;

/// The longest wait before a disbursement whose handling panics is tried again.
const PANIC_RETRY_MAX: Duration = Duration::from_secs(3600);

/// The wait after the `panics`-th panic in a row: `base`, doubled for each
/// panic before it, at most `PANIC_RETRY_MAX` (or `base`, if longer).
pub(super) fn panic_retry_delay(base: Duration, panics: u32) -> Duration {
    let factor = 1u32 << panics.saturating_sub(1).min(16);
    base.saturating_mul(factor).min(PANIC_RETRY_MAX.max(base))
}

impl Hosting {
    /// What `merchant_id`'s actors share.
    pub fn new(ctx: Arc<PayoutContext>, merchant_id: Uuid) -> Hosting {
        Hosting {
            recorder: MoveRecorder::new(merchant_id, ctx.merchants.clone()),
            ctx,
            routes: Mutex::new((0, Vec::new())),
            panics: Mutex::new(HashMap::new()),
        }
    }

    /// Counts a panic of `id`'s handling; how many in a row it has been.
    pub fn panicked(&self, id: Uuid) -> u32 {
        let mut panics = self.panics.lock().expect("panic counts lock");
        if panics.len() >= PANICKING_MAX && !panics.contains_key(&id) {
            panics.clear();
        }
        let count = panics.entry(id).or_insert(0);
        *count += 1;
        *count
    }

    /// `id` was handled without a panic: its count, if any, ends.
    pub fn handled_cleanly(&self, id: Uuid) {
        let mut panics = self.panics.lock().expect("panic counts lock");
        if !panics.is_empty() {
            panics.remove(&id);
        }
    }

    pub(super) fn route(&self, organization_id: Uuid, channel: Channel) -> Vec<Arc<dyn PayoutVendor>> {
        let version = self.ctx.store.catalog_version();
        let mut cache = self.routes.lock().expect("route cache lock");
        let (seen, routes) = &mut *cache;
        if *seen != version {
            *seen = version;
            routes.clear();
        }
        if let Some((_, vendors)) = routes.iter().find(|(c, _)| *c == channel) {
            return vendors.clone();
        }
        let vendors = self.ctx.route(organization_id, channel);
        routes.push((channel, vendors.clone()));
        vendors
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disbursement_that_keeps_panicking_waits_twice_as_long_each_time_up_to_an_hour() {
        let base = Duration::from_secs(10);
        let waits: Vec<u64> = (1..=12).map(|n| panic_retry_delay(base, n).as_secs()).collect();
        assert_eq!(waits, [10, 20, 40, 80, 160, 320, 640, 1280, 2560, 3600, 3600, 3600]);
        assert_eq!(panic_retry_delay(base, u32::MAX), Duration::from_secs(3600));
        // Tests scale the base down; the cap holds the same.
        assert_eq!(
            panic_retry_delay(Duration::from_millis(100), 2),
            Duration::from_millis(200)
        );
    }
}
