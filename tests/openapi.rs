//! The API document: `/openapi.json` is OpenAPI 3.1 and
//! valid; the router and the document name the same routes both ways; every
//! route's error answers are described; `/docs` is a page rendered from it
//! with nothing loaded from elsewhere. (Every other test checks what it sees
//! against the document too: `support::openapi`.)

mod support;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use support::{openapi, TestServer};

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

/// Every (method, path template) of the document.
fn operations(document: &Value) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for method in METHODS {
            if item.get(method).is_some() {
                found.push((method.to_string(), path.clone()));
            }
        }
    }
    found
}

/// A concrete path for a template: each parameter gets a value the route
/// accepts as a segment.
fn concrete(template: &str) -> String {
    template
        .split('/')
        .map(|part| {
            if part.starts_with('{') {
                "00000000-0000-4000-8000-000000000000"
            } else {
                part
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[tokio::test]
async fn the_served_document_is_openapi_3_1_and_valid() {
    let server = TestServer::start();
    let response = server
        .client
        .get(format!("{}/openapi.json", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/json"));
    let served: Value = response.json().await.unwrap();
    assert_eq!(&served, openapi::document(), "served and printed documents differ");
    assert_eq!(served["openapi"], "3.1.0");

    // The OpenAPI 3.1 schema (spec.openapis.org/oas/3.1/schema/2022-10-07,
    // Apache-2.0, as openapi-spec-validator ships it).
    let meta: Value = serde_json::from_str(include_str!("fixtures/oas-3.1-schema.json")).unwrap();
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&meta)
        .expect("the OpenAPI 3.1 schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&served)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "not a valid OpenAPI 3.1 document: {errors:?}");

    // Every reference resolves.
    fn refs(value: &Value, found: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(target)) = map.get("$ref") {
                    found.push(target.clone());
                }
                map.values().for_each(|v| refs(v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| refs(v, found)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    refs(&served, &mut found);
    assert!(found.len() > 100, "{} references", found.len());
    for target in found {
        let pointer = target.strip_prefix('#').expect("local reference");
        assert!(served.pointer(pointer).is_some(), "{target} does not resolve");
    }

    // Its security schemes, tags per area and webhooks.
    let schemes = served["components"]["securitySchemes"].as_object().unwrap();
    assert_eq!(schemes["api_key"]["name"], "X-API-Key");
    assert_eq!(schemes["api_key"]["in"], "header");
    assert_eq!(schemes["admin_token"]["scheme"], "bearer");
    assert_eq!(schemes["v1_signature"]["name"], "X-Signature");
    assert_eq!(schemes["legacy_x_signature"]["name"], "X-SIGNATURE");
    assert!(schemes["legacy_body_signature"]["description"]
        .as_str()
        .unwrap()
        .contains("SHA-512"));
    let tags: Vec<&str> = served["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for tag in [
        "Orders",
        "Disbursements",
        "Balance",
        "Legacy",
        "Admin",
        "Sandbox",
        "Callbacks",
    ] {
        assert!(tags.contains(&tag), "tag {tag} missing from {tags:?}");
    }
    for webhook in ["order", "refund", "disbursement"] {
        assert!(
            served["webhooks"][webhook]["post"]["requestBody"].is_object(),
            "webhook {webhook}"
        );
    }
    let mut examples = 0;
    for (method, path) in operations(&served) {
        let operation = &served["paths"][&path][&method];
        for (status, response) in operation["responses"].as_object().unwrap() {
            if let Some(example) = response["content"]["application/json"].get("example") {
                let pointer = format!(
                    "/paths/{}/{method}/responses/{status}/content/application~1json/schema",
                    path.replace('~', "~0").replace('/', "~1")
                );
                openapi::validate_at(&pointer, example).unwrap_or_else(|errors| {
                    panic!("{method} {path} {status}: the example breaks its schema: {errors}")
                });
                examples += 1;
            }
        }
        assert!(
            operation["operationId"].is_string(),
            "{method} {path} has no operationId"
        );
        assert!(
            operation["tags"].as_array().is_some_and(|t| !t.is_empty()),
            "{method} {path} has no tag"
        );
        let responses = operation["responses"].as_object().unwrap();
        assert!(
            responses
                .keys()
                .any(|status| status.starts_with('2') || status.starts_with('3')),
            "{method} {path} documents no success"
        );
        assert!(
            responses.contains_key("500")
                || path.starts_with("/healthz")
                || path.starts_with("/metrics")
                || path.starts_with("/openapi")
                || path.starts_with("/docs")
                // Pages answer in HTML, and embedded files read nothing that could fail.
                || operation["tags"][0] == "Pages",
            "{method} {path} documents no 500"
        );
    }
    assert!(examples >= 50, "{examples} examples");
}

#[test]
fn each_route_lists_its_own_error_codes() {
    let document = openapi::document();
    let codes = |method: &str, path: &str, status: &str| -> Vec<String> {
        let schema = &document["paths"][path][method]["responses"][status]["content"]["application/json"]["schema"];
        let narrowing = &schema["allOf"][1];
        let values = if narrowing["properties"]["error"].is_object() {
            &narrowing["properties"]["error"]["properties"]["code"]["enum"]
        } else {
            &narrowing["properties"]["message"]["enum"]
        };
        values
            .as_array()
            .unwrap_or_else(|| panic!("{method} {path} {status}: no codes"))
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    };
    // V1 routes document the codes they answer.
    assert!(codes("post", "/v1/orders", "409").contains(&"DUPLICATE_ORDER".into()));
    assert!(codes("post", "/v1/orders", "401").contains(&"INVALID_SIGNATURE".into()));
    assert_eq!(
        codes("post", "/v1/orders", "503"),
        ["UNAVAILABLE", "TIMEOUT", "NO_VENDOR", "VENDOR_ERROR"]
    );
    let refund = codes("post", "/v1/orders/{ref_code}/refund", "422");
    assert!(refund.contains(&"INVALID_STATUS".into()) && refund.contains(&"AMOUNT_EXCEEDS_ORDER".into()));
    let disbursement = codes("post", "/v1/disbursements", "422");
    for code in [
        "INSUFFICIENT_BALANCE",
        "AMOUNT_EXCEEDS_LIMIT",
        "DAILY_LIMIT_EXCEEDED",
        "BANK_DISABLED",
    ] {
        assert!(disbursement.contains(&code.into()), "{code}");
    }
    assert_eq!(
        codes("get", "/v1/balance", "403"),
        ["MERCHANT_INACTIVE", "NOT_WALLET_MERCHANT"]
    );
    assert_eq!(codes("delete", "/v1/beneficiaries/{id}", "400"), ["INVALID_ID"]);
    assert_eq!(codes("get", "/v1/settlements/{id}", "404"), ["NOT_FOUND"]);
    // Legacy routes document their messages.
    assert!(codes("post", "/api/disbursement/create-ewallet", "422")
        .contains(&"Minimum requestAmount for DANA is 20000".into()));
    assert_eq!(codes("post", "/api/order/query", "404"), ["Order ID not found"]);
    // A route answers no code it does not list: a GET has no body errors.
    assert!(document["paths"]["/v1/balance"]["get"]["responses"]
        .get("413")
        .is_none());
}

/// Both ways: every documented operation is served (not the router's 404
/// or 405), and every other method on a documented path is the router's
/// 405. Requests carry no credentials, so nothing changes.
#[tokio::test]
async fn the_router_and_the_document_name_the_same_routes() {
    let server = TestServer::start();
    let document = openapi::document();
    let operations = operations(document);
    assert!(operations.len() >= 54, "{} operations", operations.len());
    for (method, template) in &operations {
        let path = concrete(template);
        let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
        let response = server
            .client
            .request(method.clone(), format!("{}{path}", server.base))
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap();
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}: not served");
        let router_not_found = status == StatusCode::NOT_FOUND
            && (body["error"]["message"] == "no such route" || body["message"] == "Not Found");
        assert!(!router_not_found, "{method} {path}: not served ({body})");
    }
    for path in document["paths"].as_object().unwrap().keys() {
        let item = &document["paths"][path];
        for method in METHODS.iter().filter(|m| item.get(**m).is_none()) {
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let response = server
                .client
                .request(method.clone(), format!("{}{}", server.base, concrete(path)))
                .send()
                .await
                .unwrap();
            assert_eq!(
                response.status(),
                StatusCode::METHOD_NOT_ALLOWED,
                "{method} {path} is served but not documented"
            );
        }
    }
    // A path the document does not name is the router's 404.
    let unknown = server.call(Method::GET, "/v1/not-a-route", None, None).await;
    support::assert_v1_error(&unknown, 404, "NOT_FOUND");
}

#[tokio::test]
async fn docs_is_a_page_rendered_from_the_document_with_nothing_from_elsewhere() {
    let server = TestServer::start();
    let response = server.client.get(format!("{}/docs", server.base)).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let headers = response.headers().clone();
    assert!(headers["content-type"].to_str().unwrap().starts_with("text/html"));
    let policy = headers["content-security-policy"].to_str().unwrap();
    assert!(
        policy.contains("default-src 'none'") && policy.contains("frame-ancestors 'none'"),
        "{policy}"
    );
    let page = response.text().await.unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") || page.starts_with("<!doctype html>"));
    for (_, path) in operations(openapi::document()) {
        let escaped = path.replace('&', "&amp;").replace('<', "&lt;");
        assert!(page.contains(&escaped), "{path} missing from /docs");
    }
    assert!(!page.contains("<script"), "the page runs no script");
    assert!(
        !page.contains(" src=") && !page.contains("<link"),
        "the page loads nothing from elsewhere"
    );
}
