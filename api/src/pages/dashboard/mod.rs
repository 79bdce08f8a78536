//! The merchant dashboard, `/dashboard`: server-rendered
//! pages behind a session (`session`), signed in by `auth`. Pages read and
//! act through the same engine calls as the API. No script: forms post,
//! every state-changing one with the session's CSRF token (else 403).

mod answers;
mod auth;
mod developers;
mod money;
mod orders;
mod overview;
mod records;
pub mod session;
mod webhooks;

use crate::AppState;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use maud::{html, Markup, DOCTYPE};
use session::{Session, SESSION_COOKIE};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The dashboard routes.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(overview::overview))
        .routes(routes!(orders::orders_page))
        .routes(routes!(orders::order_page))
        .routes(routes!(orders::refund))
        .routes(routes!(money::history_page))
        .routes(routes!(money::history_export))
        .routes(routes!(money::disbursements_page, money::create_disbursement))
        .routes(routes!(money::create_batch))
        .routes({
            // Up to 1,000 rows: more than the 64 KiB every other body may be.
            let (schemas, paths, route) = routes!(money::upload_batch);
            (
                schemas,
                paths,
                route.layer(axum::extract::DefaultBodyLimit::max(UPLOAD_BYTES_MAX)),
            )
        })
        .routes(routes!(records::beneficiaries_page))
        .routes(routes!(records::settlements_page))
        .routes(routes!(webhooks::deliveries_page))
        .routes(routes!(webhooks::resend))
        .routes(routes!(webhooks::test_event))
        .routes(routes!(auth::sign_in_page, auth::sign_in))
        .routes(routes!(auth::sign_out))
        .routes(routes!(developers::developers_page))
        .routes(routes!(developers::rotate))
        .routes(routes!(developers::save_settings))
        .routes(routes!(developers::save_public_key))
        .routes(routes!(stylesheet))
}

/// The largest CSV file a batch upload takes.
const UPLOAD_BYTES_MAX: usize = 1024 * 1024;

/// The pages' one stylesheet.
const STYLE: &str = include_str!("dashboard.css");

/// Where the stylesheet is served (also to the front page).
pub(crate) const STYLESHEET_PATH: &str = "/dashboard/style.css";

/// GET /dashboard/style.css.
#[utoipa::path(get, path = "/dashboard/style.css", tag = "Pages", operation_id = "dashboard_stylesheet",
    summary = "The dashboard's stylesheet", security(()),
    responses((status = 200, description = "CSS.", content_type = "text/css", body = String)))]
pub async fn stylesheet() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        STYLE,
    )
        .into_response()
}

/// Headers every dashboard page carries: nothing but this origin's
/// stylesheet and images may load, no script runs, no frame holds it.
fn page_response(status: StatusCode, markup: Markup) -> Response {
    crate::pages::html::page_under(crate::pages::html::DASHBOARD_CONTENT_SECURITY_POLICY, status, markup)
}

/// A page's frame: head, header with the navigation, main.
fn layout(title: &str, session: Option<&Session>, current: &str, body: Markup) -> Markup {
    const NAV: [(&str, &str); 8] = [
        ("/dashboard", "Overview"),
        ("/dashboard/orders", "Orders"),
        ("/dashboard/disbursements", "Disbursements"),
        ("/dashboard/beneficiaries", "Beneficiaries"),
        ("/dashboard/settlements", "Settlements"),
        ("/dashboard/balance", "Balance history"),
        ("/dashboard/webhooks", "Webhooks"),
        ("/dashboard/developers", "Developers"),
    ];
    html! {
        (DOCTYPE)
        html lang="en" {
            (crate::pages::html::head(&format!("{title} · paygate dashboard"), STYLESHEET_PATH))
            body {
                header.top {
                    span.brand { "paygate" }
                    @if let Some(session) = session {
                        nav aria-label="Dashboard" {
                            @for (href, label) in NAV {
                                @if href == current {
                                    a href=(href) aria-current="page" { (label) }
                                } @else {
                                    a href=(href) { (label) }
                                }
                            }
                        }
                        form.sign-out method="post" action="/dashboard/sign-out" {
                            input type="hidden" name="csrf" value=(session.csrf);
                            span.who { (session.email) }
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main { (body) }
            }
        }
    }
}

/// The session cookie's value in `headers`.
pub(crate) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

/// A `Set-Cookie` value: HttpOnly, SameSite=Lax, on the dashboard's path,
/// Secure when the service is reached over https.
fn set_cookie(state: &AppState, name: &str, value: &str, max_age_seconds: Option<u64>) -> HeaderValue {
    let secure = if state.config.public_url.starts_with("https://") {
        "; Secure"
    } else {
        ""
    };
    let age = max_age_seconds.map_or(String::new(), |s| format!("; Max-Age={s}"));
    HeaderValue::from_str(&format!(
        "{name}={value}; Path=/dashboard; HttpOnly; SameSite=Lax{secure}{age}"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// A signed-in request: its session and the token that names it. Without
/// one, pages answer a redirect to the sign-in page.
pub struct SignedIn {
    /// The session.
    pub session: Session,
    /// The cookie's token.
    pub token: String,
}

impl FromRequestParts<AppState> for SignedIn {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let token = cookie(&parts.headers, SESSION_COOKIE).map(str::to_string);
        let session = token.as_deref().and_then(|token| state.sessions.get(token));
        match (token, session) {
            (Some(token), Some(session)) if state.engine.merchants().merchant(session.merchant_id).is_some() => {
                Ok(SignedIn { session, token })
            }
            _ => Err(Redirect::to("/dashboard/sign-in").into_response()),
        }
    }
}

impl SignedIn {
    /// Whether `presented` is the session's CSRF token (else the form gets
    /// `forbidden()`).
    fn csrf_ok(&self, presented: &str) -> bool {
        session::tokens_match(presented, &self.session.csrf)
    }
}

/// A dashboard form that carries the session's CSRF token.
pub trait WithCsrf {
    /// The token the form was sent with.
    fn csrf(&self) -> &str;
}

/// A form posted from a dashboard page, with the session it was posted
/// in: without a session, the sign-in redirect; a form that does not parse,
/// or without the session's CSRF token, `forbidden()`.
pub struct DashboardForm<F>(pub SignedIn, pub F);

impl<F> FromRequest<AppState> for DashboardForm<F>
where
    F: serde::de::DeserializeOwned + WithCsrf + Send,
{
    type Rejection = Response;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Response> {
        let (mut parts, body) = request.into_parts();
        let signed_in = SignedIn::from_request_parts(&mut parts, state).await?;
        let Ok(Form(form)) = Form::<F>::from_request(Request::from_parts(parts, body), state).await else {
            return Err(forbidden());
        };
        if !signed_in.csrf_ok(form.csrf()) {
            return Err(forbidden());
        }
        Ok(DashboardForm(signed_in, form))
    }
}

/// The 403 page of a form without its CSRF token.
fn forbidden() -> Response {
    page_response(
        StatusCode::FORBIDDEN,
        layout(
            "Forbidden",
            None,
            "",
            html! {
                h1 { "Forbidden" }
                p { "This form was not sent from the dashboard (its security token is missing or wrong). Go back, reload the page and try again." }
                p { a href="/dashboard" { "Dashboard" } }
            },
        ),
    )
}

/// `Rp 25.000` for an amount in minor units (the checkout page's format).
pub fn rupiah(minor: i64) -> String {
    crate::pages::rupiah::format(paygate_engine::money::MinorUnits::new(minor))
}
