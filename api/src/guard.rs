//! Guards against clients that hold the server rather than use it:
//! - a request body must arrive within `BODY_READ_TIMEOUT` of the request's
//!   start, however slowly its bytes trickle (a per-read timeout would let a
//!   byte every few seconds hold a connection for ever);
//! - unauthenticated requests (no credentials, or answered 401) are limited
//!   per client address; past the limit the address is answered 429 with
//!   `Retry-After` (in the API's envelope) until its budget refills.
//!   `/healthz` and `/metrics` are exempt.

use crate::error::{ErrorKind, LegacyError, V1Error};
use crate::AppState;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use http_body::Body as _;
use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Longest time from a request's start to the last byte of its body.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(20);

/// Unauthenticated requests an address may make a second, and at once.
const UNAUTHENTICATED_PER_SECOND: u32 = 100;
const UNAUTHENTICATED_BURST: u32 = 1_000;

/// Addresses remembered as over the limit; past it the expired are dropped,
/// and if that is not enough, all (a flood of addresses then meets only
/// the per-address limit itself).
const BLOCKED_ADDRESSES_MAX: usize = 100_000;

/// Checks of the keyed limiter between prunings of addresses it has not
/// seen lately, so its memory follows the addresses of the last moments.
const PRUNE_EVERY: u64 = 10_000;

/// The per-address limit on unauthenticated requests.
pub struct AddressLimits {
    limiter: DefaultKeyedRateLimiter<IpAddr>,
    /// Addresses over the limit, until when.
    blocked: Mutex<HashMap<IpAddr, Instant>>,
    checks: std::sync::atomic::AtomicU64,
    /// Requests answered 429 for it, for `/metrics`.
    pub limited: std::sync::atomic::AtomicU64,
}

impl Default for AddressLimits {
    fn default() -> Self {
        let quota = Quota::per_second(NonZeroU32::new(UNAUTHENTICATED_PER_SECOND).unwrap_or(NonZeroU32::MIN))
            .allow_burst(NonZeroU32::new(UNAUTHENTICATED_BURST).unwrap_or(NonZeroU32::MIN));
        AddressLimits {
            limiter: RateLimiter::keyed(quota),
            blocked: Mutex::new(HashMap::new()),
            checks: Default::default(),
            limited: Default::default(),
        }
    }
}

impl AddressLimits {
    /// How long `address` is still refused, if it is.
    fn blocked_for(&self, address: IpAddr) -> Option<Duration> {
        let blocked = self.blocked.lock().expect("blocked addresses lock");
        let until = *blocked.get(&address)?;
        until.checked_duration_since(Instant::now())
    }

    /// Counts one unauthenticated request of `address`; past the limit the
    /// address is refused until its budget has room again.
    fn count(&self, address: IpAddr) {
        use std::sync::atomic::Ordering;
        if self.checks.fetch_add(1, Ordering::Relaxed) % PRUNE_EVERY == PRUNE_EVERY - 1 {
            self.limiter.retain_recent();
            self.limiter.shrink_to_fit();
        }
        if let Err(not_until) = self.limiter.check_key(&address) {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            let now = Instant::now();
            let mut blocked = self.blocked.lock().expect("blocked addresses lock");
            if blocked.len() >= BLOCKED_ADDRESSES_MAX {
                blocked.retain(|_, until| *until > now);
                if blocked.len() >= BLOCKED_ADDRESSES_MAX {
                    blocked.clear();
                }
            }
            blocked.insert(address, now + wait);
        }
    }
}

/// Whether a request carries something that authenticates it: an API key,
/// a bearer token, or a signed Legacy or vendor-callback body (whose check
/// answers 401 when it fails, and is counted then).
fn carries_credentials(request: &Request) -> bool {
    let path = request.uri().path();
    request.headers().contains_key("x-api-key")
        || request.headers().contains_key(header::AUTHORIZATION)
        || path.starts_with("/api/")
        || path.starts_with("/callbacks/")
}

/// The middleware: the body's deadline, and the per-address limit.
pub async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let exempt = path == "/healthz" || path == "/metrics";
    let address = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| peer.ip())
        .filter(|_| !exempt);
    if let Some(wait) = address.and_then(|a| state.address_limits.blocked_for(a)) {
        state
            .address_limits
            .limited
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        return too_many(path, wait);
    }
    let unauthenticated = !carries_credentials(&request);
    // A request with no body (most GETs) needs no deadline, and no timer.
    let request = if request.body().is_end_stream() {
        request
    } else {
        let (parts, body) = request.into_parts();
        Request::from_parts(parts, Body::new(DeadlineBody::new(body, BODY_READ_TIMEOUT)))
    };
    let response = next.run(request).await;
    if let Some(address) = address {
        if unauthenticated || response.status() == StatusCode::UNAUTHORIZED {
            state.address_limits.count(address);
        }
    }
    response
}

/// 429 in the envelope of the API `path` belongs to.
fn too_many(path: &str, wait: Duration) -> Response {
    let seconds = (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1);
    if !path.starts_with("/api/") {
        return V1Error::new(
            ErrorKind::RateLimited,
            "too many unauthenticated requests from this address",
        )
        .retry_after(seconds)
        .into_response();
    }
    let mut response = LegacyError::from(ErrorKind::RateLimited).into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    response
}

/// The error a body past its deadline ends with.
#[derive(Debug, thiserror::Error)]
#[error("request body not received within {0:?}")]
pub struct BodyDeadlineExceeded(pub Duration);

pin_project_lite::pin_project! {
    /// A request body that fails once its deadline passes, however its
    /// bytes are spread over time.
    pub struct DeadlineBody {
        #[pin]
        inner: Body,
        #[pin]
        deadline: tokio::time::Sleep,
        limit: Duration,
    }
}

impl DeadlineBody {
    fn new(inner: Body, limit: Duration) -> DeadlineBody {
        DeadlineBody {
            inner,
            deadline: tokio::time::sleep(limit),
            limit,
        }
    }
}

impl http_body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        let this = self.project();
        if let Poll::Ready(frame) = this.inner.poll_frame(cx) {
            return Poll::Ready(frame.map(|frame| frame.map_err(Into::into)));
        }
        match this.deadline.poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyDeadlineExceeded(*this.limit))))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// True when `error` (a body read's failure) is a body past its deadline.
pub fn is_body_deadline(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(error) = current {
        if error.is::<BodyDeadlineExceeded>() {
            return true;
        }
        current = error.source();
    }
    false
}
