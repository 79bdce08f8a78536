//! `POST /v1/disbursements/batch` and `GET /v1/disbursements/batch/{id}`:
//! up to 1,000 disbursements in one request, each created
//! or refused exactly as `POST /v1/disbursements` would, and a batch's
//! figures by status.

use super::disbursements::CreateDisbursement;
use crate::error::V1Error;
use crate::extract::{parse_item, SignedJson, V1Merchant};
use crate::openapi::names::DisbursementStatusName;
use crate::openapi::values::IdempotencyKeyText;
use crate::wire::{created_disbursement_view, timestamp, Created, Data, DataBody, DisbursementView};
use crate::AppState;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use paygate_engine::disbursements::{BatchAnswer, BatchSummary};
use paygate_engine::domain::{Source, BATCH_ITEMS_MAX};
use paygate_engine::input::IdempotencyKey;
use serde::de::{Deserializer, Error as _, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::ToSchema;
use uuid::Uuid;

/// Bodies this route takes: 1,000 items of a few hundred
/// bytes each, with room to spare.
pub const BATCH_BODY_BYTES_MAX: usize = 1024 * 1024;

/// Body of `POST /v1/disbursements/batch`. Items stay raw until each is
/// read on its own, so one unreadable item refuses only itself.
#[derive(Deserialize, ToSchema)]
pub struct CreateBatch {
    /// Unique per merchant: the same key replays the first answer.
    #[schema(required = true, value_type = IdempotencyKeyText)]
    idempotency_key: Option<String>,
    /// 1 to 1,000 disbursements, each as `POST /v1/disbursements` takes it.
    #[serde(default, deserialize_with = "at_most_max_items")]
    #[schema(required = true, value_type = Vec<CreateDisbursement>, min_items = 1, max_items = 1000)]
    items: Option<Vec<Box<RawValue>>>,
}

/// An array of at most `BATCH_ITEMS_MAX` values, refused at the first one
/// past it (before the rest of a large body is read into memory).
fn at_most_max_items<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Vec<Box<RawValue>>>, D::Error> {
    struct Items;
    impl<'de> Visitor<'de> for Items {
        type Value = Vec<Box<RawValue>>;

        fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(formatter, "an array of 1 to {BATCH_ITEMS_MAX} disbursements")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(BATCH_ITEMS_MAX));
            while let Some(item) = seq.next_element::<Box<RawValue>>()? {
                if items.len() == BATCH_ITEMS_MAX {
                    return Err(A::Error::custom(format!(
                        "must hold 1 to {BATCH_ITEMS_MAX} disbursements"
                    )));
                }
                items.push(item);
            }
            Ok(items)
        }
    }
    deserializer.deserialize_seq(Items).map(Some)
}

/// POST /v1/disbursements/batch: 201 with the batch's id and each item's
/// outcome. The same batch key answers with the first answer: its id and
/// items, each created disbursement as it was created.
#[utoipa::path(post, path = "/v1/disbursements/batch", tag = "Disbursement batches", operation_id = "create_disbursement_batch",
    summary = "Create up to 1,000 disbursements",
    description = "Each item is created or refused exactly as `POST /v1/disbursements` would; one refused item refuses \
        only itself. The same batch key replays the first answer, each created disbursement as it was created. \
        Bodies up to 1 MiB.",
    security(("api_key" = []), ("api_key" = [], "v1_signature" = [])),
    request_body = CreateBatch,
    responses((status = 201, description = "The batch's id and each item's outcome, in order.", body = DataBody<BatchView>)))]
pub async fn create_disbursement_batch(
    State(state): State<AppState>,
    V1Merchant(merchant): V1Merchant,
    SignedJson(body): SignedJson<CreateBatch>,
) -> Result<Response, V1Error> {
    let idempotency_key = body
        .idempotency_key
        .ok_or_else(|| V1Error::invalid_body("idempotency_key: is required"))?;
    let idempotency_key = IdempotencyKey::parse(idempotency_key)?;
    let raw_items = body.items.ok_or_else(|| V1Error::invalid_body("items: is required"))?;
    let items = raw_items
        .iter()
        .map(|raw| parse_item::<CreateDisbursement>(raw).and_then(|item| item.command(Source::Api)))
        .collect();
    let answer = state
        .engine
        .disbursements()
        .create_disbursement_batch(merchant.id, idempotency_key, items)
        .await?;
    Ok(batch_response(answer))
}

/// One item of the answer: `data` (the disbursement) on success; else the
/// V1 `error` the single route would answer, beside its `data` when it has
/// one (a reused key's existing disbursement).
#[derive(Serialize, ToSchema)]
pub struct ItemView<'a> {
    /// The item's place in the request, from 0.
    index: usize,
    /// Whether the disbursement was created.
    success: bool,
    /// Why it was not: the single route's code and message.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorView<'a>>,
    /// The disbursement created, or the existing one a reused key names.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<DisbursementView>)]
    data: Option<ItemData<'a>>,
}

/// A refused item's code and message.
#[derive(Serialize, ToSchema)]
#[schema(as = BatchItemError)]
pub struct ErrorView<'a> {
    code: &'a str,
    message: &'a str,
}

// Most items are created ones: boxing the large variant would allocate
// for each of them to spare the rare 409.
#[allow(clippy::large_enum_variant)]
#[derive(Serialize)]
#[serde(untagged)]
enum ItemData<'a> {
    Created(DisbursementView<'a>),
    Existing(&'a RawValue),
}

/// A batch's answer: its id and each item's outcome.
#[derive(Serialize, ToSchema)]
pub struct BatchView<'a> {
    id: Uuid,
    items: Vec<ItemView<'a>>,
}

fn batch_response(answer: BatchAnswer) -> Response {
    let items: Vec<_> = answer
        .items
        .into_iter()
        .map(|item| item.map_err(V1Error::from))
        .collect();
    let views = items
        .iter()
        .enumerate()
        .map(|(index, item)| match item {
            Ok(disbursement) => ItemView {
                index,
                success: true,
                error: None,
                data: Some(ItemData::Created(created_disbursement_view(disbursement))),
            },
            Err(error) => ItemView {
                index,
                success: false,
                error: Some(ErrorView {
                    code: error.code,
                    message: &error.message,
                }),
                data: error.data.as_deref().map(ItemData::Existing),
            },
        })
        .collect();
    Created(BatchView {
        id: answer.id,
        items: views,
    })
    .into_response()
}

/// GET /v1/disbursements/batch/{id}: counts, and per current status of the
/// accepted items their count and request amounts.
#[utoipa::path(get, path = "/v1/disbursements/batch/{id}", tag = "Disbursement batches", operation_id = "get_disbursement_batch",
    summary = "Get a batch's figures",
    description = "Counts, and per current status of the accepted items their count and request amounts.",
    security(("api_key" = [])), params(("id" = Uuid, Path, description = "The batch's id.")),
    responses((status = 200, description = "The batch's figures.", body = DataBody<BatchSummaryView>)))]
pub async fn get_disbursement_batch(
    State(state): State<AppState>,
    V1Merchant(merchant): V1Merchant,
    Path(id): Path<String>,
) -> Result<Response, V1Error> {
    let id = Uuid::parse_str(&id).map_err(|_| V1Error::invalid_id())?;
    let summary = state.engine.disbursements().disbursement_batch_for(merchant.id, id)?;
    Ok(Data(summary_view(&summary)).into_response())
}

/// A batch's figures.
#[derive(Serialize, ToSchema)]
pub struct BatchSummaryView {
    id: Uuid,
    #[schema(format = DateTime)]
    created_at: String,
    total_items: u64,
    accepted: u64,
    refused: u64,
    /// Accepted items by their current status, in the order of the lifecycle.
    #[schema(value_type = BTreeMap<DisbursementStatusName, StatusFigures>)]
    by_status: serde_json::Map<String, serde_json::Value>,
}

/// The accepted items in one status.
#[derive(Serialize, ToSchema)]
pub struct StatusFigures {
    count: u64,
    /// Their request amounts, in minor units.
    amount_minor: i64,
}

fn summary_view(summary: &BatchSummary) -> BatchSummaryView {
    BatchSummaryView {
        id: summary.id,
        created_at: timestamp(summary.created_at_ms),
        total_items: summary.total_items as u64,
        accepted: summary.accepted as u64,
        refused: summary.refused as u64,
        by_status: summary
            .by_status
            .iter()
            .map(|(status, total)| {
                let figures = StatusFigures {
                    count: total.count as u64,
                    amount_minor: total.amount_minor,
                };
                (
                    status.as_str().to_string(),
                    serde_json::to_value(figures).unwrap_or_default(),
                )
            })
            .collect(),
    }
}
