//! Web pages, rendered on the server with maud and served by
//! the same binary: the payer's checkout page (`checkout`) and the merchant
//! dashboard (`dashboard`), and the front page `/` (`home`). Every asset they use is embedded (`assets`); no
//! CDN, no build step that downloads. The pages call the same engine
//! methods as the API: there is no second path to the money.
//!
//! Shared by the pages: `html` (an answer with the security headers),
//! `language` (Indonesian or English) and `rupiah` (`Rp 25.000`).

pub mod assets;
pub mod checkout;
pub mod dashboard;
pub mod home;
pub mod html;
pub mod language;
pub mod rupiah;

use crate::AppState;
use utoipa_axum::router::OpenApiRouter;

/// Every page route, each with its entry in the API document (tag "Pages").
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(assets::routes())
        .merge(checkout::routes())
        .merge(dashboard::routes())
        .routes(utoipa_axum::routes!(home::home))
}
