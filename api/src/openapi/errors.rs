//! Each route's error answers, added to the document as responses whose
//! schema narrows the envelope to the codes (V1, admin) or messages (Legacy)
//! that route can answer. What every route of a kind shares (authentication,
//! bodies, limits) is derived from the operation; what is its own is in
//! `ROUTE_ERRORS`. The integration tests check every answer they see against
//! these schemas, so a code answered but not listed fails them.

use crate::error::table::{Answer, ErrorKind};
use std::collections::BTreeMap;
use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::schema::{AllOfBuilder, ObjectBuilder, Schema, SchemaType, Type};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, ResponseBuilder};
use ErrorKind::*;

/// Error answers of each operation beyond those of its kind, by operation
/// id: kinds of the error table, each answered with its row's status and
/// code (V1, admin) or message (Legacy).
pub const ROUTE_ERRORS: &[(&str, &[ErrorKind])] = &[
    // V1 orders and refunds.
    (
        "create_order",
        &[DuplicateOrder, IdempotencyKeyReused, NoVendor, VendorError],
    ),
    ("get_order", &[OrderNotFound]),
    ("list_orders", &[InvalidQuery]),
    ("qr_png", &[OrderNotFound]),
    (
        "create_refund",
        &[
            OrderNotFound,
            DuplicateIdempotencyKey,
            InvalidStatus,
            AmountExceedsOrder,
            RefundNotSupported,
            IdempotencyKeyReused,
            InsufficientBalance,
            NoVendor,
            VendorError,
        ],
    ),
    ("list_refunds", &[OrderNotFound]),
    ("sandbox_pay", &[OrderNotFound, InvalidStatus]),
    ("sandbox_expire", &[OrderNotFound, InvalidStatus]),
    ("sandbox_fail", &[OrderNotFound, InvalidStatus]),
    ("sandbox_complete_refund", &[InvalidId, RefundNotFound, InvalidStatus]),
    // V1 balance.
    ("get_balance", &[NotWalletMerchant]),
    ("balance_history", &[InvalidQuery, NotWalletMerchant]),
    // V1 disbursements.
    (
        "create_disbursement",
        &[
            BankNotFound,
            EwalletNotFound,
            MissingBankInfo,
            MissingEwalletInfo,
            NotWalletMerchant,
            BeneficiaryNotFound,
            DuplicateIdempotencyKey,
            BankDisabled,
            EwalletDisabled,
            InsufficientBalance,
            AmountExceedsLimit,
            DailyLimitExceeded,
            AmountBelowMinimum,
            NoVendor,
        ],
    ),
    ("get_disbursement", &[DisbursementNotFound]),
    ("list_disbursements", &[InvalidQuery]),
    (
        "complete_disbursement",
        &[DisbursementNotFound, StatusConflict, InvalidStatus],
    ),
    (
        "create_disbursement_batch",
        &[
            NotWalletMerchant,
            DuplicateIdempotencyKey,
            IdempotencyKeyReused,
            NoVendor,
        ],
    ),
    ("get_disbursement_batch", &[InvalidId, NotFound]),
    // V1 beneficiaries.
    (
        "create_beneficiary",
        &[
            BankNotFound,
            EwalletNotFound,
            MissingBankInfo,
            MissingEwalletInfo,
            BankDisabled,
            EwalletDisabled,
        ],
    ),
    ("list_beneficiaries", &[]),
    ("delete_beneficiary", &[InvalidId, BeneficiaryNotFound]),
    // V1 catalog, settlements, webhooks.
    ("list_banks", &[]),
    ("list_ewallets", &[]),
    ("list_settlements", &[InvalidQuery]),
    ("get_settlement", &[InvalidId, NotFound]),
    ("list_deliveries", &[InvalidQuery]),
    ("resend_delivery", &[InvalidId, EventNotFound, NoNotifyUrl]),
    // Admin.
    ("admin_create_merchant", &[BankNotFound, NotFound]),
    ("admin_get_merchant", &[InvalidId, MerchantNotFound]),
    ("admin_update_merchant", &[InvalidId, BankNotFound, MerchantNotFound]),
    ("admin_set_public_key", &[InvalidId, MerchantNotFound]),
    ("admin_rotate_credentials", &[InvalidId, MerchantNotFound]),
    (
        "admin_credit_wallet",
        &[InvalidId, NotWalletMerchant, MerchantNotFound, DuplicateIdempotencyKey],
    ),
    ("admin_verify_ledger", &[]),
    ("admin_create_user", &[InvalidId, MerchantNotFound, EmailTaken]),
    (
        "admin_approve_disbursement",
        &[InvalidId, DisbursementNotFound, InvalidStatus, NoVendor],
    ),
    (
        "admin_reject_disbursement",
        &[InvalidId, DisbursementNotFound, InvalidStatus],
    ),
    ("admin_create_organization", &[]),
    ("admin_save_bank", &[]),
    ("admin_save_ewallet", &[EwalletPathNotFound]),
    ("admin_save_vendor", &[]),
    ("admin_save_routing", &[InvalidId, NotFound]),
    ("admin_save_payout_routing", &[InvalidId, NotFound]),
    ("admin_run_settlements", &[MerchantNotFound]),
    // Vendor callbacks.
    (
        "vendor_callback",
        &[
            InvalidBody,
            InvalidSignature,
            NotFound,
            OrderNotFound,
            RefundNotFound,
            DisbursementNotFound,
            StatusConflict,
            InvalidStatus,
        ],
    ),
    // Legacy: messages, not codes.
    (
        "legacy_create_order",
        &[InvalidSignature, DuplicateOrder, NoVendor, VendorError],
    ),
    ("legacy_query_order", &[InvalidSignature, OrderNotFound]),
    (
        "legacy_create_bank_disbursement",
        &[
            InvalidRsaSignature,
            DuplicateIdempotencyKey,
            PublicKeyNotSet,
            BankNotFound,
            BankDisabled,
            InsufficientBalance,
            AmountExceedsLimit,
            DailyLimitExceeded,
            NotWalletMerchant,
            NoVendor,
        ],
    ),
    (
        "legacy_create_ewallet_disbursement",
        &[
            EwalletNotFound,
            EwalletDisabled,
            InvalidRsaSignature,
            DuplicateIdempotencyKey,
            PublicKeyNotSet,
            InsufficientBalance,
            AmountExceedsLimit,
            DailyLimitExceeded,
            AmountBelowMinimum,
            NotWalletMerchant,
            NoVendor,
        ],
    ),
    (
        "legacy_query_disbursement",
        &[InvalidRsaSignature, DisbursementNotFound, PublicKeyNotSet],
    ),
    (
        "legacy_get_balance",
        &[InvalidRsaSignature, PublicKeyNotSet, NotWalletMerchant],
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
    ("checkout_status", &[OrderNotFound, Internal]),
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

/// How `family` answers `kind`: the row's V1 answer or its Legacy one.
fn answer_of(family: Family, kind: ErrorKind) -> Option<Answer> {
    let row = kind.row();
    match family {
        Family::V1 | Family::Operations => row.v1,
        Family::Legacy => row.legacy,
    }
}

/// Every error answer of `operation` at `path`: status to codes or messages.
fn answers(path: &str, operation: &Operation) -> BTreeMap<u16, Vec<&'static str>> {
    use super::security;
    let family = family(path);
    let mut answers: BTreeMap<u16, Vec<&'static str>> = BTreeMap::new();
    let mut add = |kinds: &[ErrorKind]| {
        for (status, value) in kinds.iter().filter_map(|kind| answer_of(family, *kind)) {
            let entry = answers.entry(status).or_default();
            if !entry.contains(&value) {
                entry.push(value);
            }
        }
    };
    let has_body = operation.request_body.is_some();
    match family {
        Family::V1 => {
            if requires(operation, security::API_KEY) {
                add(&[Unauthorized, InvalidApiKey, MerchantInactive]);
            }
            if requires(operation, security::V1_SIGNATURE) {
                add(&[InvalidSignature]);
            }
            if requires(operation, security::ADMIN_TOKEN) {
                add(&[Unauthorized]);
            }
            if has_body {
                add(&[InvalidBody, RequestTimeout, PayloadTooLarge]);
            }
            // A path parameter the router cannot match (an encoded slash)
            // falls through to the unknown-route answer, as does a sandbox
            // route in live mode.
            if path.contains('{') || path.starts_with("/v1/sandbox/") {
                add(&[NotFound]);
            }
            add(&[RateLimited, Internal, Unavailable, Timeout]);
        }
        // Every Legacy route takes a body naming its merchant.
        Family::Legacy => add(&[
            InvalidBody,
            MerchantNotFound,
            PayloadTooLarge,
            RateLimited,
            Internal,
            Unavailable,
        ]),
        Family::Operations => add(&[RateLimited, Unavailable]),
    }
    let id = operation.operation_id.as_deref().unwrap_or_default();
    if let Some((_, own)) = ROUTE_ERRORS.iter().find(|(name, _)| *name == id) {
        add(own);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind a route lists is one its API can answer: a V1 route lists
    /// no Legacy-only kind and a Legacy route no kind Legacy has no message
    /// for, so no listed error is dropped from the document unseen.
    #[test]
    fn every_listed_error_has_an_answer_in_its_routes_api() {
        let (_, document) = crate::routes_and_document();
        let mut checked = 0;
        for (path, item) in document.paths.paths.iter() {
            let mut item = item.clone();
            for operation in operations_mut(&mut item) {
                let id = operation.operation_id.clone().unwrap_or_default();
                let (_, own) = ROUTE_ERRORS
                    .iter()
                    .find(|(name, _)| *name == id)
                    .unwrap_or_else(|| panic!("{id} is not in ROUTE_ERRORS"));
                for kind in own.iter() {
                    assert!(
                        answer_of(family(path), *kind).is_some(),
                        "{id} ({path}) lists {kind:?}, which its API has no answer for"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 100, "only {checked} listed errors were checked");
    }

    /// The document's error answers are the table's rows: a Legacy route's
    /// 404 names `Order ID not found` as `OrderNotFound`'s row says, and a V1
    /// route's the code of its own row.
    #[test]
    fn documented_answers_come_from_the_table_rows() {
        let (_, document) = crate::routes_and_document();
        let described = |path: &str, status: &str| -> String {
            let item = &document.paths.paths[path];
            let operation = item.get.as_ref().or(item.post.as_ref()).expect("an operation");
            match &operation.responses.responses[status] {
                RefOr::T(response) => response.description.clone(),
                RefOr::Ref(_) => panic!("{path} {status} is a reference"),
            }
        };
        assert_eq!(
            described("/api/order/query", "404"),
            "Not Found: message `Order ID not found`."
        );
        assert_eq!(
            described("/v1/orders/{ref_code}", "404"),
            "Not Found: code `NOT_FOUND`, `ORDER_NOT_FOUND`."
        );
        assert_eq!(
            described("/api/disbursement/create", "422"),
            "Unprocessable Entity: message `Public Key is not set`, `Bank Cannot be used for Disbursement`, \
             `Insufficient Balance`, `Maximum Request Amount Exceeded`, `Daily Limit Exceeded`, \
             `Merchant setting is not Valid`."
        );
    }
}
