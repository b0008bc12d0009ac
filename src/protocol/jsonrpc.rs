//! JSON-RPC 2.0 envelopes as MCP uses them.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The `id` of a request: MCP allows strings and integers, never null.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// Integer id.
    Number(i64),
    /// String id.
    String(String),
}

/// Standard and MCP-specific error codes.
pub mod code {
    /// Invalid JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a valid JSON-RPC message.
    pub const INVALID_REQUEST: i64 = -32600;
    /// Unknown method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Bad parameters.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Server-side failure.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// The session is unknown or expired; the client re-initializes.
    pub const SESSION_NOT_FOUND: i64 = -32001;
    /// 2026-07-28: a standard request header disagrees with the body.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// 2026-07-28: the request needs a client capability it did not declare.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// 2026-07-28: the requested protocol version is not served here.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

/// Deepest nesting of arrays and objects a request may have. MCP messages
/// need a handful of levels; the bound keeps every decoder, including those
/// that skip values without a recursion limit, away from pathological input.
pub const MAX_NESTING: usize = 64;

/// serde's message in plain words, for a person: JSON's names for Rust's
/// number types, and the position only where it helps (a body that is not
/// JSON) as `(line L, column C)`, not serde's `at line L column C`; a
/// value of the wrong shape is named by its field instead.
pub fn plain_json_error(error: &serde_json::Error) -> String {
    let mut text = error.to_string();
    let position = format!(" at line {} column {}", error.line(), error.column());
    if let Some(stripped) = text.strip_suffix(&position) {
        text = stripped.to_owned();
        if error.is_syntax() || error.is_eof() {
            text = format!("{text} (line {}, column {})", error.line(), error.column());
        }
    }
    for (rust, json) in [
        ("usize", "a non-negative integer"),
        ("u64", "a non-negative integer"),
        ("u32", "a non-negative integer"),
        ("u16", "a non-negative integer"),
        ("u8", "a non-negative integer"),
        ("i64", "an integer"),
        ("i32", "an integer"),
        ("f64", "a number"),
        ("f32", "a number"),
    ] {
        text = text.replace(&format!("expected {rust}"), &format!("expected {json}"));
    }
    text
}

/// Whether `body` nests arrays and objects deeper than `max`, scanning the
/// bytes once (brackets inside strings do not count). Malformed JSON is left
/// for the parser to report.
pub fn nests_deeper_than(body: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &byte in body {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// One incoming message, before it is told apart. Fields stay raw so a
/// request's params are decoded once, into the type of its method.
#[derive(Debug, Deserialize)]
pub struct Incoming {
    /// Must be `"2.0"`.
    pub jsonrpc: String,
    /// Present on requests and responses.
    #[serde(default)]
    pub id: Option<RequestId>,
    /// Present on requests and notifications.
    #[serde(default)]
    pub method: Option<String>,
    /// Method parameters.
    #[serde(default)]
    pub params: Option<Box<RawValue>>,
    /// Present on responses (to server-initiated requests).
    #[serde(default)]
    pub result: Option<Box<RawValue>>,
    /// Present on error responses.
    #[serde(default)]
    pub error: Option<Box<RawValue>>,
}

/// What an incoming message is.
#[derive(Debug)]
pub enum Message {
    /// Expects a response.
    Request {
        /// Echoed in the response.
        id: RequestId,
        /// Method name.
        method: String,
        /// Raw parameters.
        params: Option<Box<RawValue>>,
    },
    /// Fire and forget.
    Notification {
        /// Method name.
        method: String,
        /// Raw parameters.
        params: Option<Box<RawValue>>,
    },
    /// A client's answer to a request the server sent (a session-era
    /// `elicitation/create` on a call's stream).
    Response {
        /// The id the server gave its request.
        id: RequestId,
        /// What the client answered.
        reply: Reply,
    },
}

/// A client's answer to a server request, still raw.
#[derive(Debug)]
pub enum Reply {
    /// `result`.
    Result(Box<RawValue>),
    /// `error`.
    Error(Box<RawValue>),
}

/// A message that is JSON but not JSON-RPC.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSON-RPC message: {0}")]
pub struct InvalidMessage(pub &'static str);

impl TryFrom<Incoming> for Message {
    type Error = InvalidMessage;
    fn try_from(m: Incoming) -> Result<Self, Self::Error> {
        if m.jsonrpc != "2.0" {
            return Err(InvalidMessage("jsonrpc must be \"2.0\""));
        }
        match (m.id, m.method) {
            (Some(id), Some(method)) => Ok(Message::Request {
                id,
                method,
                params: m.params,
            }),
            (None, Some(method)) => Ok(Message::Notification {
                method,
                params: m.params,
            }),
            (Some(id), None) => match (m.result, m.error) {
                (Some(result), None) => Ok(Message::Response {
                    id,
                    reply: Reply::Result(result),
                }),
                (None, Some(error)) => Ok(Message::Response {
                    id,
                    reply: Reply::Error(error),
                }),
                (Some(_), Some(_)) => Err(InvalidMessage(
                    "a response carries a result or an error, not both",
                )),
                (None, None) => Err(InvalidMessage(
                    "a message needs a method, or an id with a result or error",
                )),
            },
            _ => Err(InvalidMessage(
                "a message needs a method, or an id with a result or error",
            )),
        }
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// One of [`code`].
    pub code: i64,
    /// Human-readable.
    pub message: String,
    /// Machine-readable detail some codes define (the supported versions of
    /// `UNSUPPORTED_PROTOCOL_VERSION`). Typed where it is built; JSON here
    /// because the envelope carries any of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

/// A notification the server sends (progress, on a response stream).
#[derive(Debug, Clone, Serialize)]
pub struct Notification<T: Serialize> {
    /// Always `"2.0"`.
    pub jsonrpc: &'static str,
    /// Which notification.
    pub method: &'static str,
    /// Its params.
    pub params: T,
}

impl<T: Serialize> Notification<T> {
    /// `method` with `params`.
    pub fn new(method: &'static str, params: T) -> Self {
        Self {
            jsonrpc: "2.0",
            method,
            params,
        }
    }
}

/// A response the server sends.
#[derive(Debug, Clone, Serialize)]
pub struct Response<T: Serialize> {
    /// Always `"2.0"`.
    pub jsonrpc: &'static str,
    /// The request's id; `null` only when the request could not be read.
    pub id: Option<RequestId>,
    /// Success payload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<T>,
    /// Failure payload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

impl<T: Serialize> Response<T> {
    /// A successful response.
    pub fn ok(id: RequestId, result: T) -> Self {
        Self {
            jsonrpc: "2.0",
            id: Some(id),
            result: Some(result),
            error: None,
        }
    }
}

impl Response<()> {
    /// An error response.
    pub fn error(id: Option<RequestId>, code: i64, message: impl Into<String>) -> Self {
        Self::error_with_data(id, code, message, None)
    }

    /// An error response with `error.data`.
    pub fn error_with_data(
        id: Option<RequestId>,
        code: i64,
        message: impl Into<String>,
        data: Option<serde_json::Value>,
    ) -> Self {
        Self {
            jsonrpc: "2.0",
            id,
            result: None,
            error: Some(ErrorObject {
                code,
                message: message.into(),
                data,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classify(json: &str) -> Result<Message, InvalidMessage> {
        Message::try_from(serde_json::from_str::<Incoming>(json).unwrap())
    }

    #[test]
    fn messages_are_told_apart_by_id_and_method() {
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Ok(Message::Request { .. })
        ));
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Ok(Message::Notification { .. })
        ));
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#),
            Ok(Message::Response { .. })
        ));
        assert!(classify(r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#).is_err());
        assert!(classify(r#"{"jsonrpc":"2.0","id":1}"#).is_err());
    }

    #[test]
    fn nesting_is_counted_outside_strings_only() {
        assert!(!nests_deeper_than(br#"{"a":[1,{"b":[]}]}"#, 4));
        assert!(nests_deeper_than(br#"{"a":[1,{"b":[]}]}"#, 3));
        assert!(!nests_deeper_than(br#"{"code":"[[[[[[[[\"[[[["}"#, 1));
        assert!(nests_deeper_than(&[b'['; 65], MAX_NESTING));
        assert!(!nests_deeper_than(&[b'['; 64], MAX_NESTING));
    }

    #[test]
    fn ids_keep_their_json_type() {
        let r = Response::ok(RequestId::String("7".into()), serde_json::json!({}));
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"jsonrpc":"2.0","id":"7","result":{}}"#
        );
        let e = Response::error(None, code::PARSE_ERROR, "bad");
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}"#
        );
    }
}
