//! The payer's checkout page, `/checkout/{order id}` (DESIGN.md 9).

use crate::AppState;
use utoipa_axum::router::OpenApiRouter;

/// The checkout routes.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
}
