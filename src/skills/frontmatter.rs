//! A `SKILL.md`'s YAML frontmatter, read as the Agent Skills specification
//! defines it: a `---` block first in the file, a mapping with a `name`
//! that follows the naming rules and a non-empty `description`.

use serde_json::{Map, Value};

/// The longest description the Agent Skills specification allows.
const MAX_DESCRIPTION_CHARS: usize = 1024;

/// The longest name the Agent Skills specification allows.
const MAX_NAME_CHARS: usize = 64;

/// What `SKILL.md` says of its skill.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Frontmatter {
    /// Every field, as JSON.
    pub fields: Map<String, Value>,
    /// `name`, checked against the naming rules.
    pub name: String,
    /// `description`, non-empty.
    pub description: String,
}

/// The frontmatter of `text`, or why it is not a skill's.
pub(super) fn parse(text: &str) -> Result<Frontmatter, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let opening = lines.next().unwrap_or("");
    if opening.trim_end() != "---" {
        return Err(
            "SKILL.md does not begin with a `---` line opening its YAML frontmatter".into(),
        );
    }
    let mut yaml = String::new();
    let mut closed = false;
    for line in lines {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        yaml.push_str(line);
    }
    if !closed {
        return Err("SKILL.md's frontmatter has no closing `---` line".into());
    }
    let value: Value = serde_yaml_ng::from_str(&yaml)
        .map_err(|e| format!("SKILL.md's frontmatter is not valid YAML: {e}"))?;
    let Value::Object(fields) = value else {
        return Err("SKILL.md's frontmatter is not a mapping of fields".into());
    };
    let name = match fields.get("name") {
        Some(Value::String(name)) => name.clone(),
        Some(_) => return Err("the frontmatter's `name` is not a string".into()),
        None => return Err("the frontmatter has no `name`".into()),
    };
    check_name(&name)?;
    let description = match fields.get("description") {
        Some(Value::String(text)) if !text.trim().is_empty() => text.clone(),
        Some(Value::String(_)) => return Err("the frontmatter's `description` is empty".into()),
        Some(_) => return Err("the frontmatter's `description` is not a string".into()),
        None => return Err("the frontmatter has no `description`".into()),
    };
    if description.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(format!(
            "the frontmatter's `description` has {} characters, more than the {MAX_DESCRIPTION_CHARS} \
             the Agent Skills specification allows",
            description.chars().count()
        ));
    }
    Ok(Frontmatter {
        fields,
        name,
        description,
    })
}

/// The Agent Skills naming rules: 1 to 64 lowercase letters, digits and
/// hyphens, no hyphen first, last or twice in a row.
pub(super) fn check_name(name: &str) -> Result<(), String> {
    let allowed = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if name.is_empty()
        || name.len() > MAX_NAME_CHARS
        || !allowed
        || name.starts_with('-')
        || name.ends_with('-')
        || name.contains("--")
    {
        return Err(format!(
            "the name {name:?} breaks the Agent Skills naming rules (1 to {MAX_NAME_CHARS} lowercase \
             letters, digits and hyphens, no hyphen first, last or twice in a row)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_field_is_kept_as_json() {
        let parsed = parse(
            "---\nname: pdf-tools\ndescription: Fill PDF forms\nlicense: MIT\nmetadata:\n  version: \"2.1\"\n  \
             tags: [a, b]\n---\n# Body\n",
        )
        .unwrap();
        assert_eq!(parsed.name, "pdf-tools");
        assert_eq!(
            Value::Object(parsed.fields),
            json!({"name": "pdf-tools", "description": "Fill PDF forms", "license": "MIT",
                   "metadata": {"version": "2.1", "tags": ["a", "b"]}})
        );
    }

    #[test]
    fn a_file_that_is_no_skill_says_why() {
        let cases = [
            ("# no frontmatter\n", "does not begin"),
            ("---\nname: a\ndescription: b\n", "no closing"),
            ("---\n- a\n- b\n---\n", "not a mapping"),
            ("---\nname: [\n---\n", "not valid YAML"),
            ("---\ndescription: b\n---\n", "no `name`"),
            ("---\nname: Bad_Name\ndescription: b\n---\n", "naming rules"),
            ("---\nname: a--b\ndescription: b\n---\n", "naming rules"),
            ("---\nname: ok\n---\n", "no `description`"),
            ("---\nname: ok\ndescription: \"  \"\n---\n", "is empty"),
        ];
        for (text, expected) in cases {
            let error = parse(text).unwrap_err();
            assert!(error.contains(expected), "{text:?}: {error}");
        }
        let long = format!("---\nname: ok\ndescription: {}\n---\n", "x".repeat(1025));
        assert!(parse(&long).unwrap_err().contains("1025 characters"));
    }

    #[test]
    fn crlf_and_a_byte_order_mark_are_read() {
        let parsed = parse("\u{feff}---\r\nname: ok\r\ndescription: fine\r\n---\r\nbody").unwrap();
        assert_eq!(parsed.description, "fine");
    }
}
