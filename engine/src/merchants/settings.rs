//! A merchant's settings as typed changes: fee and limit overrides whose
//! values are checked where they are made, and the list of changes an
//! admin or the merchant's dashboard applies.

use crate::actors::SettingsChange;
use crate::domain::{Fees, Limits, MerchantRecord, SettlementBank};
use crate::error::EngineError;
use crate::input::HttpUrl;

/// A fee of [`Fees`] an admin may set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FeeField {
    /// `qris_mdr_bps`: 0 to 10,000 basis points.
    QrisMdrBps,
    /// `bank_transfer_mdr_minor`.
    BankTransferMdrMinor,
    /// `platform_fee_minor`.
    PlatformFeeMinor,
    /// `aggregator_fee_minor`.
    AggregatorFeeMinor,
    /// `disbursement_fee_bank_minor`.
    DisbursementFeeBankMinor,
    /// `disbursement_fee_ewallet_minor`.
    DisbursementFeeEwalletMinor,
}

impl FeeField {
    /// The field as both refusals and the API document name it.
    pub fn name(self) -> &'static str {
        match self {
            FeeField::QrisMdrBps => "fees.qris_mdr_bps",
            FeeField::BankTransferMdrMinor => "fees.bank_transfer_mdr_minor",
            FeeField::PlatformFeeMinor => "fees.platform_fee_minor",
            FeeField::AggregatorFeeMinor => "fees.aggregator_fee_minor",
            FeeField::DisbursementFeeBankMinor => "fees.disbursement_fee_bank_minor",
            FeeField::DisbursementFeeEwalletMinor => "fees.disbursement_fee_ewallet_minor",
        }
    }

    fn slot(self, fees: &mut Fees) -> &mut i64 {
        match self {
            FeeField::QrisMdrBps => &mut fees.qris_mdr_bps,
            FeeField::BankTransferMdrMinor => &mut fees.bank_transfer_mdr_minor,
            FeeField::PlatformFeeMinor => &mut fees.platform_fee_minor,
            FeeField::AggregatorFeeMinor => &mut fees.aggregator_fee_minor,
            FeeField::DisbursementFeeBankMinor => &mut fees.disbursement_fee_bank_minor,
            FeeField::DisbursementFeeEwalletMinor => &mut fees.disbursement_fee_ewallet_minor,
        }
    }

    fn check(self, value: i64) -> Result<i64, EngineError> {
        if self == FeeField::QrisMdrBps {
            if !(0..=10_000).contains(&value) {
                return Err(EngineError::invalid(self.name(), "must be between 0 and 10000"));
            }
            return Ok(value);
        }
        if value < 0 {
            return Err(EngineError::invalid(self.name(), "must not be negative"));
        }
        // No fee above the largest order: sums of fees stay far from overflow.
        let max = crate::orders::ORDER_AMOUNT_MAX_MINOR;
        if value > max {
            return Err(EngineError::invalid(self.name(), format!("must be at most {max}")));
        }
        Ok(value)
    }
}

/// A limit of [`Limits`] an admin may set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitField {
    /// `per_transaction_minor`.
    PerTransactionMinor,
    /// `daily_minor`.
    DailyMinor,
    /// `review_threshold_minor`.
    ReviewThresholdMinor,
    /// `rate_limit_per_second`: at most 1,000,000.
    RateLimitPerSecond,
    /// `rate_limit_burst`: at most 1,000,000.
    RateLimitBurst,
}

impl LimitField {
    /// The field as both refusals and the API document name it.
    pub fn name(self) -> &'static str {
        match self {
            LimitField::PerTransactionMinor => "limits.per_transaction_minor",
            LimitField::DailyMinor => "limits.daily_minor",
            LimitField::ReviewThresholdMinor => "limits.review_threshold_minor",
            LimitField::RateLimitPerSecond => "limits.rate_limit_per_second",
            LimitField::RateLimitBurst => "limits.rate_limit_burst",
        }
    }

    fn slot(self, limits: &mut Limits) -> &mut i64 {
        match self {
            LimitField::PerTransactionMinor => &mut limits.per_transaction_minor,
            LimitField::DailyMinor => &mut limits.daily_minor,
            LimitField::ReviewThresholdMinor => &mut limits.review_threshold_minor,
            LimitField::RateLimitPerSecond => &mut limits.rate_limit_per_second,
            LimitField::RateLimitBurst => &mut limits.rate_limit_burst,
        }
    }

    fn check(self, value: i64) -> Result<i64, EngineError> {
        if value < 1 {
            return Err(EngineError::invalid(self.name(), "must be at least 1"));
        }
        let rate = matches!(self, LimitField::RateLimitPerSecond | LimitField::RateLimitBurst);
        if rate && value > 1_000_000 {
            return Err(EngineError::invalid(self.name(), "must be at most 1000000"));
        }
        Ok(value)
    }
}

/// Declares a list of overrides of one record's fields: each value checked
/// by its field when the list is made, so applying it cannot fail.
macro_rules! overrides {
    ($(#[$meta:meta])* $name:ident of $record:ty, by $field:ty) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        pub struct $name(Vec<($field, i64)>);

        impl $name {
            /// The values sent, an absent field `None`; refuses the first
            /// value out of its field's range, in the order given.
            pub fn parse(values: impl IntoIterator<Item = ($field, Option<i64>)>) -> Result<$name, EngineError> {
                let mut checked = Vec::new();
                for (field, value) in values {
                    if let Some(value) = value {
                        checked.push((field, field.check(value)?));
                    }
                }
                Ok($name(checked))
            }

            /// `record` with these values in place of its own.
            pub fn applied_to(&self, record: &$record) -> $record {
                let mut next = record.clone();
                for &(field, value) in &self.0 {
                    *field.slot(&mut next) = value;
                }
                next
            }
        }
    };
}

overrides! {
    /// Fees set over a merchant's (or, for a new merchant, the defaults).
    FeeOverrides of Fees, by FeeField
}

overrides! {
    /// Limits set over a merchant's (or, for a new merchant, the defaults).
    LimitOverrides of Limits, by LimitField
}

/// One change of a merchant's settings; what no change names keeps its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SettingChange {
    /// Some fees.
    Fees(FeeOverrides),
    /// Some limits.
    Limits(LimitOverrides),
    /// The webhook URL, or none.
    DefaultNotifyUrl(Option<HttpUrl>),
    /// Activate or deactivate.
    Active(bool),
    /// Make `X-Signature` mandatory or optional.
    RequireSignature(bool),
    /// The payout destination of settlements.
    SettlementBank(SettlementBank),
}

impl SettingChange {
    /// Applies the change to a record. Fees and limits apply field by field
    /// to the record as it is now, so two admins changing different fields
    /// at once both keep their change.
    fn apply_to(&self, record: &mut MerchantRecord) {
        match self {
            SettingChange::Fees(fees) => record.fees = fees.applied_to(&record.fees),
            SettingChange::Limits(limits) => record.limits = limits.applied_to(&record.limits),
            SettingChange::DefaultNotifyUrl(url) => {
                record.default_notify_url = url.as_ref().map(|url| url.as_str().to_string())
            }
            SettingChange::Active(active) => record.is_active = *active,
            SettingChange::RequireSignature(required) => record.require_signature = *required,
            SettingChange::SettlementBank(bank) => record.settlement_bank = Some(bank.clone()),
        }
    }
}

/// A merchant's whole change, applied in its order.
#[derive(Debug)]
pub(super) struct SettingChanges(pub(super) Vec<SettingChange>);

impl SettingsChange for SettingChanges {
    fn apply_to(&self, record: &mut MerchantRecord) {
        for change in &self.0 {
            change.apply_to(record);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_value_is_checked_against_its_own_field() {
        let refused = |result: Result<FeeOverrides, EngineError>| match result {
            Err(EngineError::InvalidInput { field, reason }) => (field, reason),
            other => panic!("expected a refusal, got {other:?}"),
        };
        assert_eq!(
            refused(FeeOverrides::parse([(FeeField::QrisMdrBps, Some(10_001))])),
            (
                "fees.qris_mdr_bps".to_string(),
                "must be between 0 and 10000".to_string()
            )
        );
        assert_eq!(
            refused(FeeOverrides::parse([
                (FeeField::PlatformFeeMinor, Some(5)),
                (FeeField::AggregatorFeeMinor, Some(-1)),
            ])),
            (
                "fees.aggregator_fee_minor".to_string(),
                "must not be negative".to_string()
            )
        );
        let burst = LimitOverrides::parse([(LimitField::RateLimitBurst, Some(1_000_001))]);
        assert!(
            matches!(burst, Err(EngineError::InvalidInput { ref field, .. }) if field == "limits.rate_limit_burst"),
            "{burst:?}"
        );
        assert!(LimitOverrides::parse([(LimitField::DailyMinor, Some(0))]).is_err());
    }

    #[test]
    fn overrides_replace_only_the_fields_they_name() {
        let fees =
            FeeOverrides::parse([(FeeField::QrisMdrBps, Some(100)), (FeeField::PlatformFeeMinor, None)]).unwrap();
        let before = Fees::default();
        let after = fees.applied_to(&before);
        assert_eq!(after.qris_mdr_bps, 100);
        assert_eq!(
            Fees {
                qris_mdr_bps: before.qris_mdr_bps,
                ..after
            },
            before
        );
    }
}
