//! The reference page against a small document: operations, webhooks and contents in order, its text escaped
//! wherever it appears, odd shapes rendered without a panic.

use serde_json::{json, Value};

use super::render;

const ATTACK: &str = "<script>alert(1)</script>";
const ATTACK_AS_TEXT: &str = "&lt;script&gt;alert(1)&lt;/script&gt;";

fn payments_document() -> Value {
    json!({
        "openapi": "3.1.0",
        "info": {"title": "paygate", "version": "1.4.0", "description": format!("Accept payments. {ATTACK}")},
        "servers": [{"url": "https://api.paygate.test", "description": "Sandbox"}],
        "tags": [{"name": "orders", "description": "Take payments"}, {"name": "disbursements"}],
        "security": [{"api_key": []}],
        "paths": {
            "/v1/orders/{order_id}": {
                "parameters": [{"name": "order_id", "in": "path", "required": true,
                                "schema": {"type": "string", "format": "uuid"}}],
                "get": {"tags": ["orders"], "summary": "Get an order", "operationId": "get_order",
                        "responses": {"200": {"description": "The order", "content": {"application/json":
                            {"schema": {"$ref": "#/components/schemas/Order"}}}}}}
            },
            "/v1/orders": {"post": {
                "tags": ["orders"], "summary": "Create an order", "operationId": "create_order",
                "description": "Starts a payment; `amount` is in rupiah.",
                "security": [{"bearer_auth": []}, {"api_key": []}],
                "parameters": [{"name": "dry_run", "in": "query", "description": "Validate only",
                                "schema": {"type": "boolean", "default": false}}],
                "requestBody": {"required": true, "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/CreateOrder"},
                    "example": {"amount": 150000, "method": "qris"}}}},
                "responses": {
                    "200": {"description": "Created", "content": {"application/json": {
                        "schema": {"$ref": "#/components/schemas/Order"},
                        "examples": {"paid": {"value": {"id": "ord_1", "status": "paid"}}}}}},
                    "400": {"description": "Invalid body", "content": {"application/json": {
                        "schema": {"$ref": "#/components/schemas/Error"},
                        "example": {"code": "invalid_amount", "message": ATTACK}}}}
                }
            }},
            "/v1/disbursements": {"get": {
                "tags": ["disbursements"], "summary": "List disbursements",
                "parameters": [{"name": "limit", "in": "query",
                                "schema": {"type": "integer", "minimum": 1, "maximum": 100}}],
                "responses": {"200": {"description": "A page", "content": {"application/json": {"schema":
                    {"type": "array", "items": {"$ref": "#/components/schemas/Disbursement"}}}}}}
            }},
            "/health": {"get": {"summary": "Liveness", "responses": {"204": {"description": "Up"}}}}
        },
        "webhooks": {"order.paid": {"post": {
            "summary": "An order was paid",
            "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Order"}}}},
            "responses": {"200": {"description": "Acknowledged"}}
        }}},
        "components": {
            "securitySchemes": {
                "bearer_auth": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                                "description": "Merchant session token"},
                "api_key": {"type": "apiKey", "in": "header", "name": "X-Api-Key",
                            "description": "Secret key from the dashboard"}
            },
            "schemas": {
                "Money": {"type": "object", "required": ["amount"], "properties": {
                    "amount": {"type": "integer", "format": "int64", "minimum": 1, "example": 150000},
                    "currency": {"type": "string", "const": "IDR"}}},
                "CreateOrder": {"description": "A new order", "allOf": [
                    {"$ref": "#/components/schemas/Money"},
                    {"type": "object", "required": ["method"], "properties": {
                        "method": {"type": "string", "enum": ["qris", "virtual_account", "ewallet"]},
                        "customer_email": {"type": ["string", "null"], "format": "email"},
                        "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
                        "items": {"type": "array", "items": {"type": "object", "properties": {
                            "sku": {"type": "string", "maxLength": 64}}}}}}]},
                "Order": {"type": "object", "required": ["id"], "properties": {
                    "id": {"type": "string"},
                    "status": {"$ref": "#/components/schemas/OrderStatus"},
                    "refunds": {"type": "array", "items": {"$ref": "#/components/schemas/Order"}}}},
                "OrderStatus": {"type": "string", "enum": ["pending", "paid", "expired"]},
                "Disbursement": {"type": "object", "properties": {
                    "destination": {"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/Money"}]}}},
                "Error": {"type": "object",
                          "properties": {"code": {"type": "string"}, "message": {"type": "string"}}}
            }
        }
    })
}

#[test]
fn page_shows_operations_parameters_bodies_responses_and_webhooks() {
    let html = render(&payments_document());
    let expected = [
        r#"<html lang="en">"#,
        "<main>",
        "<h1>paygate</h1>",
        "API key in header <code>X-Api-Key</code>",
        "HTTP bearer (JWT)",
        r##"<a href="#op-post-v1-orders"><span class="method method-post">POST</span> <code>/v1/orders</code>"##,
        "<code>/v1/orders</code> — Create an order</a>",
        r#"<section class="operation" id="op-post-v1-orders">"#,
        r#"id="op-get-v1-orders-order-id""#,
        "<code>create_order</code>",
        "<dd>bearer_auth or api_key</dd>",
        // The path item's parameter applies to its operation.
        r#"<td><code>order_id</code><span class="required">required</span></td><td>path</td><td>string</td>"#,
        "<td><code>dry_run</code></td><td>query</td><td>boolean</td>",
        "Request body (required)",
        r##"Type: <a href="#schema-CreateOrder">CreateOrder</a>"##,
        // allOf merges the fields of Money with those declared beside it.
        r#"<td><code>amount</code><span class="required">required</span></td><td>integer</td>"#,
        r#"<td><code>method</code><span class="required">required</span></td><td>string</td>"#,
        "<code>qris</code>, <code>virtual_account</code>, <code>ewallet</code>",
        "<td><code>customer_email</code></td><td>string | null</td>",
        "<td><code>metadata</code></td><td>map of string</td>",
        "<td><code>items[].sku</code></td>",
        "Maximum length: <code>64</code>",
        r#"<span class="status status-4">400</span>"#,
        "{\n  &quot;amount&quot;: 150000,\n  &quot;method&quot;: &quot;qris&quot;\n}",
        "Example: paid</figcaption>",
        "&quot;code&quot;: &quot;invalid_amount&quot;",
        r##"Type: array of <a href="#schema-Disbursement">Disbursement</a>"##,
        r##"<td><a href="#schema-Money">Money</a> | null</td>"##,
        r#"<td><code>destination.amount</code><span class="required">"#,
        r##"href="#webhook-order-paid""##,
        r#"id="webhook-order-paid"><h3><span class="method method-post">POST</span> Webhook: <code>order.paid"#,
        r#"<section class="schema" id="schema-OrderStatus"><h3>OrderStatus</h3>"#,
        // Order refers to itself: its fields are shown once, then the name links to them.
        r##"<td><code>refunds</code></td><td>array of <a href="#schema-Order">Order</a></td>"##,
    ];
    for piece in expected {
        assert!(html.contains(piece), "missing {piece:?}");
    }
    // The CSP lets nothing load, so nothing may ask to.
    for forbidden in [
        "<script",
        "<link",
        "<img",
        "<iframe",
        " src=",
        "@import",
        "url(",
        "javascript:",
    ] {
        assert!(!html.contains(forbidden), "found {forbidden:?}");
    }
}

#[test]
fn webhooks_do_not_inherit_the_document_security() {
    let html = render(&payments_document());
    let webhook = &html[html.find(r#"id="webhook-order-paid""#).unwrap()..];
    assert!(!webhook[..webhook.find("</section>").unwrap()].contains("Security"));
}

#[test]
fn contents_follow_declared_tags_then_other_tags_alphabetically_then_untagged() {
    let operation = |tag: Value| json!({"tags": tag, "responses": {}});
    let document = json!({
        "tags": [{"name": "orders"}, {"name": "disbursements"}, {"name": "unused"}],
        "paths": {
            "/a": {"get": operation(json!(["zeta"])), "post": operation(json!(["disbursements"]))},
            "/b": {"get": operation(json!(["alpha"])), "put": {}, "delete": operation(json!(["orders", "zeta"]))}
        }
    });
    let html = render(&document);
    let position = |anchor: &str| html.find(&format!(r##"<a href="#{anchor}">"##)).expect(anchor);
    let order = ["tag-orders", "tag-disbursements", "tag-alpha", "tag-zeta", "tag-Other"].map(position);
    assert!(order.windows(2).all(|pair| pair[0] < pair[1]), "{order:?}");
    assert!(!html.contains("tag-unused"));
    // Listed under both of its tags, described once.
    assert_eq!(html.matches(r##"href="#op-delete-b""##).count(), 2);
    assert_eq!(html.matches(r#"id="op-delete-b""#).count(), 1);
}

#[test]
fn document_text_is_escaped_wherever_it_appears() {
    let tag = "\"><img src=x onerror=alert(1)>";
    let document = json!({
        "info": {"title": ATTACK, "version": ATTACK},
        "servers": [{"url": ATTACK}],
        "tags": [{"name": tag, "description": ATTACK}],
        "paths": {format!("/x/{ATTACK}"): {"post": {
            "tags": [tag], "summary": ATTACK, "operationId": ATTACK, "security": [{ATTACK: [ATTACK]}],
            "parameters": [{"name": ATTACK, "in": "query", "description": ATTACK}],
            "requestBody": {"content": {ATTACK: {"schema": {"$ref": format!("#/components/schemas/{ATTACK}")},
                                                 "examples": {ATTACK: {"value": ATTACK}}}}},
            "responses": {ATTACK: {"description": ATTACK}}
        }}},
        "components": {
            "securitySchemes": {ATTACK: {"type": "apiKey", "in": ATTACK, "name": ATTACK}},
            "schemas": {ATTACK: {"description": ATTACK, "properties": {ATTACK: {
                "type": ATTACK, "enum": [ATTACK], "format": ATTACK, "default": ATTACK, "pattern": ATTACK}}}}
        }
    });
    let html = render(&document);
    assert!(!html.contains("<script"), "{html}");
    assert!(!html.contains("<img"), "{html}");
    assert!(html.matches(ATTACK_AS_TEXT).count() >= 20, "{html}");
}

#[test]
fn odd_shapes_render_without_panicking() {
    let shapes = [
        json!(null),
        json!([]),
        json!("openapi"),
        json!(42),
        json!({"info": [], "tags": {}, "servers": "x", "security": [1, null, {}], "paths": []}),
        json!({"paths": {"/a": [], "/b": {"get": [], "post": null, "parameters": {}}}}),
        json!({"paths": {"/a": {"get": {"tags": "x", "parameters": [null, 1, {"schema": []}],
            "requestBody": [], "responses": [], "security": {}}}}}),
        json!({"paths": {"/a": {"get": {"requestBody": {"content": []},
            "responses": {"200": [], "x": {"content": {"a/b": [], "c/d": {"schema": [], "examples": [1]}}}}}}}}),
        json!({"components": {"schemas": [], "securitySchemes": {"a": null, "b": {"type": 1}}}}),
        json!({"components": {"schemas": {"A": null, "B": [], "C": {"type": 5, "properties": [],
            "items": "x", "allOf": {}, "enum": {}, "required": [1]}}}}),
        json!({"paths": {"/a": {"$ref": "#/paths/~1a"}}, "webhooks": {"w": {"$ref": "#"}}}),
        json!({"components": {"schemas": {"Loop": {"$ref": "#/components/schemas/Loop"},
            "Root": {"$ref": "#"}, "Broken": {"$ref": "elsewhere.json#/X"}}}}),
    ];
    for document in shapes {
        let html = render(&document);
        assert!(html.starts_with("<!DOCTYPE html>"), "{document}");
        assert!(html.ends_with("</html>"), "{document}");
    }
}
