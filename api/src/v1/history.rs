//! `GET /v1/balance/history`: the wallet's statement, newest
//! first, a page after a cursor; JSON, or the same lines as CSV for
//! `Accept: text/csv`.

use super::pagination::{instant, positive, PageLimit};
use crate::error::V1Error;
use crate::extract::V1Merchant;
use crate::openapi::names::LineTypeName;
use crate::wire::timestamp;
use crate::AppState;
use axum::extract::State;
use axum::http::header::{ACCEPT, CONTENT_TYPE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use paygate_engine::input::CreatedBetween;
use paygate_engine::ledger::statement::{LineId, LineType, StatementLine};
use paygate_engine::ledger::ResourceKind;
use paygate_engine::{EngineError, HistoryQuery, HISTORY_LIMIT_MAX};
use serde::Serialize;
use std::collections::HashMap;
use utoipa::ToSchema;
use uuid::Uuid;

/// Lines a page holds when no `limit` is asked for.
const HISTORY_LIMIT_DEFAULT: usize = 20;

/// The CSV header: a line's fields, its resource's spread over three.
const CSV_HEADER: [&str; 8] = [
    "id",
    "type",
    "amount_minor",
    "balance_after_minor",
    "resource_type",
    "resource_id",
    "resource_ref_code",
    "created_at",
];

/// GET /v1/balance/history.
#[utoipa::path(get, path = "/v1/balance/history", tag = "Balance", operation_id = "balance_history",
    summary = "List balance history",
    description = "Every line that moved the wallet, newest first: a page after the `starting_after` cursor. \
        With `Accept: text/csv`, the same lines as CSV.",
    security(("api_key" = [])),
    params(
        ("starting_after" = Option<String>, Query, pattern = r"^bt_[0-9a-f]{49}$",
            description = "A line id of this merchant's statement (`id` of a line): the page holds the lines after it."),
        ("limit" = inline(Option<PageLimit>), Query, description = "Lines per page: 20 by default, at most 100; a larger limit is served as 100."),
        ("created_from" = Option<String>, Query, format = DateTime, description = "Only lines at or after this time (RFC 3339)."),
        ("created_to" = Option<String>, Query, format = DateTime, description = "Only lines at or before this time (RFC 3339)."),
        ("type" = Option<LineTypeName>, Query, description = "Only lines of this type."),
    ),
    responses((status = 200, description = "A page of lines.", body = HistoryPage,
        content((HistoryPage = "application/json"), (String = "text/csv")))))]
pub async fn balance_history(
    State(state): State<AppState>,
    V1Merchant(merchant): V1Merchant,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> Result<Response, V1Error> {
    let query = axum::extract::Query::<HashMap<String, String>>::try_from_uri(&uri)
        .map_err(|_| V1Error::invalid_query("query string could not be read"))?
        .0;
    let history_query = HistoryQuery {
        starting_after: match query.get("starting_after") {
            None => None,
            Some(raw) => Some(
                LineId::parse(raw)
                    .ok_or_else(|| V1Error::invalid_query("starting_after: not a line id of this statement"))?,
            ),
        },
        limit: positive(&query, "limit", HISTORY_LIMIT_DEFAULT)?.min(HISTORY_LIMIT_MAX),
        created: CreatedBetween::before(instant(&query, "created_from")?, instant(&query, "created_to")?),
        line_type: match query.get("type") {
            None => None,
            Some(raw) => Some(LineType::parse(raw).ok_or_else(|| {
                let known: Vec<_> = LineType::ALL.iter().map(|t| t.as_str()).collect();
                V1Error::invalid_query(format!("type: must be one of {}", known.join(", ")))
            })?),
        },
    };
    let page = match state.engine.merchants().balance_history(merchant.id, &history_query) {
        Ok(page) => page,
        Err(EngineError::InvalidInput { field, reason }) => {
            return Err(V1Error::invalid_query(format!("{field}: {reason}")))
        }
        Err(other) => return Err(other.into()),
    };
    if wants_csv(&headers) {
        return csv_response(&page.lines);
    }
    let body = HistoryPage {
        success: true,
        data: page.lines.iter().map(line_view).collect(),
        meta: HistoryMeta {
            has_more: page.has_more,
        },
    };
    Ok((StatusCode::OK, Json(body)).into_response())
}

/// A page of the statement.
#[derive(Serialize, ToSchema)]
pub struct HistoryPage {
    /// Always `true`.
    success: bool,
    /// The lines, newest first.
    data: Vec<LineView>,
    meta: HistoryMeta,
}

/// Whether older lines follow.
#[derive(Serialize, ToSchema)]
pub struct HistoryMeta {
    /// Pass the last line's id as `starting_after` for them.
    has_more: bool,
}

/// One line of the statement.
#[derive(Serialize, ToSchema)]
pub struct LineView {
    /// The line's id, a cursor for `starting_after`.
    id: String,
    #[serde(rename = "type")]
    #[schema(value_type = LineTypeName)]
    line_type: &'static str,
    /// Signed: credits positive, debits negative.
    amount_minor: i64,
    /// The wallet's balance right after this line.
    balance_after_minor: i64,
    /// What the money moved for; null for operator credits.
    resource: Option<LineResource>,
    #[schema(format = DateTime)]
    created_at: String,
}

/// The resource a line moved money for.
#[derive(Serialize, ToSchema)]
pub struct LineResource {
    /// `order`, `refund` or `disbursement`.
    #[serde(rename = "type")]
    #[schema(pattern = "^(order|refund|disbursement)$")]
    kind: &'static str,
    id: Uuid,
    ref_code: String,
}

/// True when `Accept` names `text/csv` before any JSON type (a range with
/// `q=0` names nothing).
fn wants_csv(headers: &HeaderMap) -> bool {
    for value in headers.get_all(ACCEPT) {
        let Ok(value) = value.to_str() else { continue };
        for range in value.split(',') {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or("").to_ascii_lowercase();
            let refused = parts.any(|p| p.replace(' ', "").eq_ignore_ascii_case("q=0"));
            if refused {
                continue;
            }
            match media.as_str() {
                "text/csv" => return true,
                "application/json" | "application/*" => return false,
                _ => {}
            }
        }
    }
    false
}

fn resource_type(kind: ResourceKind) -> &'static str {
    match kind {
        ResourceKind::Order => "order",
        ResourceKind::Refund => "refund",
        ResourceKind::Disbursement => "disbursement",
    }
}

/// A statement line's V1 view.
fn line_view(line: &StatementLine) -> LineView {
    LineView {
        id: line.id.encode(),
        line_type: line.line_type.as_str(),
        amount_minor: line.amount_minor,
        balance_after_minor: line.balance_after_minor,
        resource: line.resource.as_ref().map(|r| LineResource {
            kind: resource_type(r.kind),
            id: r.id,
            ref_code: r.ref_code.clone(),
        }),
        created_at: timestamp(line.created_at_ms),
    }
}

/// The same lines as CSV: the header row, then one row a line.
pub(crate) fn csv_response(lines: &[StatementLine]) -> Result<Response, V1Error> {
    let write = || -> Result<Vec<u8>, csv::Error> {
        let mut writer = csv::Writer::from_writer(Vec::new());
        writer.write_record(CSV_HEADER)?;
        for line in lines {
            let (kind, id, ref_code) = match &line.resource {
                Some(r) => (resource_type(r.kind).to_string(), r.id.to_string(), r.ref_code.clone()),
                None => Default::default(),
            };
            writer.write_record([
                line.id.encode(),
                line.line_type.as_str().to_string(),
                line.amount_minor.to_string(),
                line.balance_after_minor.to_string(),
                kind,
                id,
                ref_code,
                timestamp(line.created_at_ms),
            ])?;
        }
        writer.into_inner().map_err(|error| error.into_error().into())
    };
    let body = write().map_err(V1Error::internal)?;
    Ok((StatusCode::OK, [(CONTENT_TYPE, "text/csv; charset=utf-8")], body).into_response())
}
