//! Schemas of the engine's checked input values (`paygate_engine::input`):
//! each states what its type accepts, from the type's own constants, so a
//! client generated from the document refuses what the server refuses.

use paygate_engine::input::{AccountNumber, EwalletPhone, HolderName, HttpUrl, IdempotencyKey};
use std::borrow::Cow;
use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaType, Type};
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

/// No control character (Unicode Cc), the check `char::is_control` makes.
const PRINTABLE: &str = r"[^\u0000-\u001F\u007F-\u009F]";

/// Declares `$name` as a string schema with the given description and
/// constraints.
macro_rules! checked_values {
    ($(#[doc = $doc:literal] $name:ident => |$builder:ident| $constraints:expr;)+) => {$(
        #[doc = $doc]
        pub struct $name;

        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                let $builder = ObjectBuilder::new()
                    .schema_type(SchemaType::Type(Type::String))
                    .description(Some($doc.trim()));
                $constraints.into()
            }
        }

        impl ToSchema for $name {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($name))
            }
        }
    )+};
}

checked_values! {
    /// A key that makes a creation safe to retry: 1 to 255 characters, none a control character.
    IdempotencyKeyText => |builder| builder
        .min_length(Some(1))
        .max_length(Some(IdempotencyKey::CHARS_MAX))
        .pattern(Some(format!("^{PRINTABLE}+$")));
    /// An http or https URL, with no white space or control character.
    HttpUrlText => |builder| builder
        .max_length(Some(HttpUrl::CHARS_MAX))
        .pattern(Some(r"^(http://[^\s\u0000-\u001F\u007F-\u009F]{2,}|https://[^\s\u0000-\u001F\u007F-\u009F]+)$"));
    /// A bank account number: 5 to 34 digits (white space around them is ignored).
    AccountNumberText => |builder| builder
        .pattern(Some(format!(r"^\s*{}\s*$", AccountNumber::PATTERN.trim_start_matches('^').trim_end_matches('$'))));
    /// An account holder's name, at most 255 characters (white space around it is ignored).
    HolderNameText => |builder| builder
        .max_length(Some(HolderName::CHARS_MAX))
        .pattern(Some(r"\S"));
    /// An Indonesian mobile number: `+62`, `62`, `0` or nothing, then `8`, the operator digit and 7 to 10 digits; spaces, `-`, `(` and `)` may separate them.
    EwalletPhoneText => |builder| builder
        .pattern(Some(EwalletPhone::PATTERN));
}
