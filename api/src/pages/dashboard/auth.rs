//! Signing in and out of the dashboard. The sign-in form is protected from
//! cross-site posts by a token in both a cookie and the form (there is no
//! session yet to hold one); ten failures for an email within 15 minutes
//! answer 429 with `Retry-After` until the oldest ages out.

use super::answers::BadTokenAnswer;
use super::session::{random_token, tokens_match, SESSION_COOKIE, SIGN_IN_COOKIE};
use super::{cookie, forbidden, layout, page_response, set_cookie, DashboardForm, WithCsrf};
use crate::AppState;
use axum::extract::rejection::FormRejection;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use maud::{html, Markup};
use serde::Deserialize;
use utoipa::ToSchema;

/// Lifetime of the sign-in form's token cookie.
const SIGN_IN_TOKEN_SECONDS: u64 = 3600;

/// The sign-in form.
#[derive(Deserialize, ToSchema)]
pub struct SignInForm {
    email: String,
    password: String,
    /// The token the form was served with.
    csrf: String,
}

/// A form with only its CSRF token (sign-out).
#[derive(Deserialize, ToSchema)]
pub struct CsrfForm {
    /// The session's token.
    pub csrf: String,
}

impl WithCsrf for CsrfForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

fn sign_in_markup(csrf: &str, problem: Option<&str>) -> Markup {
    layout(
        "Sign in",
        None,
        "",
        html! {
            section.card.narrow {
                h1 { "Sign in" }
                @if let Some(problem) = problem {
                    p.problem role="alert" { (problem) }
                }
                form method="post" action="/dashboard/sign-in" {
                    input type="hidden" name="csrf" value=(csrf);
                    label for="email" { "Email" }
                    input #email type="email" name="email" autocomplete="username" required;
                    label for="password" { "Password" }
                    input #password type="password" name="password" autocomplete="current-password" required;
                    button type="submit" { "Sign in" }
                }
            }
        },
    )
}

/// The sign-in page with a fresh form token, set in its cookie too.
fn sign_in_response(state: &AppState, status: StatusCode, problem: Option<&str>) -> Response {
    let token = random_token();
    let mut response = page_response(status, sign_in_markup(&token, problem));
    response.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(state, SIGN_IN_COOKIE, &token, Some(SIGN_IN_TOKEN_SECONDS)),
    );
    response
}

/// GET /dashboard/sign-in.
#[utoipa::path(get, path = "/dashboard/sign-in", tag = "Pages", operation_id = "dashboard_sign_in_page",
    summary = "The dashboard's sign-in page", security(()),
    responses((status = 200, description = "The sign-in form.", content_type = "text/html", body = String)))]
pub async fn sign_in_page(State(state): State<AppState>) -> Response {
    sign_in_response(&state, StatusCode::OK, None)
}

/// POST /dashboard/sign-in: a session and a redirect to the overview; a
/// wrong email or password is 401 with the form again.
#[utoipa::path(post, path = "/dashboard/sign-in", tag = "Pages", operation_id = "dashboard_sign_in",
    summary = "Sign in to the dashboard",
    description = "Starts a session (an HttpOnly, SameSite=Lax cookie) and redirects to the overview. Ten failed \
        sign-ins for one email within 15 minutes answer 429 with `Retry-After` until the oldest ages out.",
    security(()),
    request_body(content = SignInForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Signed in: to the overview."),
        (status = 400, description = "Not a sign-in form.", content_type = "text/html", body = String),
        (status = 401, description = "Wrong email or password.", content_type = "text/html", body = String),
        BadTokenAnswer,
        (status = 429, description = "Too many failed sign-ins for this email (a page), or too many unauthenticated \
            requests from this address (the V1 error envelope).",
            content((String = "text/html"), (crate::error::ErrorBody = "application/json")),
            headers(("Retry-After" = u64, description = "Seconds until it may try again."))),
    ))]
pub async fn sign_in(
    State(state): State<AppState>,
    headers: HeaderMap,
    form: Result<Form<SignInForm>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else {
        return sign_in_response(&state, StatusCode::BAD_REQUEST, Some("Enter your email and password."));
    };
    let expected = cookie(&headers, SIGN_IN_COOKIE).unwrap_or_default();
    if !tokens_match(&form.csrf, expected) {
        return forbidden();
    }
    if let Some(seconds) = state.sessions.locked_out_for(&form.email) {
        let mut response = sign_in_response(
            &state,
            StatusCode::TOO_MANY_REQUESTS,
            Some("Too many failed sign-ins for this email. Try again later."),
        );
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        return response;
    }
    let Some(user) = state.engine.merchants().sign_in(&form.email, &form.password).await else {
        state.sessions.failed(&form.email);
        return sign_in_response(&state, StatusCode::UNAUTHORIZED, Some("Wrong email or password."));
    };
    state.sessions.succeeded(&form.email);
    let token = state.sessions.start(
        state.engine.operations().shard(),
        user.id,
        user.merchant_id,
        &user.email,
    );
    let mut response = Redirect::to("/dashboard").into_response();
    let headers = response.headers_mut();
    headers.append(header::SET_COOKIE, set_cookie(&state, SESSION_COOKIE, &token, None));
    headers.append(header::SET_COOKIE, set_cookie(&state, SIGN_IN_COOKIE, "", Some(0)));
    response
}

/// POST /dashboard/sign-out: ends the session on the server too.
#[utoipa::path(post, path = "/dashboard/sign-out", tag = "Pages", operation_id = "dashboard_sign_out",
    summary = "Sign out of the dashboard", security(()),
    request_body(content = CsrfForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Signed out (or not signed in): to the sign-in page."),
        BadTokenAnswer,
    ))]
pub async fn sign_out(State(state): State<AppState>, DashboardForm(signed_in, _): DashboardForm<CsrfForm>) -> Response {
    state.sessions.end(&signed_in.token);
    let mut response = Redirect::to("/dashboard/sign-in").into_response();
    response
        .headers_mut()
        .append(header::SET_COOKIE, set_cookie(&state, SESSION_COOKIE, "", Some(0)));
    response
}
