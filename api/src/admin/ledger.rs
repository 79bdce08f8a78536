//! `GET /admin/v1/ledger/verify`.

use crate::error::V1Error;
use crate::extract::Admin;
use crate::wire::{Data, DataBody};
use crate::AppState;
use axum::extract::State;
use serde::Serialize;
use serde_json::{json, Value};

use utoipa::ToSchema;

/// The ledger check's answer.
#[derive(Serialize, ToSchema)]
pub struct LedgerCheckView {
    /// True when every invariant of the ledger holds (`problems` is empty).
    balanced: bool,
    entries: u64,
    merchants: u64,
    /// What does not hold, one sentence each.
    problems: Vec<String>,
    /// Every account's total, in minor units.
    #[schema(value_type = BTreeMap<String, AccountTotal>)]
    accounts: serde_json::Map<String, Value>,
}

/// An account's total: an integer, or past the 64-bit range a decimal
/// string (a JSON number that large loses digits in most clients).
pub struct AccountTotal;

impl utoipa::PartialSchema for AccountTotal {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
        ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([Type::Integer, Type::String]))
            .description(Some("Minor units; a decimal string past the 64-bit range."))
            .into()
    }
}

impl utoipa::ToSchema for AccountTotal {}

/// GET /admin/v1/ledger/verify: recomputes every balance from the stored
/// journal entries and checks the ledger's invariants (ARCHITECTURE.md,
/// Invariants and the tests that hold them).
#[utoipa::path(get, path = "/admin/v1/ledger/verify", tag = "Admin", operation_id = "admin_verify_ledger",
    summary = "Check the ledger", description = "Recomputes every balance from the stored journal entries and checks the \
        ledger's invariants: every entry's postings sum to zero, no wallet is negative, and each balance is the \
        sum of its postings.",
    security(("admin_token" = [])),
    responses((status = 200, description = "The check's result.", body = DataBody<LedgerCheckView>)))]
pub async fn verify_ledger(State(state): State<AppState>, _admin: Admin) -> Result<Data<LedgerCheckView>, V1Error> {
    let report = state.engine.merchants().verify_ledger().await?;
    // A platform-wide total past the i64 range is written as a decimal
    // string: a JSON number that large would lose digits in most clients.
    let accounts: serde_json::Map<String, Value> = report
        .accounts
        .iter()
        .map(|(name, total)| {
            let value = i64::try_from(*total).map_or_else(|_| json!(total.to_string()), |small| json!(small));
            (name.to_string(), value)
        })
        .collect();
    Ok(Data(LedgerCheckView {
        balanced: report.balanced,
        entries: report.entries,
        merchants: report.merchants,
        problems: report.problems,
        accounts,
    }))
}
