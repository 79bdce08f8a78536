//! What callers ask of orders, every value checked where it is made
//! (`crate::input` for the values orders share with other domains): a new
//! order and a refund. The engine checks only what needs its state.

use crate::domain::{PaymentMethod, Source};
use crate::error::EngineError;
use crate::input::{CustomerPhone, EmailAddress, HttpUrl, IdempotencyKey, PositiveAmount};
use crate::limits;
use crate::money::MinorUnits;

/// The largest order: the QRIS amount field holds 13 characters
/// (`9999999999.99`).
pub const ORDER_AMOUNT_MAX_MINOR: i64 = 999_999_999_999;

/// An order a caller asks for, every value already checked.
#[derive(Clone, Debug)]
pub struct NewOrder {
    /// The merchant's id for it.
    pub merchant_order_id: MerchantOrderId,
    /// What the payer pays.
    pub amount: OrderAmount,
    /// QRIS or a bank transfer.
    pub payment_method: PaymentMethod,
    /// How long it waits to be paid.
    pub expire_minutes: ExpireMinutes,
    /// Who pays, as far as the merchant says.
    pub customer: Customer,
    /// Status webhooks, else the merchant's default.
    pub notify_url: Option<HttpUrl>,
    /// Where the checkout page sends the payer after payment.
    pub return_url: Option<HttpUrl>,
    /// The merchant's JSON object, as the exact text sent.
    pub metadata: Option<String>,
    /// V1 or Legacy.
    pub source: Source,
    /// `Idempotency-Key` and the SHA-256 of the request body.
    pub idempotency: Option<(IdempotencyKey, [u8; 32])>,
}

impl NewOrder {
    /// A V1 order of `amount_minor` by `payment_method`, everything else
    /// its default (for callers that hold no request body).
    pub fn new(
        merchant_order_id: &str,
        amount_minor: i64,
        payment_method: PaymentMethod,
    ) -> Result<NewOrder, EngineError> {
        Ok(NewOrder {
            merchant_order_id: MerchantOrderId::parse(merchant_order_id)?,
            amount: OrderAmount::parse(amount_minor)?,
            payment_method,
            expire_minutes: ExpireMinutes::parse(None)?,
            customer: Customer::default(),
            notify_url: None,
            return_url: None,
            metadata: None,
            source: Source::Api,
            idempotency: None,
        })
    }
}

/// A merchant's id for an order: 1 to 255 characters, not blank, none a
/// control character; kept as sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MerchantOrderId(String);

impl MerchantOrderId {
    /// The id, if `raw` is one.
    pub fn parse(raw: &str) -> Result<MerchantOrderId, EngineError> {
        if raw.trim().is_empty() || raw.chars().count() > limits::NAME_CHARS_MAX {
            return Err(EngineError::invalid("merchant_order_id", "must be 1 to 255 characters"));
        }
        if raw.chars().any(char::is_control) {
            return Err(EngineError::invalid(
                "merchant_order_id",
                "must not contain control characters",
            ));
        }
        Ok(MerchantOrderId(raw.to_string()))
    }

    /// The id as sent.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An order's amount: 1 to `ORDER_AMOUNT_MAX_MINOR` minor units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderAmount(MinorUnits);

impl OrderAmount {
    /// The amount, if `minor` is one.
    pub fn parse(minor: i64) -> Result<OrderAmount, EngineError> {
        let amount = PositiveAmount::parse(minor)?;
        if minor > ORDER_AMOUNT_MAX_MINOR {
            return Err(EngineError::invalid("amount_minor", "must be at most 999999999999"));
        }
        Ok(OrderAmount(amount.minor()))
    }

    /// The amount in minor units.
    pub fn minor(self) -> MinorUnits {
        self.0
    }
}

/// How many minutes an order waits to be paid: 1 to 1,440, 60 unless given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpireMinutes(i64);

impl ExpireMinutes {
    /// The most, a day.
    pub const MAX: i64 = 1440;

    /// The minutes, if `raw` is absent or in range.
    pub fn parse(raw: Option<i64>) -> Result<ExpireMinutes, EngineError> {
        let minutes = raw.unwrap_or(60);
        if !(1..=Self::MAX).contains(&minutes) {
            return Err(EngineError::invalid("expire_minutes", "must be between 1 and 1440"));
        }
        Ok(ExpireMinutes(minutes))
    }

    /// The minutes.
    pub fn get(self) -> i64 {
        self.0
    }
}

/// What the merchant says of the payer, checked: each part optional, and
/// made only by [`Customer::parse`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Customer {
    /// At most 255 characters; a blank name is none.
    pub(crate) name: Option<String>,
    /// An email address.
    pub(crate) email: Option<EmailAddress>,
    /// A phone, normalized to `62…`.
    pub(crate) phone: Option<CustomerPhone>,
}

impl Customer {
    /// The customer, if each part given is valid, checked in the order
    /// phone, name, email.
    pub fn parse(name: Option<&str>, email: Option<&str>, phone: Option<&str>) -> Result<Customer, EngineError> {
        let phone = phone.map(CustomerPhone::parse).transpose()?;
        if name.is_some_and(|name| name.chars().count() > limits::NAME_CHARS_MAX) {
            return Err(EngineError::invalid("customer_name", "must be at most 255 characters"));
        }
        let email = email.map(EmailAddress::parse).transpose()?;
        Ok(Customer {
            // Nullable fields are null when empty.
            name: name.filter(|name| !name.trim().is_empty()).map(str::to_string),
            email,
            phone,
        })
    }
}

/// A refund a caller asks for, every value already checked.
#[derive(Clone, Debug)]
pub struct NewRefund {
    /// What to give back.
    pub amount: PositiveAmount,
    /// Category and free text.
    pub reason: RefundReason,
    /// Unique per merchant.
    pub idempotency_key: IdempotencyKey,
}

/// Why a refund is made: a category of 1 to 64 printable characters
/// (`CUSTOMER_REQUEST` unless given) and at most 1,024 characters of detail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefundReason {
    pub(crate) category: String,
    pub(crate) detail: Option<String>,
}

impl RefundReason {
    /// The longest category, in characters.
    pub const CATEGORY_CHARS_MAX: usize = 64;
    /// The longest detail, in characters.
    pub const DETAIL_CHARS_MAX: usize = 1024;

    /// The reason, if `category` and `detail` are one.
    pub fn parse(category: Option<String>, detail: Option<String>) -> Result<RefundReason, EngineError> {
        let category = category.unwrap_or_else(|| "CUSTOMER_REQUEST".into());
        if category.is_empty()
            || category.chars().count() > Self::CATEGORY_CHARS_MAX
            || category.chars().any(char::is_control)
        {
            return Err(EngineError::invalid("reason", "must be 1 to 64 printable characters"));
        }
        if detail
            .as_ref()
            .is_some_and(|d| d.chars().count() > Self::DETAIL_CHARS_MAX)
        {
            return Err(EngineError::invalid("reason_detail", "must be at most 1024 characters"));
        }
        Ok(RefundReason { category, detail })
    }
}
