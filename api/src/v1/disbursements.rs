//! `POST /v1/disbursements` and `GET /v1/disbursements[/{id}]`.

use super::pagination::ListQuery;
use crate::commands::{body_with_account_fields, key_and_amount};
use crate::error::V1Error;
use crate::extract::{SignedJson, V1Merchant};
use crate::openapi::names::ChannelName;
use crate::openapi::names::DisbursementStatusName;
use crate::openapi::values::{HttpUrlText, IdempotencyKeyText};
use crate::wire::{created_disbursement_view, disbursement_view, Created, Data, DataBody, DisbursementView, PageBody};
use crate::AppState;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use paygate_engine::disbursements::NewDisbursement;
use paygate_engine::domain::Source;
use paygate_engine::input::HttpUrl;
use paygate_engine::EngineError;
use serde::Deserialize;
use utoipa::ToSchema;

body_with_account_fields! {
    /// Body of `POST /v1/disbursements`: every field optional here so that each
    /// missing one gets its own code (`MISSING_BANK_INFO`,
    /// `MISSING_EWALLET_INFO`), not a generic parse error.
    #[derive(Deserialize, ToSchema)]
    pub struct CreateDisbursement {
        /// Unique per merchant: a key used before answers 409 with that disbursement.
        #[schema(required = true, value_type = IdempotencyKeyText)]
        idempotency_key: Option<String>,
        ..account_fields {
            /// Required unless `beneficiary_id` is given.
            #[schema(value_type = Option<ChannelName>)]
            channel
        },
        /// What the recipient gets, in minor units (whole rupiah); the fee is debited on top.
        #[schema(required = true, value_type = i64, minimum = 1)]
        amount_minor: Option<i64>,
        /// Where this disbursement's webhooks go; else the merchant's default.
        #[schema(value_type = Option<HttpUrlText>)]
        notify_url: Option<String>,
        /// Pay a saved beneficiary instead of giving the destination.
        #[schema(value_type = Option<Uuid>)]
        beneficiary_id: Option<String>,
    }
}

impl CreateDisbursement {
    /// The disbursement this body asks for, every value checked (also each
    /// item of a batch), in the order the fields are documented.
    pub fn command(mut self, source: Source) -> Result<NewDisbursement, EngineError> {
        let (idempotency_key, amount) = key_and_amount(self.idempotency_key.take(), self.amount_minor)?;
        let payee = self.account_fields().payee(self.beneficiary_id.as_deref())?;
        let notify_url = self
            .notify_url
            .map(|url| HttpUrl::parse("notify_url", url))
            .transpose()?;
        Ok(NewDisbursement {
            idempotency_key,
            amount,
            payee,
            notify_url,
            source,
        })
    }
}

/// POST /v1/disbursements: 201 with the disbursement, wallet debited by request + fee.
#[utoipa::path(post, path = "/v1/disbursements", tag = "Disbursements", operation_id = "create_disbursement",
    summary = "Create a disbursement",
    description = "Pays `amount_minor` to a bank account or e-wallet; the wallet is debited by the amount plus the fee \
        at once. At or above the review threshold it waits IN_REVIEW for an operator.",
    security(("api_key" = []), ("api_key" = [], "v1_signature" = [])),
    request_body = CreateDisbursement,
    responses((status = 201, description = "The disbursement.", body = DataBody<DisbursementView>)))]
pub async fn create_disbursement(
    State(state): State<AppState>,
    V1Merchant(merchant): V1Merchant,
    SignedJson(body): SignedJson<CreateDisbursement>,
) -> Result<Response, V1Error> {
    let disbursements = state.engine.disbursements();
    // Whether this merchant may disburse at all comes before what it sent.
    disbursements.ensure_may_disburse(merchant.id)?;
    let disbursement = disbursements
        .create_disbursement(merchant.id, body.command(Source::Api)?)
        .await?;
    Ok(Created(created_disbursement_view(&disbursement)).into_response())
}

/// GET /v1/disbursements/{id}: by UUID or ref code.
#[utoipa::path(get, path = "/v1/disbursements/{id}", tag = "Disbursements", operation_id = "get_disbursement",
    summary = "Get a disbursement", security(("api_key" = [])),
    params(("id" = String, Path, description = "The disbursement's id or ref code.")),
    responses((status = 200, description = "The disbursement.", body = DataBody<DisbursementView>)))]
pub async fn get_disbursement(
    State(state): State<AppState>,
    V1Merchant(merchant): V1Merchant,
    Path(id): Path<String>,
) -> Result<Response, V1Error> {
    let disbursement = state.engine.disbursements().disbursement_for(merchant.id, &id)?;
    Ok(Data(disbursement_view(&disbursement)).into_response())
}

status_list_route! {
    /// GET /v1/disbursements: newest first, paginated, filterable.
    list_disbursements: GET "/v1/disbursements", tag = "Disbursements",
    summary = "List disbursements", description = "Newest first. `status` is a disbursement status.",
    params(ListQuery<DisbursementStatusName>), answer = ("A page of disbursements.", PageBody<DisbursementView>),
    listed_by = disbursements().list_disbursements,
    shown_by = |_: &AppState, disbursement| disbursement_view(disbursement),
}
