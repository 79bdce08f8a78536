//! A cluster node's front door. Every request is answered by the node that
//! owns the shard of the merchant it names: served here, by that shard's
//! own router, when this node owns it; forwarded to the owner, signed with
//! the cluster secret, when another node does; 503 `UNAVAILABLE` with
//! `Retry-After: 1` while nobody does (a takeover under way).
//!
//! A request names its shard through what it carries: a V1 API key, a
//! Legacy `clientId`, a merchant, order or disbursement id in the path, an
//! order's reference code, a vendor callback's payout, refund or order
//! (credentials, those ids and reference codes are made to fall in their
//! merchant's shard).
//! A request that names none (a missing key, the API document) is answered
//! by any shard's router, which answers it as every shard would (a platform
//! catalog change among them: the shard publishes it to every shard through
//! the cluster's catalog). What spans every shard (the ledger check,
//! settlement runs) is asked of every shard and the answers joined
//! (`fanout`).
//!
//! - `forward`: the signed hop between nodes.
//! - `fanout`: the requests every shard answers, and their joined answer.
//! - `users`: dashboard users, found by email through the cluster's catalog.

mod fanout;
mod forward;
mod users;

pub use forward::FORWARDED_HEADER;

use crate::error::{ErrorKind, LegacyError, V1Error};
use crate::BODY_BYTES_MAX;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use paygate_engine::cluster::{shard_of, shard_of_credential, SHARDS};
use std::sync::Arc;
use std::time::Duration;
use tower::ServiceExt;
use uuid::Uuid;

/// How long a request body may take to arrive when the front must read it
/// whole (to find a Legacy `clientId`, or to forward it).
const BODY_DEADLINE: Duration = Duration::from_secs(10);

/// A lookup in the cluster's catalog; an error is the database's, said.
pub type CatalogLookup<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, String>> + Send + 'a>>;

/// What the front needs to know of its node: the routers of the shards it
/// serves and the owners of the others.
pub trait ShardDirectory: Send + Sync + 'static {
    /// This node's id.
    fn node_id(&self) -> &str;
    /// The router of `shard`, while this node serves it.
    fn local(&self, shard: u16) -> Option<Router>;
    /// The base URL of the other node that owns `shard`, by the latest
    /// lease read, while its lease runs.
    fn owner_url(&self, shard: u16) -> Option<String>;
    /// The shards this node serves now.
    fn shards(&self) -> Vec<u16>;
    /// Whether this node's shards take writes now.
    fn writable(&self) -> bool;
    /// The node's own metrics (leases, the database), in Prometheus text.
    fn node_metrics(&self) -> String;
    /// The merchant whose dashboard user has `email` (normalized).
    fn user_merchant<'a>(&'a self, email: &'a str) -> CatalogLookup<'a, Option<Uuid>>;
    /// Claims `email` for a user of `merchant`: `None` when claimed now,
    /// else the merchant holding it.
    fn claim_user<'a>(&'a self, email: &'a str, merchant: Uuid) -> CatalogLookup<'a, Option<Uuid>>;
    /// Gives a claimed email back.
    fn release_user<'a>(&'a self, email: &'a str) -> CatalogLookup<'a, ()>;
}

/// The front door's state.
pub struct ClusterFront {
    directory: Arc<dyn ShardDirectory>,
    secret: forward::ClusterSecret,
    client: reqwest::Client,
    /// The operator's token, the same on every node: only an operator's
    /// request may claim a user's email in the catalog.
    admin_token: String,
}

impl ClusterFront {
    /// A front over `directory`, signing and checking forwarded requests
    /// with `secret`.
    pub fn new(directory: Arc<dyn ShardDirectory>, secret: &str, admin_token: &str) -> ClusterFront {
        ClusterFront {
            directory,
            secret: forward::ClusterSecret::new(secret),
            client: forward::client(),
            admin_token: admin_token.to_string(),
        }
    }
}

/// The node's whole service: every path goes through `front_door`.
pub fn cluster_router(front: ClusterFront) -> Router {
    Router::new().fallback(front_door).with_state(Arc::new(front))
}

/// Where a request goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// The owner of this shard.
    Shard(u16),
    /// Any shard's router: the request names no merchant.
    Anywhere,
    /// A new merchant: any shard that has an owner, picked at random so
    /// merchants spread over the shards.
    NewMerchant,
    /// Every shard, answers joined.
    EveryShard(fanout::Join),
    /// This node itself (`/healthz`, `/metrics`).
    Node,
    /// A vendor callback: the shard of what its body names.
    Callback,
    /// A new dashboard user of this merchant (`users`).
    NewUser(Uuid),
    /// A dashboard sign-in (`users`).
    SignIn,
}

async fn front_door(State(front): State<Arc<ClusterFront>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    if parts.headers.contains_key(FORWARDED_HEADER) {
        return receive_forwarded(&front, parts, body).await;
    }
    let mut target = target_of(&parts);
    match target {
        Target::NewUser(merchant) => return users::create_user(&front, merchant, parts, body).await,
        Target::SignIn => return users::sign_in(&front, parts, body).await,
        // Only an operator's request is worth asking every shard: any other
        // is refused by one shard as by all.
        Target::EveryShard(_) if !crate::extract::admin_token_matches(&parts.headers, &front.admin_token) => {
            target = Target::Anywhere;
        }
        _ => {}
    }
    // A Legacy request names its merchant in its body, a vendor callback
    // its payout, refund or order, a settlement run perhaps its merchant;
    // any other body is read only if it must travel.
    let named_in_body =
        is_legacy(&parts) || matches!(target, Target::Callback | Target::EveryShard(fanout::Join::Settlements));
    let body = if named_in_body {
        let bytes = match read_body(body).await {
            Ok(bytes) => bytes,
            Err(response) => return *response,
        };
        target = match target {
            Target::Callback => callback_target(&bytes),
            // A run for one merchant is its shard's alone.
            Target::EveryShard(_) => settlement_merchant_shard(&bytes).map_or(target, Target::Shard),
            _ => legacy_target(&bytes),
        };
        PendingBody::Read(bytes)
    } else {
        PendingBody::Unread(body)
    };
    match target {
        Target::Node => node_answer(&front, &parts).await,
        Target::EveryShard(join) => {
            let body = match body_bytes(body).await {
                Ok(bytes) => bytes,
                Err(response) => return *response,
            };
            fanout::every_shard(&front, join, parts, body).await
        }
        Target::Shard(shard) => to_shard(&front, shard, parts, body).await,
        Target::NewMerchant => match pick_owned_shard(&front) {
            Some(shard) => to_shard(&front, shard, parts, body).await,
            None => unavailable(&parts),
        },
        Target::Anywhere => to_anywhere(&front, parts, body).await,
        Target::Callback | Target::NewUser(_) | Target::SignIn => unreachable!("resolved or answered above"),
    }
}

/// Any shard's router answers: one here, else one elsewhere.
async fn to_anywhere(front: &ClusterFront, parts: Parts, body: PendingBody) -> Response {
    match front.directory.shards().first() {
        Some(&shard) => to_shard(front, shard, parts, body).await,
        None => match (0..SHARDS).find(|&shard| front.directory.owner_url(shard).is_some()) {
            Some(shard) => to_shard(front, shard, parts, body).await,
            None => unavailable(&parts),
        },
    }
}

/// A request body the front has not read yet, or has.
enum PendingBody {
    Unread(Body),
    Read(Bytes),
}

async fn body_bytes(body: PendingBody) -> Result<Bytes, Box<Response>> {
    match body {
        PendingBody::Read(bytes) => Ok(bytes),
        PendingBody::Unread(body) => read_body(body).await,
    }
}

/// Reads a body whole, within `BODY_DEADLINE`. One past the limit is kept
/// as such, so the shard's router answers 413 in its API's envelope.
async fn read_body(body: Body) -> Result<Bytes, Box<Response>> {
    let read = tokio::time::timeout(BODY_DEADLINE, axum::body::to_bytes(body, BODY_BYTES_MAX + 1));
    match read.await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(_)) => Ok(Bytes::from(vec![b' '; BODY_BYTES_MAX + 1])),
        Err(_) => Err(Box::new(
            V1Error::new(ErrorKind::RequestTimeout, "the request body took too long").into_response(),
        )),
    }
}

/// Where a request goes, by its path and headers.
fn target_of(parts: &Parts) -> Target {
    let path = parts.uri.path();
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let shard_of_id = |id: &str| Uuid::parse_str(id).map_or(Target::Anywhere, |id| Target::Shard(shard_of(id)));
    match segments.as_slice() {
        ["healthz"] | ["metrics"] if parts.method == Method::GET => Target::Node,
        // The QR image is fetched by its order's reference code alone.
        ["v1", "orders", ref_code, "qr.png"] if api_key(parts).is_none() => {
            Target::Shard(shard_of_credential(ref_code))
        }
        ["v1", ..] => api_key(parts).map_or(Target::Anywhere, |key| Target::Shard(shard_of_credential(&key))),
        ["admin", "v1", "merchants"] if parts.method == Method::POST => Target::NewMerchant,
        ["admin", "v1", "merchants", id, "users"] if parts.method == Method::POST => {
            Uuid::parse_str(id).map_or(Target::Anywhere, Target::NewUser)
        }
        ["admin", "v1", "merchants", id, ..] | ["admin", "v1", "disbursements", id, ..] => shard_of_id(id),
        ["dashboard", "sign-in"] if parts.method == Method::POST => Target::SignIn,
        // A signed-in session's token routes to its merchant's shard.
        ["dashboard", ..] => {
            crate::pages::dashboard::cookie(&parts.headers, crate::pages::dashboard::session::SESSION_COOKIE)
                .filter(|token| !token.is_empty())
                .map_or(Target::Anywhere, |token| Target::Shard(shard_of_credential(token)))
        }
        ["checkout", id, ..] => shard_of_id(id),
        ["callbacks", _] => Target::Callback,
        ["admin", "v1", "ledger", "verify"] if parts.method == Method::GET => Target::EveryShard(fanout::Join::Ledger),
        ["admin", "v1", "settlements", "run"] if parts.method == Method::POST => {
            Target::EveryShard(fanout::Join::Settlements)
        }
        _ => Target::Anywhere,
    }
}

/// The V1 API key, as the V1 extractor reads it: the header, else the
/// `api_key` query parameter.
fn api_key(parts: &Parts) -> Option<String> {
    let key = match parts.headers.get("x-api-key") {
        Some(value) => value.to_str().ok()?.to_string(),
        None => axum::extract::Query::<std::collections::HashMap<String, String>>::try_from_uri(&parts.uri)
            .ok()?
            .0
            .remove("api_key")?,
    };
    (!key.is_empty()).then_some(key)
}

/// A Legacy request's shard, by its `clientId`.
fn legacy_target(body: &Bytes) -> Target {
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(serde_json::Value::Object(fields)) => match fields.get("clientId") {
            Some(serde_json::Value::String(client_id)) if !client_id.is_empty() => {
                Target::Shard(shard_of_credential(client_id))
            }
            _ => Target::Anywhere,
        },
        _ => Target::Anywhere,
    }
}

/// A vendor callback's shard: that of the payout, refund or order (by its
/// reference code) it reports on.
fn callback_target(body: &Bytes) -> Target {
    let Ok(serde_json::Value::Object(fields)) = serde_json::from_slice::<serde_json::Value>(body) else {
        return Target::Anywhere;
    };
    let id = |name: &str| {
        let id = Uuid::parse_str(fields.get(name)?.as_str()?).ok()?;
        Some(shard_of(id))
    };
    let shard = id("payout_id")
        .or_else(|| id("refund_id"))
        .or_else(|| Some(shard_of_credential(fields.get("ref_code")?.as_str()?)));
    shard.map_or(Target::Anywhere, Target::Shard)
}

/// The shard of a settlement run's `merchant_id`, when it names one.
fn settlement_merchant_shard(body: &Bytes) -> Option<u16> {
    let fields: serde_json::Value = serde_json::from_slice(body).ok()?;
    let id = Uuid::parse_str(fields.get("merchant_id")?.as_str()?).ok()?;
    Some(shard_of(id))
}

/// A random shard that has an owner, here or elsewhere.
fn pick_owned_shard(front: &ClusterFront) -> Option<u16> {
    use rand::seq::SliceRandom;
    let local = front.directory.shards();
    let owned: Vec<u16> = (0..SHARDS)
        .filter(|shard| local.contains(shard) || front.directory.owner_url(*shard).is_some())
        .collect();
    owned.choose(&mut rand::thread_rng()).copied()
}

/// Serves the request from `shard`'s router here, or forwards it to its owner.
async fn to_shard(front: &ClusterFront, shard: u16, parts: Parts, body: PendingBody) -> Response {
    if let Some(router) = front.directory.local(shard) {
        let body = match body {
            PendingBody::Unread(body) => body,
            PendingBody::Read(bytes) => Body::from(bytes),
        };
        return serve_locally(router, Request::from_parts(parts, body)).await;
    }
    let Some(owner) = front.directory.owner_url(shard) else {
        return unavailable(&parts);
    };
    let body = match body_bytes(body).await {
        Ok(bytes) => bytes,
        Err(response) => return *response,
    };
    match forward::send(front, &owner, shard, &parts, body).await {
        Ok(response) => response,
        Err(error) => {
            // An owner that died fails every request until its lease runs
            // out: said once a second, not once a request.
            if forward::FAILURES_LOGGED.check() {
                tracing::warn!(%error, shard, owner, "forwarding to the shard's owner failed");
            }
            unavailable(&parts)
        }
    }
}

async fn serve_locally(router: Router, request: Request) -> Response {
    match router.oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// A request another node forwarded: served from the shard it names if its
/// signature holds and this node serves that shard; never forwarded again.
async fn receive_forwarded(front: &ClusterFront, mut parts: Parts, body: Body) -> Response {
    let body = match read_body(body).await {
        Ok(bytes) => bytes,
        Err(response) => return *response,
    };
    let hop = match front.secret.verify(&parts, &body) {
        Ok(hop) => hop,
        Err(reason) => {
            tracing::warn!(reason, "refused a forwarded request");
            return if is_legacy(&parts) {
                LegacyError::from(ErrorKind::InvalidSignature).into_response()
            } else {
                V1Error::new(
                    ErrorKind::InvalidSignature,
                    "the cluster forwarding signature is not valid",
                )
                .into_response()
            };
        }
    };
    parts.headers.remove(FORWARDED_HEADER);
    if let Some(client) = hop.client {
        parts
            .extensions
            .insert(axum::extract::ConnectInfo(std::net::SocketAddr::new(client, 0)));
    }
    match front.directory.local(hop.shard) {
        Some(router) => serve_locally(router, Request::from_parts(parts, Body::from(body))).await,
        None => unavailable(&parts),
    }
}

fn is_legacy(parts: &Parts) -> bool {
    parts.uri.path().starts_with("/api/")
}

/// 503 `UNAVAILABLE`, `Retry-After: 1`, in the envelope of the request's API.
fn unavailable(parts: &Parts) -> Response {
    let mut response = if is_legacy(parts) {
        LegacyError::from(ErrorKind::Unavailable).into_response()
    } else {
        V1Error::new(
            ErrorKind::Unavailable,
            "the merchant's shard is changing owner; retry shortly",
        )
        .into_response()
    };
    response
        .headers_mut()
        .insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from(1u64));
    response
}

/// The node's health.
#[derive(serde::Serialize)]
struct NodeHealth {
    status: &'static str,
    storage: &'static str,
    node: String,
    shards: Vec<u16>,
}

/// `/healthz` and `/metrics` of the node: its own, with its shards'.
async fn node_answer(front: &ClusterFront, parts: &Parts) -> Response {
    let directory = &front.directory;
    match parts.uri.path() {
        "/healthz" => Json(NodeHealth {
            status: "ok",
            storage: if directory.writable() { "writable" } else { "read_only" },
            node: directory.node_id().to_string(),
            shards: directory.shards(),
        })
        .into_response(),
        _ => fanout::node_metrics(front, parts).await,
    }
}
