//! The language a page is written in: Bahasa Indonesia unless the payer
//! asks for English by `?lang=en` or by an `Accept-Language` preferring it.

/// A language the pages are written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    /// Bahasa Indonesia, the default: the payers are in Indonesia.
    Indonesian,
    /// English.
    English,
}

impl Language {
    /// The BCP 47 tag, for `<html lang>` and `?lang=`.
    pub fn tag(self) -> &'static str {
        match self {
            Language::Indonesian => "id",
            Language::English => "en",
        }
    }

    /// The other language, for the page's language switch.
    pub fn other(self) -> Language {
        match self {
            Language::Indonesian => Language::English,
            Language::English => Language::Indonesian,
        }
    }

    /// The language's name in itself, for the switch's link text.
    pub fn own_name(self) -> &'static str {
        match self {
            Language::Indonesian => "Bahasa Indonesia",
            Language::English => "English",
        }
    }

    /// `?lang=` wins when it names a language the pages have; otherwise the
    /// `Accept-Language` header decides; otherwise Indonesian.
    pub fn choose(query: Option<&str>, accept_language: Option<&str>) -> Language {
        query
            .and_then(Language::from_tag)
            .or_else(|| accept_language.and_then(preferred))
            .unwrap_or(Language::Indonesian)
    }

    /// The language a tag's primary subtag names (`en-US` is English; `in`
    /// is the withdrawn code for Indonesian that some systems still send).
    fn from_tag(tag: &str) -> Option<Language> {
        let primary = tag.trim().split(['-', '_']).next().unwrap_or("");
        if primary.eq_ignore_ascii_case("en") {
            Some(Language::English)
        } else if primary.eq_ignore_ascii_case("id") || primary.eq_ignore_ascii_case("in") {
            Some(Language::Indonesian)
        } else {
            None
        }
    }
}

/// Entries of an `Accept-Language` header read at most: the header is the
/// client's to make as long as it likes.
const ACCEPT_LANGUAGE_ENTRIES_MAX: usize = 32;

/// The language of the highest-weighted entry naming one the pages have
/// (RFC 9110 12.5.4); among equal weights the first listed. Entries with
/// weight 0 ("not acceptable") and malformed weights are skipped, so
/// `fr, en;q=0.5` is English and `en;q=0, id` Indonesian.
fn preferred(header: &str) -> Option<Language> {
    let mut best: Option<(u16, Language)> = None;
    for entry in header.split(',').take(ACCEPT_LANGUAGE_ENTRIES_MAX) {
        let mut parts = entry.split(';');
        let tag = parts.next().unwrap_or("").trim();
        // `*` is any language: the default one serves it.
        let language = if tag == "*" {
            Some(Language::Indonesian)
        } else {
            Language::from_tag(tag)
        };
        let Some(language) = language else {
            continue;
        };
        let mut weight = Some(1000);
        for parameter in parts {
            if let Some((name, value)) = parameter.split_once('=') {
                if name.trim().eq_ignore_ascii_case("q") {
                    weight = quality(value.trim());
                }
            }
        }
        match weight {
            Some(weight) if weight > 0 && best.is_none_or(|(held, _)| weight > held) => {
                best = Some((weight, language));
            }
            _ => {}
        }
    }
    best.map(|(_, language)| language)
}

/// A q-value in thousandths: `0`, `0.5`, `1`, `1.000`; anything else is
/// malformed (`None`).
fn quality(value: &str) -> Option<u16> {
    let (whole, fraction) = value.split_once('.').unwrap_or((value, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let thousandths = format!("{fraction:0<3}").parse::<u16>().ok()?;
    match whole {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::Language::{self, English, Indonesian};

    fn choose(query: Option<&str>, header: Option<&str>) -> Language {
        Language::choose(query, header)
    }

    #[test]
    fn indonesian_is_the_default() {
        assert_eq!(choose(None, None), Indonesian);
        assert_eq!(choose(None, Some("")), Indonesian);
        assert_eq!(choose(None, Some("fr-FR, de;q=0.8")), Indonesian);
        assert_eq!(choose(Some("xx"), None), Indonesian);
    }

    #[test]
    fn the_query_wins_over_the_header() {
        assert_eq!(choose(Some("en"), Some("id")), English);
        assert_eq!(choose(Some("id"), Some("en-US,en;q=0.9")), Indonesian);
        assert_eq!(choose(Some("EN"), None), English);
        // A value the pages do not have leaves the choice to the header.
        assert_eq!(choose(Some("fr"), Some("en")), English);
    }

    #[test]
    fn the_header_is_read_by_weight() {
        assert_eq!(choose(None, Some("en-US,en;q=0.9,id;q=0.8")), English);
        assert_eq!(choose(None, Some("id-ID,id;q=0.9,en-US;q=0.8,en;q=0.7")), Indonesian);
        assert_eq!(choose(None, Some("id;q=0.4, en;q=0.6")), English);
        assert_eq!(choose(None, Some("fr, en;q=0.5")), English);
        assert_eq!(choose(None, Some("en;q=0, id")), Indonesian);
        assert_eq!(choose(None, Some("en;q=0")), Indonesian);
        assert_eq!(choose(None, Some("en;q=0.000")), Indonesian);
        assert_eq!(choose(None, Some("in")), Indonesian);
        assert_eq!(choose(None, Some("en ; Q=1.0")), English);
        // Equal weights: the first listed.
        assert_eq!(choose(None, Some("en;q=0.5, id;q=0.5")), English);
        assert_eq!(choose(None, Some("*, en;q=0.1")), Indonesian);
        assert_eq!(choose(None, Some("en, *;q=0.1")), English);
    }

    #[test]
    fn malformed_weights_are_skipped() {
        assert_eq!(choose(None, Some("en;q=2, id;q=0.1")), Indonesian);
        assert_eq!(choose(None, Some("en;q=abc")), Indonesian);
        assert_eq!(choose(None, Some("en;q=0.1234")), Indonesian);
        assert_eq!(choose(None, Some("en;q=-1")), Indonesian);
        assert_eq!(choose(None, Some(";;;,,,=;q")), Indonesian);
    }
}
