//! Extractors: the V1 JSON body (rejections in the V1 envelope), the
//! authenticated merchant, and the admin bearer token.

use crate::error::V1Error;
use crate::AppState;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use paygate_engine::domain::MerchantRecord;
use serde::de::DeserializeOwned;
use std::collections::HashMap;
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// A JSON body whose every rejection is 400 `INVALID_BODY` (or 413
/// `PAYLOAD_TOO_LARGE`) in the V1 envelope, naming the offending field.
pub struct V1Json<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for V1Json<T> {
    type Rejection = V1Error;

    async fn from_request(request: Request, state: &S) -> Result<Self, V1Error> {
        let bytes = Bytes::from_request(request, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                V1Error::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "PAYLOAD_TOO_LARGE",
                    "request body exceeds 64 KiB",
                )
            } else {
                V1Error::invalid_body("request body could not be read")
            }
        })?;
        parse_json(&bytes).map(V1Json)
    }
}

/// Parses JSON, describing a failure with the path of the offending field.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, V1Error> {
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(V1Error::invalid_body("request body must be a JSON object"));
    }
    let deserializer = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        let mut message = inner.to_string();
        // serde_json appends " at line L column C": noise for API clients.
        if let Some(cut) = message.rfind(" at line ") {
            message.truncate(cut);
        }
        if inner.is_syntax() || inner.is_eof() {
            V1Error::invalid_body(format!("malformed JSON: {message}"))
        } else if path == "." || path.is_empty() {
            V1Error::invalid_body(message)
        } else {
            V1Error::invalid_body(format!("{path}: {message}"))
        }
    })
}

/// The merchant behind a valid, active V1 API key, within its rate limit.
pub struct V1Merchant(pub Arc<MerchantRecord>);

impl FromRequestParts<AppState> for V1Merchant {
    type Rejection = V1Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, V1Error> {
        let from_header = parts
            .headers
            .get("x-api-key")
            .map(|v| v.to_str().unwrap_or_default().to_string());
        let api_key = match from_header {
            Some(key) => Some(key),
            None => Query::<HashMap<String, String>>::try_from_uri(&parts.uri)
                .ok()
                .and_then(|Query(query)| query.get("api_key").cloned()),
        };
        let api_key = match api_key {
            Some(key) if !key.is_empty() => key,
            _ => {
                return Err(V1Error::new(
                    StatusCode::UNAUTHORIZED,
                    "UNAUTHORIZED",
                    "missing API key",
                ))
            }
        };
        let merchant = state
            .engine
            .authenticate_api_key(&api_key)
            .ok_or_else(|| V1Error::new(StatusCode::UNAUTHORIZED, "INVALID_API_KEY", "invalid API key"))?;
        if !merchant.is_active {
            return Err(V1Error::new(
                StatusCode::FORBIDDEN,
                "MERCHANT_INACTIVE",
                "merchant is inactive",
            ));
        }
        state.rate_limits.check(&merchant)?;
        Ok(V1Merchant(merchant))
    }
}

/// Proof of a valid admin bearer token.
pub struct Admin;

impl FromRequestParts<AppState> for Admin {
    type Rejection = V1Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, V1Error> {
        let presented = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            // RFC 9110: the auth scheme name is case-insensitive.
            .and_then(|(scheme, token)| scheme.eq_ignore_ascii_case("bearer").then_some(token.trim()))
            .unwrap_or_default();
        let expected = state.config.admin_token.as_bytes();
        if presented.is_empty() || !bool::from(presented.as_bytes().ct_eq(expected)) {
            return Err(V1Error::new(
                StatusCode::UNAUTHORIZED,
                "UNAUTHORIZED",
                "missing or invalid admin token",
            ));
        }
        Ok(Admin)
    }
}
