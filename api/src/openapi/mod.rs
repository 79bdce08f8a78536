//! The API document: OpenAPI 3.1 generated from the handlers'
//! `#[utoipa::path]` attributes and the views' `ToSchema` derives as the
//! router is built, so a route cannot exist without its entry. This module
//! adds what the attributes cannot say: the info block, tags, security
//! schemes, each route's error answers and the webhooks. `GET /openapi.json`
//! serves it and `GET /docs` a page rendered from it, both made once at
//! start-up.

pub mod docs_page;
pub mod errors;
mod examples;
mod links;
pub mod names;
pub mod values;
mod webhooks;

use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use std::sync::Arc;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::tag::TagBuilder;
use utoipa::openapi::{ComponentsBuilder, InfoBuilder, OpenApi};

/// Tags in the order the reference lists them, with what each covers.
const TAGS: &[(&str, &str)] = &[
    ("Orders", "Take a payment by QRIS or bank transfer, and follow it."),
    ("Refunds", "Give a paid order's money back, in part or in full."),
    ("Balance", "The wallet's balance and every line that moved it."),
    (
        "Disbursements",
        "Pay money out of the wallet to a bank account or an e-wallet.",
    ),
    ("Disbursement batches", "Up to 1,000 disbursements in one request."),
    ("Beneficiaries", "Saved payout destinations."),
    ("Catalog", "Banks and e-wallets a disbursement can go to."),
    ("Settlements", "Daily settlements of paid orders."),
    ("Webhooks", "Deliveries of the events sent to your notify URL."),
    (
        "Sandbox",
        "Test-mode controls: pay, expire or fail an order, finish a refund or payout. 404 in live mode.",
    ),
    (
        "Legacy",
        "The Legacy API for older integrations: `{code, message, data}` envelopes.",
    ),
    (
        "Admin",
        "The operator API: merchants, catalog, vendors, settlements and ledger checks.",
    ),
    ("Callbacks", "Signed outcomes from HTTP payment and payout vendors."),
    (
        "Pages",
        "HTML pages: the payer's checkout page and the merchant dashboard.",
    ),
    ("Operations", "Health, metrics and this document."),
];

/// Names of the security schemes, as operations refer to them.
pub mod security {
    /// `X-API-Key`.
    pub const API_KEY: &str = "api_key";
    /// `X-Signature: sha256=<hex>` on V1 writes.
    pub const V1_SIGNATURE: &str = "v1_signature";
    /// The admin bearer token.
    pub const ADMIN_TOKEN: &str = "admin_token";
    /// The SHA-512 `signature` field of Legacy order bodies.
    pub const LEGACY_BODY_SIGNATURE: &str = "legacy_body_signature";
    /// `X-SIGNATURE`, RSA-SHA256, on Legacy disbursements.
    pub const LEGACY_X_SIGNATURE: &str = "legacy_x_signature";
    /// `X-Paygate-Signature` on vendor callbacks.
    pub const VENDOR_SIGNATURE: &str = "vendor_signature";
}

/// Completes the document the router collected: what the handlers'
/// attributes say, and the info, tags, security schemes and error answers.
pub fn finish(mut document: OpenApi) -> OpenApi {
    document.info = InfoBuilder::new()
        .title("paygate")
        .version(env!("CARGO_PKG_VERSION"))
        .description(Some(
            "Payments for Indonesian merchants: take payments by QRIS and bank transfer, refund them, \
             pay out from the wallet to bank and e-wallet accounts, and follow it all by webhooks. \
             The V1 API answers `{success, data}` or `{success: false, error: {code, message}}`; \
             the Legacy API answers `{code, message, data}` with the HTTP status equal to `code`. \
             Amounts are integers in minor units (V1, `*_minor`) or whole rupiah (Legacy).",
        ))
        .build();
    document.tags = Some(
        TAGS.iter()
            .map(|(name, description)| TagBuilder::new().name(*name).description(Some(*description)).build())
            .collect(),
    );
    let components = document
        .components
        .take()
        .unwrap_or_else(|| ComponentsBuilder::new().build());
    let mut components = components;
    for (name, scheme) in security_schemes() {
        components.security_schemes.insert(name.to_string(), scheme);
    }
    document.components = Some(components);
    errors::add_error_answers(&mut document);
    document.merge(webhooks::schemas());
    document
}

/// The document as JSON, with what utoipa has no type for: the webhooks.
pub fn document_value(document: &OpenApi) -> serde_json::Value {
    let mut value = serde_json::to_value(document).unwrap_or_default();
    webhooks::add(&mut value);
    links::add(&mut value);
    examples::add(&mut value);
    values::add_account_requirements(&mut value);
    // The Legacy order signature travels in the JSON body, which no scheme
    // type names, and utoipa's `http` schemes are a closed list: `http`
    // with a scheme name of its own is the closest honest description.
    if let Some(schemes) = value
        .pointer_mut("/components/securitySchemes")
        .and_then(|v| v.as_object_mut())
    {
        schemes.insert(
            security::LEGACY_BODY_SIGNATURE.into(),
            serde_json::json!({
                "type": "http",
                "scheme": "legacy-body-signature",
                "description": "Legacy orders: body fields `clientId` and `signature`, the lowercase hex SHA-512 of \
                    `clientId|orderId|totalAmount|clientSecret` (create) or `clientId|orderId|clientSecret` (query)."
            }),
        );
    }
    value
}

fn security_schemes() -> Vec<(&'static str, SecurityScheme)> {
    let header = |name: &str, description: &str| {
        SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(name, description)))
    };
    vec![
        (
            security::API_KEY,
            header(
                "X-API-Key",
                "The merchant's API key, from the dashboard (Settings, API Credentials) or the admin API.",
            ),
        ),
        (
            security::V1_SIGNATURE,
            header(
                "X-Signature",
                "`sha256=<lowercase hex HMAC-SHA256 of the raw request body, keyed with the webhook secret>`. \
                 Optional unless the operator requires it for the merchant; a mismatch is 401 INVALID_SIGNATURE.",
            ),
        ),
        (
            security::ADMIN_TOKEN,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "The operator token: `--admin-token`, or the 0600 file `admin-token` in the data dir.",
                    ))
                    .build(),
            ),
        ),
        (
            security::LEGACY_X_SIGNATURE,
            header(
                "X-SIGNATURE",
                "Legacy disbursements: Base64 of an RSA-SHA256 signature with the merchant's private key over \
                 `clientId|clientSecret|<lowercase hex SHA-256 of the raw body>`, checked with the uploaded public key.",
            ),
        ),
        (
            security::VENDOR_SIGNATURE,
            header(
                "X-Paygate-Signature",
                "`sha256=<lowercase hex HMAC-SHA256 of the raw body, keyed with the vendor's secret>`.",
            ),
        ),
    ]
}

/// The document and its page, made once.
pub struct Served {
    // Bytes, so each answer shares them instead of copying 100+ KB.
    json: axum::body::Bytes,
    html: axum::body::Bytes,
}

impl Served {
    /// Serializes `document` and renders its page.
    pub fn new(document: &OpenApi) -> Served {
        let value = document_value(document);
        Served {
            json: serde_json::to_string_pretty(&value).unwrap_or_default().into(),
            html: docs_page::render(&value).into(),
        }
    }
}

/// GET /openapi.json: this document.
#[utoipa::path(get, path = "/openapi.json", tag = "Operations", operation_id = "get_openapi",
    responses((status = 200, description = "The OpenAPI 3.1 document of this server.", content_type = "application/json", body = Object)))]
pub async fn openapi_json(Extension(served): Extension<Arc<Served>>) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], served.json.clone()).into_response()
}

/// GET /docs: the API reference, rendered on the server from the document;
/// no script and nothing loaded from elsewhere.
#[utoipa::path(get, path = "/docs", tag = "Operations", operation_id = "get_docs",
    responses((status = 200, description = "The API reference as an HTML page.", content_type = "text/html", body = String)))]
pub async fn docs(Extension(served): Extension<Arc<Served>>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'",
            ),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        served.html.clone(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::errors::{operation_ids, ROUTE_ERRORS};

    /// The error table and the routes name the same operations, so a new
    /// route cannot go without its own errors being considered.
    #[test]
    fn the_error_table_and_the_routes_name_the_same_operations() {
        let (_, document) = crate::routes_and_document();
        let mut ids = operation_ids(&document);
        ids.sort();
        let mut listed: Vec<String> = ROUTE_ERRORS.iter().map(|(id, _)| id.to_string()).collect();
        listed.sort();
        assert_eq!(ids, listed);
        let mut unique = ids.clone();
        unique.dedup();
        assert_eq!(unique.len(), ids.len(), "operation ids are unique");
    }
}
