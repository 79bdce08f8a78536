//! How the reference page shows a schema: a type line, a field table with dotted names for nested objects, and the
//! alternatives of `oneOf`/`anyOf`. Also the document readers and HTML pieces the rest of the page shares.

use std::collections::{HashMap, HashSet};

use maud::{html, Markup};
use serde_json::Value;

/// Bounds recursion and page size whatever the document nests: deeper schemas are cut off.
const NESTING_DEPTH_MAX: usize = 6;
/// A `$ref` chain longer than this is taken for a loop and left where it stopped.
const REFERENCE_HOPS_MAX: usize = 8;
const SCHEMA_REF_PREFIX: &str = "#/components/schemas/";
/// Validation keywords shown under a field, worded the way a reader knows them.
const BOUNDS: [(&str, &str); 11] = [
    ("minimum", "Minimum"),
    ("exclusiveMinimum", "Greater than"),
    ("maximum", "Maximum"),
    ("exclusiveMaximum", "Less than"),
    ("minLength", "Minimum length"),
    ("maxLength", "Maximum length"),
    ("pattern", "Pattern"),
    ("minItems", "Minimum items"),
    ("maxItems", "Maximum items"),
    ("minProperties", "Minimum properties"),
    ("maxProperties", "Maximum properties"),
];
const FLAGS: [(&str, &str); 3] = [
    ("readOnly", "Read-only"),
    ("writeOnly", "Write-only"),
    ("deprecated", "Deprecated"),
];
/// Stands in for an absent schema, which allows any value.
pub(super) static ANY_SCHEMA: Value = Value::Null;

/// Renders schemas and resolves `$ref`s against one document; a component's name links to its entry in the page.
pub(super) struct Schemas<'a> {
    document: &'a Value,
    anchors: HashMap<&'a str, String>,
}

impl<'a> Schemas<'a> {
    /// `claim_anchor` gives each component schema its fragment id, in document order.
    pub(super) fn new(document: &'a Value, mut claim_anchor: impl FnMut(&str) -> String) -> Self {
        let components = entries(document.pointer("/components/schemas"));
        let anchors = components
            .map(|(name, _)| (name.as_str(), claim_anchor(name)))
            .collect();
        Schemas { document, anchors }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.anchors.is_empty()
    }

    /// The page's last section: every component schema under its own anchor.
    pub(super) fn section(&self) -> Markup {
        html! {
            @if !self.is_empty() {
                section {
                    h2 id="schemas" { "Schemas" }
                    @for (name, schema) in entries(self.document.pointer("/components/schemas")) {
                        (self.component(name, schema))
                    }
                }
            }
        }
    }

    /// A schema where an operation uses it.
    pub(super) fn render(&self, schema: &'a Value) -> Markup {
        self.details(schema, &mut HashSet::new(), 0)
    }

    fn component(&self, name: &str, schema: &'a Value) -> Markup {
        // Counting the schema as shown already turns a reference to itself into a link.
        let own_reference = format!("{SCHEMA_REF_PREFIX}{}", name.replace('~', "~0").replace('/', "~1"));
        html! {
            section.schema id=[self.anchors.get(name)] {
                h3 { (name) }
                (self.details(schema, &mut HashSet::from([own_reference]), 0))
            }
        }
    }

    /// A schema where it is used: its type line, notes, the table of its fields and its alternatives. Each `$ref` is
    /// expanded once per use and only linked after that, which keeps recursive and widely shared schemas finite.
    fn details(&self, schema: &'a Value, shown: &mut HashSet<String>, depth: usize) -> Markup {
        let first_time = reference_of(schema).is_none_or(|reference| !shown.contains(reference));
        let mut rows = Vec::new();
        self.field_rows(schema, "", shown, depth, &mut rows);
        let target = self.resolve(schema);
        let heading = if target.get("oneOf").is_some() {
            "One of:"
        } else {
            "Any of:"
        };
        // A single alternative besides null is an optional value, whose fields the table already shows.
        let alternatives = match non_null_alternatives(target) {
            alternatives if alternatives.len() > 1 && first_time && depth < NESTING_DEPTH_MAX => alternatives,
            _ => Vec::new(),
        };
        html! {
            p { "Type: " (self.type_label(schema, 0)) }
            (self.notes(schema))
            @if !rows.is_empty() { (table(&["Field", "Type", "Description"], rows)) }
            @if !alternatives.is_empty() {
                p { (heading) }
                ol.alternatives {
                    @for alternative in alternatives { li { (self.details(alternative, shown, depth + 1)) } }
                }
            }
        }
    }

    /// One row per field; nested objects add rows under dotted names such as `customer.email` or `items[].sku`.
    fn field_rows(
        &self,
        schema: &'a Value,
        prefix: &str,
        shown: &mut HashSet<String>,
        depth: usize,
        rows: &mut Vec<Markup>,
    ) {
        if depth > NESTING_DEPTH_MAX {
            return;
        }
        let mut shape = ObjectShape::default();
        self.gather_shape(schema, shown, depth, &mut shape);
        for (name, property) in &shape.properties {
            let path = if prefix.is_empty() {
                name.to_string()
            } else {
                format!("{prefix}.{name}")
            };
            rows.push(html! {
                tr {
                    td { code { (path) } (required_mark(shape.required.contains(name))) }
                    td { (self.type_label(property, 0)) }
                    td { (self.notes(property)) }
                }
            });
            self.field_rows(property, &path, shown, depth + 1, rows);
        }
        if shape.properties.is_empty() {
            // A list or a map has no fields of its own: its items' or values' fields stand in for them.
            let (element, suffix) = match (shape.items, shape.additional.filter(|values| values.is_object())) {
                (Some(items), _) => (items, "[]"),
                (None, Some(values)) => (values, ".*"),
                (None, None) => return,
            };
            let path = if prefix.is_empty() {
                String::new()
            } else {
                format!("{prefix}{suffix}")
            };
            self.field_rows(element, &path, shown, depth + 1, rows);
        }
    }

    /// Merges what an object schema says about its fields across `$ref` and `allOf`.
    fn gather_shape(&self, schema: &'a Value, shown: &mut HashSet<String>, depth: usize, shape: &mut ObjectShape<'a>) {
        if depth > NESTING_DEPTH_MAX {
            return;
        }
        if let Some(reference) = reference_of(schema) {
            let target = self.follow(reference).filter(|_| shown.insert(reference.to_owned()));
            if let Some(target) = target {
                self.gather_shape(target, shown, depth + 1, shape);
            }
            return;
        }
        for part in list(schema.get("allOf")) {
            self.gather_shape(part, shown, depth + 1, shape);
        }
        if let [optional] = non_null_alternatives(schema)[..] {
            self.gather_shape(optional, shown, depth + 1, shape);
        }
        for (name, property) in entries(schema.get("properties")) {
            if shape.properties.iter().all(|(known, _)| *known != name) {
                shape.properties.push((name, property));
            }
        }
        shape
            .required
            .extend(list(schema.get("required")).iter().filter_map(Value::as_str));
        shape.items = shape.items.or(schema.get("items"));
        shape.additional = shape.additional.or(schema.get("additionalProperties"));
    }

    /// A one-line type such as `string | null`, `array of Order` or `map of integer`; schema names link to their
    /// section.
    pub(super) fn type_label(&self, schema: &Value, depth: usize) -> Markup {
        if depth > NESTING_DEPTH_MAX {
            return html! { "…" };
        }
        if let Some(reference) = reference_of(schema) {
            return self.schema_link(reference);
        }
        if let Some(constant) = schema.get("const") {
            return html! { code { (constant) } };
        }
        for (keyword, separator) in [("oneOf", " | "), ("anyOf", " | "), ("allOf", " & ")] {
            let parts = list(schema.get(keyword));
            // "X | null" reads better than "null | X", the order generators tend to write.
            let ordered = parts
                .iter()
                .filter(|part| !is_null(part))
                .chain(parts.iter().filter(|part| is_null(part)));
            if !parts.is_empty() {
                return html! {
                    @for (index, part) in ordered.enumerate() {
                        @if index > 0 { (separator) }
                        (self.type_label(part, depth + 1))
                    }
                };
            }
        }
        let mut types: Vec<&str> = match schema.get("type") {
            Some(Value::String(name)) => vec![name.as_str()],
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if types.is_empty() {
            types.push(match (schema.get("properties"), schema.get("items")) {
                (Some(_), _) => "object",
                (None, Some(_)) => "array",
                (None, None) => "any",
            });
        }
        // OpenAPI 3.0 marks nullability with a keyword where 3.1 lists "null" among the types.
        if is_true(schema, "nullable") && !types.contains(&"null") {
            types.push("null");
        }
        let values = schema.get("additionalProperties").filter(|values| values.is_object());
        html! {
            @for (index, name) in types.into_iter().enumerate() {
                @if index > 0 { " | " }
                @if name == "array" {
                    "array of " (self.element_label(schema.get("items").unwrap_or(&ANY_SCHEMA), depth + 1))
                } @else if let (true, None, Some(values)) = (name == "object", schema.get("properties"), values) {
                    "map of " (self.element_label(values, depth + 1))
                } @else {
                    (name)
                }
            }
        }
    }

    /// Parentheses keep "array of (string | null)" apart from "array of string | null", a nullable array.
    fn element_label(&self, element: &Value, depth: usize) -> Markup {
        let types = element.get("type").and_then(Value::as_array).map_or(1, Vec::len);
        let alternatives = list(element.get("oneOf").or_else(|| element.get("anyOf"))).len();
        let is_union = types > 1 || alternatives > 1 || is_true(element, "nullable");
        html! { @if is_union { "(" (self.type_label(element, depth)) ")" } @else { (self.type_label(element, depth)) } }
    }

    fn schema_link(&self, reference: &str) -> Markup {
        let name = reference
            .strip_prefix(SCHEMA_REF_PREFIX)
            .map(|name| name.replace("~1", "/").replace("~0", "~"));
        let anchor = name.as_deref().and_then(|name| self.anchors.get(name));
        html! {
            @match (name.as_deref(), anchor) {
                (Some(name), Some(anchor)) => { a href={ "#" (anchor) } { (name) } }
                (name, _) => { (name.unwrap_or(reference)) }
            }
        }
    }

    /// A schema's description and constraints, read from the schema itself or else from what its `$ref` names.
    pub(super) fn notes(&self, schema: &'a Value) -> Markup {
        let target = self.resolve(schema);
        let keyword = |key: &str| schema.get(key).or_else(|| target.get(key));
        let values = list(keyword("enum"));
        let example = keyword("example").or_else(|| list(keyword("examples")).first());
        html! {
            @if let Some(description) = keyword("description").and_then(Value::as_str) { (prose(description)) }
            @if !values.is_empty() {
                p.note {
                    "Values: "
                    @for (index, value) in values.iter().enumerate() { @if index > 0 { ", " } code { (plain(value)) } }
                }
            }
            @if let Some(format) = keyword("format").and_then(Value::as_str) { p.note { "Format: " code { (format) } } }
            @for (key, label) in BOUNDS {
                // OpenAPI 3.0 wrote exclusive bounds as booleans beside minimum and maximum.
                @if let Some(bound) = keyword(key).filter(|bound| !bound.is_boolean()) {
                    p.note { (label) ": " code { (plain(bound)) } }
                }
            }
            @if let Some(default) = keyword("default") { p.note { "Default: " code { (default) } } }
            @if let Some(example) = example { p.note { "Example: " code { (example) } } }
            @for (key, label) in FLAGS { @if keyword(key) == Some(&Value::Bool(true)) { p.note { (label) } } }
        }
    }

    /// Follows `$ref`s within the document; a broken or looping chain stops where it is.
    pub(super) fn resolve(&self, value: &'a Value) -> &'a Value {
        let mut current = value;
        for _ in 0..REFERENCE_HOPS_MAX {
            match reference_of(current).and_then(|reference| self.follow(reference)) {
                Some(target) => current = target,
                None => break,
            }
        }
        current
    }

    fn follow(&self, reference: &str) -> Option<&'a Value> {
        self.document.pointer(reference.strip_prefix('#')?)
    }
}

/// The fields of an object schema after `$ref` and `allOf` are merged.
#[derive(Default)]
struct ObjectShape<'a> {
    properties: Vec<(&'a str, &'a Value)>,
    required: HashSet<&'a str>,
    items: Option<&'a Value>,
    additional: Option<&'a Value>,
}

pub(super) fn table(headings: &[&str], rows: impl IntoIterator<Item = Markup>) -> Markup {
    html! {
        div.table-scroll { table {
            thead { tr { @for heading in headings { th scope="col" { (heading) } } } }
            tbody { @for row in rows { (row) } }
        } }
    }
}

/// Descriptions come from doc comments, where `code` spans are common; other Markdown shows as written.
pub(super) fn prose(text: &str) -> Markup {
    html! {
        div.prose {
            @for (index, piece) in text.split('`').enumerate() {
                @if index % 2 == 1 { code { (piece) } } @else { (piece) }
            }
        }
    }
}

/// Only required fields are marked: most are optional, and a mark on every row would be noise.
pub(super) fn required_mark(required: bool) -> Markup {
    html! { @if required { span.required { "required" } } }
}

/// A JSON scalar as a reader writes it: strings without their quotes.
fn plain(value: &Value) -> String {
    value.as_str().map_or_else(|| value.to_string(), str::to_owned)
}

/// `oneOf` or else `anyOf`, without `{"type": "null"}`: generators write an optional value as `[null, value]`.
fn non_null_alternatives(schema: &Value) -> Vec<&Value> {
    let alternatives = list(schema.get("oneOf").or_else(|| schema.get("anyOf")));
    alternatives
        .iter()
        .filter(|alternative| !is_null(alternative))
        .collect()
}

fn is_null(schema: &Value) -> bool {
    text_at(schema, "type") == Some("null")
}

fn reference_of(value: &Value) -> Option<&str> {
    value.get("$ref")?.as_str()
}

pub(super) fn text_at<'v>(value: &'v Value, key: &str) -> Option<&'v str> {
    value.get(key)?.as_str()
}

pub(super) fn is_true(value: &Value, key: &str) -> bool {
    value.get(key) == Some(&Value::Bool(true))
}

pub(super) fn list(value: Option<&Value>) -> &[Value] {
    value.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

pub(super) fn entries(value: Option<&Value>) -> impl Iterator<Item = (&String, &Value)> {
    value.and_then(Value::as_object).into_iter().flatten()
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::Schemas;

    fn rendered(document: &Value, schema: &Value) -> String {
        let schemas = Schemas::new(document, |name| format!("schema-{name}"));
        schemas.render(schema).into_string()
    }

    fn label(schema: Value) -> String {
        let document = json!({"components": {"schemas": {"Money": {"type": "object"}}}});
        Schemas::new(&document, |name| format!("schema-{name}"))
            .type_label(&schema, 0)
            .into_string()
    }

    #[test]
    fn types_read_as_a_reader_says_them() {
        let money = r##"<a href="#schema-Money">Money</a>"##;
        assert_eq!(label(json!({"type": ["string", "null"]})), "string | null");
        assert_eq!(label(json!({"type": "integer", "nullable": true})), "integer | null");
        assert_eq!(
            label(json!({"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/Money"}]})),
            format!("{money} | null")
        );
        assert_eq!(
            label(json!({"type": "array", "items": {"$ref": "#/components/schemas/Money"}})),
            format!("array of {money}")
        );
        assert_eq!(
            label(json!({"type": "object", "additionalProperties": {"type": "integer"}})),
            "map of integer"
        );
        let optional_items = json!({"type": ["array", "null"], "items": {"type": ["string", "null"]}});
        assert_eq!(label(optional_items), "array of (string | null) | null");
        assert_eq!(label(json!({"const": "IDR"})), "<code>&quot;IDR&quot;</code>");
        assert_eq!(label(json!({"$ref": "#/components/schemas/Unknown"})), "Unknown");
        assert_eq!(label(json!({})), "any");
    }

    #[test]
    fn one_of_lists_each_alternative_with_its_fields() {
        let document = json!({"components": {"schemas": {
            "Bank": {"type": "object", "properties": {"account_number": {"type": "string"}}},
            "Ewallet": {"type": "object", "properties": {"phone": {"type": "string", "pattern": "^\\+62"}}}}}});
        let schema =
            json!({"oneOf": [{"$ref": "#/components/schemas/Bank"}, {"$ref": "#/components/schemas/Ewallet"}]});
        let html = rendered(&document, &schema);
        assert!(html.contains("One of:"), "{html}");
        assert!(html.contains("<td><code>account_number</code>"), "{html}");
        assert!(html.contains("Pattern: <code>^\\+62</code>"), "{html}");
    }

    #[test]
    fn recursion_stops_at_a_link_whatever_the_loop() {
        let node = |name: &str| format!("#/components/schemas/{name}");
        let document = json!({"components": {"schemas": {
            "Node": {"properties": {"children": {"type": "array", "items": {"$ref": node("Node")}},
                                    "parent": {"oneOf": [{"type": "null"}, {"$ref": node("Node")}]},
                                    "extra": {"additionalProperties": {"$ref": node("Node")}}},
                     "allOf": [{"$ref": node("Node")}], "anyOf": [{"$ref": node("Node")}, {"$ref": node("Pair")}]},
            "Pair": {"properties": {"other": {"$ref": node("Node")}}},
            "Loop": {"$ref": node("Knot")},
            "Knot": {"$ref": node("Loop")}}}});
        for name in ["Node", "Pair", "Loop"] {
            let html = rendered(&document, &json!({"$ref": node(name)}));
            assert!(html.matches("<td><code>children</code>").count() <= 1, "{html}");
        }
        let html = rendered(&document, &json!({"$ref": node("Node")}));
        assert!(html.contains(r##"array of <a href="#schema-Node">Node</a>"##), "{html}");
    }

    #[test]
    fn deep_inline_nesting_is_cut_off() {
        // Each level holds the one below once, so the documents grow linearly.
        let (mut fields, mut alternatives) = (json!({"type": "string"}), json!({"type": "string"}));
        for level in 0..300 {
            fields = match level % 3 {
                0 => json!({"type": "array", "items": fields}),
                1 => json!({"properties": {"inner": fields}}),
                _ => json!({"allOf": [fields]}),
            };
            alternatives = json!({"oneOf": [{"type": "array", "items": alternatives}, {"type": "integer"}]});
        }
        let html = rendered(
            &json!({}),
            &json!({"properties": {"fields": fields, "alternatives": alternatives}}),
        );
        assert!(html.contains("array of (array of ("), "{html}");
        assert!(html.contains("…"), "{html}");
        assert!(html.len() < 100_000, "{} bytes", html.len());
    }
}
