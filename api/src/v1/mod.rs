//! The V1 merchant API routes (under `/v1/`): authenticated by `X-API-Key`.

/// Declares a `GET` list route paginated and filtered by [`ListQuery`]: the
/// orders', disbursements' and settlements' lists differ only in their
/// path, wording, status names, the engine's list and the item's view, so
/// each names just those. The attribute's types (`ListQuery`, `PageBody`,
/// the names and the view) are the caller's, as the document names them.
///
/// [`ListQuery`]: pagination::ListQuery
macro_rules! status_list_route {
    (
        $(#[$doc:meta])*
        $name:ident: GET $path:literal, tag = $tag:literal,
        summary = $summary:literal, description = $description:literal,
        params(ListQuery<$names:ident>), answer = ($answer:literal, PageBody<$view:ident>),
        listed_by = $service:ident().$list:ident, shown_by = $show:expr $(,)?
    ) => {
        $(#[$doc])*
        #[utoipa::path(get, path = $path, tag = $tag, operation_id = stringify!($name),
            summary = $summary, description = $description,
            security(("api_key" = [])), params(ListQuery<$names>),
            responses((status = 200, description = $answer, body = PageBody<$view>)))]
        pub async fn $name(
            axum::extract::State(state): axum::extract::State<$crate::AppState>,
            $crate::extract::V1Merchant(merchant): $crate::extract::V1Merchant,
            query: $crate::v1::pagination::ListQuery<$names>,
        ) -> Result<axum::response::Response, $crate::error::V1Error> {
            let (items, total) = state
                .engine
                .$service()
                .$list(merchant.id, &query.filter(), query.page, query.limit)?;
            let show = $show;
            // A response at once: a view may borrow the items listed here.
            Ok(axum::response::IntoResponse::into_response(query.page(&items, total, |item| show(&state, item))))
        }
    };
}

mod balance;
mod beneficiaries;
mod catalog;
mod disbursement_batches;
mod disbursements;
pub(crate) mod history;
mod orders;
pub mod pagination;
mod sandbox;
mod settlements;
mod webhooks;

use crate::extract::BodyBytesMax;
use crate::AppState;
use axum::extract::DefaultBodyLimit;
use axum::Extension;
use disbursement_batches::BATCH_BODY_BYTES_MAX;
use std::convert::Infallible;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use catalog::EwalletCache;

/// Every `/v1/` route, each with its entry in the document.
pub fn routes() -> OpenApiRouter<AppState> {
    let (batch_schemas, batch_paths, batch_route) = routes!(disbursement_batches::create_disbursement_batch);
    let batch_route = batch_route
        .layer::<_, Infallible>(DefaultBodyLimit::max(BATCH_BODY_BYTES_MAX))
        .layer::<_, Infallible>(Extension(BodyBytesMax(BATCH_BODY_BYTES_MAX)));
    OpenApiRouter::new()
        .routes(routes!(balance::get_balance))
        .routes(routes!(history::balance_history))
        .routes(routes!(catalog::list_banks))
        .routes(routes!(catalog::list_ewallets))
        .routes(routes!(
            disbursements::create_disbursement,
            disbursements::list_disbursements
        ))
        .routes(routes!(disbursements::get_disbursement))
        .routes((batch_schemas, batch_paths, batch_route))
        .routes(routes!(disbursement_batches::get_disbursement_batch))
        .routes(routes!(
            beneficiaries::create_beneficiary,
            beneficiaries::list_beneficiaries
        ))
        .routes(routes!(beneficiaries::delete_beneficiary))
        .routes(routes!(sandbox::complete_disbursement))
        .routes(routes!(settlements::list_settlements))
        .routes(routes!(settlements::get_settlement))
        .routes(routes!(webhooks::list_deliveries))
        .routes(routes!(webhooks::resend))
        .routes(routes!(orders::create_order, orders::list_orders))
        .routes(routes!(orders::get_order))
        .routes(routes!(orders::qr_png))
        .routes(routes!(orders::create_refund))
        .routes(routes!(orders::list_refunds))
        .routes(routes!(sandbox::sandbox_pay))
        .routes(routes!(sandbox::sandbox_expire))
        .routes(routes!(sandbox::sandbox_fail))
        .routes(routes!(sandbox::sandbox_complete_refund))
}
