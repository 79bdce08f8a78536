//! Static assets the pages load, embedded in the binary and served from
//! `/assets/{name}`. Pages link them as `url(name)`, whose `?v=` is a hash of
//! the content: a changed file has a new URL, so the old one can be cached
//! for good.

use crate::AppState;
use axum::extract::{Path, Query};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::OnceLock;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// Every asset: name, content type, content. A page's asset is added here.
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "checkout.css",
        "text/css; charset=utf-8",
        include_str!("assets/checkout.css"),
    ),
    (
        "checkout.js",
        "text/javascript; charset=utf-8",
        include_str!("assets/checkout.js"),
    ),
];

/// Cache lifetime of a URL whose `?v=` names the current content.
const CACHE_VERSIONED: &str = "public, max-age=31536000, immutable";
/// Cache lifetime of any other asset URL: short, so a stale copy fades.
const CACHE_UNVERSIONED: &str = "public, max-age=300";

/// Hex digits of the content hash in `?v=`: enough to tell versions apart.
const VERSION_HEX_CHARS: usize = 16;

/// The content hash of each asset, in `ASSETS` order, made once.
fn versions() -> &'static [String] {
    static VERSIONS: OnceLock<Vec<String>> = OnceLock::new();
    VERSIONS.get_or_init(|| {
        ASSETS
            .iter()
            .map(|(_, _, content)| {
                let digest = Sha256::digest(content.as_bytes());
                let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
                hex[..VERSION_HEX_CHARS].to_string()
            })
            .collect()
    })
}

/// The URL a page links asset `name` by. Panics on a name not in
/// `ASSETS`: a page linking a missing file is a bug the first render shows.
pub fn url(name: &str) -> String {
    let index = ASSETS
        .iter()
        .position(|(known, _, _)| *known == name)
        .unwrap_or_else(|| panic!("asset {name} is not embedded"));
    format!("/assets/{name}?v={}", versions()[index])
}

/// The asset routes.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_asset))
}

/// `?v=` of an asset URL, for the document. The handler reads the query
/// as a map, which no query string can fail to parse as.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AssetVersion {
    /// The content hash the page linked; any other value is served too,
    /// with a short cache lifetime.
    #[allow(dead_code)]
    v: Option<String>,
}

/// GET /assets/{name}: a script or stylesheet of the pages.
#[utoipa::path(get, path = "/assets/{name}", tag = "Pages", operation_id = "get_asset",
    summary = "A page asset", description = "A script or stylesheet of the HTML pages, embedded in the binary.",
    security(()),
    params(("name" = String, Path, description = "The file's name, such as `checkout.js`."), AssetVersion),
    responses(
        (status = 200, description = "The file.", content(
            (String = "text/javascript"),
            (String = "text/css"),
        )),
        (status = 404, description = "No such asset.", content_type = "text/plain", body = String),
    ))]
pub async fn get_asset(Path(name): Path<String>, Query(query): Query<HashMap<String, String>>) -> Response {
    let Some(index) = ASSETS.iter().position(|(known, _, _)| *known == name) else {
        return (
            StatusCode::NOT_FOUND,
            [
                (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            "no such asset",
        )
            .into_response();
    };
    let (_, content_type, content) = ASSETS[index];
    let cache = if query.get("v") == Some(&versions()[index]) {
        CACHE_VERSIONED
    } else {
        CACHE_UNVERSIONED
    };
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (header::CACHE_CONTROL, HeaderValue::from_static(cache)),
            (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
        ],
        content,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::{url, versions, ASSETS};

    #[test]
    fn each_asset_url_carries_its_content_hash() {
        for (name, _, _) in ASSETS {
            let link = url(name);
            assert!(link.starts_with(&format!("/assets/{name}?v=")), "{link}");
        }
        let mut unique = versions().to_vec();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), ASSETS.len());
    }
}
