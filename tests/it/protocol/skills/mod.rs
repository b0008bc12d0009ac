//! The Skills extension (SEP-2640): skills declared, listed, got and read
//! in both eras, each verified as a host verifies it (every manifest file
//! read back matches its size and SHA-256; `SKILL.md`'s frontmatter matches
//! the entry and its directory's name) against `serve`, `stdio` and the
//! Lambda entry; an operator's skills from `MCP_V8_SKILLS_DIR`; and every
//! example in the built-in skills run against the server.

use std::path::Path;
use std::process::{Command, Stdio};

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::Digest;

use crate::common;

mod examples;
mod extension;

const BUILTIN_NAMES: [&str; 5] = [
    "sessions-and-heaps",
    "packages-and-files",
    "display-and-charts",
    "long-runs-and-tasks",
    "reading-failures",
];

/// Which protocol a host speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Era {
    /// 2025-11-25, with `initialize` and a session.
    Sessions,
    /// 2026-07-28, every request on its own.
    Sessionless,
}

const ERAS: [Era; 2] = [Era::Sessions, Era::Sessionless];

/// A JSON-RPC error.
type RpcError = (i64, String);

/// One MCP server reached through one transport, in one era.
trait Host {
    /// The result of `method` with `params`, or its error.
    async fn call(&mut self, method: &str, params: Value) -> Result<Value, RpcError>;
}

fn outcome(message: Value) -> Result<Value, RpcError> {
    if let Some(error) = message.get("error") {
        return Err((
            error["code"].as_i64().unwrap(),
            error["message"].as_str().unwrap_or_default().to_owned(),
        ));
    }
    Ok(message["result"].clone())
}

/// A 2026-07-28 request's `_meta`.
fn meta_2026() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "skills-host", "version": "1"}
    })
}

fn initialize_body() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "skills-host", "version": "1"}}})
}

/// `serve` over HTTP.
struct Http {
    url: String,
    era: Era,
    session: Option<String>,
}

impl Http {
    async fn new(url: String, era: Era) -> Self {
        let mut host = Self {
            url,
            era,
            session: None,
        };
        if era == Era::Sessions {
            let response = host.post(&initialize_body(), "initialize").await;
            let session = response
                .headers()
                .get("mcp-session-id")
                .expect("a session id")
                .to_str()
                .unwrap()
                .to_owned();
            host.session = Some(session);
        }
        host
    }

    async fn post(&self, body: &Value, method: &str) -> reqwest::Response {
        let mut request = reqwest::Client::new()
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(tool) = body["params"]["name"]
            .as_str()
            .filter(|_| method == "tools/call")
        {
            request = request.header("mcp-name", tool);
        }
        request = match (self.era, &self.session) {
            (Era::Sessionless, _) => request
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", method),
            (Era::Sessions, Some(session)) => request
                .header("mcp-protocol-version", "2025-11-25")
                .header("mcp-session-id", session),
            (Era::Sessions, None) => request,
        };
        request.body(body.to_string()).send().await.unwrap()
    }
}

/// The JSON-RPC answer in a body that is JSON or a stream of events.
fn answer_in(text: &str) -> Value {
    if text.trim_start().starts_with('{') {
        return serde_json::from_str(text).unwrap();
    }
    let mut pending = text.to_owned();
    while let Some(message) = common::take_event(&mut pending) {
        if message.get("id").is_some() {
            return message;
        }
    }
    panic!("no answer in {text}")
}

impl Host for Http {
    async fn call(&mut self, method: &str, mut params: Value) -> Result<Value, RpcError> {
        if self.era == Era::Sessionless {
            params["_meta"] = meta_2026();
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let text = self.post(&body, method).await.text().await.unwrap();
        outcome(answer_in(&text))
    }
}

/// `stdio`: one process, one line per message.
struct StdioHost {
    process: crate::protocol::stdio::Process,
    era: Era,
    id: u64,
}

impl StdioHost {
    fn start(data_dir: &Path, env: &[(&str, &str)], stderr: Stdio, era: Era) -> Self {
        let mut process =
            crate::protocol::stdio::Process::start_logging(data_dir, &[], env, stderr);
        if era == Era::Sessions {
            process.handshake();
        }
        Self {
            process,
            era,
            id: 0,
        }
    }
}

impl Host for StdioHost {
    async fn call(&mut self, method: &str, mut params: Value) -> Result<Value, RpcError> {
        if self.era == Era::Sessionless {
            params["_meta"] = meta_2026();
        }
        self.id += 1;
        let answer = self
            .process
            .request(json!({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params}));
        assert_eq!(answer["id"], self.id, "{answer}");
        outcome(answer)
    }
}

/// The Lambda entry, a function URL event per request.
struct Lambda {
    app: mcp_v8_lambda::transport::App,
    era: Era,
    session: Option<String>,
}

impl Lambda {
    async fn new(app: mcp_v8_lambda::transport::App, era: Era) -> Self {
        let mut host = Self {
            app,
            era,
            session: None,
        };
        if era == Era::Sessions {
            let (status, session, body) =
                crate::lambda::invoke(&host.app, &host.event(&initialize_body())).await;
            assert_eq!(status, 200, "{body}");
            host.session = Some(session.expect("a session id"));
        }
        host
    }

    fn event(&self, body: &Value) -> String {
        let method = body["method"].as_str().unwrap();
        let mut event: Value =
            serde_json::from_str(&crate::lambda::event_2026(method, None, json!({}))).unwrap();
        let headers = event["headers"].as_object_mut().unwrap();
        if self.era == Era::Sessions {
            headers.remove("mcp-method");
            headers.insert("mcp-protocol-version".into(), "2025-11-25".into());
            if let Some(session) = &self.session {
                headers.insert("mcp-session-id".into(), session.clone().into());
            }
        }
        event["body"] = body.to_string().into();
        event.to_string()
    }
}

impl Host for Lambda {
    async fn call(&mut self, method: &str, mut params: Value) -> Result<Value, RpcError> {
        if self.era == Era::Sessionless {
            params["_meta"] = meta_2026();
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let (_, _, answer) = crate::lambda::invoke(&self.app, &self.event(&body)).await;
        outcome(answer)
    }
}

/// `SKILL.md`'s frontmatter as a host parses it: the YAML between the
/// first two `---` lines.
fn frontmatter_of(text: &str) -> Value {
    let mut lines = text.lines();
    assert_eq!(lines.next().map(str::trim_end), Some("---"), "{text}");
    let yaml: Vec<&str> = lines.take_while(|line| line.trim_end() != "---").collect();
    let parsed: serde_yaml::Value = serde_yaml::from_str(&yaml.join("\n")).unwrap();
    serde_json::to_value(parsed).unwrap()
}

/// Lists every skill, page by page, and verifies each as the extension's
/// "Integrity and Verification" says a host does; returns the entries.
async fn verify_every_skill(host: &mut impl Host) -> Vec<Value> {
    let mut entries = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let page = host.call("skills/list", params).await.unwrap();
        assert_eq!(page["resultType"], "complete", "{page}");
        assert!(
            page["ttlMs"].is_u64() && page["cacheScope"] == "public",
            "{page}"
        );
        entries.extend(page["skills"].as_array().unwrap().iter().cloned());
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    for entry in &entries {
        let uri = entry["uri"].as_str().unwrap();
        let directory = uri
            .strip_suffix("/SKILL.md")
            .and_then(|root| root.rsplit('/').next())
            .unwrap_or_else(|| panic!("{uri} is no SKILL.md"));
        assert_eq!(entry["frontmatter"]["name"], directory, "{entry}");
        let resources = entry["resources"].as_array().unwrap();
        assert!(resources.len() <= 512);
        assert_eq!(
            resources.iter().filter(|r| r["uri"] == uri).count(),
            1,
            "SKILL.md listed once: {entry}"
        );
        let mut total = 0;
        for resource in resources {
            let file = resource["uri"].as_str().unwrap();
            assert!(file.starts_with(&uri[..uri.len() - "SKILL.md".len()]));
            let read = host.call("resources/read", json!({"uri": file})).await;
            let read = read.unwrap_or_else(|e| panic!("{file}: {e:?}"));
            let contents = &read["contents"][0];
            let bytes = match contents["text"].as_str() {
                Some(text) => text.as_bytes().to_vec(),
                None => base64::engine::general_purpose::STANDARD
                    .decode(contents["blob"].as_str().unwrap())
                    .unwrap(),
            };
            assert_eq!(
                bytes.len() as u64,
                resource["size"].as_u64().unwrap(),
                "{file}"
            );
            let digest = format!("sha256:{}", hex::encode(sha2::Sha256::digest(&bytes)));
            assert_eq!(digest, resource["digest"], "{file}");
            total += bytes.len();
            if file == uri {
                assert_eq!(contents["mimeType"], "text/markdown");
                let text = String::from_utf8(bytes).unwrap();
                assert_eq!(frontmatter_of(&text), entry["frontmatter"], "{file}");
            }
        }
        assert!(total <= 16 * 1024 * 1024);
        let got = host.call("skills/get", json!({"uri": uri})).await.unwrap();
        assert_eq!(&got["skill"], entry, "skills/get answers the listed entry");
        assert_eq!(got["resultType"], "complete");
        assert!(got.get("nextCursor").is_none());
    }
    entries
}

fn names(entries: &[Value]) -> Vec<String> {
    entries
        .iter()
        .map(|e| e["frontmatter"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// An operator's skills directory: `billing`, with a supporting file in a
/// subdirectory and extra frontmatter, and `misnamed`, whose `SKILL.md`
/// names another skill.
fn operator_skills() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "billing/SKILL.md",
        "---\nname: billing\ndescription: Answer billing questions with the rate table\nlicense: Apache-2.0\n\
         metadata:\n  owner: finance\n  version: \"1.2\"\n---\n# Billing\n\nRead [the rates](references/rates.md).\n",
    );
    write(
        "billing/references/rates.md",
        "| plan | price |\n|---|---|\n| pro | 20 |\n",
    );
    write(
        "misnamed/SKILL.md",
        "---\nname: something-else\ndescription: Names another directory\n---\n",
    );
    dir
}

fn skills_env(dir: &Path) -> Vec<(String, String)> {
    vec![("MCP_V8_SKILLS_DIR".to_owned(), dir.display().to_string())]
}

fn expected_names() -> Vec<String> {
    let mut expected: Vec<String> = BUILTIN_NAMES.iter().map(|s| (*s).to_owned()).collect();
    expected.push("billing".to_owned());
    expected
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_skill_verifies_as_a_host_checks_it_against_serve_in_both_eras() {
    let skills = operator_skills();
    let data = tempfile::tempdir().unwrap();
    let serve = crate::common::process::Serve::at_with(
        data.path(),
        common::net::free_port(),
        skills_env(skills.path()),
    );
    for era in ERAS {
        let mut host = Http::new(serve.url(), era).await;
        let entries = verify_every_skill(&mut host).await;
        assert_eq!(names(&entries), expected_names(), "{era:?}");
        let billing = entries.last().unwrap();
        assert_eq!(billing["uri"], "skill://billing/SKILL.md");
        assert_eq!(
            billing["frontmatter"]["metadata"],
            json!({"owner": "finance", "version": "1.2"})
        );
        assert_eq!(
            billing["resources"][1]["uri"],
            "skill://billing/references/rates.md"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_skill_verifies_over_stdio_in_both_eras_and_a_misnamed_one_is_logged() {
    let skills = operator_skills();
    let data = tempfile::tempdir().unwrap();
    let log_path = data.path().join("stderr.log");
    let dir = skills.path().display().to_string();
    let env = [("MCP_V8_SKILLS_DIR", dir.as_str()), ("RUST_LOG", "warn")];
    for era in ERAS {
        let log = std::fs::File::create(&log_path).unwrap();
        let mut host = StdioHost::start(&data.path().join("data"), &env, log.into(), era);
        let entries = verify_every_skill(&mut host).await;
        assert_eq!(names(&entries), expected_names(), "{era:?}");
        drop(host);
        let log = std::fs::read_to_string(&log_path).unwrap();
        assert!(
            log.contains("misnamed") && log.contains("something-else"),
            "the left-out skill is logged with its reason: {log}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_skill_verifies_under_the_lambda_entry_in_both_eras() {
    let skills = operator_skills();
    let data = tempfile::tempdir().unwrap();
    let dir = skills.path().display().to_string();
    let config = mcp_v8_lambda::config::Config::from_lookup(|name| {
        (name == "MCP_V8_SKILLS_DIR").then(|| dir.clone())
    })
    .unwrap();
    let app = common::app_on_workers(&config, data.path(), None);
    for era in ERAS {
        let mut host = Lambda::new(app.clone(), era).await;
        let entries = verify_every_skill(&mut host).await;
        assert_eq!(names(&entries), expected_names(), "{era:?}");
    }
}

/// A server (in process, on engine workers) configured by `vars`.
fn server_with_vars(vars: &[(&str, String)]) -> common::Server {
    let mut config = common::test_config(3600, false);
    let from_vars = mcp_v8_lambda::config::Config::from_lookup(|name| {
        vars.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
    })
    .unwrap();
    config.skills_dir = from_vars.skills_dir;
    config.stateless = vars.iter().any(|(n, _)| *n == "MCP_V8_STATELESS");
    common::server_configured(config, |stores| stores)
}

/// A 2026-07-28 request to the in-process server.
async fn sessionless(server: &common::Server, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta_2026();
    let request = common::post()
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .body(axum::body::Body::from(
            json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string(),
        ))
        .unwrap();
    server.send(request).await.body
}

fn error_code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {answer}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_server_serves_only_the_operators_skills() {
    let bare = server_with_vars(&[("MCP_V8_STATELESS", "true".into())]);
    let discover = sessionless(&bare, "server/discover", json!({})).await;
    let capabilities = &discover["result"]["capabilities"];
    assert!(capabilities["resources"].is_null(), "{capabilities}");
    assert!(
        capabilities["extensions"]["io.modelcontextprotocol/skills"].is_null(),
        "{capabilities}"
    );
    let skills = operator_skills();
    let with_dir = server_with_vars(&[
        ("MCP_V8_STATELESS", "true".into()),
        ("MCP_V8_SKILLS_DIR", skills.path().display().to_string()),
    ]);
    let listed = sessionless(&with_dir, "skills/list", json!({})).await;
    assert_eq!(
        names(listed["result"]["skills"].as_array().unwrap()),
        ["billing"]
    );
    let resources = sessionless(&with_dir, "resources/list", json!({})).await;
    assert_eq!(
        resources["result"]["resources"][0]["uri"],
        "skill://billing/SKILL.md"
    );
    let read = sessionless(
        &with_dir,
        "resources/read",
        json!({"uri": "skill://billing/references/rates.md"}),
    )
    .await;
    assert!(
        read["result"]["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("pro")
    );
    let missing = sessionless(
        &with_dir,
        "resources/read",
        json!({"uri": "mcp-v8://executions/x"}),
    )
    .await;
    assert_eq!(error_code(&missing), -32602);
}

#[test]
fn a_skills_directory_that_does_not_exist_stops_the_start() {
    let error = mcp_v8_lambda::config::Config::from_lookup(|name| {
        (name == "MCP_V8_SKILLS_DIR").then(|| "/nonexistent/skills".to_owned())
    })
    .unwrap_err();
    assert!(error.to_string().contains("MCP_V8_SKILLS_DIR"), "{error}");
}

/// tools/list as the default server lists it, in bytes of JSON. Before the
/// skills it was 24,080 bytes (the run_js description naming no skill);
/// the description now names them (208 bytes) and says less of display()
/// (371 bytes fewer), whose details moved to the display-and-charts skill:
/// 23,917 bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_is_no_larger_than_before_the_skills() {
    const BEFORE: usize = 24_080;
    let server = common::server();
    let session = server.initialize_as("2025-11-25", &[]).await;
    let listed = server.tools_list(&session).await;
    let size = listed.to_string().len();
    eprintln!("tools/list: {size} bytes");
    assert!(
        size <= BEFORE,
        "tools/list grew to {size} bytes from {BEFORE}"
    );
    let description = common::listed_tool(&listed, "run_js")["description"]
        .as_str()
        .unwrap();
    eprintln!(
        "run_js's description: {} bytes of JSON",
        serde_json::to_string(description).unwrap().len()
    );
    for name in BUILTIN_NAMES {
        assert!(description.contains(name), "{name} in {description}");
    }
}
