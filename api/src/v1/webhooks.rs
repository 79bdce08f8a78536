//! `GET /v1/webhooks/deliveries` (attempts, newest first, filterable by
//! `event_id` and `delivered`) and `POST /v1/webhooks/deliveries/{event_id}/resend`.

use super::pagination::{ListQuery, PageLimit};
use crate::error::{ErrorKind, V1Error};
use crate::extract::V1Merchant;
use crate::wire::{timestamp, Data, DataBody, Page, PageBody};
use crate::AppState;
use axum::extract::{Path, Query, State};
use paygate_engine::domain::WebhookAttempt;
use paygate_engine::webhooks::{AttemptFilter, Delivery};
use serde::Serialize;
use std::collections::HashMap;
use utoipa::ToSchema;
use uuid::Uuid;

/// A delivery attempt.
#[derive(Serialize, ToSchema)]
pub struct AttemptView {
    event_id: Uuid,
    /// `<resource>.<status in lower case>`, e.g. `order.paid`.
    event: String,
    url: String,
    /// 1 for the first attempt.
    attempt: u32,
    /// The endpoint's HTTP status; null when it did not answer.
    status_code: Option<u16>,
    latency_ms: u64,
    /// Why the attempt failed, when it did.
    error: Option<String>,
    /// When the next retry goes out; null once delivered or given up.
    #[schema(format = DateTime)]
    next_retry_at: Option<String>,
    delivered: bool,
    #[schema(format = DateTime)]
    attempted_at: String,
    /// Sent by a resend request rather than the schedule.
    manual: bool,
}

/// A delivery attempt as listed.
pub fn attempt_view(attempt: &WebhookAttempt) -> AttemptView {
    AttemptView {
        event_id: attempt.event_id,
        event: attempt.event.clone(),
        url: attempt.url.clone(),
        attempt: attempt.attempt,
        status_code: attempt.status_code,
        latency_ms: attempt.latency_ms,
        error: attempt.error.clone(),
        next_retry_at: attempt.next_retry_at_ms.map(timestamp),
        delivered: attempt.delivered,
        attempted_at: timestamp(attempt.attempted_at_ms),
        manual: attempt.manual,
    }
}

/// GET /v1/webhooks/deliveries.
#[utoipa::path(get, path = "/v1/webhooks/deliveries", tag = "Webhooks", operation_id = "list_deliveries",
    summary = "List webhook deliveries", description = "Every delivery attempt, newest first.",
    security(("api_key" = [])),
    params(
        ("page" = Option<u64>, Query, minimum = 1, description = "1-based page number."),
        ("limit" = inline(Option<PageLimit>), Query, description = "Items per page, at most 50; a larger limit is served as 50."),
        ("event_id" = Option<Uuid>, Query, description = "Only the attempts of this event."),
        ("delivered" = Option<bool>, Query, description = "Only delivered (`true`) or undelivered (`false`) attempts."),
    ),
    responses((status = 200, description = "A page of attempts.", body = PageBody<AttemptView>)))]
pub async fn list_deliveries(
    State(state): State<AppState>,
    V1Merchant(merchant): V1Merchant,
    query: ListQuery,
    Query(raw): Query<HashMap<String, String>>,
) -> Result<Page<AttemptView>, V1Error> {
    let event_id = match raw.get("event_id") {
        None => None,
        Some(id) => Some(Uuid::parse_str(id).map_err(|_| V1Error::invalid_query("event_id: must be a UUID"))?),
    };
    let delivery = match raw.get("delivered").map(String::as_str) {
        None => Delivery::Any,
        Some("true") => Delivery::Delivered,
        Some("false") => Delivery::Failed,
        Some(_) => return Err(V1Error::invalid_query("delivered: must be true or false")),
    };
    let filter = AttemptFilter { event_id, delivery };
    state.engine.webhooks().settle_recorded_attempts().await;
    let (items, total) =
        state
            .engine
            .webhooks()
            .list_webhook_attempts(merchant.id, &filter, query.page, query.limit)?;
    Ok(Page {
        items: items.iter().map(attempt_view).collect(),
        page: query.page,
        limit: query.limit,
        total,
    })
}

/// POST /v1/webhooks/deliveries/{event_id}/resend: sends the event again
/// now and answers with that attempt (the retry schedule is unchanged).
#[utoipa::path(post, path = "/v1/webhooks/deliveries/{event_id}/resend", tag = "Webhooks", operation_id = "resend_delivery",
    summary = "Send an event again",
    description = "Sends the event again now and answers with that attempt; the retry schedule is unchanged.",
    security(("api_key" = [])), params(("event_id" = Uuid, Path, description = "The event's id.")),
    responses((status = 200, description = "The attempt just made.", body = DataBody<AttemptView>)))]
pub async fn resend(
    State(state): State<AppState>,
    V1Merchant(merchant): V1Merchant,
    Path(event_id): Path<String>,
) -> Result<Data<AttemptView>, V1Error> {
    let event_id = Uuid::parse_str(&event_id).map_err(|_| V1Error::invalid_id())?;
    let event = state.engine.webhooks().webhook_event_for(merchant.id, event_id)?;
    // The attempt is recorded: refused before it is sent, not after.
    state.engine.operations().ensure_writable()?;
    if event.url.is_none() {
        return Err(V1Error::new(
            ErrorKind::NoNotifyUrl,
            "the event has no notify URL to send to",
        ));
    }
    let attempt = crate::webhooks::deliver(&state, &state.webhook_client, event, true).await?;
    Ok(Data(attempt_view(&attempt)))
}
