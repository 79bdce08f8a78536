//! The dashboard's webhooks: the latest delivery attempts, and sending an
//! event again (the same delivery `POST /v1/webhooks/deliveries/{id}/resend` makes).

use super::answers::{PageAnswers, ShownFormAnswers};
use super::{layout, page_response, DashboardForm, SignedIn, WithCsrf};
use crate::wire::timestamp;
use crate::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use maud::html;
use paygate_engine::webhooks::AttemptFilter;
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

/// Attempts the page shows.
const PAGE_SIZE: usize = 50;

/// The resend form.
#[derive(Deserialize, ToSchema)]
pub struct ResendForm {
    csrf: String,
    /// The event to send again.
    event_id: String,
}

impl WithCsrf for ResendForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

fn render(state: &AppState, signed_in: &SignedIn, status: StatusCode, message: Option<(&str, bool)>) -> Response {
    let (attempts, total) = state
        .engine
        .webhooks()
        .list_webhook_attempts(signed_in.session.merchant_id, &AttemptFilter::default(), 1, PAGE_SIZE)
        .unwrap_or_default();
    let body = html! {
        h1 { "Webhooks" }
        @if let Some((text, problem)) = message {
            @if problem { p.problem role="alert" { (text) } } @else { p.notice role="status" { (text) } }
        }
        section.card {
            h2 { "Test your endpoint" }
            p { "Sends a signed " code { "test" } " event to your default notify URL (set it on the Developers page). It is not recorded or retried." }
            form method="post" action="/dashboard/webhooks/test" {
                input type="hidden" name="csrf" value=(signed_in.session.csrf);
                button type="submit" #send-test { "Send a test event" }
            }
        }
        section.card {
            h2 { "Latest deliveries (" (total) " in all)" }
            div.table-wrap {
                table {
                    thead { tr { th { "When" } th { "Event" } th { "URL" } th { "Answer" } th { "Attempt" } th {} } }
                    tbody {
                        @for attempt in &attempts {
                            tr {
                                td { (timestamp(attempt.attempted_at_ms)) }
                                td { code { (attempt.event) } }
                                td.url { (attempt.url) }
                                td {
                                    @match attempt.status_code { Some(code) => { "HTTP " (code) }, None => { (attempt.error.clone().unwrap_or_else(|| "no answer".into())) } }
                                    @if attempt.delivered { " ✓" }
                                }
                                td { (attempt.attempt) }
                                td {
                                    form method="post" action="/dashboard/webhooks/resend" {
                                        input type="hidden" name="csrf" value=(signed_in.session.csrf);
                                        input type="hidden" name="event_id" value=(attempt.event_id);
                                        button type="submit" { "Send again" }
                                    }
                                }
                            }
                        }
                        @if attempts.is_empty() { tr { td colspan="6" { "No deliveries yet." } } }
                    }
                }
            }
        }
    };
    page_response(
        status,
        layout("Webhooks", Some(&signed_in.session), "/dashboard/webhooks", body),
    )
}

/// GET /dashboard/webhooks.
#[utoipa::path(get, path = "/dashboard/webhooks", tag = "Pages", operation_id = "dashboard_webhooks",
    summary = "The dashboard's webhook deliveries", security(()),
    responses(PageAnswers))]
pub async fn deliveries_page(State(state): State<AppState>, signed_in: SignedIn) -> Response {
    state.engine.webhooks().settle_recorded_attempts().await;
    render(&state, &signed_in, StatusCode::OK, None)
}

/// POST /dashboard/webhooks/resend.
#[utoipa::path(post, path = "/dashboard/webhooks/resend", tag = "Pages", operation_id = "dashboard_resend",
    summary = "Send a webhook event again from the dashboard", security(()),
    request_body(content = ResendForm, content_type = "application/x-www-form-urlencoded"),
    responses(ShownFormAnswers))]
pub async fn resend(
    State(state): State<AppState>,
    DashboardForm(signed_in, form): DashboardForm<ResendForm>,
) -> Response {
    let outcome = match Uuid::parse_str(&form.event_id) {
        Err(_) => Err("no such event".to_string()),
        Ok(id) => match state
            .engine
            .webhooks()
            .webhook_event_for(signed_in.session.merchant_id, id)
        {
            Err(error) => Err(error.to_string()),
            Ok(event) if event.url.is_none() => Err("the event has no notify URL".into()),
            Ok(event) => crate::webhooks::deliver(&state, &state.webhook_client, event, true)
                .await
                .map_err(|error| error.to_string()),
        },
    };
    match outcome {
        Ok(attempt) => {
            let text = format!(
                "Sent again: {}.",
                attempt
                    .status_code
                    .map_or("no answer".to_string(), |code| format!("HTTP {code}"))
            );
            render(&state, &signed_in, StatusCode::OK, Some((&text, false)))
        }
        Err(why) => render(
            &state,
            &signed_in,
            StatusCode::BAD_REQUEST,
            Some((&format!("Not sent: {why}."), true)),
        ),
    }
}

/// POST /dashboard/webhooks/test.
#[utoipa::path(post, path = "/dashboard/webhooks/test", tag = "Pages", operation_id = "dashboard_test_event",
    summary = "Send a test webhook event from the dashboard",
    description = "A signed `test` event to the merchant's default notify URL; not recorded, not retried.",
    security(()),
    request_body(content = super::auth::CsrfForm, content_type = "application/x-www-form-urlencoded"),
    responses(ShownFormAnswers))]
pub async fn test_event(
    State(state): State<AppState>,
    DashboardForm(signed_in, _): DashboardForm<super::auth::CsrfForm>,
) -> Response {
    match crate::webhooks::delivery::send_test_event(&state, signed_in.session.merchant_id).await {
        Ok((status, latency_ms)) => {
            let text = format!("Test event sent: your endpoint answered HTTP {status} in {latency_ms} ms.");
            render(
                &state,
                &signed_in,
                StatusCode::OK,
                Some((&text, !(200..300).contains(&status))),
            )
        }
        Err(why) => render(
            &state,
            &signed_in,
            StatusCode::BAD_REQUEST,
            Some((&format!("Not sent: {why}."), true)),
        ),
    }
}
