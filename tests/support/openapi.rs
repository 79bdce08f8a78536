//! Checks every answer the tests see against the served API document: the
//! status must be one the operation documents, and a JSON body must match
//! that status's schema (error envelopes included, their codes narrowed per
//! route). A test that sees an undocumented answer fails, naming it.

use reqwest::StatusCode;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// The document as `paygate openapi` prints it (the same as `/openapi.json`).
pub fn document() -> &'static Value {
    static DOCUMENT: OnceLock<Value> = OnceLock::new();
    DOCUMENT.get_or_init(|| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_paygate"))
            .arg("openapi")
            .output()
            .expect("paygate openapi runs");
        assert!(output.status.success(), "paygate openapi failed");
        serde_json::from_slice(&output.stdout).expect("the document is JSON")
    })
}

/// The document's path template matching `path` (query stripped): the one
/// with the most literal segments, so `/v1/disbursements/batch` beats
/// `/v1/disbursements/{id}`.
pub fn template_of(path: &str) -> Option<&'static str> {
    let path = path.split('?').next().unwrap_or(path);
    let segments: Vec<&str> = path.split('/').collect();
    let paths = document()["paths"].as_object()?;
    paths
        .keys()
        .filter_map(|template| {
            let parts: Vec<&str> = template.split('/').collect();
            if parts.len() != segments.len() {
                return None;
            }
            let mut literal = 0;
            for (part, segment) in parts.iter().zip(&segments) {
                if part.starts_with('{') && part.ends_with('}') {
                    if segment.is_empty() {
                        return None;
                    }
                } else if part == segment {
                    literal += 1;
                } else {
                    return None;
                }
            }
            Some((literal, template.as_str()))
        })
        .max_by_key(|(literal, _)| *literal)
        .map(|(_, template)| template)
}

/// A path as one JSON-pointer segment.
fn pointer_escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// `schema` with every `#/...` reference replaced by what it names.
fn inline_refs(schema: &Value, depth: usize) -> Value {
    assert!(depth < 32, "the document's schemas nest too deep (a recursive schema?)");
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get("$ref") {
                let pointer = target.strip_prefix('#').expect("local reference");
                let resolved = document()
                    .pointer(pointer)
                    .unwrap_or_else(|| panic!("{target} resolves"));
                return inline_refs(resolved, depth + 1);
            }
            Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), inline_refs(v, depth + 1)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| inline_refs(v, depth + 1)).collect()),
        other => other.clone(),
    }
}

/// A validator of the schema at `pointer` in the document, compiled once.
pub fn validate_at(pointer: &str, instance: &Value) -> Result<(), String> {
    static VALIDATORS: OnceLock<Mutex<HashMap<String, std::sync::Arc<jsonschema::Validator>>>> = OnceLock::new();
    let validators = VALIDATORS.get_or_init(Default::default);
    let cached = validators
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .get(pointer)
        .cloned();
    let validator = match cached {
        Some(validator) => validator,
        None => {
            // The schema with its references resolved in place: small, so
            // it compiles in well under a millisecond (the document's
            // schemas are not recursive).
            let schema = inline_refs(document().pointer(pointer).expect("the schema exists"), 0);
            let validator = jsonschema::options()
                .with_draft(jsonschema::Draft::Draft202012)
                .should_validate_formats(true)
                .build(&schema)
                .unwrap_or_else(|error| panic!("schema at {pointer} compiles: {error}"));
            let validator = std::sync::Arc::new(validator);
            validators
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .insert(pointer.to_string(), validator.clone());
            validator
        }
    };
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|error| format!("{} at {}", error, error.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// Checks one answer. `method` is `None` when the caller does not know it:
/// then any operation of the path may account for the answer.
pub fn check(method: Option<&str>, path: &str, status: StatusCode, content_type: &str, body: &[u8]) {
    let Some(template) = template_of(path) else {
        // An unknown route: the router's 404, which no operation documents.
        return;
    };
    let item = &document()["paths"][template];
    let methods: Vec<String> = match method {
        Some(method) => vec![method.to_ascii_lowercase()],
        None => ["get", "post", "put", "patch", "delete"]
            .iter()
            .filter(|m| item.get(**m).is_some())
            .map(|m| m.to_string())
            .collect(),
    };
    let operations: Vec<&String> = methods.iter().filter(|m| item.get(m.as_str()).is_some()).collect();
    if operations.is_empty() || status == StatusCode::METHOD_NOT_ALLOWED {
        // A method the route does not serve: the router's 405.
        return;
    }
    let mut failures = Vec::new();
    for method in operations {
        let responses = &item[method.as_str()]["responses"];
        let code = status.as_u16().to_string();
        let class = format!("{}XX", status.as_u16() / 100);
        let Some((key, response)) = [code.as_str(), class.as_str(), "default"]
            .iter()
            .find_map(|key| responses.get(*key).map(|r| (*key, r)))
        else {
            failures.push(format!(
                "{} {template}: status {status} is not documented",
                method.to_uppercase()
            ));
            continue;
        };
        let media = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        let Some(content) = response.get("content") else {
            return;
        };
        if content.get(&media).is_none() {
            failures.push(format!(
                "{} {template} {status}: content type {media:?} is not documented",
                method.to_uppercase()
            ));
            continue;
        }
        if media != "application/json" {
            return;
        }
        let Ok(instance) = serde_json::from_slice::<Value>(body) else {
            // Valid JSON a `Value` cannot hold (an order's metadata with a
            // number past f64) is passed through byte for byte: unchecked.
            if serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok() {
                return;
            }
            failures.push(format!(
                "{} {template} {status}: body is not JSON",
                method.to_uppercase()
            ));
            continue;
        };
        let pointer = format!(
            "/paths/{}/{method}/responses/{key}/content/application~1json/schema",
            pointer_escape(template)
        );
        match validate_at(&pointer, &instance) {
            Ok(()) => return,
            Err(errors) => failures.push(format!(
                "{} {template} {status}: body breaks the document: {errors}\nbody: {instance}",
                method.to_uppercase()
            )),
        }
    }
    if !failures.is_empty() {
        panic!("answer not as documented:\n{}", failures.join("\n"));
    }
}
