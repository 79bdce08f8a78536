//! Examples in the document are real answers of the sandbox, recorded by
//! `tests/openapi_examples.rs` into `examples.json` (keyed `"<operation id>
//! <status>"`) and checked against the server's answers on every test run.

use serde_json::Value;

/// The recorded answers.
const RECORDED: &str = include_str!("examples.json");

/// Puts each recorded answer into its response as the `application/json`
/// example.
pub fn add(document: &mut Value) {
    let Ok(Value::Object(recorded)) = serde_json::from_str::<Value>(RECORDED) else {
        return;
    };
    let Some(Value::Object(paths)) = document.get_mut("paths") else {
        return;
    };
    for item in paths.values_mut() {
        let Value::Object(item) = item else { continue };
        for operation in item.values_mut() {
            let Some(id) = operation.get("operationId").and_then(Value::as_str).map(str::to_string) else {
                continue;
            };
            let Some(Value::Object(responses)) = operation.get_mut("responses") else {
                continue;
            };
            for (status, response) in responses.iter_mut() {
                let Some(example) = recorded.get(&format!("{id} {status}")) else {
                    continue;
                };
                if let Some(Value::Object(content)) = response.pointer_mut("/content/application~1json") {
                    content.insert("example".into(), example.clone());
                }
            }
        }
    }
}
