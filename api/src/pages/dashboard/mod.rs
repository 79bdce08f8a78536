//! The merchant dashboard, `/dashboard` (DESIGN.md 9).

use crate::AppState;
use utoipa_axum::router::OpenApiRouter;

/// The dashboard routes.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
}
