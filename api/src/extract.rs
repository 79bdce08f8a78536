//! Extractors: the V1 JSON body (rejections in the V1 envelope), the
//! authenticated merchant, and the admin bearer token.

use crate::error::{ErrorKind, V1Error};
use crate::AppState;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use paygate_engine::domain::MerchantRecord;
use paygate_engine::EngineError;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// A JSON body whose every rejection is 400 `INVALID_BODY` (or 413
/// `PAYLOAD_TOO_LARGE`) in the V1 envelope, naming the offending field.
pub struct V1Json<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for V1Json<T> {
    type Rejection = V1Error;

    async fn from_request(request: Request, state: &S) -> Result<Self, V1Error> {
        let bytes = read_body(request, state).await?;
        parse_json(&bytes).map(V1Json)
    }
}

/// A JSON body that may also be empty or `null`, either of which reads as
/// `T::default()` (optional bodies of sandbox and admin actions).
pub struct OptionalJson<T>(pub T);

impl<T: DeserializeOwned + Default, S: Send + Sync> FromRequest<S> for OptionalJson<T> {
    type Rejection = V1Error;

    async fn from_request(request: Request, state: &S) -> Result<Self, V1Error> {
        let bytes = read_body(request, state).await?;
        let text = bytes.trim_ascii();
        if text.is_empty() || text == b"null" {
            return Ok(OptionalJson(T::default()));
        }
        parse_json(&bytes).map(OptionalJson)
    }
}

/// A V1 write body checked against `X-Signature: sha256=<hex HMAC-SHA256 of
/// the raw body keyed by the webhook secret>`: a mismatch is
/// 401 `INVALID_SIGNATURE`, and so is a missing one when the merchant's
/// `require_signature` is on. Must follow `V1Merchant` in the handler.
pub struct SignedJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for SignedJson<T> {
    type Rejection = V1Error;

    async fn from_request(request: Request, state: &S) -> Result<Self, V1Error> {
        let SignedBody(value, _) = SignedBody::from_request(request, state).await?;
        Ok(SignedJson(value))
    }
}

/// `SignedJson` that also keeps the raw body (the `Idempotency-Key` of an
/// order compares bodies by their bytes).
pub struct SignedBody<T>(pub T, pub Bytes);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for SignedBody<T> {
    type Rejection = V1Error;

    async fn from_request(request: Request, state: &S) -> Result<Self, V1Error> {
        let bytes = read_signed_body(request, state).await?;
        let value = parse_json(&bytes)?;
        Ok(SignedBody(value, bytes))
    }
}

/// A V1 write without a body (`DELETE`): its `X-Signature` is checked as
/// `SignedJson`'s, over the raw body, normally empty. Must follow
/// `V1Merchant` in the handler.
pub struct Signed;

impl<S: Send + Sync> FromRequest<S> for Signed {
    type Rejection = V1Error;

    async fn from_request(request: Request, state: &S) -> Result<Self, V1Error> {
        read_signed_body(request, state).await?;
        Ok(Signed)
    }
}

/// The raw body, once its `X-Signature` is checked against the merchant
/// `V1Merchant` put in the request: a presented signature must match; a
/// missing one is refused only when the merchant's `require_signature` is on.
async fn read_signed_body<S: Send + Sync>(request: Request, state: &S) -> Result<Bytes, V1Error> {
    let merchant = request.extensions().get::<Arc<MerchantRecord>>().cloned();
    let signature = request
        .headers()
        .get("x-signature")
        .map(|v| v.to_str().unwrap_or_default().to_string());
    let body = read_body(request, state).await?;
    let Some(merchant) = merchant else {
        return Ok(body);
    };
    match signature.as_deref() {
        Some(signature)
            if !paygate_engine::signing::hmac_sha256_header_matches(
                &merchant.credentials.webhook_secret,
                &body,
                signature,
            ) =>
        {
            Err(invalid_signature())
        }
        None if merchant.require_signature => Err(V1Error::new(
            ErrorKind::InvalidSignature,
            "X-Signature is required for this merchant",
        )),
        Some(_) | None => Ok(body),
    }
}

fn invalid_signature() -> V1Error {
    V1Error::new(
        ErrorKind::InvalidSignature,
        "X-Signature does not match the request body",
    )
}

/// The body limit of a route that takes more than `BODY_BYTES_MAX`, put
/// in its requests' extensions beside its `DefaultBodyLimit`, so that a 413
/// names the limit in force.
#[derive(Clone, Copy, Debug)]
pub struct BodyBytesMax(pub usize);

async fn read_body<S: Send + Sync>(request: Request, state: &S) -> Result<Bytes, V1Error> {
    let limit = request
        .extensions()
        .get::<BodyBytesMax>()
        .map_or(crate::BODY_BYTES_MAX, |limit| limit.0);
    Bytes::from_request(request, state).await.map_err(|rejection| {
        if crate::guard::is_body_deadline(&rejection) {
            V1Error::new(ErrorKind::RequestTimeout, "request body not received in time")
        } else if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            let limit = if limit % (1024 * 1024) == 0 {
                format!("{} MiB", limit / (1024 * 1024))
            } else {
                format!("{} KiB", limit / 1024)
            };
            V1Error::new(ErrorKind::PayloadTooLarge, format!("request body exceeds {limit}"))
        } else {
            V1Error::invalid_body("request body could not be read")
        }
    })
}

/// Parses JSON, describing a failure with the path of the offending field.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, V1Error> {
    // serde reads a struct from an array too, by position: a body is an object.
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first.is_none_or(|b| *b != b'{') {
        return Err(V1Error::invalid_body("request body must be a JSON object"));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = match serde_path_to_error::deserialize(&mut deserializer) {
        Ok(value) => value,
        Err(error) => {
            return with_whole_numbers(bytes).ok_or_else(|| match describe(error, bytes) {
                (Some(path), message) => V1Error::invalid_body(format!("{path}: {message}")),
                (None, message) => V1Error::invalid_body(message),
            })
        }
    };
    // Anything but whitespace after the object is not JSON: `{..} garbage`
    // and `{..}{..}` are refused, not read up to the first object's end.
    deserializer
        .end()
        .map_err(|_| V1Error::invalid_body("malformed JSON: trailing characters after the object"))?;
    Ok(value)
}

/// What is wrong with JSON `bytes` that failed to parse: the path of the
/// field at fault (`None`: the value as a whole) and a message.
fn describe(error: serde_path_to_error::Error<serde_json::Error>, bytes: &[u8]) -> (Option<String>, String) {
    let path = error.path().to_string();
    let inner = error.into_inner();
    let mut message = inner.to_string();
    // serde_json appends " at line L column C": noise for API clients.
    if let Some(cut) = message.rfind(" at line ") {
        message.truncate(cut);
    }
    let names_field = path != "." && !path.is_empty();
    // serde_json reports an enum given a number or null as a syntax
    // error; when the body is valid JSON it is the field that is wrong.
    if inner.is_syntax() && names_field && serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok() {
        (Some(path), "invalid type or value".into())
    } else if inner.is_syntax() || inner.is_eof() {
        (None, format!("malformed JSON: {message}"))
    } else if !names_field {
        (None, message)
    } else {
        (Some(path), message)
    }
}

/// Parses one value of a larger body (an item of a batch) as `T`, refused
/// with the message the same value sent alone as a body would get, as an
/// engine refusal: the field at fault, or `item` for the value as a whole.
pub fn parse_item<T: DeserializeOwned>(raw: &RawValue) -> Result<T, EngineError> {
    let text = raw.get();
    if !text.trim_start().starts_with('{') {
        return Err(EngineError::invalid("item", "must be a JSON object"));
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut deserializer).or_else(|error| {
        with_whole_numbers(text.as_bytes()).ok_or_else(|| {
            let (path, message) = describe(error, text.as_bytes());
            EngineError::invalid(path.unwrap_or_else(|| "item".into()), message)
        })
    })
}

/// `bytes` read as `T` once every number with no fraction is spelled as
/// an integer: JSON has one number type, so `2.0` is the integer 2 that a
/// schema's `integer` admits. `None` when that changes nothing or still
/// fails; the caller then reports its first error. Tried only after a
/// failure, so a body of plain integers is read once.
fn with_whole_numbers<T: DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    let mut value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    if !spell_whole_numbers(&mut value) {
        return None;
    }
    serde_json::from_value(value).ok()
}

/// Rewrites each float with no fraction (within the integers a float
/// spells exactly) as an integer; true when one was.
fn spell_whole_numbers(value: &mut serde_json::Value) -> bool {
    /// The largest integer every float below it spells exactly.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    match value {
        serde_json::Value::Number(number) if number.is_f64() => {
            let float = number.as_f64().unwrap_or(f64::NAN);
            if float.fract() == 0.0 && float.abs() <= EXACT {
                *value = serde_json::Value::from(float as i64);
                true
            } else {
                false
            }
        }
        serde_json::Value::Array(items) => items
            .iter_mut()
            .fold(false, |changed, item| spell_whole_numbers(item) | changed),
        serde_json::Value::Object(fields) => fields
            .values_mut()
            .fold(false, |changed, field| spell_whole_numbers(field) | changed),
        _ => false,
    }
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
            _ => return Err(V1Error::new(ErrorKind::Unauthorized, "missing API key")),
        };
        let merchant = state
            .engine
            .merchants()
            .authenticate_api_key(&api_key)
            .ok_or_else(|| V1Error::new(ErrorKind::InvalidApiKey, "invalid API key"))?;
        if !merchant.is_active {
            return Err(V1Error::new(ErrorKind::MerchantInactive, "merchant is inactive"));
        }
        state.rate_limits.check(&merchant)?;
        // For `SignedJson`, which checks the body against this merchant's secret.
        parts.extensions.insert(merchant.clone());
        Ok(V1Merchant(merchant))
    }
}

/// Proof of a valid admin bearer token.
pub struct Admin;

/// Whether `headers` carry `Authorization: Bearer <expected>`, compared in
/// constant time.
pub fn admin_token_matches(headers: &axum::http::HeaderMap, expected: &str) -> bool {
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        // RFC 9110: the auth scheme name is case-insensitive.
        .and_then(|(scheme, token)| scheme.eq_ignore_ascii_case("bearer").then_some(token.trim()))
        .unwrap_or_default();
    !presented.is_empty() && bool::from(presented.as_bytes().ct_eq(expected.as_bytes()))
}

impl FromRequestParts<AppState> for Admin {
    type Rejection = V1Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, V1Error> {
        if !admin_token_matches(&parts.headers, &state.config.admin_token) {
            return Err(V1Error::new(ErrorKind::Unauthorized, "missing or invalid admin token"));
        }
        Ok(Admin)
    }
}

/// The merchant calling a sandbox-only route. In live mode those routes do
/// not exist (404 `NOT_FOUND`), whatever the key or body, so the mode is
/// checked before the key.
pub struct SandboxMerchant(pub Arc<MerchantRecord>);

impl FromRequestParts<AppState> for SandboxMerchant {
    type Rejection = V1Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, V1Error> {
        match state.config.mode {
            crate::Mode::Sandbox => {
                let V1Merchant(merchant) = V1Merchant::from_request_parts(parts, state).await?;
                Ok(SandboxMerchant(merchant))
            }
            crate::Mode::Live => Err(V1Error::route_not_found()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Amount {
        amount_minor: i64,
        items: Vec<u32>,
    }

    /// A whole float is the integer it spells; a fraction, or a number past
    /// what a float spells exactly, is refused with the field's own message.
    #[test]
    fn whole_floats_are_integers_and_fractions_are_refused() {
        let read: Amount = parse_json(br#"{"amount_minor": 1500.0, "items": [2.0, 3]}"#).unwrap();
        assert_eq!(
            read,
            Amount {
                amount_minor: 1500,
                items: vec![2, 3]
            }
        );
        let item: Amount =
            parse_item(&RawValue::from_string(r#"{"amount_minor": 1e3, "items": []}"#.into()).unwrap()).unwrap();
        assert_eq!(item.amount_minor, 1000);
        for (body, message) in [
            (
                r#"{"amount_minor": 1500.5, "items": []}"#,
                "amount_minor: invalid type: floating point `1500.5`, expected i64",
            ),
            (
                r#"{"amount_minor": 1e300, "items": []}"#,
                "amount_minor: invalid type: floating point `1e+300`, expected i64",
            ),
        ] {
            let error = parse_json::<Amount>(body.as_bytes()).unwrap_err();
            assert_eq!(error.message, message, "{body}");
        }
    }
}
