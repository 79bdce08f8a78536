//! `GET /v1/banks` and `GET /v1/ewallets`: the enabled reference data.

use crate::extract::V1Merchant;
use crate::wire::{bank_view, ewallet_view, BankView, Data, DataBody, EwalletView};
use crate::AppState;
use axum::extract::State;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The e-wallet list of `GET /v1/ewallets` is cached for an hour.
const EWALLET_CACHE_TTL: Duration = Duration::from_secs(3600);

/// The rendered e-wallet list, rebuilt after an hour or at once when an
/// admin changes the catalog (its version moves).
#[derive(Default)]
pub struct EwalletCache {
    cached: Mutex<Option<CachedList>>,
}

/// A rendered list with the catalog version and time it was built from.
type CachedList = (u64, Instant, Arc<Vec<EwalletView>>);

impl EwalletCache {
    fn get(&self, state: &AppState) -> Arc<Vec<EwalletView>> {
        let version = state.engine.catalog().catalog_version();
        let mut cached = self.cached.lock().expect("ewallet cache lock");
        if let Some((built_version, built_at, list)) = cached.as_ref() {
            if *built_version == version && built_at.elapsed() < EWALLET_CACHE_TTL {
                return list.clone();
            }
        }
        let list: Arc<Vec<EwalletView>> = Arc::new(
            state
                .engine
                .catalog()
                .catalog()
                .enabled_ewallets()
                .iter()
                .map(|e| ewallet_view(e, &state.config.cdn_url))
                .collect(),
        );
        *cached = Some((version, Instant::now(), list.clone()));
        list
    }
}

/// GET /v1/banks: enabled banks `{id, name, short_code, is_enabled}`.
#[utoipa::path(get, path = "/v1/banks", tag = "Catalog", operation_id = "list_banks",
    summary = "List banks", description = "The banks a disbursement can go to.",
    security(("api_key" = [])),
    responses((status = 200, description = "Enabled banks.", body = DataBody<Vec<BankView>>)))]
pub async fn list_banks(State(state): State<AppState>, _merchant: V1Merchant) -> Data<Vec<BankView>> {
    Data(
        state
            .engine
            .catalog()
            .catalog()
            .enabled_banks()
            .iter()
            .map(bank_view)
            .collect(),
    )
}

/// GET /v1/ewallets: enabled e-wallets, by sort order.
#[utoipa::path(get, path = "/v1/ewallets", tag = "Catalog", operation_id = "list_ewallets",
    summary = "List e-wallets", description = "The e-wallets a disbursement can go to, by sort order.",
    security(("api_key" = [])),
    responses((status = 200, description = "Enabled e-wallets.", body = DataBody<Vec<EwalletView>>)))]
pub async fn list_ewallets(State(state): State<AppState>, _merchant: V1Merchant) -> Data<Arc<Vec<EwalletView>>> {
    Data(state.ewallet_cache.get(&state))
}
