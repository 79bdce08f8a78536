//! The dashboard's money pages: the balance history (with a CSV export)
//! and disbursements (a list, one created from a form, a batch from CSV
//! text or an uploaded file). Each reads and acts through the engine
//! calls the V1 routes use.

use super::answers::{PageAnswers, RedirectingFormAnswers, ShownFormAnswers, SignInAnswer};
use super::{forbidden, layout, page_response, rupiah, DashboardForm, SignedIn, WithCsrf};
use crate::commands::AccountFields;
use crate::wire::timestamp;
use crate::AppState;
use axum::extract::multipart::MultipartRejection;
use axum::extract::{Multipart, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{html, Markup};
use paygate_engine::disbursements::{DisbursementFilter, NewDisbursement};
use paygate_engine::domain::Source;
use paygate_engine::input::{IdempotencyKey, PositiveAmount};
use paygate_engine::ledger::statement::LineId;
use paygate_engine::{EngineError, HistoryQuery};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

/// Lines or items a page shows.
const PAGE_SIZE: usize = 25;
/// Lines one CSV export holds at most, newest first.
const EXPORT_LINES_MAX: usize = 10_000;
/// Rows one pasted CSV batch holds at most (as the batch route).
const BATCH_ROWS_MAX: usize = 1_000;

/// Where a history page starts.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HistoryCursor {
    /// The last line of the previous page.
    after: Option<String>,
}

fn refused_page(signed_in: &SignedIn, title: &str, current: &str, message: &str) -> Response {
    let body = html! { h1 { (title) } p.note { (message) } };
    page_response(StatusCode::OK, layout(title, Some(&signed_in.session), current, body))
}

/// GET /dashboard/balance.
#[utoipa::path(get, path = "/dashboard/balance", tag = "Pages", operation_id = "dashboard_balance_history",
    summary = "The dashboard's balance history", security(()), params(HistoryCursor),
    responses(PageAnswers))]
pub async fn history_page(
    State(state): State<AppState>,
    signed_in: SignedIn,
    cursor: Result<Query<HistoryCursor>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let after = cursor
        .ok()
        .and_then(|Query(c)| c.after)
        .and_then(|raw| LineId::parse(&raw));
    let query = HistoryQuery::page(after, PAGE_SIZE);
    let page = match state
        .engine
        .merchants()
        .balance_history(signed_in.session.merchant_id, &query)
    {
        Ok(page) => page,
        Err(EngineError::NotWalletMerchant) => {
            return refused_page(
                &signed_in,
                "Balance history",
                "/dashboard/balance",
                "A MANUAL merchant has no wallet: see Settlements.",
            )
        }
        Err(_) => paygate_engine::HistoryPage {
            lines: Vec::new(),
            has_more: false,
        },
    };
    let body = html! {
        h1 { "Balance history" }
        p { a href="/dashboard/balance.csv" download { "Export CSV" } " (the newest " (EXPORT_LINES_MAX) " lines)" }
        section.card {
            div.table-wrap {
                table {
                    thead { tr { th { "When" } th { "Type" } th { "Amount" } th { "Balance after" } th { "For" } } }
                    tbody {
                        @for line in &page.lines {
                            tr {
                                td { (timestamp(line.created_at_ms)) }
                                td { (line.line_type.as_str()) }
                                td.amount { (rupiah(line.amount_minor)) }
                                td.amount { (rupiah(line.balance_after_minor)) }
                                td { @if let Some(resource) = &line.resource { (resource.ref_code) } }
                            }
                        }
                        @if page.lines.is_empty() { tr { td colspan="5" { "No lines." } } }
                    }
                }
            }
            @if page.has_more {
                @if let Some(last) = page.lines.last() {
                    p.pager { a href={"/dashboard/balance?after=" (last.id.encode())} { "Older" } }
                }
            }
        }
    };
    page_response(
        StatusCode::OK,
        layout("Balance history", Some(&signed_in.session), "/dashboard/balance", body),
    )
}

/// GET /dashboard/balance.csv: the newest lines as the API's CSV.
#[utoipa::path(get, path = "/dashboard/balance.csv", tag = "Pages", operation_id = "dashboard_balance_export",
    summary = "Export the balance history as CSV", security(()),
    responses(
        (status = 200, description = "The newest lines, as `GET /v1/balance/history` with `Accept: text/csv`.", content_type = "text/csv", body = String),
        SignInAnswer,
    ))]
pub async fn history_export(State(state): State<AppState>, signed_in: SignedIn) -> Response {
    let mut lines = Vec::new();
    let mut after = None;
    while lines.len() < EXPORT_LINES_MAX {
        let query = HistoryQuery::page(after, paygate_engine::HISTORY_LIMIT_MAX);
        let Ok(page) = state
            .engine
            .merchants()
            .balance_history(signed_in.session.merchant_id, &query)
        else {
            break;
        };
        after = page.lines.last().map(|line| line.id);
        let more = page.has_more;
        lines.extend(page.lines);
        if !more {
            break;
        }
    }
    lines.truncate(EXPORT_LINES_MAX);
    let mut response = crate::v1::history::csv_response(&lines).into_response();
    response.headers_mut().insert(
        axum::http::header::CONTENT_DISPOSITION,
        axum::http::HeaderValue::from_static("attachment; filename=\"balance-history.csv\""),
    );
    response
}

/// The one-disbursement form.
#[derive(Deserialize, ToSchema)]
pub struct DisbursementForm {
    csrf: String,
    /// Made for each form shown: a form posted twice is one disbursement.
    nonce: String,
    /// BANK or EWALLET.
    channel: String,
    /// The bank's short code or the e-wallet's.
    provider: String,
    /// The account number or the e-wallet's phone.
    account: String,
    #[serde(default)]
    account_name: String,
    /// Rupiah.
    amount: String,
}

impl WithCsrf for DisbursementForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// The batch form: CSV text, one disbursement a row.
#[derive(Deserialize, ToSchema)]
pub struct BatchForm {
    csrf: String,
    nonce: String,
    /// Rows `channel,provider,account,account_name,amount_rupiah` (a header row is skipped).
    csv: String,
}

impl WithCsrf for BatchForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// A row or form's disbursement, every value checked: the provider is
/// the bank for BANK and the e-wallet otherwise, as the form labels it.
fn disbursement_request(
    channel: &str,
    provider: &str,
    account: &str,
    name: &str,
    amount_minor: i64,
    key: String,
) -> Result<NewDisbursement, EngineError> {
    let channel = channel.trim().to_uppercase();
    let bank = channel == "BANK";
    let fields = AccountFields {
        channel: Some(&channel),
        bank_short_code: bank.then_some(provider),
        account_number: bank.then_some(account),
        account_name: bank.then_some(name),
        ewallet_provider: (!bank).then_some(provider),
        ewallet_phone: (!bank).then_some(account),
    };
    Ok(NewDisbursement {
        idempotency_key: IdempotencyKey::parse(key)?,
        amount: PositiveAmount::parse(amount_minor)?,
        payee: fields.payee(None)?,
        notify_url: None,
        source: Source::Api,
    })
}

fn disbursements_body(state: &AppState, signed_in: &SignedIn, problem: Option<&str>, notice: Option<&str>) -> Markup {
    let (items, total) = state
        .engine
        .disbursements()
        .list_disbursements(
            signed_in.session.merchant_id,
            &DisbursementFilter::default(),
            1,
            PAGE_SIZE,
        )
        .unwrap_or_default();
    let csrf = &signed_in.session.csrf;
    html! {
        h1 { "Disbursements" }
        @if let Some(problem) = problem { p.problem role="alert" { (problem) } }
        @if let Some(notice) = notice { p.notice role="status" { (notice) } }
        section.card {
            h2 { "Send money" }
            form method="post" action="/dashboard/disbursements" {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="nonce" value=(super::session::random_token());
                label for="channel" { "Channel" }
                select #channel name="channel" { option value="BANK" { "Bank" } option value="EWALLET" { "E-wallet" } }
                label for="provider" { "Bank or e-wallet code (e.g. BCA, DANA)" }
                input #provider type="text" name="provider" required;
                label for="account" { "Account number or e-wallet phone" }
                input #account type="text" name="account" required;
                label for="account_name" { "Account holder (bank)" }
                input #account_name type="text" name="account_name";
                label for="amount" { "Amount (Rp)" }
                input #amount type="text" name="amount" inputmode="decimal" required;
                button type="submit" { "Send" }
            }
        }
        section.card {
            h2 { "Upload a CSV batch" }
            form method="post" action="/dashboard/disbursements/upload" enctype="multipart/form-data" {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="nonce" value=(super::session::random_token());
                label for="file" { "A CSV file, one row a disbursement: channel, provider, account, account name, amount" }
                input #file type="file" name="file" accept=".csv,text/csv" required;
                button type="submit" { "Upload" }
            }
        }
        section.card {
            h2 { "Batch from CSV text" }
            form method="post" action="/dashboard/disbursements/batch" {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="nonce" value=(super::session::random_token());
                label for="csv" { "One row a disbursement: channel, provider, account, account name, amount (up to 1,000 rows)" }
                textarea #csv name="csv" rows="6" required placeholder="BANK,BCA,1234567890,PT Sumber Makmur,150000" {}
                button type="submit" { "Send batch" }
            }
        }
        section.card {
            h2 { "Latest (" (total) " in all)" }
            div.table-wrap {
                table {
                    thead { tr { th { "Ref code" } th { "To" } th { "Amount" } th { "Fee" } th { "Status" } th { "Created" } } }
                    tbody {
                        @for d in &items {
                            tr {
                                td { (d.ref_code) }
                                td { (format!("{:?}", d.destination.channel()).to_uppercase()) }
                                td.amount { (rupiah(d.request_amount.get())) }
                                td.amount { (rupiah(d.fee.get())) }
                                td { span.badge { (d.status.as_str()) } }
                                td { (timestamp(d.created_at_ms)) }
                            }
                        }
                        @if items.is_empty() { tr { td colspan="6" { "No disbursements." } } }
                    }
                }
            }
        }
    }
}

fn disbursements_response(
    state: &AppState,
    signed_in: &SignedIn,
    status: StatusCode,
    problem: Option<&str>,
    notice: Option<&str>,
) -> Response {
    let body = disbursements_body(state, signed_in, problem, notice);
    page_response(
        status,
        layout(
            "Disbursements",
            Some(&signed_in.session),
            "/dashboard/disbursements",
            body,
        ),
    )
}

/// GET /dashboard/disbursements.
#[utoipa::path(get, path = "/dashboard/disbursements", tag = "Pages", operation_id = "dashboard_disbursements",
    summary = "The dashboard's disbursements", security(()),
    responses(PageAnswers))]
pub async fn disbursements_page(State(state): State<AppState>, signed_in: SignedIn) -> Response {
    disbursements_response(&state, &signed_in, StatusCode::OK, None, None)
}

/// POST /dashboard/disbursements.
#[utoipa::path(post, path = "/dashboard/disbursements", tag = "Pages", operation_id = "dashboard_create_disbursement",
    summary = "Send one disbursement from the dashboard", security(()),
    request_body(content = DisbursementForm, content_type = "application/x-www-form-urlencoded"),
    responses(RedirectingFormAnswers))]
pub async fn create_disbursement(
    State(state): State<AppState>,
    DashboardForm(signed_in, form): DashboardForm<DisbursementForm>,
) -> Response {
    let Some(amount_minor) = super::orders::parse_rupiah(&form.amount) else {
        return refused(&state, &signed_in, "Enter an amount in rupiah.");
    };
    let key = format!("dashboard-{}", form.nonce.chars().take(64).collect::<String>());
    let disbursements = state.engine.disbursements();
    let request = disbursements
        .ensure_may_disburse(signed_in.session.merchant_id)
        .and_then(|()| {
            disbursement_request(
                &form.channel,
                &form.provider,
                &form.account,
                &form.account_name,
                amount_minor,
                key,
            )
        });
    let request = match request {
        Ok(request) => request,
        Err(error) => return refused(&state, &signed_in, &format!("Not sent: {error}.")),
    };
    match disbursements
        .create_disbursement(signed_in.session.merchant_id, request)
        .await
    {
        Ok(_) | Err(EngineError::DuplicateDisbursement(_)) => Redirect::to("/dashboard/disbursements").into_response(),
        Err(error) => refused(&state, &signed_in, &format!("Not sent: {error}.")),
    }
}

/// POST /dashboard/disbursements/batch: rows of CSV text, as one batch.
#[utoipa::path(post, path = "/dashboard/disbursements/batch", tag = "Pages", operation_id = "dashboard_create_batch",
    summary = "Send a batch of disbursements from CSV", security(()),
    request_body(content = BatchForm, content_type = "application/x-www-form-urlencoded"),
    responses(ShownFormAnswers))]
pub async fn create_batch(
    State(state): State<AppState>,
    DashboardForm(signed_in, form): DashboardForm<BatchForm>,
) -> Response {
    take_batch(&state, &signed_in, &form.nonce, form.csv.as_bytes()).await
}

/// The disbursements page again (400), saying why the form was refused.
fn refused(state: &AppState, signed_in: &SignedIn, why: &str) -> Response {
    disbursements_response(state, signed_in, StatusCode::BAD_REQUEST, Some(why), None)
}

/// Creates the disbursements of CSV rows as one batch and shows the outcome.
async fn take_batch(state: &AppState, signed_in: &SignedIn, nonce: &str, csv_bytes: &[u8]) -> Response {
    let state = state.clone();
    let nonce: String = nonce.chars().take(64).collect();
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(csv_bytes);
    let mut items = Vec::new();
    for (row, record) in reader.records().enumerate() {
        let Ok(record) = record else {
            items.push(Err(EngineError::invalid("csv", "a row could not be read")));
            continue;
        };
        let field = |i: usize| record.get(i).unwrap_or("").to_string();
        if row == 0 && field(0).eq_ignore_ascii_case("channel") {
            continue;
        }
        let item = match super::orders::parse_rupiah(&field(4)) {
            Some(amount) => disbursement_request(
                &field(0),
                &field(1),
                &field(2),
                &field(3),
                amount,
                format!("dashboard-{nonce}-{row}"),
            ),
            None => Err(EngineError::invalid("amount", "must be an amount in rupiah")),
        };
        items.push(item);
    }
    if items.is_empty() || items.len() > BATCH_ROWS_MAX {
        return refused(&state, signed_in, "A batch holds 1 to 1,000 rows.");
    }
    let batch_key = match IdempotencyKey::parse(format!("dashboard-{nonce}")) {
        Ok(key) => key,
        Err(error) => return refused(&state, signed_in, &format!("Not sent: {error}.")),
    };
    match state
        .engine
        .disbursements()
        .create_disbursement_batch(signed_in.session.merchant_id, batch_key, items)
        .await
    {
        Ok(answer) => {
            let created = answer.items.iter().filter(|item| item.is_ok()).count();
            let refused: Vec<String> = answer
                .items
                .iter()
                .enumerate()
                .filter_map(|(row, item)| item.as_ref().err().map(|error| format!("row {}: {error}", row + 1)))
                .collect();
            let mut notice = format!("Batch taken: {created} of {} rows created.", answer.items.len());
            if !refused.is_empty() {
                notice.push_str(&format!(" Refused: {}.", refused.join("; ")));
            }
            disbursements_response(&state, signed_in, StatusCode::OK, None, Some(&notice))
        }
        Err(error) => refused(&state, signed_in, &format!("Batch not taken: {error}.")),
    }
}

/// POST /dashboard/disbursements/upload: a CSV file, as one batch.
#[utoipa::path(post, path = "/dashboard/disbursements/upload", tag = "Pages", operation_id = "dashboard_upload_batch",
    summary = "Upload a CSV file of disbursements",
    description = "Fields `csrf`, `nonce` and `file` (rows `channel,provider,account,account_name,amount`, up to 1,000; \
        a header row is skipped), as one batch. Files up to 1 MiB.",
    security(()),
    request_body(content = String, content_type = "multipart/form-data"),
    responses(ShownFormAnswers))]
pub async fn upload_batch(
    State(state): State<AppState>,
    signed_in: SignedIn,
    multipart: Result<Multipart, MultipartRejection>,
) -> Response {
    let Ok(mut multipart) = multipart else {
        return forbidden();
    };
    let (mut csrf, mut nonce, mut file) = (String::new(), String::new(), None);
    loop {
        match multipart.next_field().await {
            Ok(Some(field)) => {
                let name = field.name().unwrap_or_default().to_string();
                let Ok(bytes) = field.bytes().await else {
                    return refused(&state, &signed_in, "The upload could not be read.");
                };
                match name.as_str() {
                    "csrf" => csrf = String::from_utf8_lossy(&bytes).into_owned(),
                    "nonce" => nonce = String::from_utf8_lossy(&bytes).into_owned(),
                    "file" => file = Some(bytes),
                    _ => {}
                }
            }
            Ok(None) => break,
            Err(_) => return refused(&state, &signed_in, "The upload could not be read."),
        }
    }
    if !signed_in.csrf_ok(&csrf) {
        return forbidden();
    }
    let Some(file) = file.filter(|f| !f.is_empty()) else {
        return refused(&state, &signed_in, "Choose a CSV file.");
    };
    take_batch(&state, &signed_in, &nonce, &file).await
}
