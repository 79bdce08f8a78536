//! Schemas of the engine's named values (statuses, channels, line types):
//! each is a string enum whose values come from the engine type's own
//! `as_str`, so the document lists exactly what the API can answer.

use std::borrow::Cow;
use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaType, Type};
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

/// Declares `$doc` as a string enum of `$engine`'s variants. The match makes
/// the list exhaustive: a variant added to the engine fails the build here
/// until the document names it.
macro_rules! named_values {
    ($(#[doc = $doc:literal] $name:ident: $engine:path { $($variant:ident),+ $(,)? })+) => {$(
        #[doc = $doc]
        pub struct $name;

        impl $name {
            /// Every value, in the engine's order.
            pub fn values() -> Vec<&'static str> {
                use $engine as E;
                fn exhaustive(value: E) -> &'static str {
                    match value { $(E::$variant)|+ => value.as_str() }
                }
                vec![$(exhaustive(E::$variant)),+]
            }
        }

        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                string_enum($doc, $name::values())
            }
        }

        impl ToSchema for $name {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($name))
            }
        }
    )+};
}

/// A string schema allowing only `values`.
pub fn string_enum(description: &str, values: Vec<&'static str>) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(SchemaType::Type(Type::String))
        .description(Some(description.trim()))
        .enum_values(Some(values))
        .into()
}

named_values! {
    /// An order's status.
    OrderStatusName: paygate_engine::domain::OrderStatus { Pending, Paid, PartiallyRefunded, Refunded, Expired, Failed }
    /// A payment method.
    PaymentMethodName: paygate_engine::domain::PaymentMethod { Qris, BankTransfer }
    /// A refund's status.
    RefundStatusName: paygate_engine::domain::RefundStatus { Pending, Success, Failed }
    /// A disbursement's status.
    DisbursementStatusName: paygate_engine::domain::DisbursementStatus { Pending, InReview, OnProcess, Success, Failed, Rejected }
    /// Where a payout goes: a bank account or an e-wallet.
    ChannelName: paygate_engine::domain::Channel { Bank, Ewallet }
    /// A settlement's status.
    SettlementStatusName: paygate_engine::domain::SettlementStatus { Pending, Processing, Paid, Failed, Cancelled }
    /// How a merchant is paid: into its wallet, or settled to its bank.
    SettlementTypeName: paygate_engine::domain::SettlementType { Wallet, Manual }
    /// A beneficiary's account check.
    VerificationStatusName: paygate_engine::domain::VerificationStatus { Pending, Verified, Failed }
    /// The type of a balance history line.
    LineTypeName: paygate_engine::ledger::statement::LineType {
        OrderPayment, Refund, RefundReversal, Disbursement, DisbursementFee, DisbursementReversal,
        WalletCredit, WalletDebit, Reversal
    }
}

/// Which API created a disbursement.
pub struct SourceName;

impl PartialSchema for SourceName {
    fn schema() -> RefOr<Schema> {
        string_enum("Which API created the disbursement.", vec!["API", "LEGACY"])
    }
}

impl ToSchema for SourceName {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("SourceName")
    }
}
