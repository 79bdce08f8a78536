//! Per-API-key rate limits (GCRA via governor) with each merchant's own
//! `limits.rate_limit_per_second` and `limits.rate_limit_burst`.

use crate::error::{ErrorKind, V1Error};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use paygate_engine::domain::MerchantRecord;
use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};

/// The limiter of a merchant's current API key and what it was built from.
struct KeyLimiter {
    api_key_sha256: [u8; 32],
    per_second: i64,
    burst: i64,
    limiter: Arc<DefaultDirectRateLimiter>,
}

/// One limiter per API key, rebuilt when the merchant's limits change or its
/// key is rotated. Kept per merchant (one live key each), so rotated keys
/// leave nothing behind.
#[derive(Default)]
pub struct RateLimits {
    limiters: Mutex<HashMap<uuid::Uuid, KeyLimiter>>,
}

fn non_zero(value: i64) -> NonZeroU32 {
    NonZeroU32::new(value.clamp(1, u32::MAX as i64) as u32).unwrap_or(NonZeroU32::MIN)
}

impl RateLimits {
    /// Counts one request against the merchant's current API key; 429
    /// `RATE_LIMITED` with `Retry-After` when over the limit.
    pub fn check(&self, merchant: &MerchantRecord) -> Result<(), V1Error> {
        let per_second = merchant.limits.rate_limit_per_second;
        let burst = merchant.limits.rate_limit_burst;
        let limiter = {
            let mut limiters = self.limiters.lock().expect("rate limit lock");
            let key = merchant.credentials.api_key_sha256;
            let stale = limiters
                .get(&merchant.id)
                .is_none_or(|l| l.api_key_sha256 != key || l.per_second != per_second || l.burst != burst);
            if stale {
                let limiter = new_limiter(per_second, burst);
                limiters.insert(
                    merchant.id,
                    KeyLimiter {
                        api_key_sha256: key,
                        per_second,
                        burst,
                        limiter,
                    },
                );
            }
            limiters[&merchant.id].limiter.clone()
        };
        limiter.check().map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            V1Error::new(ErrorKind::RateLimited, "rate limit exceeded").retry_after(seconds.max(1))
        })
    }
}

fn new_limiter(per_second: i64, burst: i64) -> Arc<DefaultDirectRateLimiter> {
    Arc::new(RateLimiter::direct(
        Quota::per_second(non_zero(per_second)).allow_burst(non_zero(burst)),
    ))
}
