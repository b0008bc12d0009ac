//! SEP-2243's custom headers (2026-07-28): a tool argument whose schema
//! says `"x-mcp-header": "Name"` travels in the body and, mirrored, in the
//! `Mcp-Param-Name` header, so that a gateway can route on it without
//! reading the body. The server checks the two agree; when they do not the
//! call is refused (HeaderMismatch) rather than run on either value.

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::Value;

/// The request header prefix of a mirrored argument.
pub const PREFIX: &str = "mcp-param-";

/// Checks the `Mcp-Param-*` headers of a call (`headers`, by lowercased
/// name after the prefix) against `arguments`, for each property of
/// `input_schema` that declares `x-mcp-header`; says what disagrees.
pub(crate) fn check(
    input_schema: &Value,
    arguments: Option<&Value>,
    headers: &BTreeMap<String, String>,
) -> Result<(), String> {
    let Some(properties) = input_schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (property, schema) in properties {
        let Some(name) = schema.get("x-mcp-header").and_then(Value::as_str) else {
            continue;
        };
        let header = format!("Mcp-Param-{name}");
        let value = arguments
            .and_then(|arguments| arguments.get(property))
            .filter(|value| !value.is_null());
        let sent = headers.get(&name.to_ascii_lowercase());
        match (value, sent) {
            (None, None) => {}
            (Some(_), None) => {
                return Err(format!(
                    "the argument {property:?} must also be sent in the {header} header (SEP-2243), and it is missing"
                ));
            }
            (None, Some(_)) => {
                return Err(format!(
                    "the {header} header is sent but the argument {property:?} is not"
                ));
            }
            (Some(value), Some(sent)) => {
                let decoded = decode(sent).map_err(|why| format!("the {header} header {why}"))?;
                if decoded != shown(value) {
                    return Err(format!(
                        "the {header} header does not match the argument {property:?}"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// A header's value: Base64 inside `=?base64?…?=` (strict: the standard
/// alphabet, padded), else the value as it is.
fn decode(sent: &str) -> Result<String, String> {
    let Some(encoded) = sent
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    else {
        return Ok(sent.to_owned());
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| format!("is not valid Base64 inside =?base64?…?=: {e}"))?;
    String::from_utf8(bytes).map_err(|_| "decodes to bytes that are not UTF-8".to_owned())
}

/// An argument as its header carries it: a string as it is, other values
/// as JSON (`42`, `true`).
fn shown(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn mirrored_arguments_must_agree_with_their_headers() {
        let schema = json!({"properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "query": {"type": "string"}
        }});
        let args = json!({"region": "Hello", "priority": 3, "query": "x"});
        let ok = headers(&[("region", "=?base64?SGVsbG8=?="), ("priority", "3")]);
        assert_eq!(check(&schema, Some(&args), &ok), Ok(()));
        let literal = json!({"region": "=?base64?SGVsbG8=", "priority": 3});
        let sent = headers(&[("region", "=?base64?SGVsbG8="), ("priority", "3")]);
        assert_eq!(check(&schema, Some(&literal), &sent), Ok(()));
        for bad in ["=?base64?SGVsbG8?=", "=?base64?SGVs!!!bG8=?=", "Goodbye"] {
            let sent = headers(&[("region", bad), ("priority", "3")]);
            let why = check(&schema, Some(&args), &sent).unwrap_err();
            assert!(why.contains("Mcp-Param-Region"), "{bad}: {why}");
        }
        let missing = headers(&[("priority", "3")]);
        let why = check(&schema, Some(&args), &missing).unwrap_err();
        assert!(why.contains("is missing"), "{why}");
        let extra = headers(&[("region", "Hello"), ("priority", "3")]);
        let why = check(&schema, Some(&json!({"priority": 3})), &extra).unwrap_err();
        assert!(why.contains("is not"), "{why}");
    }
}
