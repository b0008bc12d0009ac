//! Media types as answers and resources read them: a type's essence, and
//! whether bytes of that type are read as text.

/// `text/csv; charset=utf-8` → `text/csv`.
pub fn essence(mime_type: &str) -> String {
    mime_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// Whether bytes of the media type `essence` are text (when they are
/// UTF-8): a text block or resource rather than a base64 blob.
pub fn is_text(essence: &str) -> bool {
    essence.starts_with("text/")
        || essence == "image/svg+xml"
        || essence == "application/json"
        || essence.ends_with("+json")
        || essence == "application/xml"
        || essence.ends_with("+xml")
        || essence == "application/javascript"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_dropped_and_structured_suffixes_are_text() {
        assert_eq!(essence(" Text/CSV ; charset=utf-8"), "text/csv");
        for text in [
            "text/plain",
            "application/ld+json",
            "image/svg+xml",
            "application/atom+xml",
        ] {
            assert!(is_text(text), "{text}");
        }
        for binary in ["image/png", "application/octet-stream", "application/pdf"] {
            assert!(!is_text(binary), "{binary}");
        }
    }
}
