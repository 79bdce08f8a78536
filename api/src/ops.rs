//! Operations: `/healthz`, `/metrics`, per-request metrics, and the 404/405
//! answers in the envelope of the API the path belongs to.

use crate::error::{ErrorKind, LegacyError, V1Error};
use crate::AppState;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use prometheus::{Encoder, HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry, TextEncoder};
use std::time::Instant;

/// HTTP metrics, registered in their own registry.
pub struct HttpMetrics {
    registry: Registry,
    requests: IntCounterVec,
    latency: HistogramVec,
}

impl Default for HttpMetrics {
    fn default() -> Self {
        let registry = Registry::new();
        let requests = IntCounterVec::new(
            Opts::new("paygate_http_requests_total", "HTTP requests by route and status."),
            &["method", "route", "status"],
        )
        .expect("valid metric");
        let latency = HistogramVec::new(
            HistogramOpts::new("paygate_http_request_seconds", "HTTP request latency by route."),
            &["method", "route"],
        )
        .expect("valid metric");
        registry.register(Box::new(requests.clone())).expect("register once");
        registry.register(Box::new(latency.clone())).expect("register once");
        HttpMetrics {
            registry,
            requests,
            latency,
        }
    }
}

/// Middleware counting every request by matched route and status.
pub async fn track(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    // Standard methods by name, any other as OTHER: a client inventing
    // methods must not grow the metric series without end.
    let method = match *request.method() {
        Method::GET | Method::POST | Method::PUT | Method::PATCH | Method::DELETE | Method::HEAD | Method::OPTIONS => {
            request.method().as_str().to_string()
        }
        _ => "OTHER".to_string(),
    };
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".into());
    let response = next.run(request).await;
    let metrics = &state.http_metrics;
    metrics
        .requests
        .with_label_values(&[&method, &route, response.status().as_str()])
        .inc();
    metrics
        .latency
        .with_label_values(&[&method, &route])
        .observe(started.elapsed().as_secs_f64());
    response
}

/// The health answer.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct Health {
    /// Always `ok` while the process serves reads.
    status: &'static str,
    /// Whether writes are taken (`writable`) or answered 503 because the
    /// disk refuses them (`read_only`; `/metrics` says why).
    #[schema(pattern = "^(writable|read_only)$")]
    storage: &'static str,
}

/// GET /healthz: 200 while the process serves, reads at least; `storage`
/// says whether writes are taken.
#[utoipa::path(get, path = "/healthz", tag = "Operations", operation_id = "healthz",
    summary = "Health", description = "200 while the process serves reads; `storage` says whether writes are taken.",
    security(()),
    responses((status = 200, description = "Serving.", body = Health)))]
pub async fn healthz(State(state): State<AppState>) -> Json<Health> {
    let storage = if state.engine.operations().storage_writable() {
        "writable"
    } else {
        "read_only"
    };
    Json(Health { status: "ok", storage })
}

/// GET /metrics: Prometheus text.
#[utoipa::path(get, path = "/metrics", tag = "Operations", operation_id = "metrics",
    summary = "Metrics", description = "Prometheus text exposition: HTTP, engine, journal and webhook figures.", security(()),
    responses((status = 200, description = "The metrics.", content_type = "text/plain", body = String)))]
pub async fn metrics(State(state): State<AppState>) -> Response {
    let mut buffer = Vec::new();
    let _ = TextEncoder::new().encode(&state.http_metrics.registry.gather(), &mut buffer);
    let mut text = String::from_utf8(buffer).unwrap_or_default();
    text.push_str(&connection_metrics(&state));
    text.push_str(&state.engine.operations().metrics_text());
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        text,
    )
        .into_response()
}

/// The listener's and the guard's counts, in Prometheus text.
fn connection_metrics(state: &AppState) -> String {
    use std::sync::atomic::Ordering::Relaxed;
    let metrics = [
        (
            "paygate_http_connections_open",
            "gauge",
            "Connections being served.",
            state.connections.open.load(Relaxed) as u64,
        ),
        (
            "paygate_http_connections_refused_total",
            "counter",
            "Connections answered 503 at the connection cap.",
            state.connections.refused.load(Relaxed),
        ),
        (
            "paygate_http_unauthenticated_limited_total",
            "counter",
            "Requests answered 429 because their address sent too many unauthenticated requests.",
            state.address_limits.limited.load(Relaxed),
        ),
    ];
    metrics
        .iter()
        .map(|(name, kind, help, value)| format!("# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"))
        .collect()
}

fn is_legacy(uri: &axum::http::Uri) -> bool {
    uri.path().starts_with("/api/")
}

/// Unknown routes: 404 in the envelope of the API the path belongs to.
pub async fn not_found(uri: axum::http::Uri) -> Response {
    if is_legacy(&uri) {
        return LegacyError::from(ErrorKind::NotFound).into_response();
    }
    V1Error::route_not_found().into_response()
}

/// Known route, wrong method: 405 in the API's envelope.
pub async fn method_not_allowed(uri: axum::http::Uri) -> Response {
    if is_legacy(&uri) {
        return LegacyError::from(ErrorKind::MethodNotAllowed).into_response();
    }
    V1Error::new(ErrorKind::MethodNotAllowed, "method not allowed on this route").into_response()
}
