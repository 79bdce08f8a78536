//! The webhooks paygate sends, as OpenAPI 3.1 `webhooks`:
//! one entry per resource, its body the event header beside the resource's
//! V1 view, or the Legacy body for resources the Legacy API created. utoipa
//! has no type for `webhooks`, so they are added to the JSON; their schemas
//! come from the types the deliveries serialize.

use crate::legacy::LegacyDisbursement;
use crate::webhooks::delivery::{EventHeader, LegacyDisbursementEventFields, LegacyOrderEvent};
use crate::wire::{DisbursementView, OrderView, RefundView};
use serde_json::{json, Value};
use utoipa::OpenApi;

/// The components the webhooks and the error answers refer to.
#[derive(OpenApi)]
#[openapi(components(schemas(
    crate::error::ErrorBody,
    crate::error::LegacyErrorBody,
    EventHeader,
    OrderView,
    RefundView,
    DisbursementView,
    LegacyOrderEvent,
    LegacyDisbursement,
    LegacyDisbursementEventFields
)))]
struct WebhookSchemas;

/// A document holding the schemas no route names, to merge into the API's.
pub fn schemas() -> utoipa::openapi::OpenApi {
    WebhookSchemas::openapi()
}

fn reference(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

fn header(name: &str, description: &str) -> Value {
    json!({ "name": name, "in": "header", "required": true, "description": description, "schema": { "type": "string" } })
}

fn webhook(resource: &str, events: &str, v1_view: &str, legacy: Option<Value>) -> Value {
    let v1_body = json!({ "allOf": [reference("EventHeader"), reference(v1_view)] });
    let body = match legacy {
        Some(legacy) => json!({ "oneOf": [v1_body, legacy] }),
        None => v1_body,
    };
    json!({
        "post": {
            "tags": ["Webhooks"],
            "operationId": format!("webhook_{resource}"),
            "summary": format!("A {resource}'s status changed"),
            "description": format!(
                "Sent to the {resource}'s notify URL, else the merchant's default, for every status change after \
                 creation: `event` is {events}. Delivered at least once: retried until a 2xx on a backoff of 10 s, \
                 30 s, 2 min, 10 min, 30 min, 1 h, 3 h, 6 h, 12 h and 24 h, 10 s timeout each. Verify it with any \
                 Standard Webhooks library and the merchant's `whsec_` secret."
            ),
            "parameters": [
                header("webhook-id", "The event id, the same on every retry."),
                header("webhook-timestamp", "Unix seconds of this attempt."),
                header("webhook-signature", "`v1,<base64 HMAC-SHA256(secret bytes, \"<id>.<timestamp>.<raw body>\")>`."),
                header("X-Signature", "`sha256=<hex HMAC-SHA256(raw body)>`, keyed by the whole secret string."),
            ],
            "requestBody": {
                "required": true,
                "content": { "application/json": { "schema": body } }
            },
            "responses": {
                "2XX": { "description": "Delivered; any other answer, or none within 10 s, is retried." }
            }
        }
    })
}

/// Adds `webhooks` to the document's JSON.
pub fn add(document: &mut Value) {
    let legacy_disbursement =
        json!({ "allOf": [reference("LegacyDisbursement"), reference("LegacyDisbursementEventFields")] });
    let webhooks = json!({
        "order": webhook(
            "order",
            "`order.paid`, `order.expired`, `order.failed`, `order.partially_refunded` or `order.refunded`",
            "OrderView",
            Some(reference("LegacyOrderEvent")),
        ),
        "refund": webhook("refund", "`refund.success` or `refund.failed`", "RefundView", None),
        "disbursement": webhook(
            "disbursement",
            "`disbursement.on_process`, `disbursement.success`, `disbursement.failed` or `disbursement.rejected`",
            "DisbursementView",
            Some(legacy_disbursement),
        ),
    });
    if let Value::Object(fields) = document {
        fields.insert("webhooks".into(), webhooks);
    }
}
