//! An HTML page's answer: the markup with the headers every page is sent
//! with, so no page can go out without its Content-Security-Policy.

use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::{html, Markup};

/// What a page may load: its own scripts, styles and images (and `data:`
/// images), fetches to its own origin, nothing inline, never framed (no
/// clickjacking of a payment page), no `<base>` rewrite, forms only to
/// itself.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// What a dashboard page may load: as a checkout page, but no script at
/// all (its forms post; nothing runs in a merchant's signed-in session) and
/// no fetches.
pub const DASHBOARD_CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'self'; img-src 'self' data:; \
     form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The headers of every page, with its `policy`. `no-referrer`: a checkout
/// URL is a capability, and must not leak to the sites a payer goes on to.
/// `no-store`: a page shows live state and, on the checkout, who is being
/// paid.
fn security_headers(policy: &'static str) -> [(HeaderName, HeaderValue); 5] {
    [
        (header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(policy)),
        (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
        (header::REFERRER_POLICY, HeaderValue::from_static("no-referrer")),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
    ]
}

/// `markup` as a `text/html` answer of `status` with the page headers.
pub fn page(status: StatusCode, markup: Markup) -> Response {
    page_under(CONTENT_SECURITY_POLICY, status, markup)
}

/// `page`, under another Content-Security-Policy.
pub fn page_under(policy: &'static str, status: StatusCode, markup: Markup) -> Response {
    (
        status,
        security_headers(policy),
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        )],
        markup.into_string(),
    )
        .into_response()
}

/// A page's `<head>`: the charset, the viewport, `title` and the stylesheet
/// at `stylesheet` (this origin's, as the policies allow).
pub fn head(title: &str, stylesheet: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            title { (title) }
            link rel="stylesheet" href=(stylesheet);
        }
    }
}
