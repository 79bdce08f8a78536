//! Checks of caller-supplied values shared by every domain.

use crate::error::EngineError;
use crate::limits;

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
