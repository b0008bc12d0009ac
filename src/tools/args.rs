//! Validation of tool arguments shared by several tools, with messages a
//! model can act on.

use crate::heap::HeapKey;
use crate::meta::Tags;
use crate::session::LogicalSession;

/// Most tags one heap may carry.
pub(crate) const MAX_TAGS: usize = 64;
/// Longest tag key, in bytes.
pub(crate) const MAX_TAG_KEY: usize = 128;
/// Longest tag value, in bytes.
pub(crate) const MAX_TAG_VALUE: usize = 1024;

/// A logical session name given as the `session` argument.
pub(crate) fn session(name: &str) -> Result<LogicalSession, String> {
    LogicalSession::parse(name).map_err(|e| format!("session {e}"))
}

pub(crate) fn heap(text: &str) -> Result<HeapKey, String> {
    HeapKey::parse(text).map_err(|e| e.to_string())
}

pub(crate) fn tags(tags: &Tags) -> Result<(), String> {
    if tags.len() > MAX_TAGS {
        return Err(format!(
            "at most {MAX_TAGS} tags per heap, got {}",
            tags.len()
        ));
    }
    for (key, value) in tags {
        if key.is_empty() {
            return Err("tag keys must not be empty".into());
        }
        // Stores scope tag keys by tenant with a control character
        // (`Tenant::scoped`); a key holding one could pass for another's.
        if key.chars().any(char::is_control) {
            return Err(format!(
                "tag key {key:?} contains a control character; tag keys must not"
            ));
        }
        if key.len() > MAX_TAG_KEY {
            return Err(format!(
                "tag key {:?}… is over {MAX_TAG_KEY} bytes",
                key.chars().take(32).collect::<String>()
            ));
        }
        if value.len() > MAX_TAG_VALUE {
            return Err(format!(
                "the value of tag {key:?} is over {MAX_TAG_VALUE} bytes"
            ));
        }
    }
    Ok(())
}

/// A comma-separated list, trimmed, empty items dropped.
pub(crate) fn list(text: &str) -> Vec<&str> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// `what` went wrong at `path` of a tool's arguments, naming the argument
/// unless it is the arguments object itself.
pub(crate) fn at_argument(
    path: &serde_path_to_error::Path,
    what: impl std::fmt::Display,
) -> String {
    match path.to_string().as_str() {
        "." | "" => what.to_string(),
        path => format!("`{path}`: {what}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_bounded_and_keys_non_empty() {
        let ok: Tags = [("env".to_owned(), "prod".to_owned())].into();
        assert!(tags(&ok).is_ok());
        let empty_key: Tags = [(String::new(), "x".to_owned())].into();
        assert!(tags(&empty_key).unwrap_err().contains("empty"));
        let control: Tags = [("a\u{1f}b".to_owned(), "x".to_owned())].into();
        assert!(tags(&control).unwrap_err().contains("control"));
        let long_value: Tags = [("k".to_owned(), "v".repeat(MAX_TAG_VALUE + 1))].into();
        assert!(tags(&long_value).unwrap_err().contains("over"));
        let many: Tags = (0..=MAX_TAGS)
            .map(|i| (i.to_string(), String::new()))
            .collect();
        assert!(tags(&many).unwrap_err().contains("at most"));
    }

    #[test]
    fn lists_are_split_and_trimmed() {
        assert_eq!(list(" a, b ,,c "), ["a", "b", "c"]);
        assert!(list("").is_empty());
    }
}
