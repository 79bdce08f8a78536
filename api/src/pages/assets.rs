//! Static assets the pages load, embedded in the binary and served from
//! `/assets/{name}` with a long cache lifetime.

use crate::AppState;
use utoipa_axum::router::OpenApiRouter;

/// The asset routes.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
}
