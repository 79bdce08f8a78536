//! The document's examples are real answers of the sandbox: this tour drives
//! a sandbox server through every kind of call a merchant and an operator
//! make, records each answer by operation and status, and checks the
//! committed `api/src/openapi/examples.json` against it: the same
//! operations and statuses, each example the shape the server answers now
//! (the same fields, of the same JSON types; ids and times differ per run).
//! `PAYGATE_RECORD_EXAMPLES=1 cargo test --test openapi_examples` writes the
//! file anew from the run. This file holds the tour's record and the
//! check; its modules make the calls.

#[path = "../support/mod.rs"]
mod support;

mod disbursements;
mod legacy;
mod operator;
mod orders;

use reqwest::Method;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use support::*;

const EXAMPLES_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/api/src/openapi/examples.json");

/// Answers by `"<operation id> <status>"`, the first of each kept.
#[derive(Default)]
struct Tour(BTreeMap<String, Value>);

impl Tour {
    fn keep(&mut self, operation: &str, reply: &Reply) -> Value {
        let key = format!("{operation} {}", reply.status.as_u16());
        self.0.entry(key).or_insert_with(|| reply.body.clone());
        reply.body.clone()
    }

    /// `GET path` (as the merchant whose key is `key`, if any), kept.
    async fn get(&mut self, server: &TestServer, operation: &str, path: &str, key: Option<&str>) -> Value {
        let reply = server.call(Method::GET, path, key, None).await;
        self.keep(operation, &reply)
    }

    /// `POST path` with `body` (as the merchant whose key is `key`, if any), kept.
    async fn post(
        &mut self,
        server: &TestServer,
        operation: &str,
        path: &str,
        key: Option<&str>,
        body: Option<Value>,
    ) -> Value {
        let reply = server.call(Method::POST, path, key, body).await;
        self.keep(operation, &reply)
    }
}

/// The JSON shape of a value: each path with its type.
fn shape(value: &Value, path: String, into: &mut BTreeMap<String, &'static str>) {
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    into.insert(path.clone(), kind);
    match value {
        // A map keyed by status holds whichever statuses the items reached.
        Value::Object(map) if path.ends_with("/by_status") => {
            map.values().for_each(|v| shape(v, format!("{path}/*"), into))
        }
        Value::Object(map) => map.iter().for_each(|(k, v)| shape(v, format!("{path}/{k}"), into)),
        // Arrays by their first item: lists differ in length per run.
        Value::Array(items) => {
            if let Some(first) = items.first() {
                shape(first, format!("{path}/0"), into)
            }
        }
        _ => {}
    }
}

fn shape_of(value: &Value) -> BTreeMap<String, &'static str> {
    let mut into = BTreeMap::new();
    shape(value, String::new(), &mut into);
    into
}

/// Whether two shapes are the same, a null matching any type: a field that
/// is null in one run (a vendor id not yet given, when the sandbox's
/// hand-over was slower) and set in another is the same field.
fn same_shape(a: &BTreeMap<String, &'static str>, b: &BTreeMap<String, &'static str>) -> Result<(), String> {
    let null_above = |shape: &BTreeMap<String, &'static str>, path: &str| {
        shape
            .iter()
            .any(|(other, kind)| *kind == "null" && path.starts_with(&format!("{other}/")))
    };
    for (path, kind) in a {
        match b.get(path) {
            Some(other) if other == kind || *other == "null" || *kind == "null" => {}
            Some(other) => return Err(format!("{path} is {kind} in one and {other} in the other")),
            None if null_above(b, path) => {}
            None => return Err(format!("{path} is in one only")),
        }
    }
    for path in b.keys() {
        if !a.contains_key(path) && !null_above(a, path) {
            return Err(format!("{path} is in one only"));
        }
    }
    Ok(())
}

async fn tour() -> BTreeMap<String, Value> {
    let server = TestServer::start();
    let mut tour = Tour::default();
    let merchant = server.create_wallet_merchant().await;
    let admin_merchant = server
        .admin(Method::GET, &format!("/admin/v1/merchants/{}", merchant.id), None)
        .await;
    tour.keep("admin_get_merchant", &admin_merchant);
    // A top-up, then the same one again (refused).
    let credit = format!("/admin/v1/merchants/{}/wallet/credit", merchant.id);
    let top_up = json!({ "amount_minor": 50_000_000, "reason": "sandbox top-up", "idempotency_key": "top-up-1" });
    tour.keep("admin_credit_wallet", &server.admin_post(&credit, top_up.clone()).await);
    tour.keep("admin_credit_wallet", &server.admin_post(&credit, top_up).await);
    orders::tour_orders(&server, &mut tour, &merchant).await;
    disbursements::tour_disbursements(&server, &mut tour, &merchant).await;
    operator::tour_operator(&server, &mut tour, &merchant).await;
    legacy::tour_legacy(&server, &mut tour, &merchant).await;

    let health = server.call(Method::GET, "/healthz", None, None).await;
    tour.keep("healthz", &health);
    tour.0
}

#[tokio::test]
async fn the_documents_examples_are_the_sandboxs_answers() {
    let answers = tour().await;
    if std::env::var_os("PAYGATE_RECORD_EXAMPLES").is_some() {
        let mut file = Map::new();
        for (key, body) in &answers {
            file.insert(key.clone(), body.clone());
        }
        let text = serde_json::to_string_pretty(&Value::Object(file)).unwrap() + "\n";
        std::fs::write(EXAMPLES_PATH, text).unwrap();
        return;
    }
    let recorded: Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(EXAMPLES_PATH).unwrap()).expect("examples.json is JSON");
    let recorded_keys: Vec<&String> = recorded.keys().collect();
    let answered_keys: Vec<&String> = answers.keys().collect();
    assert_eq!(
        recorded_keys, answered_keys,
        "examples.json and the tour differ: record again (PAYGATE_RECORD_EXAMPLES=1)"
    );
    for (key, example) in &recorded {
        if let Err(difference) = same_shape(&shape_of(example), &shape_of(&answers[key])) {
            panic!("{key}: the example is not the shape the sandbox answers now ({difference}): record again");
        }
    }
    // The served document carries them.
    let document = openapi::document();
    let mut carried = 0;
    for item in document["paths"].as_object().unwrap().values() {
        for operation in item.as_object().unwrap().values() {
            for response in operation["responses"].as_object().into_iter().flat_map(|r| r.values()) {
                if response["content"]["application/json"]["example"].is_object() {
                    carried += 1;
                }
            }
        }
    }
    assert_eq!(carried, recorded.len(), "every recorded example is in the document");
}
