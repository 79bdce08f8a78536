//! The baseline of `benches/http/run.sh`: a plain axum JSON endpoint of the
//! same shape as `POST /v1/disbursements`. It reads the same body into a
//! typed struct and answers 201 with a JSON object of the size and fields of
//! a created disbursement (`api/src/wire.rs`), but keeps nothing: no engine,
//! no journal, no fsync. What paygate spends beyond this is the price of its
//! checks and of durability.
//!
//! Run: `cargo run --release --example http_baseline -- 127.0.0.1:0`; prints
//! `http_baseline listening on http://ADDR` (see BENCHMARKS.md).

use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use chrono::{SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};

// The same allocator as the `paygate` binary.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Body of `POST /v1/disbursements` (bank channel), as SPEC.md 4.3 gives it.
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

fn main() -> std::io::Result<()> {
    let listen = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:0".into());
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(async {
            let listener = tokio::net::TcpListener::bind(&listen).await?;
            // run.sh reads this line to learn the port chosen for :0.
            println!("http_baseline listening on http://{}", listener.local_addr()?);
            std::io::stdout().flush()?;
            let app = Router::new().route("/v1/disbursements", post(create_disbursement));
            axum::serve(listener, app).await
        })
}
