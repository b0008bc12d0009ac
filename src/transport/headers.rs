//! Request header rules: content negotiation, `Origin`, captured `X-MCP-*`
//! headers, and the caller's identity.

use std::collections::BTreeMap;

use axum::http::{HeaderMap, StatusCode, header};

use super::envelope::HttpError;
use crate::protocol::jsonrpc::code;
use crate::protocol::mcp;
use crate::session::LogicalSession;

/// The authenticated caller, put in the request extensions by the host
/// (Lambda IAM, bearer tokens). A session answers only its own principal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal(pub String);

/// Which browser origins may call the endpoint (DNS-rebinding defence).
#[derive(Debug, Clone, Default)]
pub struct OriginPolicy {
    /// Origins allowed besides loopback ones, exactly as sent (`https://app.example`).
    pub extra: Vec<String>,
}

impl OriginPolicy {
    /// Requests without `Origin` (non-browser clients) pass; loopback
    /// origins pass; others only when listed.
    pub(super) fn check(&self, headers: &HeaderMap) -> Result<(), HttpError> {
        let Some(origin) = headers.get(header::ORIGIN) else {
            return Ok(());
        };
        let origin = origin.to_str().unwrap_or("");
        if is_loopback_origin(origin) || self.extra.iter().any(|allowed| allowed == origin) {
            return Ok(());
        }
        Err(HttpError::new(
            StatusCode::FORBIDDEN,
            code::INVALID_REQUEST,
            format!("origin {origin:?} is not allowed (set MCP_V8_ALLOWED_ORIGINS to allow it)"),
        ))
    }
}

fn is_loopback_origin(origin: &str) -> bool {
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = if let Some(v6) = rest.strip_prefix('[') {
        v6.split(']')
            .next()
            .map(|h| format!("[{h}]"))
            .unwrap_or_default()
    } else {
        rest.split(':').next().unwrap_or("").to_owned()
    };
    matches!(host.as_str(), "localhost" | "127.0.0.1" | "[::1]")
}

/// `Content-Type` must be JSON (else 415); `Accept` must allow both JSON and
/// an event stream (else 406), as the transport requires of clients.
pub(super) fn check_post(headers: &HeaderMap) -> Result<(), HttpError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let media = content_type.split(';').next().unwrap_or("").trim();
    if !media.eq_ignore_ascii_case("application/json") {
        return Err(HttpError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            code::INVALID_REQUEST,
            "Content-Type must be application/json",
        ));
    }
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let accepts = |wanted: &str| {
        let (kind, _) = wanted.split_once('/').expect("a media type");
        accept.split(',').any(|item| {
            let media = item
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            media == wanted || media == "*/*" || media == format!("{kind}/*")
        })
    };
    if !(accepts("application/json") && accepts("text/event-stream")) {
        return Err(HttpError::new(
            StatusCode::NOT_ACCEPTABLE,
            code::INVALID_REQUEST,
            "Accept must include application/json and text/event-stream",
        ));
    }
    Ok(())
}

/// Most `X-MCP-*` headers one `initialize` may carry; they are stored with
/// the session, on every backend.
pub(super) const MAX_MCP_HEADERS: usize = 32;
/// Longest `X-MCP-*` header value, in bytes.
pub(super) const MAX_MCP_HEADER_BYTES: usize = 1024;

/// Every `X-MCP-*` header, prefix stripped and lowercased (`X-MCP-Session-Id`
/// becomes `session-id`). Values that are not UTF-8 are skipped. Too many,
/// or too long, is 400.
pub(super) fn mcp_headers(headers: &HeaderMap) -> Result<BTreeMap<String, String>, HttpError> {
    let captured: BTreeMap<String, String> = headers
        .iter()
        .filter_map(|(name, value)| {
            let name = name.as_str().to_ascii_lowercase();
            let key = name.strip_prefix(mcp::header::MCP_PREFIX)?.to_owned();
            Some((key, value.to_str().ok()?.to_owned()))
        })
        .collect();
    if captured.len() > MAX_MCP_HEADERS {
        return Err(HttpError::bad_request(format!(
            "at most {MAX_MCP_HEADERS} X-MCP-* headers, got {}",
            captured.len()
        )));
    }
    for (key, value) in &captured {
        if value.len() > MAX_MCP_HEADER_BYTES {
            return Err(HttpError::bad_request(format!(
                "the X-MCP-{key} header is over {MAX_MCP_HEADER_BYTES} bytes"
            )));
        }
    }
    Ok(captured)
}

/// The logical session a request names in its `X-MCP-Session-Id` header:
/// at `initialize` (session era), or on each 2026-07-28 request, which has
/// no session to have captured it. An invalid name is 400, naming the header.
pub(super) fn logical_session(headers: &HeaderMap) -> Result<Option<LogicalSession>, HttpError> {
    let Some(value) = headers.get(mcp::header::LOGICAL_SESSION) else {
        return Ok(None);
    };
    let name = value
        .to_str()
        .map_err(|_| HttpError::bad_request("the X-MCP-Session-Id header must be visible ASCII"))?;
    LogicalSession::parse(name)
        .map(Some)
        .map_err(|e| HttpError::bad_request(format!("the X-MCP-Session-Id header {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_origins_are_recognised() {
        for ok in [
            "http://localhost:3000",
            "http://127.0.0.1",
            "https://[::1]:8443",
            "http://localhost",
        ] {
            assert!(is_loopback_origin(ok), "{ok}");
        }
        for bad in [
            "http://localhost.evil.com",
            "http://evil.com",
            "null",
            "file://",
            "http://127.0.0.2",
        ] {
            assert!(!is_loopback_origin(bad), "{bad}");
        }
    }
}
