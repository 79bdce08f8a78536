//! The V1 list query: `page`, `limit` (integers >= 1, `limit`
//! capped at 50), `status`, `created_from`, `created_to`; else 400 `INVALID_QUERY`.

use crate::error::V1Error;
use crate::wire::Page;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use paygate_engine::input::{CreatedBetween, ListFilter};
use std::collections::HashMap;

/// Largest page served.
pub const PAGE_LIMIT_MAX: usize = 50;
/// Page size when none is asked for.
pub const PAGE_LIMIT_DEFAULT: usize = 10;

/// The statuses a list route filters by: how `status` is read, and the
/// names its document entry lists.
pub trait StatusNames {
    /// What a `status` is read as.
    type Status;
    /// What a status is, for the refusal "status: not {WHAT}".
    const WHAT: &'static str;
    /// Every status, as the API spells it.
    fn names() -> Vec<&'static str>;
    /// The status `raw` names, if any.
    fn parse(raw: &str) -> Option<Self::Status>;
}

/// A list route without a status filter of its own: any `status` is
/// taken and ignored.
pub struct AnyStatus;

impl StatusNames for AnyStatus {
    type Status = ();
    const WHAT: &'static str = "a status";
    fn names() -> Vec<&'static str> {
        Vec::new()
    }
    fn parse(_: &str) -> Option<()> {
        Some(())
    }
}

/// A validated list query of a route whose statuses are `N`'s.
pub struct ListQuery<N: StatusNames = AnyStatus> {
    /// 1-based.
    pub page: usize,
    /// 1..=50.
    pub limit: usize,
    /// Only this status.
    pub status: Option<N::Status>,
    /// `created_from` and `created_to`, both included.
    pub created: CreatedBetween,
}

impl<N: StatusNames> ListQuery<N> {
    /// The engine's filters this query asks for.
    pub fn filter(&self) -> ListFilter<N::Status>
    where
        N::Status: Clone,
    {
        ListFilter {
            status: self.status.clone(),
            created: self.created,
        }
    }

    /// The answer's page: `items` (this page of `total`), each as `view`.
    pub fn page<'a, T, V>(&self, items: &'a [T], total: usize, view: impl Fn(&'a T) -> V) -> Page<V> {
        Page {
            items: items.iter().map(view).collect(),
            page: self.page,
            limit: self.limit,
            total,
        }
    }
}

/// The schema of a page's `limit`: an integer of at least 1 and no upper
/// bound, as the server reads it (a larger limit is served as the route's
/// largest page), so no `int64` format.
pub struct PageLimit;

impl utoipa::PartialSchema for PageLimit {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
        ObjectBuilder::new()
            .schema_type(SchemaType::Type(Type::Integer))
            .minimum(Some(1.0))
            .into()
    }
}

impl utoipa::ToSchema for PageLimit {}

pub(crate) fn positive(query: &HashMap<String, String>, name: &str, default: usize) -> Result<usize, V1Error> {
    match query.get(name) {
        None => Ok(default),
        Some(raw) => match raw.parse::<usize>() {
            // The document declares a page an int64; a larger limit is
            // served as the largest page instead.
            Ok(value) if value >= 1 && (name != "page" || i64::try_from(value).is_ok()) => Ok(value),
            // A limit of too many digits for a usize is still a positive
            // integer above the largest page: served as the largest.
            Err(_) if name == "limit" && raw.bytes().all(|b| b.is_ascii_digit()) && raw.bytes().any(|b| b != b'0') => {
                Ok(usize::MAX)
            }
            _ => Err(V1Error::invalid_query(format!(
                "{name}: must be an integer of at least 1"
            ))),
        },
    }
}

pub(crate) fn instant(query: &HashMap<String, String>, name: &str) -> Result<Option<i64>, V1Error> {
    match query.get(name) {
        None => Ok(None),
        Some(raw) => chrono::DateTime::parse_from_rfc3339(raw)
            .map(|t| Some(t.timestamp_millis()))
            .map_err(|_| V1Error::invalid_query(format!("{name}: must be an RFC 3339 timestamp"))),
    }
}

impl<S: Send + Sync, N: StatusNames> FromRequestParts<S> for ListQuery<N> {
    type Rejection = V1Error;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, V1Error> {
        let query = axum::extract::Query::<HashMap<String, String>>::try_from_uri(&parts.uri)
            .map_err(|_| V1Error::invalid_query("query string could not be read"))?
            .0;
        Ok(ListQuery {
            page: positive(&query, "page", 1)?,
            limit: positive(&query, "limit", PAGE_LIMIT_DEFAULT)?.min(PAGE_LIMIT_MAX),
            created: CreatedBetween::new(instant(&query, "created_from")?, instant(&query, "created_to")?),
            status: query
                .get("status")
                .map(|raw| N::parse(raw).ok_or_else(|| V1Error::invalid_query(format!("status: not {}", N::WHAT))))
                .transpose()?,
        })
    }
}

/// The list query as the document describes it, with the route's own
/// statuses as `status`'s values.
impl<N: StatusNames> utoipa::IntoParams for ListQuery<N> {
    fn into_params(
        _: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>,
    ) -> Vec<utoipa::openapi::path::Parameter> {
        use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, SchemaType, Type};
        let integer = |minimum: usize, default: usize| {
            ObjectBuilder::new()
                .schema_type(SchemaType::Type(Type::Integer))
                .minimum(Some(minimum as f64))
                .default(Some(default.into()))
        };
        let instant = || {
            ObjectBuilder::new()
                .schema_type(SchemaType::Type(Type::String))
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
        };
        let query = |name: &str, description: &str| {
            ParameterBuilder::new()
                .name(name)
                .parameter_in(ParameterIn::Query)
                .description(Some(description))
        };
        vec![
            query("page", "1-based page number.")
                .schema(Some(
                    integer(1, 1).format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64))),
                ))
                .build(),
            query(
                "limit",
                &format!("Items per page, at most {PAGE_LIMIT_MAX}; a larger limit is served as {PAGE_LIMIT_MAX}."),
            )
            .schema(Some(integer(1, PAGE_LIMIT_DEFAULT)))
            .build(),
            query("status", "Only items in this status.")
                .schema(Some(status_schema(N::names())))
                .build(),
            query("created_from", "Only items created at or after this time (RFC 3339).")
                .schema(Some(instant()))
                .build(),
            query("created_to", "Only items created at or before this time (RFC 3339).")
                .schema(Some(instant()))
                .build(),
        ]
    }
}

/// A string, limited to `names` when the route has any.
fn status_schema(names: Vec<&'static str>) -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    let string = ObjectBuilder::new().schema_type(SchemaType::Type(Type::String));
    if names.is_empty() {
        string.build()
    } else {
        string.enum_values(Some(names)).build()
    }
}

impl StatusNames for crate::openapi::names::OrderStatusName {
    type Status = paygate_engine::domain::OrderStatus;
    const WHAT: &'static str = "an order status";
    fn names() -> Vec<&'static str> {
        Self::values()
    }
    fn parse(raw: &str) -> Option<Self::Status> {
        Self::Status::parse(raw)
    }
}

impl StatusNames for crate::openapi::names::DisbursementStatusName {
    type Status = paygate_engine::domain::DisbursementStatus;
    const WHAT: &'static str = "a disbursement status";
    fn names() -> Vec<&'static str> {
        Self::values()
    }
    fn parse(raw: &str) -> Option<Self::Status> {
        Self::Status::parse(raw)
    }
}

impl StatusNames for crate::openapi::names::SettlementStatusName {
    type Status = paygate_engine::domain::SettlementStatus;
    const WHAT: &'static str = "a settlement status";
    fn names() -> Vec<&'static str> {
        Self::values()
    }
    fn parse(raw: &str) -> Option<Self::Status> {
        Self::Status::parse(raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(name: &str, raw: &str) -> Result<usize, String> {
        let query = HashMap::from([(name.to_string(), raw.to_string())]);
        positive(&query, name, 1).map_err(|error| format!("{} {}", error.code, error.message))
    }

    #[test]
    fn a_page_is_an_int64_and_a_larger_limit_is_served_as_the_largest() {
        let refused = "INVALID_QUERY page: must be an integer of at least 1";
        for (raw, expected) in [
            ("9223372036854775807", Ok(i64::MAX as usize)),
            ("9223372036854775808", Err(refused.to_string())),
            ("18446744073709551616", Err(refused.to_string())),
            ("0", Err(refused.to_string())),
            ("-1", Err(refused.to_string())),
        ] {
            assert_eq!(read("page", raw), expected, "page={raw}");
        }
        for raw in ["9223372036854775808", "18446744073709551616"] {
            assert!(
                read("limit", raw).is_ok_and(|limit| limit > PAGE_LIMIT_MAX),
                "limit={raw}"
            );
        }
    }
}
