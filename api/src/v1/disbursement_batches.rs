//! `POST /v1/disbursements/batch` and `GET /v1/disbursements/batch/{id}`
//! (DESIGN.md 11): up to 1,000 disbursements in one request, each created
//! or refused exactly as `POST /v1/disbursements` would, and a batch's
//! figures by status.

use super::disbursements::CreateDisbursement;
use crate::error::V1Error;
use crate::extract::{parse_item, SignedJson, V1Merchant};
use crate::wire::{created_disbursement_view, timestamp, Created, Data, DisbursementView};
use crate::AppState;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use paygate_engine::disbursements::{BatchAnswer, BatchSummary};
use paygate_engine::domain::BATCH_ITEMS_MAX;
use serde::de::{Deserializer, Error as _, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use uuid::Uuid;

/// Bodies this route takes (DESIGN.md 11): 1,000 items of a few hundred
/// bytes each, with room to spare.
pub const BATCH_BODY_BYTES_MAX: usize = 1024 * 1024;

/// Body of `POST /v1/disbursements/batch`. Items stay raw until each is
/// read on its own, so one unreadable item refuses only itself.
#[derive(Deserialize)]
pub struct CreateBatch {
    idempotency_key: Option<String>,
    #[serde(default, deserialize_with = "at_most_max_items")]
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
/// outcome. The same batch key answers with the first answer's id and
/// items, each disbursement in its current state.
pub async fn create_disbursement_batch(
    State(state): State<AppState>,
    V1Merchant(merchant): V1Merchant,
    SignedJson(body): SignedJson<CreateBatch>,
) -> Result<Response, V1Error> {
    let idempotency_key = body
        .idempotency_key
        .ok_or_else(|| V1Error::invalid_body("idempotency_key: is required"))?;
    let raw_items = body.items.ok_or_else(|| V1Error::invalid_body("items: is required"))?;
    let items = raw_items
        .iter()
        .map(|raw| parse_item::<CreateDisbursement>(raw).and_then(CreateDisbursement::into_new))
        .collect();
    let answer = state
        .engine
        .create_disbursement_batch(merchant.id, idempotency_key, items)
        .await?;
    Ok(batch_response(answer))
}

/// One item of the answer: `data` (the disbursement) on success; else the
/// V1 `error` the single route would answer, beside its `data` when it has
/// one (a reused key's existing disbursement).
#[derive(Serialize)]
struct ItemView<'a> {
    index: usize,
    success: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorView<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<ItemData<'a>>,
}

#[derive(Serialize)]
struct ErrorView<'a> {
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

#[derive(Serialize)]
struct BatchView<'a> {
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
pub async fn get_disbursement_batch(
    State(state): State<AppState>,
    V1Merchant(merchant): V1Merchant,
    Path(id): Path<String>,
) -> Result<Response, V1Error> {
    let id = Uuid::parse_str(&id).map_err(|_| V1Error::invalid_id())?;
    let summary = state.engine.disbursement_batch_for(merchant.id, id)?;
    Ok(Data(summary_view(&summary)).into_response())
}

fn summary_view(summary: &BatchSummary) -> Value {
    let by_status: Map<String, Value> = summary
        .by_status
        .iter()
        .map(|(status, total)| {
            let figures = json!({ "count": total.count, "amount_minor": total.amount_minor });
            (status.as_str().to_string(), figures)
        })
        .collect();
    json!({
        "id": summary.id,
        "created_at": timestamp(summary.created_at_ms),
        "total_items": summary.total_items,
        "accepted": summary.accepted,
        "refused": summary.refused,
        "by_status": by_status,
    })
}
