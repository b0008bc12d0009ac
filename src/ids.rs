//! Shared checks of the opaque identifiers the server hands out.

/// Whether `text` is exactly `len` lowercase hex digits: the form of heap keys
/// and session ids, safe as file names, object keys and header values.
pub(crate) fn is_lowercase_hex(text: &str, len: usize) -> bool {
    text.len() == len
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}
