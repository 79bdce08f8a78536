//! The API reference page behind `GET /docs`, rendered on the server from the OpenAPI 3.1 document of `/openapi.json`.
//! It is one static HTML page with an inline stylesheet: the CSP it is served under allows no script and no other load.

mod schema;

use std::collections::HashSet;

use maud::{html, Markup, PreEscaped, DOCTYPE};
use serde_json::{Map, Value};

use schema::{entries, is_true, list, prose, required_mark, table, text_at, Schemas, ANY_SCHEMA};

/// Path-item keys that hold operations, in the order a reader scans them.
const HTTP_METHODS: [&str; 8] = ["get", "post", "put", "patch", "delete", "head", "options", "trace"];

/// Colours keep at least 4.5:1 contrast in both schemes; tables scroll inside their wrapper on a narrow screen.
const STYLE: &str = r#"
:root{color-scheme:light dark;--text:#1b1d21;--muted:#4f5662;--bg:#fff;--panel:#f3f5f8;--line:#d5dae1;
--link:#0b57d0;--ok:#0f6b3a;--bad:#b42318}
@media (prefers-color-scheme:dark){:root{--text:#e6e8eb;--muted:#b3bac4;--bg:#16181c;--panel:#20242a;
--line:#3a4049;--link:#8ab4f8;--ok:#6fdc9c;--bad:#ff9b8f}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--text);font:16px/1.55 system-ui,-apple-system,"Segoe UI",sans-serif}
main{max-width:62rem;margin:0 auto;padding:1rem}
a{color:var(--link)}
h1{font-size:1.8rem;margin:.5rem 0}
h2{font-size:1.4rem;margin:2.5rem 0 .75rem;padding-bottom:.3rem;border-bottom:2px solid var(--line)}
h3{font-size:1.15rem;margin:0 0 .5rem;overflow-wrap:anywhere}
h4{font-size:1rem;margin:1.25rem 0 .4rem}
h5{font-size:.95rem;margin:1rem 0 .25rem}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.875em}
code{overflow-wrap:anywhere}
pre{margin:.25rem 0 0;padding:.75rem;overflow-x:auto;background:var(--panel);border:1px solid var(--line);
border-radius:6px}
pre code{font-size:1em;overflow-wrap:normal}
.prose{white-space:pre-line}
.note{margin:.15rem 0;color:var(--muted);font-size:.875rem}
.table-scroll{overflow-x:auto;margin:.5rem 0}
table{border-collapse:collapse;width:100%;font-size:.9rem}
th,td{padding:.4rem .55rem;text-align:left;vertical-align:top;border-bottom:1px solid var(--line)}
th{background:var(--panel)}
td:first-child{white-space:nowrap}td:first-child code{overflow-wrap:normal}td:last-child{min-width:12rem}
.method{display:inline-block;min-width:4.3em;padding:.1em .45em;border-radius:4px;background:#4b5563;color:#fff;
font:700 .75rem/1.6 ui-monospace,Menlo,monospace;text-align:center;vertical-align:middle}
.method-get{background:#0f6b3a}.method-post{background:#1d4ed8}.method-put,.method-patch{background:#8a4600}
.method-delete{background:#b42318}
.operation,.schema{margin-top:2rem;padding-top:1rem;border-top:1px solid var(--line)}
.summary{font-weight:600}
.deprecated{color:var(--bad);font-weight:600}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;margin:.5rem 0}
.facts dt{font-weight:600}.facts dd{margin:0}
.required{display:block;color:var(--bad);font-size:.75rem;font-weight:600}
.status{font-family:ui-monospace,Menlo,monospace}.status-2{color:var(--ok)}.status-4,.status-5{color:var(--bad)}
.media{margin:.5rem 0 0 .75rem;padding-left:.75rem;border-left:3px solid var(--line)}
.alternatives>li{margin:.5rem 0}
figure{margin:.75rem 0}
figcaption{font-size:.875rem;font-weight:600}
.contents ul{padding-left:1.1rem}.contents li{margin:.2rem 0}.contents a{text-decoration:none}
@media (max-width:40rem){main{padding:.75rem}h1{font-size:1.5rem}.media{margin-left:0;padding-left:.5rem}}
"#;

/// Renders the whole reference page. Any JSON value is accepted: parts that are missing or have the wrong shape are
/// left out, and every string taken from the document is escaped as text.
pub fn render(document: &Value) -> String {
    let mut anchors = Anchors::default();
    let schemas = Schemas::new(document, |name| anchors.claim("schema", name));
    let page = Page { document, schemas };
    let operations = page.collect_operations(false, &mut anchors);
    let webhooks = page.collect_operations(true, &mut anchors);
    let groups = group_by_tag(document, &operations, &mut anchors);
    // An operation filed under several tags is listed under each but described once, under its first group.
    let mut described = HashSet::new();
    let title = document.pointer("/info/title").and_then(Value::as_str).unwrap_or("API");
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " – API reference" }
                style { (PreEscaped(STYLE)) }
            }
            body { main {
                (page.introduction(title))
                (contents(&groups, &webhooks, !page.schemas.is_empty()))
                @for group in &groups {
                    section {
                        h2 id=(group.anchor) { (group.name) }
                        @if let Some(description) = group.description { (prose(description)) }
                        @for operation in &group.operations {
                            @if described.insert(operation.anchor.as_str()) { (page.operation_section(operation)) }
                        }
                    }
                }
                @if !webhooks.is_empty() {
                    section {
                        h2 id="webhooks" { "Webhooks" }
                        p.note { "Requests this API sends to your endpoints." }
                        @for webhook in &webhooks { (page.operation_section(webhook)) }
                    }
                }
                (page.schemas.section())
            } }
        }
    }
    .into_string()
}

/// Hands out fragment ids that are unique on the page and need no escaping in a URL.
#[derive(Default)]
struct Anchors {
    taken: HashSet<String>,
}

impl Anchors {
    fn claim(&mut self, kind: &str, name: &str) -> String {
        let words: Vec<&str> = name
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|word| !word.is_empty())
            .collect();
        let base = format!("{kind}-{}", words.join("-"));
        let mut anchor = base.clone();
        let mut suffix = 2;
        // Ends within `taken.len() + 1` tries: each try uses a suffix not tried before.
        while !self.taken.insert(anchor.clone()) {
            anchor = format!("{base}-{suffix}");
            suffix += 1;
        }
        anchor
    }
}

/// One operation or webhook, with the anchor its entries in the contents link to.
struct Operation<'a> {
    method: &'static str,
    /// The URL path, or the webhook's name.
    route: &'a str,
    details: &'a Map<String, Value>,
    /// Parameters declared on the path item apply to each of its operations.
    shared_parameters: &'a [Value],
    is_webhook: bool,
    anchor: String,
}

impl<'a> Operation<'a> {
    fn text(&self, key: &str) -> Option<&'a str> {
        self.details.get(key).and_then(Value::as_str)
    }

    fn tags(&self) -> impl Iterator<Item = &'a str> {
        list(self.details.get("tags")).iter().filter_map(Value::as_str)
    }
}

/// A group in the contents: a tag, or "Other" for untagged operations.
struct TagGroup<'a> {
    name: &'a str,
    description: Option<&'a str>,
    anchor: String,
    operations: Vec<&'a Operation<'a>>,
}

/// Tags declared in the document come first, in its order; tags only used by operations follow alphabetically.
fn group_by_tag<'a>(document: &'a Value, operations: &'a [Operation<'a>], anchors: &mut Anchors) -> Vec<TagGroup<'a>> {
    let mut names: Vec<(&str, Option<&str>)> = Vec::new();
    for tag in list(document.get("tags")) {
        if let Some(name) = text_at(tag, "name").filter(|name| names.iter().all(|(known, _)| known != name)) {
            names.push((name, text_at(tag, "description")));
        }
    }
    let mut undeclared: Vec<&str> = operations.iter().flat_map(Operation::tags).collect();
    undeclared.retain(|tag| names.iter().all(|(known, _)| known != tag));
    undeclared.sort_unstable();
    undeclared.dedup();
    names.extend(undeclared.into_iter().map(|name| (name, None)));
    let tagged = names.into_iter().map(|(name, description)| {
        let filed_here = operations
            .iter()
            .filter(|operation| operation.tags().any(|tag| tag == name));
        (name, description, filed_here.collect())
    });
    let untagged = operations.iter().filter(|operation| operation.tags().next().is_none());
    tagged
        .chain([("Other", None, untagged.collect())])
        .filter(|(_, _, operations): &(_, _, Vec<_>)| !operations.is_empty())
        .map(|(name, description, operations)| {
            let anchor = anchors.claim("tag", name);
            TagGroup {
                name,
                description,
                anchor,
                operations,
            }
        })
        .collect()
}

/// The contents: each tag group with its `METHOD path — summary` links, then webhooks and schemas.
fn contents(groups: &[TagGroup], webhooks: &[Operation], has_schemas: bool) -> Markup {
    let entry = |operation: &Operation| {
        html! {
            a href={ "#" (operation.anchor) } {
                (method_badge(operation.method)) " " code { (operation.route) }
                @if let Some(summary) = operation.text("summary") { " — " (summary) }
            }
        }
    };
    html! {
        nav.contents aria-labelledby="contents" {
            h2 id="contents" { "Contents" }
            ul {
                @for group in groups {
                    li {
                        a href={ "#" (group.anchor) } { (group.name) }
                        ul { @for operation in &group.operations { li { (entry(operation)) } } }
                    }
                }
                @if !webhooks.is_empty() {
                    li { a href="#webhooks" { "Webhooks" } ul { @for webhook in webhooks { li { (entry(webhook)) } } } }
                }
                @if has_schemas { li { a href="#schemas" { "Schemas" } } }
            }
        }
    }
}

/// The document and what every part of the page looks up in it.
struct Page<'a> {
    document: &'a Value,
    schemas: Schemas<'a>,
}

impl<'a> Page<'a> {
    fn collect_operations(&self, is_webhook: bool, anchors: &mut Anchors) -> Vec<Operation<'a>> {
        let path_items = self.document.get(if is_webhook { "webhooks" } else { "paths" });
        let mut operations = Vec::new();
        for (route, path_item) in entries(path_items) {
            let path_item = self.schemas.resolve(path_item);
            let shared_parameters = list(path_item.get("parameters"));
            for method in HTTP_METHODS {
                let Some(details) = path_item.get(method).and_then(Value::as_object) else {
                    continue;
                };
                let anchor = match is_webhook {
                    true => anchors.claim("webhook", route),
                    false => anchors.claim("op", &format!("{method}-{route}")),
                };
                operations.push(Operation {
                    method,
                    route,
                    details,
                    shared_parameters,
                    is_webhook,
                    anchor,
                });
            }
        }
        operations
    }

    fn introduction(&self, title: &str) -> Markup {
        let info = |key: &str| self.document.get("info").and_then(|info| text_at(info, key));
        let servers: Vec<&Value> = list(self.document.get("servers"))
            .iter()
            .filter(|s| text_at(s, "url").is_some())
            .collect();
        let schemes: Vec<(&String, &Value)> = entries(self.document.pointer("/components/securitySchemes")).collect();
        let scheme_rows = schemes.iter().map(|(name, scheme)| {
            let scheme = self.schemas.resolve(scheme);
            html! {
                tr {
                    td { code { (name) } }
                    td { (scheme_kind(scheme)) }
                    td { @if let Some(description) = text_at(scheme, "description") { (prose(description)) } }
                }
            }
        });
        html! {
            header {
                h1 { (title) }
                @if let Some(version) = info("version") { p { "Version " code { (version) } } }
                @if let Some(description) = info("description") { (prose(description)) }
            }
            @if !servers.is_empty() {
                section {
                    h2 id="servers" { "Servers" }
                    ul { @for server in servers { li {
                        code { (text_at(server, "url").unwrap_or_default()) }
                        @if let Some(description) = text_at(server, "description") { " — " (description) }
                    } } }
                }
            }
            @if !schemes.is_empty() {
                section {
                    h2 id="authentication" { "Authentication" }
                    (table(&["Scheme", "Kind", "Description"], scheme_rows))
                }
            }
        }
    }

    fn operation_section(&self, operation: &Operation<'a>) -> Markup {
        let security = self.security_text(operation);
        let operation_id = operation.text("operationId");
        let request_body = operation
            .details
            .get("requestBody")
            .map(|body| self.schemas.resolve(body));
        html! {
            section.operation id=(operation.anchor) {
                h3 {
                    (method_badge(operation.method)) " "
                    @if operation.is_webhook { "Webhook: " }
                    code { (operation.route) }
                }
                @if let Some(summary) = operation.text("summary") { p.summary { (summary) } }
                @if operation.details.get("deprecated") == Some(&Value::Bool(true)) { p.deprecated { "Deprecated" } }
                @if let Some(description) = operation.text("description") { (prose(description)) }
                @if operation_id.is_some() || security.is_some() {
                    dl.facts {
                        @if let Some(id) = operation_id { dt { "Operation ID" } dd { code { (id) } } }
                        @if let Some(security) = security { dt { "Security" } dd { (security) } }
                    }
                }
                (self.parameters(operation))
                @if let Some(body) = request_body.filter(|body| body.is_object()) {
                    h4 { "Request body" @if is_true(body, "required") { " (required)" } }
                    @if let Some(description) = text_at(body, "description") { (prose(description)) }
                    (self.media_types(body.get("content")))
                }
                (self.responses(operation.details.get("responses")))
            }
        }
    }

    /// Alternatives are joined by "or", schemes needed together by "and". Webhooks are requests this API makes, so
    /// the document-wide requirement does not apply to them.
    fn security_text(&self, operation: &Operation) -> Option<String> {
        let inherited = self.document.get("security").filter(|_| !operation.is_webhook);
        let requirements = operation.details.get("security").or(inherited)?.as_array()?;
        let scheme = |(name, scopes): (&String, &Value)| {
            let scopes: Vec<&str> = list(Some(scopes)).iter().filter_map(Value::as_str).collect();
            if scopes.is_empty() {
                name.clone()
            } else {
                format!("{name} ({})", scopes.join(", "))
            }
        };
        let alternatives = requirements.iter().filter_map(Value::as_object);
        let alternatives = alternatives.map(|requirement| joined(requirement.iter().map(scheme).collect(), " and "));
        Some(joined(alternatives.collect(), " or "))
    }

    fn parameters(&self, operation: &Operation<'a>) -> Markup {
        let mut parameters: Vec<&Value> = operation
            .shared_parameters
            .iter()
            .map(|p| self.schemas.resolve(p))
            .collect();
        for own in list(operation.details.get("parameters"))
            .iter()
            .map(|p| self.schemas.resolve(p))
        {
            // An operation's parameter replaces the path item's one with the same name and location.
            parameters.retain(|shared| shared.get("name") != own.get("name") || shared.get("in") != own.get("in"));
            parameters.push(own);
        }
        parameters.retain(|parameter| parameter.is_object());
        if parameters.is_empty() {
            return html! {};
        }
        let rows = parameters.into_iter().map(|parameter| {
            let schema = parameter.get("schema").unwrap_or(&ANY_SCHEMA);
            html! {
                tr {
                    td {
                        code { (text_at(parameter, "name").unwrap_or_default()) }
                        (required_mark(is_true(parameter, "required")))
                    }
                    td { (text_at(parameter, "in").unwrap_or_default()) }
                    td { (self.schemas.type_label(schema, 0)) }
                    td {
                        @if let Some(description) = text_at(parameter, "description") { (prose(description)) }
                        (self.schemas.notes(schema))
                    }
                }
            }
        });
        html! { h4 { "Parameters" } (table(&["Name", "In", "Type", "Description"], rows)) }
    }

    fn responses(&self, responses: Option<&'a Value>) -> Markup {
        let responses: Vec<(&String, &Value)> = entries(responses).collect();
        if responses.is_empty() {
            return html! {};
        }
        html! {
            h4 { "Responses" }
            @for (status, response) in responses {
                @let response = self.schemas.resolve(response);
                @let family = status.chars().next().filter(char::is_ascii_digit).unwrap_or('x');
                h5 { span class={ "status status-" (family) } { (status) } }
                @if let Some(description) = text_at(response, "description") { (prose(description)) }
                (self.media_types(response.get("content")))
            }
        }
    }

    fn media_types(&self, content: Option<&'a Value>) -> Markup {
        html! {
            @for (media_type, media) in entries(content) {
                div.media {
                    p { "Content type: " code { (media_type) } }
                    @if let Some(schema) = media.get("schema") { (self.schemas.render(schema)) }
                    (self.examples(media))
                }
            }
        }
    }

    fn examples(&self, media: &'a Value) -> Markup {
        let single = media.get("example").map(|value| (None, value));
        let named = entries(media.get("examples"))
            .filter_map(|(name, example)| Some((Some(name.as_str()), self.schemas.resolve(example).get("value")?)));
        html! {
            @for (name, value) in single.into_iter().chain(named) {
                figure {
                    figcaption { "Example" @if let Some(name) = name { ": " (name) } }
                    pre { code { (serde_json::to_string_pretty(value).unwrap_or_default()) } }
                }
            }
        }
    }
}

fn scheme_kind(scheme: &Value) -> Markup {
    let field = |key| text_at(scheme, key);
    html! {
        @match field("type") {
            Some("apiKey") => {
                "API key"
                @if let Some(place) = field("in") { " in " (place) }
                @if let Some(name) = field("name") { " " code { (name) } }
            }
            Some("http") => {
                "HTTP " (field("scheme").unwrap_or_default())
                @if let Some(format) = field("bearerFormat") { " (" (format) ")" }
            }
            Some(other) => { (other) }
            None => {}
        }
    }
}

/// An empty list of security requirements means no authentication.
fn joined(words: Vec<String>, separator: &str) -> String {
    if words.is_empty() {
        "none".to_owned()
    } else {
        words.join(separator)
    }
}

fn method_badge(method: &str) -> Markup {
    html! { span class={ "method method-" (method) } { (method.to_ascii_uppercase()) } }
}

#[cfg(test)]
mod tests;
