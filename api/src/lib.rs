//! paygate's HTTP layer: thin axum routers for V1, Legacy, admin and operations over
//! one engine. Handlers extract, validate, call the engine and map the reply.
//!
//! - `v1`: merchant API (`/v1/`). `legacy`: the Legacy API (`/api/`).
//!   `admin`: operator API (`/admin/v1/`).
//! - `extract`: JSON body, API key and admin token extractors. `commands`:
//!   bodies' account fields read into the engine's typed accounts.
//! - `error`: the V1 envelope and the engine-error mapping table.
//! - `wire`: JSON views and success envelopes. `ratelimit`: per-key limits.
//! - `callbacks`: signed payment-vendor callbacks. `webhooks`: the dispatcher.
//! - `cluster`: a cluster node's front door, serving or forwarding each
//!   request by its merchant's shard.
//! - `ops`: healthz, metrics, 404/405. `openapi`: the API document and `/docs`.
//! - `pages`: the checkout page and the merchant dashboard (HTML, maud).

pub mod admin;
pub mod callbacks;
pub mod cluster;
pub mod commands;
pub mod error;
pub mod extract;
pub mod guard;
pub mod legacy;
pub mod openapi;
pub mod ops;
pub mod pages;
pub mod ratelimit;
pub mod serve;
pub mod v1;
pub mod webhooks;
pub mod wire;

use axum::extract::DefaultBodyLimit;
use axum::{Extension, Router};
use paygate_engine::Engine;
use std::sync::Arc;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// Request bodies above this are refused with 413 (`PAYLOAD_TOO_LARGE`;
/// Legacy: "Request body too large"), unless the route sets its own limit
/// (`extract::BodyBytesMax`).
pub const BODY_BYTES_MAX: usize = 64 * 1024;

/// Whether sandbox-only routes and behaviours are on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Test money; sandbox endpoints on.
    Sandbox,
    /// Real money; sandbox endpoints answer 404.
    Live,
}

/// Settings the HTTP layer needs.
#[derive(Clone, Debug)]
pub struct ApiConfig {
    /// Sandbox or live.
    pub mode: Mode,
    /// Base of absolute URLs handed to clients (`qr_url`).
    pub public_url: String,
    /// Bearer token of the admin API.
    pub admin_token: String,
    /// Base URL of e-wallet logos.
    pub cdn_url: String,
    /// Multiplier of the webhook retry schedule.
    pub webhook_retry_scale: f64,
    /// Delay before the sandbox vendor completes a disbursement.
    pub sandbox_disbursement_delay_ms: u64,
}

/// Shared state of every handler. One `Arc`: axum and the middleware clone
/// the state several times a request, and each clone of separate parts was
/// a refcount each.
#[derive(Clone)]
pub struct AppState(Arc<SharedState>);

/// What `AppState` shares.
pub struct SharedState {
    /// The engine.
    pub engine: Engine,
    /// Settings.
    pub config: Arc<ApiConfig>,
    /// Per-key rate limiters.
    pub rate_limits: Arc<ratelimit::RateLimits>,
    /// The cached e-wallet list.
    pub ewallet_cache: Arc<v1::EwalletCache>,
    /// HTTP metrics.
    pub http_metrics: Arc<ops::HttpMetrics>,
    /// The client webhook deliveries go out on.
    pub webhook_client: reqwest::Client,
    /// The webhook endpoints' URLs, parsed once.
    pub webhook_endpoints: webhooks::delivery::ParsedEndpoints,
    /// The per-address limit on unauthenticated requests.
    pub address_limits: guard::AddressLimits,
    /// Connections being served and refused (`serve`).
    pub connections: Arc<serve::ConnectionStats>,
    /// Dashboard sessions and sign-in failures.
    pub sessions: pages::dashboard::session::Sessions,
}

impl std::ops::Deref for AppState {
    type Target = SharedState;

    fn deref(&self) -> &SharedState {
        &self.0
    }
}

impl AppState {
    /// State for `engine` with `config`.
    pub fn new(engine: Engine, config: ApiConfig) -> AppState {
        let webhook_client = webhooks::client(engine.operations().allows_private_notify_urls());
        AppState(Arc::new(SharedState {
            engine,
            config: Arc::new(config),
            rate_limits: Arc::default(),
            ewallet_cache: Arc::default(),
            http_metrics: Arc::default(),
            webhook_client,
            webhook_endpoints: Default::default(),
            address_limits: Default::default(),
            connections: Arc::default(),
            sessions: Default::default(),
        }))
    }
}

/// Every route and the document they make (`openapi`): a route is added only
/// through its `#[utoipa::path]`, so none is served undocumented.
pub fn routes_and_document() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    let (routes, document) = OpenApiRouter::new()
        .merge(v1::routes())
        .merge(admin::routes())
        .merge(legacy::routes())
        .merge(pages::routes())
        .routes(routes!(callbacks::vendor_callback))
        .routes(routes!(ops::healthz))
        .routes(routes!(ops::metrics))
        .routes(routes!(openapi::openapi_json))
        .routes(routes!(openapi::docs))
        .split_for_parts();
    (routes, openapi::finish(document))
}

/// The API document as served at `/openapi.json`.
pub fn document_json() -> serde_json::Value {
    openapi::document_value(&routes_and_document().1)
}

/// The whole service: V1, Legacy, admin and operations routes with request ids,
/// metrics and the body limit.
pub fn router(state: AppState) -> Router {
    // Built once a process: a cluster node makes a router per shard, and
    // the routes and their document are the same for all.
    static ROUTES: std::sync::OnceLock<(Router<AppState>, Arc<openapi::Served>)> = std::sync::OnceLock::new();
    let (routes, served) = ROUTES.get_or_init(|| {
        let (routes, document) = routes_and_document();
        (routes, Arc::new(openapi::Served::new(&document)))
    });
    routes
        .clone()
        .layer(Extension(served.clone()))
        .fallback(ops::not_found)
        .method_not_allowed_fallback(ops::method_not_allowed)
        .layer(DefaultBodyLimit::max(BODY_BYTES_MAX))
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard::guard))
        .layer(axum::middleware::from_fn_with_state(state.clone(), ops::track))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        .with_state(state)
}
