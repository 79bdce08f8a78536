//! Each route's error answers, added to the document as responses whose
//! schema narrows the envelope to the codes (V1, admin) or messages (Legacy)
//! that route can answer. What every route of a kind shares (authentication,
//! bodies, limits) is derived from the operation; what is its own is in
//! `ROUTE_ERRORS`. The integration tests check every answer they see against
//! these schemas, so a code answered but not listed fails them.

use crate::legacy::messages as legacy;
use std::collections::BTreeMap;
use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::schema::{AllOfBuilder, ObjectBuilder, Schema, SchemaType, Type};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, ResponseBuilder};

/// An operation's own error answers: status and the codes or messages.
type Answers = &'static [(u16, &'static [&'static str])];

/// Error answers of each operation beyond those of its kind, by operation id.
pub const ROUTE_ERRORS: &[(&str, Answers)] = &[
    // V1 orders and refunds.
    (
        "create_order",
        &[
            (409, &["DUPLICATE_ORDER"]),
            (422, &["IDEMPOTENCY_KEY_REUSED"]),
            (503, &["NO_VENDOR", "VENDOR_ERROR"]),
        ],
    ),
    ("get_order", &[(404, &["ORDER_NOT_FOUND"])]),
    ("list_orders", &[(400, &["INVALID_QUERY"])]),
    ("qr_png", &[(404, &["ORDER_NOT_FOUND"])]),
    (
        "create_refund",
        &[
            (404, &["ORDER_NOT_FOUND"]),
            (409, &["DUPLICATE_IDEMPOTENCY_KEY"]),
            (
                422,
                &[
                    "INVALID_STATUS",
                    "AMOUNT_EXCEEDS_ORDER",
                    "REFUND_NOT_SUPPORTED",
                    "IDEMPOTENCY_KEY_REUSED",
                    "INSUFFICIENT_BALANCE",
                ],
            ),
            (503, &["NO_VENDOR", "VENDOR_ERROR"]),
        ],
    ),
    ("list_refunds", &[(404, &["ORDER_NOT_FOUND"])]),
    (
        "sandbox_pay",
        &[(404, &["ORDER_NOT_FOUND"]), (422, &["INVALID_STATUS"])],
    ),
    (
        "sandbox_expire",
        &[(404, &["ORDER_NOT_FOUND"]), (422, &["INVALID_STATUS"])],
    ),
    (
        "sandbox_fail",
        &[(404, &["ORDER_NOT_FOUND"]), (422, &["INVALID_STATUS"])],
    ),
    (
        "sandbox_complete_refund",
        &[
            (400, &["INVALID_ID"]),
            (404, &["REFUND_NOT_FOUND"]),
            (422, &["INVALID_STATUS"]),
        ],
    ),
    // V1 balance.
    ("get_balance", &[(403, &["NOT_WALLET_MERCHANT"])]),
    (
        "balance_history",
        &[(400, &["INVALID_QUERY"]), (403, &["NOT_WALLET_MERCHANT"])],
    ),
    // V1 disbursements.
    (
        "create_disbursement",
        &[
            (
                400,
                &[
                    "BANK_NOT_FOUND",
                    "EWALLET_NOT_FOUND",
                    "MISSING_BANK_INFO",
                    "MISSING_EWALLET_INFO",
                ],
            ),
            (403, &["NOT_WALLET_MERCHANT"]),
            (404, &["BENEFICIARY_NOT_FOUND"]),
            (409, &["DUPLICATE_IDEMPOTENCY_KEY"]),
            (
                422,
                &[
                    "BANK_DISABLED",
                    "EWALLET_DISABLED",
                    "INSUFFICIENT_BALANCE",
                    "AMOUNT_EXCEEDS_LIMIT",
                    "DAILY_LIMIT_EXCEEDED",
                    "AMOUNT_BELOW_MINIMUM",
                ],
            ),
            (503, &["NO_VENDOR"]),
        ],
    ),
    ("get_disbursement", &[(404, &["DISBURSEMENT_NOT_FOUND"])]),
    ("list_disbursements", &[(400, &["INVALID_QUERY"])]),
    (
        "complete_disbursement",
        &[
            (404, &["DISBURSEMENT_NOT_FOUND"]),
            (409, &["STATUS_CONFLICT"]),
            (422, &["INVALID_STATUS"]),
        ],
    ),
    (
        "create_disbursement_batch",
        &[
            (403, &["NOT_WALLET_MERCHANT"]),
            (409, &["DUPLICATE_IDEMPOTENCY_KEY"]),
            (422, &["IDEMPOTENCY_KEY_REUSED"]),
            (503, &["NO_VENDOR"]),
        ],
    ),
    (
        "get_disbursement_batch",
        &[(400, &["INVALID_ID"]), (404, &["NOT_FOUND"])],
    ),
    // V1 beneficiaries.
    (
        "create_beneficiary",
        &[
            (
                400,
                &[
                    "BANK_NOT_FOUND",
                    "EWALLET_NOT_FOUND",
                    "MISSING_BANK_INFO",
                    "MISSING_EWALLET_INFO",
                ],
            ),
            (422, &["BANK_DISABLED", "EWALLET_DISABLED"]),
        ],
    ),
    ("list_beneficiaries", &[]),
    (
        "delete_beneficiary",
        &[(400, &["INVALID_ID"]), (404, &["BENEFICIARY_NOT_FOUND"])],
    ),
    // V1 catalog, settlements, webhooks.
    ("list_banks", &[]),
    ("list_ewallets", &[]),
    ("list_settlements", &[(400, &["INVALID_QUERY"])]),
    ("get_settlement", &[(400, &["INVALID_ID"]), (404, &["NOT_FOUND"])]),
    ("list_deliveries", &[(400, &["INVALID_QUERY"])]),
    (
        "resend_delivery",
        &[
            (400, &["INVALID_ID"]),
            (404, &["EVENT_NOT_FOUND"]),
            (422, &["NO_NOTIFY_URL"]),
        ],
    ),
    // Admin.
    (
        "admin_create_merchant",
        &[(400, &["BANK_NOT_FOUND"]), (404, &["NOT_FOUND"])],
    ),
    (
        "admin_get_merchant",
        &[(400, &["INVALID_ID"]), (404, &["MERCHANT_NOT_FOUND"])],
    ),
    (
        "admin_update_merchant",
        &[(400, &["INVALID_ID", "BANK_NOT_FOUND"]), (404, &["MERCHANT_NOT_FOUND"])],
    ),
    (
        "admin_set_public_key",
        &[(400, &["INVALID_ID"]), (404, &["MERCHANT_NOT_FOUND"])],
    ),
    (
        "admin_rotate_credentials",
        &[(400, &["INVALID_ID"]), (404, &["MERCHANT_NOT_FOUND"])],
    ),
    (
        "admin_credit_wallet",
        &[
            (400, &["INVALID_ID"]),
            (403, &["NOT_WALLET_MERCHANT"]),
            (404, &["MERCHANT_NOT_FOUND"]),
            (409, &["DUPLICATE_IDEMPOTENCY_KEY"]),
        ],
    ),
    ("admin_verify_ledger", &[]),
    (
        "admin_create_user",
        &[
            (400, &["INVALID_ID"]),
            (404, &["MERCHANT_NOT_FOUND"]),
            (409, &["EMAIL_TAKEN"]),
        ],
    ),
    (
        "admin_approve_disbursement",
        &[
            (400, &["INVALID_ID"]),
            (404, &["DISBURSEMENT_NOT_FOUND"]),
            (422, &["INVALID_STATUS"]),
            (503, &["NO_VENDOR"]),
        ],
    ),
    (
        "admin_reject_disbursement",
        &[
            (400, &["INVALID_ID"]),
            (404, &["DISBURSEMENT_NOT_FOUND"]),
            (422, &["INVALID_STATUS"]),
        ],
    ),
    ("admin_create_organization", &[]),
    ("admin_save_bank", &[]),
    ("admin_save_ewallet", &[(404, &["EWALLET_NOT_FOUND"])]),
    ("admin_save_vendor", &[]),
    ("admin_save_routing", &[(400, &["INVALID_ID"]), (404, &["NOT_FOUND"])]),
    (
        "admin_save_payout_routing",
        &[(400, &["INVALID_ID"]), (404, &["NOT_FOUND"])],
    ),
    ("admin_run_settlements", &[(404, &["MERCHANT_NOT_FOUND"])]),
    // Vendor callbacks.
    (
        "vendor_callback",
        &[
            (400, &["INVALID_BODY"]),
            (401, &["INVALID_SIGNATURE"]),
            (
                404,
                &[
                    "NOT_FOUND",
                    "ORDER_NOT_FOUND",
                    "REFUND_NOT_FOUND",
                    "DISBURSEMENT_NOT_FOUND",
                ],
            ),
            (409, &["STATUS_CONFLICT"]),
            (422, &["INVALID_STATUS"]),
        ],
    ),
    // Legacy: messages, not codes.
    (
        "legacy_create_order",
        &[
            (401, &[legacy::INVALID_SIGNATURE]),
            (409, &[legacy::ORDER_ID_USED]),
            (422, &[legacy::MERCHANT_SETTING_INVALID]),
            (503, &[legacy::GATEWAY_ERROR]),
        ],
    ),
    (
        "legacy_query_order",
        &[
            (401, &[legacy::INVALID_SIGNATURE]),
            (404, &[legacy::ORDER_ID_NOT_FOUND]),
        ],
    ),
    (
        "legacy_create_bank_disbursement",
        &[
            (401, &[legacy::INVALID_X_SIGNATURE]),
            (409, &[legacy::ORDER_ID_USED]),
            (
                422,
                &[
                    legacy::PUBLIC_KEY_NOT_SET,
                    legacy::BANK_NOT_USABLE,
                    legacy::INSUFFICIENT_BALANCE,
                    legacy::MAXIMUM_EXCEEDED,
                    legacy::DAILY_LIMIT_EXCEEDED,
                    legacy::MERCHANT_SETTING_INVALID,
                ],
            ),
        ],
    ),
    (
        "legacy_create_ewallet_disbursement",
        &[
            (400, &[legacy::INVALID_EWALLET_CODE]),
            (401, &[legacy::INVALID_X_SIGNATURE]),
            (409, &[legacy::ORDER_ID_USED]),
            (
                422,
                &[
                    legacy::PUBLIC_KEY_NOT_SET,
                    legacy::INSUFFICIENT_BALANCE,
                    legacy::MAXIMUM_EXCEEDED,
                    legacy::DAILY_LIMIT_EXCEEDED,
                    legacy::DANA_MINIMUM,
                    legacy::MERCHANT_SETTING_INVALID,
                ],
            ),
        ],
    ),
    (
        "legacy_query_disbursement",
        &[
            (401, &[legacy::INVALID_X_SIGNATURE]),
            (404, &[legacy::ORDER_ID_NOT_FOUND]),
            (422, &[legacy::PUBLIC_KEY_NOT_SET]),
        ],
    ),
    (
        "legacy_get_balance",
        &[
            (401, &[legacy::INVALID_X_SIGNATURE]),
            (422, &[legacy::PUBLIC_KEY_NOT_SET, legacy::MERCHANT_SETTING_INVALID]),
        ],
    ),
    // Pages: HTML answers, documented on each route.
    ("dashboard_stylesheet", &[]),
    ("dashboard_sign_in_page", &[]),
    ("dashboard_sign_in", &[]),
    ("dashboard_sign_out", &[]),
    ("dashboard_overview", &[]),
    ("dashboard_developers", &[]),
    ("dashboard_rotate_credentials", &[]),
    ("dashboard_save_settings", &[]),
    ("dashboard_save_public_key", &[]),
    ("dashboard_orders", &[]),
    ("dashboard_order", &[]),
    ("dashboard_refund", &[]),
    ("dashboard_balance_history", &[]),
    ("dashboard_balance_export", &[]),
    ("dashboard_disbursements", &[]),
    ("dashboard_create_disbursement", &[]),
    ("dashboard_create_batch", &[]),
    ("dashboard_upload_batch", &[]),
    ("dashboard_beneficiaries", &[]),
    ("dashboard_settlements", &[]),
    ("dashboard_webhooks", &[]),
    ("dashboard_resend", &[]),
    ("dashboard_test_event", &[]),
    ("get_asset", &[]),
    ("home", &[]),
    ("checkout_page", &[]),
    ("checkout_status", &[(404, &["ORDER_NOT_FOUND"]), (500, &["INTERNAL"])]),
    // Operations: only the shared answers.
    ("healthz", &[]),
    ("metrics", &[]),
    ("get_openapi", &[]),
    ("get_docs", &[]),
];

/// The envelope an operation's errors come in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Family {
    /// `{success: false, error: {code, message}}` (V1, admin, callbacks).
    V1,
    /// `{code, message, data: null}`.
    Legacy,
    /// Health, metrics and the document: V1 envelope, shared answers only.
    Operations,
}

fn family(path: &str) -> Family {
    if path.starts_with("/api/") {
        Family::Legacy
    } else if path.starts_with("/v1/") || path.starts_with("/admin/") || path.starts_with("/callbacks/") {
        Family::V1
    } else {
        Family::Operations
    }
}

fn requires(operation: &Operation, scheme: &str) -> bool {
    operation
        .security
        .iter()
        .flatten()
        .any(|requirement| serde_json::to_value(requirement).is_ok_and(|value| value.get(scheme).is_some()))
}

/// Every error answer of `operation` at `path`: status to codes or messages.
fn answers(path: &str, operation: &Operation) -> BTreeMap<u16, Vec<&'static str>> {
    use super::security;
    let mut answers: BTreeMap<u16, Vec<&'static str>> = BTreeMap::new();
    let mut add = |status: u16, values: &[&'static str]| {
        let entry = answers.entry(status).or_default();
        for value in values {
            if !entry.contains(value) {
                entry.push(value);
            }
        }
    };
    let has_body = operation.request_body.is_some();
    match family(path) {
        Family::V1 => {
            if requires(operation, security::API_KEY) {
                add(401, &["UNAUTHORIZED", "INVALID_API_KEY"]);
                add(403, &["MERCHANT_INACTIVE"]);
            }
            if requires(operation, security::V1_SIGNATURE) {
                add(401, &["INVALID_SIGNATURE"]);
            }
            if requires(operation, security::ADMIN_TOKEN) {
                add(401, &["UNAUTHORIZED"]);
            }
            if has_body {
                add(400, &["INVALID_BODY"]);
                add(408, &["REQUEST_TIMEOUT"]);
                add(413, &["PAYLOAD_TOO_LARGE"]);
            }
            // A path parameter the router cannot match (an encoded slash)
            // falls through to the unknown-route answer, as does a sandbox
            // route in live mode.
            if path.contains('{') || path.starts_with("/v1/sandbox/") {
                add(404, &["NOT_FOUND"]);
            }
            add(429, &["RATE_LIMITED"]);
            add(500, &["INTERNAL"]);
            add(503, &["UNAVAILABLE", "TIMEOUT"]);
        }
        Family::Legacy => {
            add(400, &[legacy::INVALID_PARAMETERS]);
            add(401, &[legacy::INVALID_CLIENT_ID]);
            add(413, &[legacy::BODY_TOO_LARGE]);
            add(429, &["Too Many Requests"]);
            add(500, &[legacy::INTERNAL]);
            add(503, &["Service Unavailable"]);
        }
        Family::Operations => {
            add(429, &["RATE_LIMITED"]);
            add(503, &["UNAVAILABLE"]);
        }
    }
    let id = operation.operation_id.as_deref().unwrap_or_default();
    if let Some((_, own)) = ROUTE_ERRORS.iter().find(|(name, _)| *name == id) {
        for (status, values) in own.iter() {
            add(*status, values);
        }
    }
    answers
}

/// The error schema of one status: the envelope with its code or message
/// narrowed to `values`.
fn narrowed(family: Family, values: &[&'static str]) -> RefOr<Schema> {
    let (envelope, narrowed_field) = match family {
        Family::Legacy => ("LegacyErrorBody", "message"),
        Family::V1 | Family::Operations => ("V1ErrorBody", "code"),
    };
    let allowed = ObjectBuilder::new()
        .schema_type(SchemaType::Type(Type::String))
        .enum_values(Some(values.to_vec()));
    let narrowing = match family {
        Family::Legacy => ObjectBuilder::new().property(narrowed_field, allowed),
        Family::V1 | Family::Operations => {
            ObjectBuilder::new().property("error", ObjectBuilder::new().property(narrowed_field, allowed))
        }
    };
    AllOfBuilder::new()
        .item(Ref::from_schema_name(envelope))
        .item(narrowing)
        .into()
}

fn status_reason(status: u16) -> &'static str {
    axum::http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Error")
}

fn describe(family: Family, status: u16, values: &[&'static str]) -> String {
    let listed = values.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(", ");
    match family {
        Family::Legacy => format!("{}: message {listed}.", status_reason(status)),
        Family::V1 | Family::Operations => format!("{}: code {listed}.", status_reason(status)),
    }
}

fn add_to_operation(path: &str, operation: &mut Operation) {
    let family = family(path);
    for (status, values) in answers(path, operation) {
        let key = status.to_string();
        if operation.responses.responses.contains_key(&key) {
            continue;
        }
        let response = ResponseBuilder::new()
            .description(describe(family, status, &values))
            .content(
                "application/json",
                ContentBuilder::new().schema(Some(narrowed(family, &values))).build(),
            )
            .build();
        operation.responses.responses.insert(key, RefOr::T(response));
    }
}

fn operations_mut(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        item.get.as_mut(),
        item.put.as_mut(),
        item.post.as_mut(),
        item.delete.as_mut(),
        item.options.as_mut(),
        item.head.as_mut(),
        item.patch.as_mut(),
        item.trace.as_mut(),
    ]
    .into_iter()
    .flatten()
}

/// Adds every operation's error answers.
pub fn add_error_answers(document: &mut OpenApi) {
    for (path, item) in document.paths.paths.iter_mut() {
        for operation in operations_mut(item) {
            add_to_operation(path, operation);
        }
    }
}

/// Operation ids of `document`, for the check that the table and the
/// routes name the same operations.
pub fn operation_ids(document: &OpenApi) -> Vec<String> {
    let mut ids = Vec::new();
    for item in document.paths.paths.values() {
        let mut item = item.clone();
        for operation in operations_mut(&mut item) {
            ids.extend(operation.operation_id.clone());
        }
    }
    ids
}
