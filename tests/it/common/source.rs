//! The production code of a Rust source file, for the tests that read the
//! tree (tree.rs, layers.rs): every item but those under `#[cfg(test)]`,
//! wherever they stand, so that code after a test module is read too.

/// `text` without the items marked `#[cfg(test)]` (each from its
/// attribute to the end of the item: its `;`, or its block's `}`).
pub fn production_code(text: &str) -> String {
    const MARK: &str = "#[cfg(test)]";
    let mut kept = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(MARK) {
        kept.push_str(&rest[..at]);
        let item = &rest[at + MARK.len()..];
        rest = &item[item_end(item)..];
    }
    kept.push_str(rest);
    kept
}

/// Where the item at the start of `text` ends: after the first `;` outside
/// any block, or after the `}` that closes its first block. Strings, chars
/// and comments are skipped, so braces inside them do not count.
fn item_end(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                i = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = text[i + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |n| i + 2 + n + 2);
                continue;
            }
            b'r' if matches!(bytes.get(i + 1), Some(b'"' | b'#'))
                && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric() && bytes[i - 1] != b'_') =>
            {
                let hashes = bytes[i + 1..].iter().take_while(|&&b| b == b'#').count();
                if bytes.get(i + 1 + hashes) == Some(&b'"') {
                    let close = format!("\"{}", "#".repeat(hashes));
                    let body = i + 2 + hashes;
                    i = text[body..]
                        .find(&close)
                        .map_or(bytes.len(), |n| body + n + close.len());
                    continue;
                }
            }
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'\'' => {
                // A char literal ('x', '\n', '\u{7f}'), not a lifetime.
                if let Some(len) = char_literal_len(&text[i..]) {
                    i += len;
                    continue;
                }
            }
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            b';' if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    bytes.len()
}

/// The length of the char literal `text` starts with, if it is one
/// rather than a lifetime.
fn char_literal_len(text: &str) -> Option<usize> {
    let rest = &text[1..];
    if rest.starts_with("\\'") || rest.starts_with("\\\\") {
        return Some(4);
    }
    if let Some(escape) = rest.strip_prefix('\\') {
        return Some(escape.find('\'')? + 3);
    }
    let ch = rest.chars().next()?;
    rest[ch.len_utf8()..]
        .starts_with('\'')
        .then_some(ch.len_utf8() + 2)
}

#[test]
fn code_after_a_test_module_is_kept_and_the_module_is_not() {
    let text = r#####"
fn before() {}
#[cfg(test)]
mod tests {
    fn braces_in_text() { let _ = ("}", '}', r#"}"#, /* } */ '{'); }
    // }
}
pub fn after<'a>(x: &'a str) -> &'a str { x }
#[cfg(test)]
use std::fmt;
const LAST: char = '{';
"#####;
    let code = production_code(text);
    assert!(code.contains("fn before()"), "{code}");
    assert!(code.contains("pub fn after"), "{code}");
    assert!(code.contains("const LAST"), "{code}");
    assert!(!code.contains("braces_in_text"), "{code}");
    assert!(!code.contains("std::fmt"), "{code}");
}
