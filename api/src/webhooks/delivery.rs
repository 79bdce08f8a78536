//! One webhook delivery: renders an event's V1 or Legacy
//! body, signs it (Standard Webhooks and `X-Signature`), POSTs it with a
//! 10 s timeout over a pooled keep-alive client, and records the attempt
//! with its next retry.

use crate::legacy::wib;
use crate::wire::{disbursement_view, order_view, refund_view, timestamp};
use crate::AppState;
use base64::Engine as _;
use hmac::Mac;
use paygate_engine::domain::{EventResource, Source, WebhookAttempt, WebhookEvent};
use paygate_engine::signing::{hmac_sha256_header, sha512_hex};
use paygate_engine::webhooks::AttemptOutcome;
use paygate_engine::EngineError;
use serde::Serialize;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use utoipa::ToSchema;

/// How long one attempt may take.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// The HTTP client of deliveries: no redirects (a webhook is delivered to
/// the URL given, nowhere else). Unless private addresses are allowed
/// (sandbox), names are resolved by `PublicOnly`, so the connection goes to
/// an address that was checked.
pub fn client(allow_private: bool) -> reqwest::Client {
    let builder = reqwest::Client::builder()
        .timeout(ATTEMPT_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none());
    let builder = if allow_private {
        builder
    } else {
        builder.dns_resolver(Arc::new(PublicOnly))
    };
    builder.build().expect("HTTP client builds")
}

/// Endpoint URLs kept parsed, at most this many: a merchant has a few.
const ENDPOINTS_PARSED_MAX: usize = 4096;

/// The endpoints' URLs, each parsed once: deliveries go to the same few
/// URLs again and again, and parsing one costs more than signing the body.
#[derive(Default)]
pub struct ParsedEndpoints(Mutex<HashMap<String, reqwest::Url>>);

impl ParsedEndpoints {
    /// `url` parsed, or `None` when it does not parse (reqwest then says
    /// why, as it does for any request).
    fn get(&self, url: &str) -> Option<reqwest::Url> {
        let mut parsed = self.0.lock().expect("endpoint URL lock");
        if let Some(known) = parsed.get(url) {
            return Some(known.clone());
        }
        let new = reqwest::Url::parse(url).ok()?;
        if parsed.len() >= ENDPOINTS_PARSED_MAX {
            parsed.clear();
        }
        parsed.insert(url.to_string(), new.clone());
        Some(new)
    }
}

/// A resolver that refuses names with any loopback, private or link-local
/// address. Checking a name apart from the connection is not enough: a
/// name can resolve public for the check and private for the connection
/// (DNS rebinding).
struct PublicOnly;

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addresses: Vec<std::net::SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if addresses.is_empty() {
                return Err(format!("{host} has no address").into());
            }
            if addresses
                .iter()
                .any(|address| paygate_engine::notify_url::is_private(address.ip()))
            {
                return Err(format!("refused: {host} resolves to a private address").into());
            }
            Ok(Box::new(addresses.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// Sends `event` once and records the attempt (`manual`: a merchant's resend).
pub async fn deliver(
    state: &AppState,
    client: &reqwest::Client,
    event: WebhookEvent,
    manual: bool,
) -> Result<WebhookAttempt, EngineError> {
    let url = event
        .url
        .clone()
        .ok_or(EngineError::invalid("event", "has no notify URL"))?;
    let merchant = state
        .engine
        .merchants()
        .merchant(event.merchant_id)
        .ok_or(EngineError::MerchantNotFound)?;
    let body = render(
        state,
        &event,
        &merchant.credentials.client_id,
        &merchant.credentials.client_secret,
    );
    let attempted_at_ms = state.engine.operations().clock().now().timestamp_millis();
    let started = Instant::now();
    let secret = &merchant.credentials.webhook_secret;
    let result = post_signed(state, client, &url, &event.id.to_string(), secret, body).await;
    let latency_ms = started.elapsed().as_millis() as u64;
    let (status_code, error) = match result {
        Ok(code) if (200..300).contains(&code) => (Some(code), None),
        Ok(code) => (Some(code), Some(format!("endpoint answered HTTP {code}"))),
        Err(reason) => (None, Some(reason)),
    };
    let outcome = AttemptOutcome {
        url,
        status_code,
        latency_ms,
        error,
        attempted_at_ms,
        manual,
    };
    state
        .engine
        .webhooks()
        .record_webhook_attempt(&event, outcome, state.config.webhook_retry_scale)
        .await
}

/// POSTs `body` to `url` signed as every delivery is (Standard Webhooks
/// headers and `X-Signature`); the endpoint's HTTP status, or why there is none.
async fn post_signed(
    state: &AppState,
    client: &reqwest::Client,
    url: &str,
    id: &str,
    secret: &str,
    body: Vec<u8>,
) -> Result<u16, String> {
    let parsed = state.webhook_endpoints.get(url);
    if let Some(reason) = parsed.as_ref().and_then(|parsed| refuse_private(state, parsed)) {
        return Err(reason);
    }
    let timestamp = state.engine.operations().clock().now().timestamp();
    let request = match parsed {
        Some(parsed) => signed_post(client, parsed, id, secret, timestamp, body),
        None => signed_post(client, url, id, secret, timestamp, body),
    };
    request
        .send()
        .await
        .map(|response| response.status().as_u16())
        .map_err(|error| {
            if error.is_timeout() {
                "timed out after 10 s".to_string()
            } else {
                format!("request failed: {}", with_causes(&error))
            }
        })
}

/// A webhook POST of `body` as every delivery is made: JSON, with the
/// Standard Webhooks headers (event `id`, `timestamp` in Unix seconds) and
/// `X-Signature`, both keyed by the merchant's webhook `secret`.
pub fn signed_post(
    client: &reqwest::Client,
    url: impl reqwest::IntoUrl,
    id: &str,
    secret: &str,
    timestamp: i64,
    body: Vec<u8>,
) -> reqwest::RequestBuilder {
    client
        .post(url)
        .header("content-type", "application/json")
        .header("webhook-id", id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", standard_signature(secret, id, timestamp, &body))
        .header("x-signature", hmac_sha256_header(secret, &body))
        .body(body)
}

/// Sends a `test` event to the merchant's default notify URL, signed as a
/// real delivery, so a merchant can check their endpoint and signature code.
/// It is not an event of the outbox: nothing is recorded or retried.
pub async fn send_test_event(state: &AppState, merchant_id: uuid::Uuid) -> Result<(u16, u64), String> {
    let merchant = state
        .engine
        .merchants()
        .merchant(merchant_id)
        .ok_or("no such merchant")?;
    let url = merchant
        .default_notify_url
        .clone()
        .ok_or("set a default notify URL first")?;
    let id = uuid::Uuid::new_v4();
    let body = serde_json::to_vec(&json!({
        "event": "test",
        "event_id": id,
        "event_at": timestamp(state.engine.operations().clock().now().timestamp_millis()),
        "merchant_id": merchant.id,
    }))
    .map_err(|error| error.to_string())?;
    let started = Instant::now();
    let secret = &merchant.credentials.webhook_secret;
    let status = post_signed(state, &state.webhook_client, &url, &id.to_string(), secret, body).await?;
    Ok((status, started.elapsed().as_millis() as u64))
}

/// Live mode: a URL naming a loopback, private or link-local IP address
/// outright is refused (SSRF); sandbox allows them. Names never reach a
/// resolver here: the live client's own (`PublicOnly`) refuses them when
/// it connects, so each delivery resolves once.
fn refuse_private(state: &AppState, parsed: &reqwest::Url) -> Option<String> {
    if state.engine.operations().allows_private_notify_urls() {
        return None;
    }
    let ip: std::net::IpAddr = parsed.host_str()?.trim_matches(['[', ']']).parse().ok()?;
    paygate_engine::notify_url::is_private(ip).then(|| format!("refused: {ip} is a private address"))
}

/// An error with its causes, so an attempt's record says why (a resolver's
/// refusal sits in the source chain, not in reqwest's own message).
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Standard Webhooks: `v1,<base64 HMAC-SHA256(decoded whsec_ key, "id.timestamp.body")>`.
pub fn standard_signature(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> String {
    let key = secret
        .strip_prefix("whsec_")
        .and_then(|encoded| base64::engine::general_purpose::STANDARD.decode(encoded).ok())
        .unwrap_or_else(|| secret.as_bytes().to_vec());
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key).expect("HMAC takes any key length");
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    )
}

/// The body: the Legacy camelCase shape with its `signature` for resources
/// the Legacy API created, else the flat V1 shape with `event`, `event_id`
/// and `event_at`.
pub fn render(state: &AppState, event: &WebhookEvent, client_id: &str, client_secret: &str) -> Vec<u8> {
    match &event.resource {
        EventResource::Order(order) if order.source == Source::Legacy => {
            let total_amount = order.amount.get() / 100;
            let body = LegacyOrderEvent {
                event: &event.event,
                ref_code: &order.ref_code,
                order_id: &order.merchant_order_id,
                total_amount,
                status: order.status.legacy_str(),
                paid_at: order.paid_at_ms.map(wib),
                signature: sha512_hex(&format!(
                    "{client_id}|{}|{total_amount}|{client_secret}",
                    order.merchant_order_id
                )),
            };
            serde_json::to_vec(&body).expect("JSON bodies serialize")
        }
        EventResource::Disbursement(disbursement) if disbursement.source == Source::Legacy => {
            let request_amount = disbursement.request_amount.get() / 100;
            let mut body = serde_json::to_value(crate::legacy::legacy_disbursement(state, disbursement))
                .expect("Legacy views serialize");
            body["event"] = json!(event.event);
            body["signature"] = json!(sha512_hex(&format!(
                "{client_id}|{}|{request_amount}|{client_secret}",
                disbursement.idempotency_key
            )));
            serde_json::to_vec(&body).expect("JSON bodies serialize")
        }
        EventResource::Order(order) => flat_body(event, &order_view(order, &state.config.public_url)),
        EventResource::Refund(refund) => flat_body(event, &refund_view(refund)),
        EventResource::Disbursement(disbursement) => flat_body(event, &disbursement_view(disbursement)),
    }
}

/// The flat V1 body: the event header, then the resource's fields, written
/// out as bytes and joined rather than merged as `Value`s: an order's
/// metadata keeps its exact bytes, which a `Value` cannot hold in every case
/// (a number like 1e400 emptied the whole body), and no map is built and
/// hashed for each delivery. No view has a field named as a header's.
fn flat_body(event: &WebhookEvent, view: &impl Serialize) -> Vec<u8> {
    let header = EventHeader {
        event: &event.event,
        event_id: event.id,
        event_at: timestamp(event.occurred_at_ms),
    };
    let mut body = serde_json::to_vec(&header).expect("JSON bodies serialize");
    let view = serde_json::to_vec(view).expect("views serialize");
    if view.len() > 2 {
        body.pop(); // the header's closing brace
        body.push(b',');
        body.extend_from_slice(&view[1..]);
    }
    body
}

/// The fields every V1 webhook body starts with, before the resource's own.
#[derive(Serialize, ToSchema)]
pub struct EventHeader<'a> {
    /// `<resource>.<status in lower case>`, e.g. `order.paid`.
    event: &'a str,
    /// The same on every retry; also `webhook-id`.
    event_id: uuid::Uuid,
    /// When the change happened.
    #[schema(format = DateTime)]
    event_at: String,
}

/// The body of a Legacy order's webhook.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LegacyOrderEvent<'a> {
    event: &'a str,
    ref_code: &'a str,
    order_id: &'a str,
    /// Whole rupiah.
    total_amount: i64,
    /// PENDING, PAID or FAILED.
    status: &'static str,
    /// `YYYY-MM-DD HH:MM:SS`, WIB.
    paid_at: Option<String>,
    /// Lowercase hex SHA-512 of `clientId|orderId|totalAmount|clientSecret`.
    signature: String,
}

/// What a Legacy disbursement's webhook adds to the Legacy disbursement.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct LegacyDisbursementEventFields {
    event: String,
    /// Lowercase hex SHA-512 of `clientId|orderId|requestAmount|clientSecret`, `requestAmount` in whole rupiah.
    signature: String,
}

#[cfg(test)]
mod tests {
    /// Notify URLs may be https: the client must speak TLS. A listener that
    /// accepts and hangs up makes the client get as far as the handshake (a
    /// client without TLS refuses the scheme before it).
    #[tokio::test]
    async fn the_delivery_client_speaks_tls() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                drop(socket);
            }
        });
        let error = super::client(true)
            .post(format!("https://{address}/"))
            .send()
            .await
            .expect_err("the listener hangs up");
        let chain = format!("{error:?}");
        assert!(!chain.contains("scheme is not http"), "{chain}");
    }

    /// Live mode: a name resolving to a private address is refused at
    /// connection time, whatever a check before it saw; the listener is
    /// never reached. The sandbox client reaches it.
    #[tokio::test]
    async fn the_live_client_never_connects_to_a_private_address() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = accepted.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                drop(socket);
            }
        });
        let url = format!("http://localhost:{port}/hook");
        let error = super::client(false)
            .post(&url)
            .send()
            .await
            .expect_err("localhost is private");
        let chain = format!("{error:?}");
        assert!(chain.contains("resolves to a private address"), "{chain}");
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 0);

        let _ = super::client(true).post(&url).send().await;
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    /// An endpoint's URL is parsed once and given back whole; one that does
    /// not parse is left for reqwest to refuse; the cache stays bounded.
    #[test]
    fn endpoint_urls_are_parsed_once_and_kept_bounded() {
        let endpoints = super::ParsedEndpoints::default();
        let url = "https://merchant.example:8443/hooks/paygate?tenant=7";
        let first = endpoints.get(url).expect("a valid URL parses");
        assert_eq!(first.as_str(), url);
        assert_eq!(endpoints.get(url), Some(first));
        assert_eq!(endpoints.0.lock().unwrap().len(), 1);

        assert_eq!(endpoints.get("https://"), None);
        assert_eq!(endpoints.0.lock().unwrap().len(), 1);

        for n in 0..super::ENDPOINTS_PARSED_MAX + 10 {
            let url = format!("https://merchant-{n}.example/hook");
            assert_eq!(endpoints.get(&url).unwrap().as_str(), url);
        }
        assert!(endpoints.0.lock().unwrap().len() <= super::ENDPOINTS_PARSED_MAX);
    }
}
