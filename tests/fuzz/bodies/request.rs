// A POST body, with the headers of either protocol era, through the
// endpoint's decoding up to dispatch: it must answer with an HTTP 4xx and a
// JSON-RPC error code, or decode, and never panic. Shared by the fuzz target
// and the `it` binary, which runs it over the committed seeds.

use http::{HeaderMap, HeaderValue};
use mcp_v8_lambda::transport::decode_only;

pub fn run(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let mut headers = HeaderMap::new();
    if selector & 1 == 1 {
        headers.insert(
            "mcp-protocol-version",
            HeaderValue::from_static("2026-07-28"),
        );
        let method = match selector >> 1 & 3 {
            0 => "tools/call",
            1 => "tools/list",
            2 => "server/discover",
            _ => "initialize",
        };
        headers.insert("mcp-method", HeaderValue::from_static(method));
        if selector & 8 == 8 {
            headers.insert("mcp-name", HeaderValue::from_static("run_js"));
        }
    }
    if let Err((status, code)) = decode_only(&headers, body) {
        assert!(
            (400..500).contains(&status),
            "status {status} for a bad body"
        );
        assert!((-32768..=-32000).contains(&code), "code {code}");
    }
}
