//! Values callers send, each checked once where it is made: a value of
//! these types is valid by construction, so the engine's commands
//! (`NewDisbursement`, `NewRefund`, `NewBeneficiary`) hold no unchecked
//! field. What needs the engine's state (a bank in the catalog, a private
//! address in live mode, a balance) is checked by the engine afterwards.
//! Each refusal names its field the way both APIs report it.

use crate::domain::disbursement::{is_valid_ewallet_phone, normalize_phone};
use crate::error::EngineError;
use crate::limits;
use crate::money::MinorUnits;

/// Checks an http(s) URL's shape and length.
pub(crate) fn validate_url(field: &str, url: &str) -> Result<(), EngineError> {
    let ok = (url.starts_with("http://") || url.starts_with("https://"))
        && url.len() <= limits::URL_CHARS_MAX
        && url.len() > "https://".len()
        && !url.chars().any(|c| c.is_whitespace() || c.is_control());
    if ok {
        Ok(())
    } else {
        Err(EngineError::invalid(field, "must be an http or https URL"))
    }
}

/// Checks an idempotency key's length and characters.
pub fn validate_idempotency_key(key: &str) -> Result<(), EngineError> {
    if key.is_empty() || key.chars().count() > limits::IDEMPOTENCY_KEY_CHARS_MAX || key.chars().any(|c| c.is_control())
    {
        return Err(EngineError::invalid(
            "idempotency_key",
            "must be 1 to 255 printable characters",
        ));
    }
    Ok(())
}

/// A caller's key for one creation: 1 to 255 characters, none a control character.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// The longest key, in characters.
    pub const CHARS_MAX: usize = limits::IDEMPOTENCY_KEY_CHARS_MAX;

    /// The key, if `raw` is one.
    pub fn parse(raw: impl Into<String>) -> Result<IdempotencyKey, EngineError> {
        let raw = raw.into();
        validate_idempotency_key(&raw)?;
        Ok(IdempotencyKey(raw))
    }

    /// The key as sent.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key as sent.
    pub fn into_string(self) -> String {
        self.0
    }
}

/// An amount a caller asks to move: at least one minor unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PositiveAmount(MinorUnits);

impl PositiveAmount {
    /// The amount, if `minor` is at least 1; refusals name `amount_minor`.
    pub fn parse(minor: i64) -> Result<PositiveAmount, EngineError> {
        if minor < 1 {
            return Err(EngineError::invalid("amount_minor", "must be at least 1"));
        }
        Ok(PositiveAmount(MinorUnits::new(minor)))
    }

    /// The amount in minor units.
    pub fn minor(self) -> MinorUnits {
        self.0
    }
}

/// An http or https URL of at most `URL_CHARS_MAX` characters with no
/// white space. Whether it may name a private address is the engine's call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpUrl(String);

impl HttpUrl {
    /// The longest URL, in bytes.
    pub const CHARS_MAX: usize = limits::URL_CHARS_MAX;

    /// The URL, if `raw` is one; refusals name `field`.
    pub fn parse(field: &str, raw: impl Into<String>) -> Result<HttpUrl, EngineError> {
        let raw = raw.into();
        validate_url(field, &raw)?;
        Ok(HttpUrl(raw))
    }

    /// The URL as sent.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The URL as sent.
    pub fn into_string(self) -> String {
        self.0
    }
}

/// A bank or e-wallet short code as sent, trimmed and not empty; whether
/// the catalog knows it is checked against the catalog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogCode(String);

impl CatalogCode {
    /// The code, unless `raw` is blank.
    pub fn parse(raw: &str) -> Option<CatalogCode> {
        let code = raw.trim();
        (!code.is_empty()).then(|| CatalogCode(code.to_string()))
    }

    /// The code.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A bank account number: 5 to 34 digits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountNumber(String);

impl AccountNumber {
    /// The pattern the number matches, for the API document.
    pub const PATTERN: &'static str = "^[0-9]{5,34}$";

    /// The number, if `raw` (trimmed) is one.
    pub fn parse(raw: &str) -> Result<AccountNumber, EngineError> {
        let number = raw.trim();
        if !(5..=34).contains(&number.len()) || !number.chars().all(|c| c.is_ascii_digit()) {
            return Err(EngineError::invalid("account_number", "must be 5 to 34 digits"));
        }
        Ok(AccountNumber(number.to_string()))
    }

    /// The digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An account holder's name: trimmed, 1 to `NAME_CHARS_MAX` characters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HolderName(String);

impl HolderName {
    /// The longest name, in characters.
    pub const CHARS_MAX: usize = limits::NAME_CHARS_MAX;

    /// The name, `None` when `raw` is blank (not given), or why not.
    pub fn parse(raw: &str) -> Result<Option<HolderName>, EngineError> {
        let name = raw.trim();
        if name.is_empty() {
            return Ok(None);
        }
        if name.chars().count() > Self::CHARS_MAX {
            return Err(EngineError::invalid("account_name", "must be at most 255 characters"));
        }
        Ok(Some(HolderName(name.to_string())))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An Indonesian mobile number for an e-wallet, normalized to `628…`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EwalletPhone(String);

impl EwalletPhone {
    /// The forms a phone may be sent in (spaces, `-`, `(`, `)` aside):
    /// `+62`, `62`, `0` or nothing before `8`, then the mobile prefix and
    /// 7 to 10 digits. For the API document.
    pub const PATTERN: &'static str =
        r"^[ ()-]*(\+[ ()-]*6[ ()-]*2[ ()-]*|6[ ()-]*2[ ()-]*|0[ ()-]*)?8[ ()-]*[1-35-9]([ ()-]*[0-9]){7,10}[ ()-]*$";

    /// The phone normalized, if `raw` is an Indonesian mobile number.
    pub fn parse(raw: &str) -> Result<EwalletPhone, EngineError> {
        let phone = normalize_phone(raw.trim());
        if !is_valid_ewallet_phone(&phone) {
            return Err(EngineError::invalid(
                "ewallet_phone",
                "must be an Indonesian mobile number (62 8xx...)",
            ));
        }
        Ok(EwalletPhone(phone))
    }

    /// The phone, `628…`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A customer's Indonesian phone number, normalized to `62…`: 10 to 15
/// digits once its prefix is (`+62`, `0` or `8` become `62…`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CustomerPhone(String);

impl CustomerPhone {
    /// The forms a customer's phone may be sent in, separators (spaces,
    /// `-`, `(`, `)`) anywhere. For the API document.
    pub const PATTERN: &'static str = r"^[ ()-]*(\+[ ()-]*6[ ()-]*2([ ()-]*[0-9]){8,13}|0([ ()-]*[0-9]){8,13}|8([ ()-]*[0-9]){7,12}|6[ ()-]*2([ ()-]*[0-9]){8,13})[ ()-]*$";

    /// The phone normalized, if `raw` is one.
    pub fn parse(raw: &str) -> Result<CustomerPhone, EngineError> {
        let phone = normalize_phone(raw);
        if !(10..=15).contains(&phone.len()) || !phone.bytes().all(|b| b.is_ascii_digit()) || !phone.starts_with("62") {
            return Err(EngineError::invalid(
                "customer_phone",
                "must be an Indonesian phone number of 10 to 15 digits",
            ));
        }
        Ok(CustomerPhone(phone))
    }

    /// The phone, `62…`.
    pub fn into_string(self) -> String {
        self.0
    }
}

/// An email address as far as a payment page needs one: a local part, `@`,
/// a domain with a dot not at its start, at most 254 bytes, no white space
/// or control character.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmailAddress(String);

impl EmailAddress {
    /// The longest address, in bytes.
    pub const LEN_MAX: usize = 254;
    /// What the address matches, for the API document.
    pub const PATTERN: &'static str = r"^[^@\s\u0000-\u001F\u007F-\u009F]+@[^.\s\u0000-\u001F\u007F-\u009F][^\s\u0000-\u001F\u007F-\u009F]*\.[^\s\u0000-\u001F\u007F-\u009F]*$";

    /// The address, if `raw` is one.
    pub fn parse(raw: &str) -> Result<EmailAddress, EngineError> {
        let valid = raw.len() <= Self::LEN_MAX
            && raw
                .split_once('@')
                .is_some_and(|(local, domain)| !local.is_empty() && domain.contains('.') && !domain.starts_with('.'))
            && !raw.chars().any(|c| c.is_whitespace() || c.is_control());
        if !valid {
            return Err(EngineError::invalid("customer_email", "must be an email address"));
        }
        Ok(EmailAddress(raw.to_string()))
    }

    /// The address as sent.
    pub fn into_string(self) -> String {
        self.0
    }
}

/// The creation times a list admits, both ends included, Unix ms; an end
/// not given is the extreme of its side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CreatedBetween {
    from_ms: i64,
    to_ms: i64,
}

impl CreatedBetween {
    /// Every creation time.
    pub const ANY: CreatedBetween = CreatedBetween {
        from_ms: i64::MIN,
        to_ms: i64::MAX,
    };

    /// At or after `from_ms` and at or before `to_ms`, each when given.
    pub fn new(from_ms: Option<i64>, to_ms: Option<i64>) -> CreatedBetween {
        CreatedBetween {
            from_ms: from_ms.unwrap_or(i64::MIN),
            to_ms: to_ms.unwrap_or(i64::MAX),
        }
    }

    /// At or after `from_ms` and before `before_ms`, each when given.
    pub fn before(from_ms: Option<i64>, before_ms: Option<i64>) -> CreatedBetween {
        CreatedBetween::new(from_ms, before_ms.map(|before| before.saturating_sub(1)))
    }

    /// The earliest time in, `i64::MIN` when unbounded.
    pub fn from_ms(&self) -> i64 {
        self.from_ms
    }

    /// At or after `from_ms`.
    pub fn since(from_ms: i64) -> CreatedBetween {
        CreatedBetween::new(Some(from_ms), None)
    }

    /// Whether a creation at `at_ms` is in.
    pub fn contains(&self, at_ms: i64) -> bool {
        (self.from_ms..=self.to_ms).contains(&at_ms)
    }

    /// The same times as a half-open range `[from, to)` of the times a
    /// resource can have (never before the epoch), as the stored time
    /// indexes are read.
    pub fn half_open(&self) -> (i64, i64) {
        (self.from_ms.max(0), self.to_ms.saturating_add(1))
    }
}

/// The filters of a list (`GET /v1/orders`, `/v1/disbursements`,
/// `/v1/settlements`).
#[derive(Clone, Debug)]
pub struct ListFilter<S> {
    /// Only this status; any when `None`.
    pub status: Option<S>,
    /// Only created in this window.
    pub created: CreatedBetween,
}

// Not derived: a derive would ask `S: Default`, and no status has a default.
impl<S> Default for ListFilter<S> {
    fn default() -> Self {
        ListFilter {
            status: None,
            created: CreatedBetween::ANY,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_value_refuses_what_its_checks_refuse() {
        assert!(IdempotencyKey::parse("").is_err());
        assert!(IdempotencyKey::parse("a\u{7}b").is_err());
        assert!(IdempotencyKey::parse("k".repeat(256)).is_err());
        assert_eq!(IdempotencyKey::parse("k".repeat(255)).unwrap().as_str().len(), 255);
        assert!(PositiveAmount::parse(0).is_err());
        assert_eq!(PositiveAmount::parse(1).unwrap().minor(), MinorUnits::new(1));
        assert!(HttpUrl::parse("notify_url", "ftp://example.com").is_err());
        assert!(HttpUrl::parse("notify_url", "https://").is_err());
        assert!(AccountNumber::parse("1234").is_err());
        assert!(AccountNumber::parse("12345a").is_err());
        assert_eq!(AccountNumber::parse(" 12345 ").unwrap().as_str(), "12345");
        assert_eq!(HolderName::parse("  ").unwrap(), None);
        assert!(HolderName::parse(&"n".repeat(256)).is_err());
        assert_eq!(CatalogCode::parse(" BCA ").unwrap().as_str(), "BCA");
        assert_eq!(CatalogCode::parse(" "), None);
        assert_eq!(EwalletPhone::parse("0812-3456-7890").unwrap().as_str(), "6281234567890");
        assert!(EwalletPhone::parse("0841234567").is_err());
    }

    #[test]
    fn a_window_includes_both_ends_and_reads_as_a_half_open_range() {
        let window = CreatedBetween::new(Some(10), Some(20));
        assert!(!window.contains(9) && window.contains(10) && window.contains(20) && !window.contains(21));
        assert_eq!(window.half_open(), (10, 21));
        assert_eq!(CreatedBetween::ANY.half_open(), (0, i64::MAX));
        assert!(CreatedBetween::since(5).contains(i64::MAX) && !CreatedBetween::since(5).contains(4));
        let before = CreatedBetween::before(None, Some(20));
        assert!(before.contains(19) && !before.contains(20));
    }

    proptest::proptest! {
        /// The documented patterns admit exactly what the parsers admit,
        /// over strings of the characters a caller writes in them.
        #[test]
        fn the_documented_patterns_match_the_parsers(
            phone in "[+()0-9 -]{0,18}",
            number in "[ 0-9a]{0,40}",
            customer_phone in "[+()0-9 -]{0,20}",
            email in "[a.@ \t]{0,8}",
        ) {
            let customer_phones = regex::Regex::new(CustomerPhone::PATTERN).unwrap();
            proptest::prop_assert_eq!(customer_phones.is_match(&customer_phone), CustomerPhone::parse(&customer_phone).is_ok(), "{}", customer_phone);
            let emails = regex::Regex::new(EmailAddress::PATTERN).unwrap();
            proptest::prop_assert_eq!(emails.is_match(&email), EmailAddress::parse(&email).is_ok(), "{}", email);
            let phones = regex::Regex::new(EwalletPhone::PATTERN).unwrap();
            proptest::prop_assert_eq!(phones.is_match(&phone), EwalletPhone::parse(&phone).is_ok(), "{}", phone);
            let numbers = regex::Regex::new(&format!(r"^\s*{}\s*$", &AccountNumber::PATTERN[1..AccountNumber::PATTERN.len() - 1])).unwrap();
            proptest::prop_assert_eq!(numbers.is_match(&number), AccountNumber::parse(&number).is_ok(), "{}", number);
        }
    }

    #[test]
    fn the_documented_phone_pattern_admits_the_written_forms() {
        let phones = regex::Regex::new(EwalletPhone::PATTERN).unwrap();
        for phone in [
            "081234567890",
            "+62 812-3456-7890",
            "(0812) 3456 7890",
            "+(62) 812 3456 7890",
            "6281234567",
            "81234567",
        ] {
            assert_eq!(phones.is_match(phone), EwalletPhone::parse(phone).is_ok(), "{phone}");
        }
    }
}
