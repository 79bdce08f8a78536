//! Schemas of the engine's checked input values (`paygate_engine::input`):
//! each states what its type accepts, from the type's own constants, so a
//! client generated from the document refuses what the server refuses.

use paygate_engine::input::{
    AccountNumber, CustomerPhone, EmailAddress, EwalletPhone, HolderName, HttpUrl, IdempotencyKey,
};
use paygate_engine::limits;
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
    /// A customer's Indonesian phone number: `+62`, `62`, `0` or `8` first, 10 to 15 digits once it is written `62…`; spaces, `-`, `(` and `)` may separate them.
    CustomerPhoneText => |builder| builder
        .pattern(Some(CustomerPhone::PATTERN));
    /// An email address: a local part, `@` and a domain with a dot, at most 254 characters.
    EmailText => |builder| builder
        .max_length(Some(EmailAddress::LEN_MAX))
        .pattern(Some(EmailAddress::PATTERN));
    /// A name: 1 to 255 characters once the white space around it is trimmed.
    NameText => |builder| builder
        .max_length(Some(limits::NAME_CHARS_MAX))
        .pattern(Some(r"\S"));
    /// Text that is not blank: at least one character other than white space.
    NonBlankText => |builder| builder
        .pattern(Some(r"\S"));
}

/// Which account fields a body needs, by channel: what `commands` reads.
/// A disbursement names a beneficiary or gives a BANK or EWALLET account
/// in full; a beneficiary gives a BANK account (its holder's name is
/// optional) or an EWALLET one. utoipa has no attribute for `anyOf` beside
/// properties, so it is added to the JSON.
pub fn add_account_requirements(document: &mut serde_json::Value) {
    use serde_json::json;
    let given = json!({ "type": "string", "pattern": r"\S" });
    let bank = |name_required: bool| {
        let mut required = vec!["channel", "bank_short_code", "account_number"];
        if name_required {
            required.push("account_name");
        }
        let mut properties = json!({
            "channel": { "const": "BANK" },
            "bank_short_code": given,
            "account_number": { "type": "string" },
        });
        if name_required {
            properties["account_name"] = json!({ "type": "string" });
        }
        json!({ "required": required, "properties": properties })
    };
    let ewallet = json!({
        "required": ["channel", "ewallet_provider", "ewallet_phone"],
        "properties": {
            "channel": { "const": "EWALLET" },
            "ewallet_provider": given,
            "ewallet_phone": { "type": "string" },
        },
    });
    let beneficiary = json!({
        "required": ["beneficiary_id"],
        "properties": { "beneficiary_id": { "type": "string" } },
    });
    for (schema, any_of) in [
        ("CreateDisbursement", json!([beneficiary, bank(true), ewallet])),
        ("CreateBeneficiary", json!([bank(false), ewallet])),
    ] {
        if let Some(object) = document
            .pointer_mut(&format!("/components/schemas/{schema}"))
            .and_then(|v| v.as_object_mut())
        {
            object.insert("anyOf".into(), any_of);
        }
    }
}
