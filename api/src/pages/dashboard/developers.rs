//! The dashboard's developers page: the Legacy client id, credential
//! rotation (the new secrets shown once, every other session of the
//! merchant ended), the RSA public key for Legacy `X-SIGNATURE`, the default
//! notify URL and whether `X-Signature` is required.

use super::answers::{PageAnswers, RedirectingFormAnswers};
use super::auth::CsrfForm;
use super::{layout, page_response, DashboardForm, SignedIn, WithCsrf};
use crate::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{html, Markup};
use paygate_engine::domain::{Credentials, MerchantRecord};
use paygate_engine::input::HttpUrl;
use paygate_engine::SettingChange;
use serde::Deserialize;
use utoipa::ToSchema;

/// The settings form.
#[derive(Deserialize, ToSchema)]
pub struct SettingsForm {
    csrf: String,
    /// Empty removes it.
    #[serde(default)]
    default_notify_url: String,
    /// Present (`on`) when ticked.
    require_signature: Option<String>,
}

impl WithCsrf for SettingsForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// The public-key form.
#[derive(Deserialize, ToSchema)]
pub struct PublicKeyForm {
    csrf: String,
    /// PEM of an RSA public key, 2048 bits or more.
    pem: String,
}

impl WithCsrf for PublicKeyForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

fn page(merchant: &MerchantRecord, signed_in: &SignedIn, fresh: Option<&Credentials>, problem: Option<&str>) -> Markup {
    let csrf = &signed_in.session.csrf;
    let body = html! {
        h1 { "Developers" }
        @if let Some(problem) = problem {
            p.problem role="alert" { (problem) }
        }
        @if let Some(fresh) = fresh {
            section.card.secrets #new-credentials {
                h2 { "New credentials" }
                p { "Shown this once: store them now. The old key and secrets no longer work." }
                dl {
                    dt { "API key (X-API-Key)" } dd { code #new-api-key { (fresh.api_key) } }
                    dt { "Client id (Legacy)" } dd { code { (fresh.client_id) } }
                    dt { "Client secret (Legacy)" } dd { code { (fresh.client_secret) } }
                    dt { "Webhook secret" } dd { code { (fresh.webhook_secret) } }
                }
            }
        }
        section.card {
            h2 { "Credentials" }
            dl {
                dt { "Client id (Legacy)" } dd { code #client-id { (merchant.credentials.client_id) } }
            }
            p { "Rotating makes a new API key, client secret and webhook secret at once; the old ones stop working and every other dashboard session ends." }
            form method="post" action="/dashboard/developers/rotate" {
                input type="hidden" name="csrf" value=(csrf);
                button type="submit" #rotate { "Rotate credentials" }
            }
        }
        section.card {
            h2 { "Webhooks and signatures" }
            form method="post" action="/dashboard/developers/settings" {
                input type="hidden" name="csrf" value=(csrf);
                label for="default_notify_url" { "Default notify URL" }
                input #default_notify_url type="url" name="default_notify_url"
                    value=(merchant.default_notify_url.clone().unwrap_or_default())
                    placeholder="https://example.com/webhooks";
                label.check {
                    input type="checkbox" name="require_signature" checked[merchant.require_signature];
                    " Require X-Signature on V1 writes"
                }
                button type="submit" { "Save" }
            }
        }
        section.card {
            h2 { "RSA public key (Legacy X-SIGNATURE)" }
            p { @if merchant.public_key_pem.is_some() { "A key is set." } @else { "No key is set." } }
            form method="post" action="/dashboard/developers/public-key" {
                input type="hidden" name="csrf" value=(csrf);
                label for="pem" { "PEM (SPKI or PKCS#1), 2048 bits or more" }
                textarea #pem name="pem" rows="6" required {}
                button type="submit" { "Upload key" }
            }
        }
    };
    layout("Developers", Some(&signed_in.session), "/dashboard/developers", body)
}

fn render(
    state: &AppState,
    signed_in: &SignedIn,
    status: StatusCode,
    fresh: Option<&Credentials>,
    problem: Option<&str>,
) -> Response {
    match state.engine.merchants().merchant(signed_in.session.merchant_id) {
        Some(merchant) => page_response(status, page(&merchant, signed_in, fresh, problem)),
        None => Redirect::to("/dashboard/sign-in").into_response(),
    }
}

/// GET /dashboard/developers.
#[utoipa::path(get, path = "/dashboard/developers", tag = "Pages", operation_id = "dashboard_developers",
    summary = "The dashboard's developers page", security(()),
    responses(PageAnswers))]
pub async fn developers_page(State(state): State<AppState>, signed_in: SignedIn) -> Response {
    render(&state, &signed_in, StatusCode::OK, None, None)
}

/// POST /dashboard/developers/rotate: new credentials, shown once.
#[utoipa::path(post, path = "/dashboard/developers/rotate", tag = "Pages", operation_id = "dashboard_rotate_credentials",
    summary = "Rotate credentials from the dashboard",
    description = "The old API key and secrets stop working at once; every other session of the merchant ends.",
    security(()),
    request_body(content = CsrfForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "The new credentials, shown this once.", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to the sign-in page."),
        (status = 403, description = "The form's token is missing or wrong.", content_type = "text/html", body = String),
        (status = 503, description = "Storage cannot take writes now.", content_type = "text/html", body = String),
    ))]
pub async fn rotate(State(state): State<AppState>, DashboardForm(signed_in, _): DashboardForm<CsrfForm>) -> Response {
    let merchant_id = signed_in.session.merchant_id;
    match state.engine.merchants().rotate_credentials(merchant_id).await {
        Ok(credentials) => {
            state.sessions.end_merchant(merchant_id, Some(&signed_in.token));
            render(&state, &signed_in, StatusCode::OK, Some(&credentials), None)
        }
        Err(error) => render(
            &state,
            &signed_in,
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            Some(&format!("Not rotated: {error}.")),
        ),
    }
}

/// POST /dashboard/developers/settings.
#[utoipa::path(post, path = "/dashboard/developers/settings", tag = "Pages", operation_id = "dashboard_save_settings",
    summary = "Save the default notify URL and the signature setting", security(()),
    request_body(content = SettingsForm, content_type = "application/x-www-form-urlencoded"),
    responses(RedirectingFormAnswers))]
pub async fn save_settings(
    State(state): State<AppState>,
    DashboardForm(signed_in, form): DashboardForm<SettingsForm>,
) -> Response {
    let url = form.default_notify_url.trim();
    let url = (!url.is_empty())
        .then(|| HttpUrl::parse("default_notify_url", url))
        .transpose();
    let saved = match url {
        Ok(url) => {
            let changes = vec![
                SettingChange::DefaultNotifyUrl(url),
                SettingChange::RequireSignature(form.require_signature.is_some()),
            ];
            state
                .engine
                .merchants()
                .update_merchant(signed_in.session.merchant_id, changes)
                .await
        }
        Err(refused) => Err(refused),
    };
    back_or_refused(&state, &signed_in, saved, "Not saved")
}

/// POST /dashboard/developers/public-key.
#[utoipa::path(post, path = "/dashboard/developers/public-key", tag = "Pages", operation_id = "dashboard_save_public_key",
    summary = "Upload the RSA public key for Legacy X-SIGNATURE", security(()),
    request_body(content = PublicKeyForm, content_type = "application/x-www-form-urlencoded"),
    responses(RedirectingFormAnswers))]
pub async fn save_public_key(
    State(state): State<AppState>,
    DashboardForm(signed_in, form): DashboardForm<PublicKeyForm>,
) -> Response {
    let saved = state
        .engine
        .merchants()
        .set_public_key(signed_in.session.merchant_id, &form.pem)
        .await;
    back_or_refused(&state, &signed_in, saved, "Key not saved")
}

/// After a save: back to the developers page, or the page again (400)
/// saying why it was `refused`.
fn back_or_refused<T>(
    state: &AppState,
    signed_in: &SignedIn,
    saved: Result<T, paygate_engine::EngineError>,
    refused: &str,
) -> Response {
    match saved {
        Ok(_) => Redirect::to("/dashboard/developers").into_response(),
        Err(error) => render(
            state,
            signed_in,
            StatusCode::BAD_REQUEST,
            None,
            Some(&format!("{refused}: {error}.")),
        ),
    }
}
