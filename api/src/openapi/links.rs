//! OpenAPI links: how an answer's ids feed the next call (create an order,
//! then get, pay or refund it). Readers follow them from one operation to
//! the next; contract testers (schemathesis) chain calls along them. utoipa
//! has no attribute for links, so they are added to the JSON.

use serde_json::{json, Map, Value};

/// (path, method, status, link name, target operation id, parameter, where its value is).
const LINKS: &[(&str, &str, &str, &str, &str, &str, &str)] = &[
    (
        "/v1/orders",
        "post",
        "201",
        "GetOrder",
        "get_order",
        "ref_code",
        "$response.body#/data/ref_code",
    ),
    (
        "/v1/orders",
        "post",
        "201",
        "PayOrder",
        "sandbox_pay",
        "ref_code",
        "$response.body#/data/ref_code",
    ),
    (
        "/v1/orders",
        "post",
        "201",
        "ExpireOrder",
        "sandbox_expire",
        "ref_code",
        "$response.body#/data/ref_code",
    ),
    (
        "/v1/orders",
        "post",
        "201",
        "FailOrder",
        "sandbox_fail",
        "ref_code",
        "$response.body#/data/ref_code",
    ),
    (
        "/v1/orders",
        "post",
        "201",
        "QrImage",
        "qr_png",
        "ref_code",
        "$response.body#/data/ref_code",
    ),
    (
        "/v1/orders",
        "post",
        "201",
        "RefundOrder",
        "create_refund",
        "ref_code",
        "$response.body#/data/ref_code",
    ),
    (
        "/v1/orders",
        "post",
        "201",
        "ListRefunds",
        "list_refunds",
        "ref_code",
        "$response.body#/data/ref_code",
    ),
    (
        "/v1/orders/{ref_code}/refund",
        "post",
        "201",
        "CompleteRefund",
        "sandbox_complete_refund",
        "id",
        "$response.body#/data/id",
    ),
    (
        "/v1/disbursements",
        "post",
        "201",
        "GetDisbursement",
        "get_disbursement",
        "id",
        "$response.body#/data/id",
    ),
    (
        "/v1/disbursements",
        "post",
        "201",
        "CompleteDisbursement",
        "complete_disbursement",
        "id",
        "$response.body#/data/id",
    ),
    (
        "/v1/disbursements",
        "post",
        "201",
        "ApproveDisbursement",
        "admin_approve_disbursement",
        "id",
        "$response.body#/data/id",
    ),
    (
        "/v1/disbursements",
        "post",
        "201",
        "RejectDisbursement",
        "admin_reject_disbursement",
        "id",
        "$response.body#/data/id",
    ),
    (
        "/v1/disbursements/batch",
        "post",
        "201",
        "GetBatch",
        "get_disbursement_batch",
        "id",
        "$response.body#/data/id",
    ),
    (
        "/v1/beneficiaries",
        "post",
        "201",
        "DeleteBeneficiary",
        "delete_beneficiary",
        "id",
        "$response.body#/data/id",
    ),
    (
        "/v1/settlements",
        "get",
        "200",
        "GetSettlement",
        "get_settlement",
        "id",
        "$response.body#/data/0/id",
    ),
    (
        "/v1/webhooks/deliveries",
        "get",
        "200",
        "ResendDelivery",
        "resend_delivery",
        "event_id",
        "$response.body#/data/0/event_id",
    ),
    (
        "/admin/v1/merchants",
        "post",
        "201",
        "GetMerchant",
        "admin_get_merchant",
        "id",
        "$response.body#/data/merchant/id",
    ),
    (
        "/admin/v1/merchants",
        "post",
        "201",
        "UpdateMerchant",
        "admin_update_merchant",
        "id",
        "$response.body#/data/merchant/id",
    ),
    (
        "/admin/v1/merchants",
        "post",
        "201",
        "SetPublicKey",
        "admin_set_public_key",
        "id",
        "$response.body#/data/merchant/id",
    ),
    (
        "/admin/v1/merchants",
        "post",
        "201",
        "RotateCredentials",
        "admin_rotate_credentials",
        "id",
        "$response.body#/data/merchant/id",
    ),
    (
        "/admin/v1/merchants",
        "post",
        "201",
        "CreditWallet",
        "admin_credit_wallet",
        "id",
        "$response.body#/data/merchant/id",
    ),
    (
        "/admin/v1/organizations",
        "post",
        "201",
        "RoutePayments",
        "admin_save_routing",
        "id",
        "$response.body#/data/id",
    ),
    (
        "/admin/v1/organizations",
        "post",
        "201",
        "RoutePayouts",
        "admin_save_payout_routing",
        "id",
        "$response.body#/data/id",
    ),
];

/// Adds the links to the document's JSON.
pub fn add(document: &mut Value) {
    for (path, method, status, name, target, parameter, value) in LINKS {
        let pointer = format!(
            "/paths/{}/{method}/responses/{status}",
            path.replace('~', "~0").replace('/', "~1")
        );
        let Some(Value::Object(response)) = document.pointer_mut(&pointer) else {
            continue;
        };
        let links = response.entry("links").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(links) = links {
            links.insert(
                (*name).into(),
                json!({ "operationId": target, "parameters": { *parameter: value } }),
            );
        }
    }
}

/// Every link names an operation of the document and a response it has.
#[cfg(test)]
mod tests {
    #[test]
    fn every_link_starts_at_a_response_and_ends_at_an_operation() {
        let document = crate::document_json();
        let ids = crate::openapi::errors::operation_ids(&crate::routes_and_document().1);
        for (path, method, status, name, target, _, _) in super::LINKS {
            let response = &document["paths"][path][method]["responses"][status];
            assert!(
                response["links"][name].is_object(),
                "{method} {path} {status} has no link {name}"
            );
            assert!(
                ids.iter().any(|id| id == target),
                "link {name} names no operation {target}"
            );
        }
    }
}
