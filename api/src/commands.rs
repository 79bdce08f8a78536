//! The flat account fields of V1 bodies and dashboard forms, read into the
//! engine's typed accounts: the channel picks which fields are required,
//! a blank field counts as absent, and each value is checked by its
//! `paygate_engine::input` type. Shared by `POST /v1/disbursements`, its
//! batch items, `POST /v1/beneficiaries` and the dashboard's payouts; and
//! an order's fields, shared by V1 and Legacy.

use paygate_engine::beneficiaries::SavedAccount;
use paygate_engine::disbursements::Payee;
use paygate_engine::domain::{Channel, PaymentMethod, Source};
use paygate_engine::input::{
    AccountNumber, CatalogCode, EwalletPhone, HolderName, HttpUrl, IdempotencyKey, PositiveAmount,
};
use paygate_engine::orders::{Customer, ExpireMinutes, MerchantOrderId, NewOrder, OrderAmount};
use paygate_engine::EngineError;
use uuid::Uuid;

/// An account as a body spells it: every field optional, so that each
/// channel's missing fields get their own code.
#[derive(Clone, Copy, Debug, Default)]
pub struct AccountFields<'a> {
    /// `BANK` or `EWALLET`.
    pub channel: Option<&'a str>,
    /// BANK.
    pub bank_short_code: Option<&'a str>,
    /// BANK.
    pub account_number: Option<&'a str>,
    /// BANK.
    pub account_name: Option<&'a str>,
    /// EWALLET.
    pub ewallet_provider: Option<&'a str>,
    /// EWALLET.
    pub ewallet_phone: Option<&'a str>,
}

/// Declares a V1 body with the flat account fields: its own fields, then
/// `channel` (with the body's own doc and schema, given in
/// `..account_fields { .. channel }`), the BANK and EWALLET fields, then
/// more of its own; and `account_fields()`, which reads them.
/// One declaration, so the disbursement and beneficiary bodies (and their
/// documents) cannot drift apart.
macro_rules! body_with_account_fields {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $($(#[$before_meta:meta])* $before:ident: $before_ty:ty,)*
            ..account_fields { $(#[$channel_meta:meta])* channel },
            $($(#[$after_meta:meta])* $after:ident: $after_ty:ty,)*
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $($(#[$before_meta])* $before: $before_ty,)*
            $(#[$channel_meta])*
            channel: Option<String>,
            /// BANK: a bank of `GET /v1/banks`.
            bank_short_code: Option<String>,
            /// BANK: the account number.
            #[schema(value_type = Option<$crate::openapi::values::AccountNumberText>)]
            account_number: Option<String>,
            /// BANK: the holder's name (a beneficiary's account inquiry fills it in when absent).
            #[schema(value_type = Option<$crate::openapi::values::HolderNameText>)]
            account_name: Option<String>,
            /// EWALLET: an e-wallet of `GET /v1/ewallets`.
            ewallet_provider: Option<String>,
            /// EWALLET: the account's phone number.
            #[schema(value_type = Option<$crate::openapi::values::EwalletPhoneText>)]
            ewallet_phone: Option<String>,
            $($(#[$after_meta])* $after: $after_ty,)*
        }

        impl $name {
            /// The account fields as sent.
            fn account_fields(&self) -> $crate::commands::AccountFields<'_> {
                $crate::commands::AccountFields {
                    channel: self.channel.as_deref(),
                    bank_short_code: self.bank_short_code.as_deref(),
                    account_number: self.account_number.as_deref(),
                    account_name: self.account_name.as_deref(),
                    ewallet_provider: self.ewallet_provider.as_deref(),
                    ewallet_phone: self.ewallet_phone.as_deref(),
                }
            }
        }
    };
}
pub(crate) use body_with_account_fields;

/// The idempotency key and amount a creation body must carry (a
/// disbursement, a refund), checked in that order.
pub fn key_and_amount(
    idempotency_key: Option<String>,
    amount_minor: Option<i64>,
) -> Result<(IdempotencyKey, PositiveAmount), EngineError> {
    let key = idempotency_key.ok_or_else(|| EngineError::invalid("idempotency_key", "is required"))?;
    let key = IdempotencyKey::parse(key)?;
    let amount = amount_minor.ok_or_else(|| EngineError::invalid("amount_minor", "is required"))?;
    Ok((key, PositiveAmount::parse(amount)?))
}

/// A field's value unless absent or blank.
fn present(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|v| !v.is_empty())
}

impl<'a> AccountFields<'a> {
    fn channel(&self) -> Result<Channel, EngineError> {
        let sent = self
            .channel
            .ok_or_else(|| EngineError::invalid("channel", "is required"))?;
        Channel::parse(sent).ok_or_else(|| EngineError::invalid("channel", "must be BANK or EWALLET"))
    }

    fn ewallet(&self) -> Result<(CatalogCode, EwalletPhone), EngineError> {
        let (Some(code), Some(phone)) = (
            present(self.ewallet_provider).and_then(CatalogCode::parse),
            present(self.ewallet_phone),
        ) else {
            return Err(EngineError::MissingEwalletInfo);
        };
        Ok((code, EwalletPhone::parse(phone)?))
    }

    /// Who a disbursement pays: the beneficiary when one is named (an id
    /// that is not a UUID names none), else the channel's account, whose
    /// BANK fields are all required.
    pub fn payee(&self, beneficiary_id: Option<&str>) -> Result<Payee, EngineError> {
        if let Some(raw) = beneficiary_id {
            let id = Uuid::parse_str(raw).map_err(|_| EngineError::BeneficiaryNotFound)?;
            let channel = self
                .channel
                .map(|_| self.channel())
                .transpose()
                .map_err(|_| EngineError::invalid("channel", "does not match the beneficiary"))?;
            let account_name = present(self.account_name).map(HolderName::parse).transpose()?.flatten();
            return Ok(Payee::Beneficiary {
                id,
                channel,
                account_name,
            });
        }
        Ok(match self.channel()? {
            Channel::Bank => {
                let missing = || {
                    EngineError::MissingBankInfo(
                        "bank_short_code, account_number and account_name are required for BANK".into(),
                    )
                };
                let (Some(code), Some(number), Some(name)) = (
                    present(self.bank_short_code).and_then(CatalogCode::parse),
                    present(self.account_number),
                    present(self.account_name),
                ) else {
                    return Err(missing());
                };
                let account_number = AccountNumber::parse(number)?;
                // `present` took the blank name already; `parse` sees a name.
                let account_name = HolderName::parse(name)?.ok_or_else(missing)?;
                Payee::Bank {
                    bank_short_code: code,
                    account_number,
                    account_name,
                }
            }
            Channel::Ewallet => {
                let (provider, phone) = self.ewallet()?;
                Payee::Ewallet { provider, phone }
            }
        })
    }

    /// The account a beneficiary saves; a BANK holder's name is optional.
    pub fn saved_account(&self) -> Result<SavedAccount, EngineError> {
        Ok(match self.channel()? {
            Channel::Bank => {
                let (Some(code), Some(number)) = (
                    present(self.bank_short_code).and_then(CatalogCode::parse),
                    present(self.account_number),
                ) else {
                    return Err(EngineError::MissingBankInfo(
                        "bank_short_code and account_number are required for BANK".into(),
                    ));
                };
                SavedAccount::Bank {
                    bank_short_code: code,
                    account_number: AccountNumber::parse(number)?,
                    account_name: present(self.account_name).map(HolderName::parse).transpose()?.flatten(),
                }
            }
            Channel::Ewallet => {
                let (provider, phone) = self.ewallet()?;
                SavedAccount::Ewallet { provider, phone }
            }
        })
    }
}

/// An order as V1 and Legacy bodies spell it.
#[derive(Clone, Copy, Debug)]
pub struct OrderFields<'a> {
    /// The merchant's id for it.
    pub merchant_order_id: &'a str,
    /// Minor units.
    pub amount_minor: i64,
    /// `QRIS` or `BANK_TRANSFER`.
    pub payment_method: &'a str,
    /// Optional customer details.
    pub customer_name: Option<&'a str>,
    /// Optional customer details.
    pub customer_email: Option<&'a str>,
    /// Optional customer details.
    pub customer_phone: Option<&'a str>,
    /// Status webhooks.
    pub notify_url: Option<&'a str>,
    /// Where the checkout page sends the payer.
    pub return_url: Option<&'a str>,
    /// Minutes to pay; 60 when absent.
    pub expire_minutes: Option<i64>,
}

impl OrderFields<'_> {
    /// The order these fields ask for, every value checked in the order
    /// the fields are documented, the `Idempotency-Key` last.
    pub fn command(
        self,
        source: Source,
        metadata: Option<String>,
        idempotency: Option<(&str, [u8; 32])>,
    ) -> Result<NewOrder, EngineError> {
        let merchant_order_id = MerchantOrderId::parse(self.merchant_order_id)?;
        let amount = OrderAmount::parse(self.amount_minor)?;
        let payment_method = PaymentMethod::parse(self.payment_method)
            .ok_or_else(|| EngineError::invalid("payment_method", "must be QRIS or BANK_TRANSFER"))?;
        let expire_minutes = ExpireMinutes::parse(self.expire_minutes)?;
        let customer = Customer::parse(self.customer_name, self.customer_email, self.customer_phone)?;
        let notify_url = self
            .notify_url
            .map(|url| HttpUrl::parse("notify_url", url))
            .transpose()?;
        let return_url = self
            .return_url
            .map(|url| HttpUrl::parse("return_url", url))
            .transpose()?;
        let idempotency = idempotency
            .map(|(key, body_hash)| {
                IdempotencyKey::parse(key)
                    .map(|key| (key, body_hash))
                    .map_err(|_| EngineError::invalid("Idempotency-Key", "must be 1 to 255 printable characters"))
            })
            .transpose()?;
        Ok(NewOrder {
            merchant_order_id,
            amount,
            payment_method,
            expire_minutes,
            customer,
            notify_url,
            return_url,
            metadata,
            source,
            idempotency,
        })
    }
}
