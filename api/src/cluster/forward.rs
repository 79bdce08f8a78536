//! The hop between nodes: a request forwarded to its shard's owner carries
//! `X-Paygate-Forwarded`, an HMAC-SHA256 under the cluster secret over the
//! shard, the sending node, the client's address, the time, the method,
//! the path and query, and the body's SHA-256. The owner serves a request
//! whose signature holds from the shard it names, as if the client had come
//! to it, and never forwards it again; a forged or stale one is refused.

use super::ClusterFront;
use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderName};
use axum::response::Response;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The header a forwarded request carries.
pub const FORWARDED_HEADER: &str = "x-paygate-forwarded";

/// How far a forwarded request's time may be from the receiver's clock.
const CLOCK_SKEW_MAX_SECONDS: u64 = 60;

/// How long a forwarded request may take at the owner.
const FORWARD_TIMEOUT: Duration = Duration::from_secs(30);

/// Headers that belong to one connection, not to the request or answer.
const HOP_BY_HOP: [HeaderName; 5] = [
    header::CONNECTION,
    header::HOST,
    header::CONTENT_LENGTH,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

/// The client forwarded requests go out on: kept-alive connections to
/// each owner, no redirects followed (an answer travels back as it is).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .pool_idle_timeout(Duration::from_secs(60))
        .timeout(FORWARD_TIMEOUT)
        .build()
        .expect("the forwarding client builds")
}

/// At most one log line a second about forwards that failed.
pub static FAILURES_LOGGED: LogLimit = LogLimit(std::sync::atomic::AtomicU64::new(0));

/// Lets a log line through at most once a second.
pub struct LogLimit(std::sync::atomic::AtomicU64);

impl LogLimit {
    /// Whether a line may be logged now.
    pub fn check(&self) -> bool {
        use std::sync::atomic::Ordering;
        let now = now_seconds();
        let last = self.0.load(Ordering::Relaxed);
        last != now
            && self
                .0
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }
}

/// What a forwarded request's signature vouches for.
pub struct Hop {
    /// The shard the sender found the owner of.
    pub shard: u16,
    /// The address the client came from, for the owner's per-address limits.
    pub client: Option<IpAddr>,
}

/// The secret the nodes share.
pub struct ClusterSecret(Vec<u8>);

impl ClusterSecret {
    pub fn new(secret: &str) -> ClusterSecret {
        ClusterSecret(secret.as_bytes().to_vec())
    }

    fn mac(&self, fields: &HopFields, parts: &Parts, body: &[u8]) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key length");
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        let signed = format!(
            "v1\n{}\n{}\n{}\n{}\n{}\n{}\n{}",
            fields.shard,
            fields.node,
            fields.client,
            fields.time,
            parts.method,
            path,
            hex::encode(Sha256::digest(body))
        );
        mac.update(signed.as_bytes());
        mac
    }

    /// The header value for forwarding `parts` and `body` to `shard`.
    fn sign(&self, node: &str, shard: u16, parts: &Parts, body: &[u8]) -> String {
        let client = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map_or(String::from("-"), |ConnectInfo(peer)| peer.ip().to_string());
        let fields = HopFields {
            shard,
            node: node.to_string(),
            client,
            time: now_seconds(),
        };
        let signature = hex::encode(self.mac(&fields, parts, body).finalize().into_bytes());
        format!(
            "v1;shard={};node={};client={};t={};sig={signature}",
            fields.shard, fields.node, fields.client, fields.time
        )
    }

    /// The hop a forwarded request's header vouches for, or why it vouches
    /// for nothing.
    pub fn verify(&self, parts: &Parts, body: &[u8]) -> Result<Hop, &'static str> {
        let value = parts
            .headers
            .get(super::FORWARDED_HEADER)
            .and_then(|v| v.to_str().ok())
            .ok_or("unreadable header")?;
        let (fields, signature) = HopFields::parse(value).ok_or("malformed header")?;
        if now_seconds().abs_diff(fields.time) > CLOCK_SKEW_MAX_SECONDS {
            return Err("stale or future time");
        }
        let signature = hex::decode(signature).map_err(|_| "malformed signature")?;
        self.mac(&fields, parts, body)
            .verify_slice(&signature)
            .map_err(|_| "signature mismatch")?;
        Ok(Hop {
            shard: fields.shard,
            client: fields.client.parse().ok(),
        })
    }
}

/// The signed fields of the header, besides the request itself.
struct HopFields {
    shard: u16,
    node: String,
    client: String,
    time: u64,
}

impl HopFields {
    fn parse(value: &str) -> Option<(HopFields, &str)> {
        let mut parts = value.split(';');
        if parts.next()? != "v1" {
            return None;
        }
        let mut field = |name: &str| {
            let (key, value) = parts.next()?.split_once('=')?;
            (key == name).then_some(value)
        };
        let shard = field("shard")?.parse().ok()?;
        let node = field("node")?.to_string();
        let client = field("client")?.to_string();
        let time = field("t")?.parse().ok()?;
        let signature = field("sig")?;
        (shard < paygate_engine::cluster::SHARDS).then_some((
            HopFields {
                shard,
                node,
                client,
                time,
            },
            signature,
        ))
    }
}

fn now_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// Forwards the request to `owner` (a node's base URL) for `shard` and
/// returns the owner's answer as it is.
pub async fn send(
    front: &ClusterFront,
    owner: &str,
    shard: u16,
    parts: &Parts,
    body: Bytes,
) -> Result<Response, reqwest::Error> {
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let signature = front.secret.sign(front.directory.node_id(), shard, parts, &body);
    let mut headers = without_hop_by_hop(&parts.headers);
    headers.insert(
        super::FORWARDED_HEADER,
        signature.parse().expect("the signature header is ASCII"),
    );
    let answer = front
        .client
        .request(parts.method.clone(), format!("{}{path}", owner.trim_end_matches('/')))
        .headers(headers)
        .body(body)
        .send()
        .await?;
    let status = answer.status();
    let headers = without_hop_by_hop(answer.headers());
    let body = answer.bytes().await?;
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    Ok(response)
}

fn without_hop_by_hop(headers: &HeaderMap) -> HeaderMap {
    let mut kept = headers.clone();
    for name in &HOP_BY_HOP {
        kept.remove(name);
    }
    kept.remove(super::FORWARDED_HEADER);
    kept
}
