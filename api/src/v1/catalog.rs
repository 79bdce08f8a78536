//! `GET /v1/banks` and `GET /v1/ewallets`: the enabled reference data.

use crate::extract::V1Merchant;
use crate::wire::{bank_view, ewallet_view, Data};
use crate::AppState;
use axum::extract::State;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// SPEC.md 4.7: the e-wallet list is cached for an hour.
const EWALLET_CACHE_TTL: Duration = Duration::from_secs(3600);

/// The rendered e-wallet list, rebuilt after an hour or at once when an
/// admin changes the catalog (its version moves).
#[derive(Default)]
pub struct EwalletCache {
    cached: Mutex<Option<CachedList>>,
}

/// A rendered list with the catalog version and time it was built from.
type CachedList = (u64, Instant, Arc<Vec<Value>>);

impl EwalletCache {
    fn get(&self, state: &AppState) -> Arc<Vec<Value>> {
        let version = state.engine.catalog_version();
        let mut cached = self.cached.lock().expect("ewallet cache lock");
        if let Some((built_version, built_at, list)) = cached.as_ref() {
            if *built_version == version && built_at.elapsed() < EWALLET_CACHE_TTL {
                return list.clone();
            }
        }
        let list: Arc<Vec<Value>> = Arc::new(
            state
                .engine
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
pub async fn list_banks(State(state): State<AppState>, _merchant: V1Merchant) -> Data<Vec<Value>> {
    Data(state.engine.catalog().enabled_banks().iter().map(bank_view).collect())
}

/// GET /v1/ewallets: enabled e-wallets, by sort order.
pub async fn list_ewallets(State(state): State<AppState>, _merchant: V1Merchant) -> Data<Vec<Value>> {
    Data(state.ewallet_cache.get(&state).as_ref().clone())
}
