//! The baseline of `benches/http/run.sh`: plain axum JSON endpoints of the
//! same shape as `POST /v1/disbursements` and `POST /v1/orders`. Each reads
//! the same body into a typed struct and answers 201 with a JSON object of
//! the size and fields of a created disbursement or order
//! (`api/src/wire.rs`), but keeps nothing: no engine, no journal, no fsync,
//! no vendor. What paygate spends beyond this is the price of its checks and
//! of durability.
//!
//! Run: `cargo run --release --example http_baseline -- 127.0.0.1:0`; prints
//! `http_baseline listening on http://ADDR` (see BENCHMARKS.md).

use axum::extract::Path;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use chrono::{SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

// The allocator of the `paygate` binary, with its settings.
#[path = "../../src/allocator.rs"]
mod allocator;

/// Body of `POST /v1/disbursements` (bank channel).
#[derive(Deserialize)]
struct CreateDisbursement {
    idempotency_key: String,
    channel: String,
    bank_short_code: String,
    account_number: String,
    account_name: String,
    amount_minor: i64,
    #[allow(dead_code)]
    notify_url: Option<String>,
}

/// A created disbursement: the fields of `disbursement_view` in `api/src/wire.rs`.
#[derive(Serialize)]
struct DisbursementView {
    id: uuid::Uuid,
    ref_code: String,
    idempotency_key: String,
    channel: String,
    bank_id: uuid::Uuid,
    account_number: String,
    account_name: String,
    ewallet_provider: Option<String>,
    ewallet_phone: Option<String>,
    request_amount_minor: i64,
    fee_minor: i64,
    final_amount_minor: i64,
    vendor_disbursement_id: Option<String>,
    source: &'static str,
    status: &'static str,
    requested_at: String,
    created_at: String,
}

/// `{success: true, data}`, the V1 success envelope.
#[derive(Serialize)]
struct Created<T> {
    success: bool,
    data: T,
}

/// Flat bank disbursement fee, as paygate's default (IDR 2,500).
const FEE_MINOR: i64 = 250_000;

static NEXT_REF: AtomicU64 = AtomicU64::new(1);

/// POST /v1/disbursements: 201 with a disbursement that is never stored.
async fn create_disbursement(Json(body): Json<CreateDisbursement>) -> (StatusCode, Json<Created<DisbursementView>>) {
    let now = Utc::now();
    let timestamp = now.to_rfc3339_opts(SecondsFormat::Millis, true);
    let ref_number = NEXT_REF.fetch_add(1, Ordering::Relaxed) % 1_000_000;
    let view = DisbursementView {
        id: uuid::Uuid::new_v4(),
        ref_code: format!("DSB-{}-{ref_number:06}", now.format("%y%m%d%H%M%S")),
        idempotency_key: body.idempotency_key,
        channel: body.channel,
        // paygate looks the code up in its catalog; a name-based UUID stands in.
        bank_id: uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, body.bank_short_code.as_bytes()),
        account_number: body.account_number,
        account_name: body.account_name,
        ewallet_provider: None,
        ewallet_phone: None,
        request_amount_minor: body.amount_minor,
        fee_minor: FEE_MINOR,
        final_amount_minor: body.amount_minor.saturating_add(FEE_MINOR),
        vendor_disbursement_id: None,
        source: "API",
        status: "PENDING",
        requested_at: timestamp.clone(),
        created_at: timestamp,
    };
    (
        StatusCode::CREATED,
        Json(Created {
            success: true,
            data: view,
        }),
    )
}

/// Body of `POST /v1/orders`.
#[derive(Deserialize)]
struct CreateOrder {
    merchant_order_id: String,
    amount_minor: i64,
    payment_method: String,
    customer_name: Option<String>,
    customer_email: Option<String>,
    customer_phone: Option<String>,
    notify_url: Option<String>,
    return_url: Option<String>,
    expire_minutes: Option<i64>,
    metadata: Option<serde_json::Value>,
}

/// A created order: the fields of `order_view` in `api/src/wire.rs`.
#[derive(Serialize)]
struct OrderView {
    id: uuid::Uuid,
    ref_code: String,
    merchant_order_id: String,
    amount_minor: i64,
    currency_code: &'static str,
    payment_method: String,
    status: &'static str,
    qris_string: Option<String>,
    qr_url: Option<String>,
    virtual_account: Option<serde_json::Value>,
    expires_at: Option<String>,
    paid_at: Option<String>,
    is_settled: bool,
    vendor_rrn: Option<String>,
    customer_name: Option<String>,
    customer_email: Option<String>,
    customer_phone: Option<String>,
    notify_url: Option<String>,
    return_url: Option<String>,
    metadata: Option<serde_json::Value>,
    refunded_amount_minor: i64,
    created_at: String,
    updated_at: String,
}

/// `http://ADDR` of this server, for `qr_url` (paygate uses its public URL).
static PUBLIC_URL: OnceLock<String> = OnceLock::new();

/// POST /v1/orders: 201 with a QRIS order that is never stored. The QRIS
/// string has the length and layout of paygate's (about 200 characters,
/// amount and ref code inside) without its CRC; no vendor is asked.
async fn create_order(Json(body): Json<CreateOrder>) -> (StatusCode, Json<Created<OrderView>>) {
    let now = Utc::now();
    let timestamp = now.to_rfc3339_opts(SecondsFormat::Millis, true);
    let expires_at = (now + chrono::Duration::minutes(body.expire_minutes.unwrap_or(60)))
        .to_rfc3339_opts(SecondsFormat::Millis, true);
    let ref_number = NEXT_REF.fetch_add(1, Ordering::Relaxed) % 10_000;
    let ref_code = format!("ORD-{}-{ref_number:04}", now.format("%y%m%d%H%M%S"));
    let amount = body.amount_minor / 100;
    let qris_string = format!(
        "00020101021226700017ID.CO.PAYGATE.WWW011993601380438823485580215PGA5C28437132640303UMI\
         51440014ID.CO.QRIS.WWW0215ID13804388234850303UMI520459995303360540{}{amount}5802ID\
         5910HTTP bench6007JAKARTA62250521{ref_code}6304FFFF",
        amount.to_string().len()
    );
    let qr_url = format!(
        "{}/v1/orders/{ref_code}/qr.png",
        PUBLIC_URL.get().map_or("", String::as_str)
    );
    // paygate normalizes 08... to 628...
    let customer_phone = body.customer_phone.map(|phone| match phone.strip_prefix('0') {
        Some(rest) => format!("62{rest}"),
        None => phone,
    });
    let view = OrderView {
        id: uuid::Uuid::new_v4(),
        ref_code,
        merchant_order_id: body.merchant_order_id,
        amount_minor: body.amount_minor,
        currency_code: "IDR",
        payment_method: body.payment_method,
        status: "PENDING",
        qris_string: Some(qris_string),
        qr_url: Some(qr_url),
        virtual_account: None,
        expires_at: Some(expires_at),
        paid_at: None,
        is_settled: false,
        vendor_rrn: None,
        customer_name: body.customer_name,
        customer_email: body.customer_email,
        customer_phone,
        notify_url: body.notify_url,
        return_url: body.return_url,
        metadata: body.metadata,
        refunded_amount_minor: 0,
        created_at: timestamp.clone(),
        updated_at: timestamp,
    };
    (
        StatusCode::CREATED,
        Json(Created {
            success: true,
            data: view,
        }),
    )
}

/// POST /v1/sandbox/orders/{ref_code}/pay: 200 with the order as paid, of
/// the shape and size of paygate's answer (the bench's QRIS order of IDR
/// 25,000); nothing is looked up or stored.
async fn pay_order(Path(ref_code): Path<String>) -> (StatusCode, Json<Created<OrderView>>) {
    let now = Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true);
    let view = OrderView {
        id: uuid::Uuid::new_v4(),
        qris_string: Some(format!(
            "00020101021226700017ID.CO.PAYGATE.WWW011993601380438823485580215PGA5C28437132640303UMI\
             51440014ID.CO.QRIS.WWW0215ID13804388234850303UMI5204599953033605405250005802ID\
             5910HTTP bench6007JAKARTA62250521{ref_code}6304FFFF"
        )),
        qr_url: Some(format!(
            "{}/v1/orders/{ref_code}/qr.png",
            PUBLIC_URL.get().map_or("", String::as_str)
        )),
        ref_code,
        merchant_order_id: "bench".into(),
        amount_minor: 2_500_000,
        currency_code: "IDR",
        payment_method: "QRIS".into(),
        status: "PAID",
        virtual_account: None,
        expires_at: Some(now.clone()),
        paid_at: Some(now.clone()),
        is_settled: true,
        vendor_rrn: Some("SANDBOX-RRN-000000000000".into()),
        customer_name: None,
        customer_email: None,
        customer_phone: Some("6281234567890".into()),
        notify_url: None,
        return_url: None,
        metadata: None,
        refunded_amount_minor: 0,
        created_at: now.clone(),
        updated_at: now,
    };
    (
        StatusCode::OK,
        Json(Created {
            success: true,
            data: view,
        }),
    )
}

fn main() -> std::io::Result<()> {
    allocator::keep_freed_memory();
    let listen = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:0".into());
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(async {
            let listener = tokio::net::TcpListener::bind(&listen).await?;
            // run.sh reads this line to learn the port chosen for :0.
            let public_url = format!("http://{}", listener.local_addr()?);
            println!("http_baseline listening on {public_url}");
            std::io::stdout().flush()?;
            PUBLIC_URL.get_or_init(|| public_url);
            let app = Router::new()
                .route("/v1/disbursements", post(create_disbursement))
                .route("/v1/orders", post(create_order))
                .route("/v1/sandbox/orders/{ref_code}/pay", post(pay_order));
            axum::serve(listener, app).await
        })
}
