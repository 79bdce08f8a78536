//! The signed HTTP exchange every HTTP vendor speaks: a request carries
//! `X-Paygate-Signature: sha256=<hex HMAC-SHA256(secret, signed bytes)>`,
//! where the signed bytes are a POST's raw body, or a GET's path (with any
//! prefix of the vendor's URL). Every call has the vendor's timeout, and an
//! answer is read only up to `ANSWER_BYTES_MAX`.

use crate::domain::catalog::{PaymentVendorConfig, VendorKind};
use crate::signing::hmac_sha256_header;
use std::time::Duration;

/// The most of a vendor's answer that is read: an answer is a few fields.
pub const ANSWER_BYTES_MAX: usize = 64 * 1024;

/// How a vendor over HTTP is reached.
pub struct SignedClient {
    /// The vendor's configured name.
    pub name: String,
    /// Base URL, without a trailing `/`.
    url: String,
    secret: String,
    timeout: Duration,
    client: reqwest::Client,
}

/// Why no answer came back: the vendor may or may not have acted.
#[derive(Debug)]
pub struct NoAnswer(pub String);

impl SignedClient {
    /// The client of `config` (which must be `VendorKind::Http`), over `client`.
    pub fn new(config: &PaymentVendorConfig, client: reqwest::Client) -> Option<SignedClient> {
        match &config.kind {
            VendorKind::Http {
                url,
                secret,
                timeout_ms,
            } => Some(SignedClient {
                name: config.name.clone(),
                url: url.trim_end_matches('/').to_string(),
                secret: secret.clone(),
                timeout: Duration::from_millis(*timeout_ms),
                client,
            }),
            VendorKind::Sandbox => None,
        }
    }

    /// The per-call timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// POSTs `body` as JSON to `{url}{path}`; the status and body of the answer.
    pub async fn post(&self, path: &str, body: &serde_json::Value) -> Result<(u16, Vec<u8>), NoAnswer> {
        let bytes = serde_json::to_vec(body).map_err(|e| NoAnswer(e.to_string()))?;
        let request = self
            .client
            .post(format!("{}{path}", self.url))
            .header("content-type", "application/json")
            .header("x-paygate-signature", hmac_sha256_header(&self.secret, &bytes))
            .body(bytes);
        self.exchange(request).await
    }

    /// GETs `{url}{path}`, signed over the whole path it requests.
    pub async fn get(&self, path: &str) -> Result<(u16, Vec<u8>), NoAnswer> {
        let address = format!("{}{path}", self.url);
        let signed_path = reqwest::Url::parse(&address)
            .map(|url| url.path().to_string())
            .map_err(|e| NoAnswer(format!("{}: bad URL: {e}", self.name)))?;
        let request = self.client.get(address).header(
            "x-paygate-signature",
            hmac_sha256_header(&self.secret, signed_path.as_bytes()),
        );
        self.exchange(request).await
    }

    async fn exchange(&self, request: reqwest::RequestBuilder) -> Result<(u16, Vec<u8>), NoAnswer> {
        let name = &self.name;
        let read = async {
            let mut response = request.send().await.map_err(|e| {
                if e.is_timeout() {
                    NoAnswer(format!("{name}: timed out"))
                } else {
                    NoAnswer(format!("{name}: {e}"))
                }
            })?;
            let status = response.status().as_u16();
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|e| NoAnswer(format!("{name}: {e}")))? {
                if body.len() + chunk.len() > ANSWER_BYTES_MAX {
                    return Err(NoAnswer(format!("{name}: answer over {ANSWER_BYTES_MAX} bytes")));
                }
                body.extend_from_slice(&chunk);
            }
            Ok((status, body))
        };
        // The whole exchange, body included, within the vendor's timeout: a
        // vendor that trickles its answer holds nobody up for longer.
        tokio::time::timeout(self.timeout, read)
            .await
            .unwrap_or_else(|_| Err(NoAnswer(format!("{name}: timed out"))))
    }
}
