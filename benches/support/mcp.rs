//! One MCP session over HTTP, as the benches drive `serve`: 2025-11-25,
//! JSON answers, the logical session named by `X-MCP-Session-Id`.

use serde_json::{Value, json};

pub const PROTOCOL: &str = "2025-11-25";

pub struct Session {
    http: reqwest::Client,
    url: String,
    id: String,
}

impl Session {
    /// `initialize` under the logical session `name`, then
    /// `notifications/initialized`; panics if the server refuses.
    pub async fn connect(url: &str, name: &str, client_name: &str) -> Session {
        let http = reqwest::Client::new();
        let response = http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("x-mcp-session-id", name)
            .json(&json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
                "protocolVersion":PROTOCOL,"capabilities":{},"clientInfo":{"name":client_name,"version":"1"}}}))
            .send()
            .await
            .expect("initialize");
        assert_eq!(response.status(), 200, "initialize");
        let id = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let session = Session {
            http,
            url: url.to_owned(),
            id,
        };
        session
            .send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
            .await
            .expect("notifications/initialized");
        session
    }

    /// One message; the JSON-RPC result (`Null` for an accepted
    /// notification), or why there is none.
    pub async fn send(&self, body: Value) -> Result<Value, String> {
        let response = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", PROTOCOL)
            .json(&body)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let streamed = response
            .headers()
            .get("content-type")
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        let bytes = response.bytes().await.map_err(|e| e.to_string())?;
        if status == 202 {
            return Ok(Value::Null);
        }
        // An event stream (a call with a progress token) ends with the answer.
        let bytes = if streamed {
            let text = String::from_utf8_lossy(&bytes);
            let last = text
                .lines()
                .rev()
                .find_map(|line| line.strip_prefix("data: "))
                .ok_or("an event stream without data")?
                .to_owned();
            last.into_bytes().into()
        } else {
            bytes
        };
        let body: Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
        if status != 200 || body.get("error").is_some() {
            return Err(format!("{status}: {body}"));
        }
        Ok(body["result"].clone())
    }
}
