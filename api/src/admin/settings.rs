//! The fee and limit parts of the admin merchant bodies: each field optional
//! on the wire, parsed into the engine's checked overrides.

use paygate_engine::{EngineError, FeeField, FeeOverrides, LimitField, LimitOverrides};
use serde::Deserialize;
use utoipa::ToSchema;

/// A partial change of `Fees`: absent fields stay as they are.
#[derive(Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FeesPatch {
    /// See `Fees`.
    #[schema(minimum = 0, maximum = 10000)]
    qris_mdr_bps: Option<i64>,
    /// See `Fees`.
    #[schema(minimum = 0, maximum = 999_999_999_999i64)]
    bank_transfer_mdr_minor: Option<i64>,
    /// See `Fees`.
    #[schema(minimum = 0, maximum = 999_999_999_999i64)]
    platform_fee_minor: Option<i64>,
    /// See `Fees`.
    #[schema(minimum = 0, maximum = 999_999_999_999i64)]
    aggregator_fee_minor: Option<i64>,
    /// See `Fees`.
    #[schema(minimum = 0, maximum = 999_999_999_999i64)]
    disbursement_fee_bank_minor: Option<i64>,
    /// See `Fees`.
    #[schema(minimum = 0, maximum = 999_999_999_999i64)]
    disbursement_fee_ewallet_minor: Option<i64>,
}

impl FeesPatch {
    /// The fees sent, each checked; a refusal names the first out of range.
    pub fn overrides(&self) -> Result<FeeOverrides, EngineError> {
        FeeOverrides::parse([
            (FeeField::QrisMdrBps, self.qris_mdr_bps),
            (FeeField::BankTransferMdrMinor, self.bank_transfer_mdr_minor),
            (FeeField::PlatformFeeMinor, self.platform_fee_minor),
            (FeeField::AggregatorFeeMinor, self.aggregator_fee_minor),
            (FeeField::DisbursementFeeBankMinor, self.disbursement_fee_bank_minor),
            (
                FeeField::DisbursementFeeEwalletMinor,
                self.disbursement_fee_ewallet_minor,
            ),
        ])
    }
}

/// A partial change of `Limits`: absent fields stay as they are.
#[derive(Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitsPatch {
    /// See `Limits`.
    #[schema(minimum = 1)]
    per_transaction_minor: Option<i64>,
    /// See `Limits`.
    #[schema(minimum = 1)]
    daily_minor: Option<i64>,
    /// See `Limits`.
    #[schema(minimum = 1)]
    review_threshold_minor: Option<i64>,
    /// See `Limits`.
    #[schema(minimum = 1, maximum = 1_000_000)]
    rate_limit_per_second: Option<i64>,
    /// See `Limits`.
    #[schema(minimum = 1, maximum = 1_000_000)]
    rate_limit_burst: Option<i64>,
}

impl LimitsPatch {
    /// The limits sent, each checked; a refusal names the first out of range.
    pub fn overrides(&self) -> Result<LimitOverrides, EngineError> {
        LimitOverrides::parse([
            (LimitField::PerTransactionMinor, self.per_transaction_minor),
            (LimitField::DailyMinor, self.daily_minor),
            (LimitField::ReviewThresholdMinor, self.review_threshold_minor),
            (LimitField::RateLimitPerSecond, self.rate_limit_per_second),
            (LimitField::RateLimitBurst, self.rate_limit_burst),
        ])
    }
}
