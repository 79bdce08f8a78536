//! The front page, `GET /`: what this server is (sandbox or live, its
//! version) and where to go from here (the API reference, the dashboard,
//! the API document, health). A browser gets a page; a client whose
//! `Accept` prefers JSON gets the same facts as JSON.

use crate::pages::html::{page_under, DASHBOARD_CONTENT_SECURITY_POLICY};
use crate::{AppState, Mode};
use axum::extract::State;
use axum::http::header::ACCEPT;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use maud::{html, DOCTYPE};
use serde::Serialize;
use utoipa::ToSchema;

/// What the front page says about this server.
#[derive(Serialize, ToSchema)]
pub struct Home {
    /// Always `paygate`.
    #[schema(pattern = "^paygate$")]
    name: &'static str,
    /// The server's version.
    version: &'static str,
    /// `sandbox` (test money, sandbox routes on) or `live`.
    #[schema(pattern = "^(sandbox|live)$")]
    mode: &'static str,
    /// Where to go from here.
    links: HomeLinks,
}

/// The front page's links, as paths on this server.
#[derive(Serialize, ToSchema)]
pub struct HomeLinks {
    /// The API reference page.
    docs: &'static str,
    /// The merchant dashboard.
    dashboard: &'static str,
    /// The API document, OpenAPI 3.1.
    openapi: &'static str,
    /// Health.
    healthz: &'static str,
}

const LINKS: HomeLinks = HomeLinks {
    docs: "/docs",
    dashboard: "/dashboard",
    openapi: "/openapi.json",
    healthz: "/healthz",
};

/// GET /: the front page.
#[utoipa::path(get, path = "/", tag = "Pages", operation_id = "home",
    summary = "Front page",
    description = "What this server is (sandbox or live, its version) and links to the API reference, the \
        dashboard, the API document and health. HTML, or JSON for a client whose `Accept` prefers it.",
    security(()),
    responses((status = 200, description = "The front page.", body = Home,
        content((String = "text/html"), (Home = "application/json")))))]
pub async fn home(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let mode = match state.config.mode {
        Mode::Sandbox => "sandbox",
        Mode::Live => "live",
    };
    let home = Home {
        name: "paygate",
        version: env!("CARGO_PKG_VERSION"),
        mode,
        links: LINKS,
    };
    if prefers_json(&headers) {
        return Json(home).into_response();
    }
    page_under(DASHBOARD_CONTENT_SECURITY_POLICY, StatusCode::OK, page(&home))
}

fn page(home: &Home) -> maud::Markup {
    let links = [
        (
            home.links.docs,
            "API reference",
            "every route, field and error, with examples",
        ),
        (
            home.links.dashboard,
            "Dashboard",
            "a merchant's orders, disbursements and keys",
        ),
        (home.links.openapi, "API document", "OpenAPI 3.1, for client generators"),
        (home.links.healthz, "Health", "whether this server takes writes"),
    ];
    html! {
        (DOCTYPE)
        html lang="en" {
            (crate::pages::html::head("paygate", crate::pages::dashboard::STYLESHEET_PATH))
            body {
                header.top { span.brand { "paygate" } }
                main {
                    h1 { "paygate " (home.version) }
                    @if home.mode == "sandbox" {
                        p { strong { "Sandbox" } ": test money. Payments and payouts can be completed through the sandbox routes." }
                    } @else {
                        p { strong { "Live" } ": real money." }
                    }
                    ul {
                        @for (href, label, what) in links {
                            li { a href=(href) { (label) } " — " (what) }
                        }
                    }
                }
            }
        }
    }
}

/// True when `Accept` names a JSON type before HTML (or any text type); a
/// range with `q=0` names nothing. A browser names HTML first; `*/*` alone
/// gets the page.
fn prefers_json(headers: &HeaderMap) -> bool {
    let mut best: Option<(f32, bool)> = None;
    for value in headers.get_all(ACCEPT) {
        let Ok(value) = value.to_str() else { continue };
        for range in value.split(',') {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or("").to_ascii_lowercase();
            let quality = parts
                .filter_map(|p| p.split_once('='))
                .find(|(name, _)| name.trim().eq_ignore_ascii_case("q"))
                .and_then(|(_, q)| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            if quality <= 0.0 {
                continue;
            }
            let is_json = match media.as_str() {
                "application/json" | "application/*" => true,
                "text/html" | "text/*" | "application/xhtml+xml" => false,
                _ => continue,
            };
            // The first of the highest quality wins.
            if best.is_none_or(|(q, _)| quality > q) {
                best = Some((quality, is_json));
            }
        }
    }
    best.is_some_and(|(_, is_json)| is_json)
}

#[cfg(test)]
mod tests {
    use super::prefers_json;
    use axum::http::{HeaderMap, HeaderValue};

    fn accept(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("accept", HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn json_only_when_it_comes_before_html() {
        let cases = [
            ("application/json", true),
            ("application/json, text/html", true),
            ("text/html, application/json", false),
            ("text/html;q=0.5, application/json", true),
            ("application/json;q=0, text/html", false),
            ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", false),
            ("*/*", false),
            ("image/png", false),
        ];
        for (value, expected) in cases {
            assert_eq!(prefers_json(&accept(value)), expected, "Accept: {value}");
        }
        assert!(!prefers_json(&HeaderMap::new()), "no Accept gets the page");
    }
}
