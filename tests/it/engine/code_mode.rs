//! Code mode (src/upstream, src/engine/host/mcp.rs): runs call the tools of
//! real upstream MCP servers through `mcp`. The upstreams are
//! tests/upstream/server.py under the Python `mcp` 1.x package (FastMCP,
//! the session era) and 2.x (MCPServer, protocol 2026-07-28), started on
//! loopback by each test; each refuses requests without its bearer token,
//! which only the host's configuration holds.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_v8_lambda::engine::{
    CapabilitySettings, Engine, EngineConfig, RunControl, RunOutcome, RunRequest, RunStatus,
};
use mcp_v8_lambda::heap::{FileHeapStore, HeapKey, HeapStore};
use mcp_v8_lambda::tenant::Tenant;
use mcp_v8_lambda::upstream::{McpCount, UpstreamConfig};
use serde_json::{Value, json};

use crate::common::engine::{completed, run};

/// The upstreams' bearer token: configured on the host, never in a run.
const TOKEN: &str = "upstream-s3cret-4b1d";

fn project() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A Python MCP server on loopback; killed when dropped.
pub(crate) struct Upstream {
    child: Child,
    port: u16,
    events: Arc<Mutex<Vec<Value>>>,
}

impl Drop for Upstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Upstream {
    /// The session-era server (mcp 1.x).
    pub(crate) fn session_era() -> Self {
        Self::start(".venv")
    }

    /// The 2026-07-28 server (mcp 2.x).
    pub(crate) fn modern() -> Self {
        Self::start(".venv-mcp2")
    }

    fn start(venv: &str) -> Self {
        let python = project().join(venv).join("bin/python");
        assert!(
            python.exists(),
            "{venv} is missing: run scripts/test.sh (scripts/install-test-deps.sh creates it)"
        );
        let mut child = Command::new(python)
            .arg(project().join("tests/upstream/server.py"))
            .arg(TOKEN)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting the upstream MCP server");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        let port = first["port"].as_u64().unwrap() as u16;
        let events = Arc::new(Mutex::new(Vec::new()));
        let collected = events.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if let Ok(event) = serde_json::from_str(&line) {
                    collected.lock().unwrap().push(event);
                }
            }
        });
        crate::common::net::wait_listening(port, "the upstream", Duration::from_secs(20));
        Self {
            child,
            port,
            events,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    pub(crate) fn events(&self, kind: &str) -> Vec<Value> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e["event"] == kind)
            .cloned()
            .collect()
    }

    /// Waits until the upstream reported `count` events of `kind`.
    fn wait_for(&self, kind: &str, count: usize) {
        let started = Instant::now();
        while self.events(kind).len() < count {
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "the upstream never reported {count} {kind} events: {:?}",
                self.events.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The tools of tests/upstream/server.py, sorted by name.
pub(crate) const TOOLS: [&str; 8] = [
    "add",
    "code",
    "count",
    "delete_rows",
    "echo",
    "fail",
    "numbers",
    "slow",
];

/// `MCP_V8_MCP_SERVERS` naming each `(name, upstream)` with the token.
pub(crate) fn servers_json(upstreams: &[(&str, &Upstream)]) -> String {
    let mut servers = serde_json::Map::new();
    for (name, upstream) in upstreams {
        servers.insert(
            (*name).to_owned(),
            json!({"url": upstream.url(), "headers": {"Authorization": format!("Bearer {TOKEN}")}}),
        );
    }
    Value::Object(servers).to_string()
}

fn upstream_config(upstreams: &[(&str, &Upstream)]) -> UpstreamConfig {
    let mut config = UpstreamConfig::off();
    config.servers = UpstreamConfig::parse_servers(&servers_json(upstreams), None).unwrap();
    config
}

fn engine(mcp: UpstreamConfig, heaps: Option<Arc<dyn HeapStore>>) -> Engine {
    crate::common::engine::on_workers(
        EngineConfig {
            capabilities: CapabilitySettings {
                mcp,
                ..Default::default()
            },
            ..EngineConfig::default()
        },
        heaps,
    )
}

/// An upstream of each era, named `legacy` and `modern`, and a stateless
/// engine over both.
fn both_eras() -> (Upstream, Upstream, Engine) {
    let legacy = Upstream::session_era();
    let modern = Upstream::modern();
    let engine = engine(
        upstream_config(&[("legacy", &legacy), ("modern", &modern)]),
        None,
    );
    (legacy, modern, engine)
}

async fn stateless(engine: &Engine, code: &str) -> RunOutcome {
    run(
        engine,
        RunRequest {
            code: code.into(),
            timeout: Some(Duration::from_secs(30)),
            ..Default::default()
        },
    )
    .await
}

fn json_result(outcome: &RunOutcome) -> Value {
    serde_json::from_str(completed(outcome)).unwrap()
}

fn assert_no_token(what: &str, text: &str) {
    assert!(
        !text.contains(TOKEN),
        "{what} holds the upstream's token:\n{text}"
    );
    assert!(
        !text.contains("s3cret"),
        "{what} holds part of the token:\n{text}"
    );
}

/// Structured, text and JSON-text results from both eras, through
/// `callTool`, the proxies and `listTools`; each upstream saw its era's
/// protocol on every request, and the header the code never sees.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_call_tools_of_both_eras_and_get_values() {
    let (legacy, modern, engine) = both_eras();
    let out = stateless(
        &engine,
        r#"
        const out = {};
        for (const s of mcp.servers) {
          out[s] = {
            add: await mcp.callTool(s, "add", { a: 2, b: 3 }),
            count: (await mcp[s].count({ text: "one two three" })) + 1,
            code: await mcp[s].code({ n: 42 }),
            echo: await mcp[s].echo({ text: "hi" }),
            numbers: await mcp.callTool(s, "numbers", { n: 3 }),
            tools: (await mcp.listTools(s)).map((t) => t.name).sort(),
            schema: (await mcp.listTools(s)).find((t) => t.name === "add").inputSchema.required,
          };
        }
        out
        "#,
    )
    .await;
    let value = json_result(&out);
    for server in ["legacy", "modern"] {
        let got = &value[server];
        assert_eq!(got["add"], json!({"sum": 5}), "{server}: {value}");
        // The SDK's {"result": n} wrapper is taken off; plain text that
        // looks like a number stays text.
        assert_eq!(got["count"], 4, "{server}: {value}");
        assert_eq!(got["code"], "0042", "{server}: {value}");
        assert_eq!(got["echo"], "hi", "{server}");
        assert_eq!(got["numbers"], json!({"items": [0, 1, 2]}), "{server}");
        assert_eq!(got["tools"], json!(TOOLS), "{server}");
        assert_eq!(got["schema"], json!(["a", "b"]), "{server}");
    }
    assert_eq!(out.mcp_calls, Some(McpCount { count: 10 }));
    // Conversions and probes are not tool calls; `mcp` lists its servers.
    let out = stateless(
        &engine,
        r#"[
          '' + mcp.legacy, `${mcp.modern}`, String(mcp.legacy), JSON.stringify({ s: mcp.legacy }),
          typeof mcp.legacy.then, Object.keys(mcp).filter((k) => k !== "servers"),
          Object.prototype.toString.call(mcp.modern), 'modern' in mcp,
          Object.keys(mcp.legacy).sort(), 'count' in mcp.modern, 'then' in mcp.modern,
          typeof mcp.modern.count,
        ]"#,
    )
    .await;
    assert_eq!(
        json_result(&out),
        json!([
            "[mcp server legacy]",
            "[mcp server modern]",
            "[mcp server legacy]",
            "{\"s\":{}}",
            "undefined",
            ["listTools", "callTool", "legacy", "modern"],
            "[object mcp server]",
            true,
            TOOLS,
            true,
            false,
            "function"
        ]),
        "{out:?}"
    );
    assert_eq!(out.mcp_calls, None, "no tool was called: {out:?}");
    // console.log shows the servers, their tools and arguments.
    let out = stateless(
        &engine,
        "console.log(mcp); console.log(mcp.modern); mcp.legacy",
    )
    .await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    for part in [
        "mcp { legacy: mcp.legacy { add(a, b),",
        "listTools(server), callTool(server, tool, args) }",
        "mcp.modern { add(a, b), count(text), ",
    ] {
        assert!(out.output.contains(part), "{part}: {}", out.output);
    }
    assert!(!out.output.contains("[Proxy]"), "{}", out.output);
    assert!(
        out.result
            .as_deref()
            .is_some_and(|r| r.starts_with("mcp.legacy { add(a, b),")),
        "{out:?}"
    );
    assert_eq!(out.mcp_calls, None, "no tool was called: {out:?}");
    let protocols = |upstream: &Upstream| -> Vec<String> {
        upstream
            .events("request")
            .iter()
            .map(|e| e["protocol"].as_str().unwrap().to_owned())
            .filter(|p| !p.is_empty())
            .collect()
    };
    // The session-era upstream refused the `server/discover` probe; every
    // request after it is of the era it speaks.
    let legacy_seen = protocols(&legacy);
    assert!(
        legacy_seen.len() > 1
            && legacy_seen[0] == "2026-07-28"
            && legacy_seen[1..].iter().all(|p| p == "2025-11-25"),
        "the session-era upstream saw {legacy_seen:?}"
    );
    let modern_seen = protocols(&modern);
    assert!(
        !modern_seen.is_empty() && modern_seen.iter().all(|p| p == "2026-07-28"),
        "the 2026-07-28 upstream saw {modern_seen:?}"
    );
    assert_no_token("the outcome", &serde_json::to_string(&out).unwrap());
}

/// An upstream `isError`, an unknown server and an unknown tool each throw
/// an `Error` whose message says what went wrong and what exists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_carry_the_tool_text_and_name_what_exists() {
    // Bound, not `_`: the upstreams run until the test ends.
    let (_legacy, _modern, engine) = both_eras();
    let out = stateless(
        &engine,
        r#"
        const caught = async (f) => {
          try { await f(); return "no error"; }
          catch (e) { return { name: e.name, message: e.message, code: e.code, isError: e.isError ?? false, instance: e instanceof Error }; }
        };
        ({
          tool: await caught(() => mcp.modern.fail({ message: "the repo is archived" })),
          legacyTool: await caught(() => mcp.callTool("legacy", "fail", { message: "quota" })),
          server: await caught(() => mcp.callTool("github", "search", {})),
          tool404: await caught(() => mcp.callTool("modern", "search_issues", { q: 1 })),
          proxyTool: [typeof mcp.modern.search_issues, typeof mcp.modern.add],
          badArgs: await caught(() => mcp.callTool("modern", "add", [1, 2])),
          proxy: typeof mcp.github,
          then: typeof mcp.modern.then,
        })
        "#,
    )
    .await;
    let value = json_result(&out);
    let tool = &value["tool"];
    assert_eq!(tool["name"], "Error", "{value}");
    assert_eq!(tool["instance"], true);
    assert_eq!(tool["code"], "MCP_TOOL_ERROR");
    assert_eq!(tool["isError"], true);
    assert!(
        tool["message"]
            .as_str()
            .unwrap()
            .contains("modern.fail returned an error")
            && tool["message"]
                .as_str()
                .unwrap()
                .contains("the repo is archived"),
        "{tool}"
    );
    assert!(
        value["legacyTool"]["message"]
            .as_str()
            .unwrap()
            .contains("quota"),
        "{value}"
    );
    let server = value["server"]["message"].as_str().unwrap();
    assert!(
        server.contains("\"github\"") && server.contains("legacy, modern"),
        "{server}"
    );
    assert_eq!(value["server"]["code"], "MCP_UNKNOWN_SERVER");
    let missing = value["tool404"]["message"].as_str().unwrap();
    assert!(
        missing.contains("\"search_issues\"") && missing.contains(&TOOLS.join(", ")),
        "{missing}"
    );
    assert_eq!(value["tool404"]["code"], "MCP_UNKNOWN_TOOL");
    assert_eq!(value["badArgs"]["name"], "TypeError", "{value}");
    assert_eq!(value["proxy"], "undefined");
    // A proxy has the tools its server lists, and no others.
    assert_eq!(value["proxyTool"], json!(["undefined", "function"]));
    assert_eq!(value["then"], "undefined");
    // Only calls that reached an upstream's tool list count: the fail calls,
    // the unknown tool; not the unknown server or the refused arguments.
    assert_eq!(out.mcp_calls, Some(McpCount { count: 3 }), "{out:?}");
}

/// An upstream that went away is `MCP_UNREACHABLE` from the first call
/// that finds it gone (the connection it had included), in words that name
/// the server and what to do, never a Rust type; both eras.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_went_away_is_unreachable_in_plain_words() {
    let (legacy, modern, engine) = both_eras();
    let out = stateless(
        &engine,
        r#"[await mcp.legacy.echo({ text: "a" }), await mcp.modern.echo({ text: "b" })]"#,
    )
    .await;
    assert_eq!(json_result(&out), json!(["a", "b"]));
    drop(legacy);
    drop(modern);
    let out = stateless(
        &engine,
        r#"const seen = [];
        for (const server of ["legacy", "modern", "legacy", "modern"]) {
          try { await mcp[server].echo({ text: "hi" }); seen.push("answered"); }
          catch (e) { seen.push({ server, code: e.code, message: e.message }); }
        }
        seen"#,
    )
    .await;
    for error in json_result(&out).as_array().unwrap() {
        assert_eq!(error["code"], "MCP_UNREACHABLE", "{error}");
        let message = error["message"].as_str().unwrap();
        let server = error["server"].as_str().unwrap();
        for part in [
            format!("upstream MCP server \"{server}\" could not be reached"),
            "the next call tries again".to_owned(),
            "MCP_V8_MCP_SERVERS".to_owned(),
        ] {
            assert!(message.contains(&part), "{part}: {message}");
        }
        for rust in ["rmcp", "Transport [", "::"] {
            assert!(!message.contains(rust), "{rust}: {message}");
        }
    }
}

/// The header reaches the upstream (it refuses requests without it) and
/// nothing the run can see: not `mcp`'s properties, not the outcome, not
/// the stored heap; results kept in the heap, and `mcp` itself, work in a
/// restored heap, in this process and through an engine worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_stay_on_the_host_and_mcp_works_in_restored_heaps() {
    let modern = Upstream::modern();
    let dir = tempfile::tempdir().unwrap();
    let store = FileHeapStore::new(dir.path().join("heaps"));
    let heaps = Some(Arc::new(store.clone()) as Arc<dyn HeapStore>);
    let engine = engine(upstream_config(&[("modern", &modern)]), heaps.clone());
    let first = run(
        &engine,
        RunRequest {
            code: r#"
            globalThis.kept = await mcp.modern.add({ a: 1, b: 1 });
            globalThis.proxy = mcp.modern;
            JSON.stringify({ mcp, keys: Object.keys(mcp), own: Object.getOwnPropertyNames(mcp), servers: mcp.servers,
                             text: String(mcp.callTool) + String(mcp.listTools) })
            "#
            .into(),
            stateful: true,
            timeout: Some(Duration::from_secs(30)),
            ..Default::default()
        },
    )
    .await;
    let shown = completed(&first).to_owned();
    assert_no_token("what code sees of mcp", &shown);
    assert!(
        !shown.contains(&modern.port.to_string()),
        "the URL: {shown}"
    );
    assert_no_token("the outcome", &serde_json::to_string(&first).unwrap());
    let heap: HeapKey = first.heap.clone().expect("a heap");
    let stored = store
        .get(&Tenant::anonymous(), &heap)
        .await
        .unwrap()
        .unwrap();
    let needle = b"s3cret";
    assert!(
        !stored.payload().windows(needle.len()).any(|w| w == needle),
        "the stored heap holds the upstream's token"
    );
    let url = modern.url();
    assert!(
        !stored
            .payload()
            .windows(url.len())
            .any(|w| w == url.as_bytes()),
        "the stored heap holds the upstream's URL"
    );
    let again = "[kept.sum, (await proxy.add({ a: kept.sum, b: 1 })).sum, (await mcp.callTool('modern', 'add', { a: 10, b: 1 })).sum]";
    let restored = run(
        &engine,
        RunRequest {
            code: again.into(),
            stateful: true,
            heap: Some(heap.clone()),
            timeout: Some(Duration::from_secs(30)),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(completed(&restored), "[2,3,11]");
    // The settings cross an engine worker's pipe; the worker connects.
    let worker_dir = tempfile::tempdir().unwrap();
    let program = worker_dir.path().join("code-mode-worker-under-test");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_mcp-v8-lambda"), &program).unwrap();
    let pooled = crate::common::engine::on_workers(
        EngineConfig {
            capabilities: CapabilitySettings {
                mcp: upstream_config(&[("modern", &modern)]),
                ..Default::default()
            },
            engine_workers: 1,
            worker_program: Some(program),
            ..EngineConfig::default()
        },
        heaps,
    );
    let through_worker = run(
        &pooled,
        RunRequest {
            code: again.into(),
            stateful: true,
            heap: Some(heap),
            timeout: Some(Duration::from_secs(30)),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(completed(&through_worker), "[2,3,11]");
    assert_eq!(through_worker.mcp_calls, Some(McpCount { count: 2 }));
    // Without the header the upstream refuses: what made the calls work
    // is the host's configuration.
    let mut bare = upstream_config(&[("modern", &modern)]);
    bare.servers.get_mut("modern").unwrap().headers.clear();
    let refused = stateless(
        &self::engine(bare, None),
        "try { await mcp.modern.add({ a: 1, b: 2 }) } catch (e) { e.code + ': ' + e.message }",
    )
    .await;
    let refused = completed(&refused);
    assert!(refused.starts_with("\"MCP_UNREACHABLE"), "{refused}");
}

/// The run's call limit, its concurrency, a call's timeout (the call is
/// cancelled at the upstream), and a cancel of the run mid-call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_are_limited_and_a_cancelled_run_cancels_its_calls() {
    let legacy = Upstream::session_era();
    let mut config = upstream_config(&[("legacy", &legacy)]);
    config.max_calls = 5;
    config.concurrency = 2;
    config.call_timeout_ms = 1000;
    let engine = Arc::new(engine(config, None));
    let limited = stateless(
        &engine,
        r#"
        await Promise.all([1, 2, 3, 4].map(() => mcp.legacy.slow({ ms: 300 })));
        let refused;
        try { await mcp.legacy.add({ a: 1, b: 1 }); await mcp.legacy.add({ a: 1, b: 1 }); }
        catch (e) { refused = [e.code, e.message]; }
        refused
        "#,
    )
    .await;
    let refused = json_result(&limited);
    assert_eq!(refused[0], "MCP_CALL_LIMIT", "{refused}");
    assert!(
        refused[1]
            .as_str()
            .unwrap()
            .contains("MCP_V8_MCP_MAX_CALLS"),
        "{refused}"
    );
    assert_eq!(limited.mcp_calls, Some(McpCount { count: 5 }));
    // At most two `slow` calls were in the upstream at once.
    let mut in_flight = 0i32;
    let mut most = 0;
    for event in legacy.events.lock().unwrap().iter() {
        match event["event"].as_str() {
            Some("start") => in_flight += 1,
            Some("end") | Some("cancelled") => in_flight -= 1,
            _ => {}
        }
        most = most.max(in_flight);
    }
    assert_eq!(most, 2, "{:?}", legacy.events.lock().unwrap());
    // A call past its timeout throws, and the upstream's handler is cancelled.
    let timed = stateless(
        &engine,
        "try { await mcp.legacy.slow({ ms: 20000 }) } catch (e) { e.code }",
    )
    .await;
    assert_eq!(completed(&timed), "\"MCP_TIMEOUT\"");
    legacy.wait_for("cancelled", 1);
    // A cancel of the run ends it at once, and cancels its call upstream.
    let mut config = upstream_config(&[("legacy", &legacy)]);
    config.call_timeout_ms = 60_000;
    let engine = Arc::new(self::engine(config, None));
    let control = Arc::new(RunControl::default());
    let started_slow = legacy.events("start").len();
    let running = {
        let engine = engine.clone();
        let control = control.clone();
        tokio::spawn(async move {
            run(
                &engine,
                RunRequest {
                    code: "await mcp.legacy.slow({ ms: 30000 })".into(),
                    control: Some(control),
                    timeout: Some(Duration::from_secs(60)),
                    ..Default::default()
                },
            )
            .await
        })
    };
    legacy.wait_for("start", started_slow + 1);
    let cancelled_at = Instant::now();
    control.cancel();
    let out = running.await.unwrap();
    assert_eq!(out.status, RunStatus::Cancelled, "{out:?}");
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(10),
        "the run waited for its call"
    );
    legacy.wait_for("cancelled", 2);
    // A run that reaches its own timeout ends, and so does its call.
    let timed_out = run(
        &engine,
        RunRequest {
            code: "await mcp.legacy.slow({ ms: 30000 })".into(),
            timeout: Some(Duration::from_secs(1)),
            ..Default::default()
        },
    )
    .await;
    assert_ne!(timed_out.status, RunStatus::Completed, "{timed_out:?}");
    legacy.wait_for("cancelled", 3);
}

/// A name that resolves to loopback is refused (the egress policy's rule:
/// private addresses only by IP literal), and `fetch` cannot reach an
/// upstream's URL: the listing opens it for `mcp`'s calls only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_urls_follow_the_egress_rules_and_open_nothing_to_fetch() {
    let modern = Upstream::modern();
    let mut config = upstream_config(&[("modern", &modern)]);
    let mut named = config.servers["modern"].clone();
    named.url = format!("http://localhost:{}/mcp", modern.port);
    config.servers.insert("named".into(), named);
    let engine = crate::common::engine::on_workers(
        EngineConfig {
            capabilities: CapabilitySettings {
                mcp: config,
                ..Default::default()
            },
            fetch: mcp_v8_lambda::egress::FetchConfig {
                allow: vec!["https://api.example.com".into()],
                ..mcp_v8_lambda::egress::FetchConfig::off()
            },
            ..EngineConfig::default()
        },
        None,
    );
    let out = stateless(
        &engine,
        &format!(
            r#"
            const caught = async (f) => {{ try {{ await f(); return "no error"; }} catch (e) {{ return e.code + ": " + e.message; }} }};
            [await caught(() => mcp.named.add({{ a: 1, b: 1 }})),
             await caught(() => fetch({url:?})),
             (await mcp.modern.add({{ a: 1, b: 1 }})).sum]
            "#,
            url = modern.url()
        ),
    )
    .await;
    let value = json_result(&out);
    let named = value[0].as_str().unwrap();
    assert!(
        named.starts_with("MCP_UNREACHABLE")
            && named.contains("refused by the egress policy")
            && named.contains("IP literal"),
        "{named}"
    );
    assert!(!named.contains(&modern.url()), "the URL is shown: {named}");
    let fetched = value[1].as_str().unwrap();
    assert!(
        fetched.contains("egress policy") && fetched.contains("not in the allow list"),
        "{fetched}"
    );
    assert_eq!(value[2], 2);
}

#[test]
fn bad_upstream_settings_stop_the_server_without_echoing_credentials() {
    let lookup = |vars: Vec<(&'static str, String)>| {
        mcp_v8_lambda::config::Config::from_lookup(move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone())
        })
    };
    for (value, reason) in [
        (
            json!({"gh": {"url": "http://169.254.169.254/mcp", "headers": {"authorization": TOKEN}}}),
            "link-local",
        ),
        (
            json!({"gh": {"url": "http://127.0.0.1:9001/mcp", "headers": {"authorization": TOKEN}}}),
            "Lambda Runtime API",
        ),
        (
            json!({"gh": {"url": "https://a.example/mcp", "headers": {"authorization": format!("{TOKEN}\n")}}}),
            "not a header value",
        ),
        (json!({"gh": "https://a.example/mcp"}), "not a JSON object"),
    ] {
        let error = lookup(vec![
            ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001".into()),
            ("MCP_V8_MCP_SERVERS", value.to_string()),
        ])
        .expect_err("refused")
        .to_string();
        assert!(
            error.contains("MCP_V8_MCP_SERVERS") && error.contains(reason),
            "{value}: {error}"
        );
        // fetch's allow list opens nothing for an upstream.
        assert!(!error.contains("MCP_V8_FETCH_ALLOW"), "{value}: {error}");
        assert_no_token("the configuration error", &error);
    }
    let error = lookup(vec![("MCP_V8_MCP_MAX_CALLS", "0".into())])
        .expect_err("refused")
        .to_string();
    assert!(error.contains("MCP_V8_MCP_MAX_CALLS"), "{error}");
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        file.path(),
        json!({"gh": {"url": "https://api.example.com/mcp"}}).to_string(),
    )
    .unwrap();
    let config = lookup(vec![(
        "MCP_V8_MCP_SERVERS",
        file.path().to_str().unwrap().to_owned(),
    )])
    .unwrap();
    assert_eq!(
        config.mcp.servers.keys().collect::<Vec<_>>(),
        ["gh"],
        "a file path is read"
    );
    assert_eq!(config.mcp.max_calls, UpstreamConfig::DEFAULT_MAX_CALLS);
}

/// `serve`: run_js's description names each server and its tools, a
/// resource per server declares them in TypeScript, a call's outcome counts
/// it (in the serving process and in an engine worker), and the log has a
/// line per call without the token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_describes_declares_counts_and_logs_upstream_calls() {
    let legacy = Upstream::session_era();
    let modern = Upstream::modern();
    let data = tempfile::tempdir().unwrap();
    let port = crate::common::net::free_port();
    let log_path = data.path().join("serve.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-v8-lambda"))
        .args(["serve", "--port", &port.to_string(), "--data-dir"])
        .arg(data.path().join("data"))
        .env(
            "MCP_V8_MCP_SERVERS",
            servers_json(&[("legacy", &legacy), ("modern", &modern)]),
        )
        // Debug: no crate's events may carry the token or the URL either.
        .env("RUST_LOG", "debug")
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    crate::common::net::wait_listening(port, "serve", Duration::from_secs(20));
    let post = |method: &'static str, name: Option<&'static str>, params: Value| {
        crate::common::post_2026(port, method, name, params)
    };
    let tools = post("tools/list", None, json!({})).await;
    let description = tools["result"]["tools"][0]["description"]
        .as_str()
        .unwrap_or_else(|| panic!("{tools}"))
        .to_owned();
    for expected in [
        "Code mode",
        "[legacy]",
        "[modern]",
        " add(a, b): Adds two integers;",
        " slow(ms): Answers after ms milliseconds;",
        "mcp-v8://mcp-servers/<server>/tools.d.ts",
        "At most 50 calls per run",
    ] {
        assert!(
            description.contains(expected),
            "{expected:?} missing from: {description}"
        );
    }
    assert_eq!(
        tools["result"]["tools"][0]["annotations"]["openWorldHint"],
        true
    );
    let resources = post("resources/list", None, json!({})).await;
    let uris: Vec<&str> = resources["result"]["resources"]
        .as_array()
        .unwrap_or_else(|| panic!("{resources}"))
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert!(
        uris.contains(&"mcp-v8://mcp-servers/legacy/tools.d.ts")
            && uris.contains(&"mcp-v8://mcp-servers/modern/tools.d.ts"),
        "{resources}"
    );
    let read = post(
        "resources/read",
        None,
        json!({"uri": "mcp-v8://mcp-servers/modern/tools.d.ts"}),
    )
    .await;
    let text = read["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{read}"));
    for expected in [
        "interface McpServer_modern {",
        "add(args: {",
        "a: number;",
        "sum: number;",
        "echo(args: {",
        "readonly modern: McpServer_modern;",
    ] {
        assert!(
            text.contains(expected),
            "{expected:?} missing from:\n{text}"
        );
    }
    let unknown = post(
        "resources/read",
        None,
        json!({"uri": "mcp-v8://mcp-servers/nope/tools.d.ts"}),
    )
    .await;
    assert_eq!(
        unknown["error"]["message"], "Resource not found",
        "{unknown}"
    );
    let code = "(await mcp.modern.add({ a: 20, b: 22 })).sum";
    let stateless = post(
        "tools/call",
        Some("run_js"),
        json!({"name": "run_js", "arguments": {"code": code}}),
    )
    .await;
    let outcome = &stateless["result"]["structuredContent"];
    assert_eq!(outcome["result"], "42", "{stateless}");
    assert_eq!(outcome["mcp_calls"]["count"], 1, "{stateless}");

    let stateful = post(
        "tools/call",
        Some("run_js"),
        json!({"name": "run_js", "arguments": {"code": "globalThis.got = await mcp.legacy.echo({ text: 'kept' }); got", "heap": ""}}),
    )
    .await;
    let outcome = &stateful["result"]["structuredContent"];
    assert_eq!(outcome["result"], "\"kept\"", "{stateful}");
    assert_eq!(outcome["mcp_calls"]["count"], 1, "{stateful}");
    assert!(outcome["heap"].is_string(), "{stateful}");
    // A run that times out while a call is pending takes the call with
    // it, and the audit says so.
    let abandoned = post(
        "tools/call",
        Some("run_js"),
        json!({"name": "run_js", "arguments": {"code": "await mcp.modern.slow({ ms: 30000 })", "execution_timeout_secs": 1}}),
    )
    .await;
    assert_eq!(
        abandoned["result"]["structuredContent"]["status"], "timed_out",
        "{abandoned}"
    );
    modern.wait_for("start", 1);
    // The session-era upstream goes away: its session's event stream
    // breaks, and the next call fails; neither may log its URL.
    let urls = [legacy.url(), modern.url()];
    // The next call fails whether or not the server has seen the stream
    // break yet (refused, or failed on the broken session): no wait.
    drop(legacy);
    let gone = post(
        "tools/call",
        Some("run_js"),
        json!({"name": "run_js", "arguments": {"code": "try { await mcp.legacy.echo({ text: 'x' }) } catch (e) { e.code }"}}),
    )
    .await;
    let code = gone["result"]["structuredContent"]["result"].clone();
    assert!(
        code == "\"MCP_FAILED\"" || code == "\"MCP_UNREACHABLE\"",
        "{gone}"
    );
    let _ = child.kill();
    let _ = child.wait();
    let logged = std::fs::read_to_string(&log_path).unwrap();
    let calls: Vec<&str> = logged
        .lines()
        .filter(|l| l.contains("upstream tool call"))
        .collect();
    assert!(
        calls
            .iter()
            .any(|l| l.contains("modern") && l.contains("add") && l.contains("ok"))
            && calls
                .iter()
                .any(|l| l.contains("legacy") && l.contains("echo") && l.contains("ok"))
            && calls
                .iter()
                .any(|l| l.contains("slow") && l.contains("cancelled")),
        "no line per call in:\n{calls:#?}"
    );
    assert_no_token("the log", &logged);
    for url in urls {
        let lines: Vec<&str> = logged.lines().filter(|l| l.contains(&url)).collect();
        assert!(lines.is_empty(), "the log holds {url}:\n{lines:#?}");
    }
}

/// The Lambda entry: a function URL event's run calls an upstream, and the
/// description lists it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_mode_works_under_the_lambda_entry() {
    let modern = Upstream::modern();
    let dir = tempfile::tempdir().unwrap();
    let servers = servers_json(&[("modern", &modern)]);
    let config = mcp_v8_lambda::config::Config::from_lookup(|name| {
        (name == "MCP_V8_MCP_SERVERS").then(|| servers.clone())
    })
    .unwrap();
    let app = crate::common::app_on_workers(&config, dir.path(), None);
    let (_, _, tools) = crate::lambda::invoke(
        &app,
        &crate::lambda::event_2026("tools/list", None, json!({})),
    )
    .await;
    let description = tools["result"]["tools"][0]["description"]
        .as_str()
        .unwrap_or_else(|| panic!("{tools}"));
    assert!(description.contains("[modern] add(a, b)"), "{description}");
    let outcome = crate::lambda::run_js_2026(
        &app,
        "const r = []; for (let i = 0; i < 3; i++) r.push((await mcp.modern.add({ a: i, b: i })).sum); r",
        None,
    )
    .await;
    assert_eq!(outcome["result"], "[0,2,4]", "{outcome}");
    assert_eq!(outcome["mcp_calls"]["count"], 3, "{outcome}");
    assert_no_token("the outcome", &outcome.to_string());
}

/// An upstream answer past the size code mode reads is an error naming the
/// bound and its variable, with its own code, never a Rust type; both eras.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_upstream_answer_names_the_limit() {
    let legacy = Upstream::session_era();
    let modern = Upstream::modern();
    let mut mcp = upstream_config(&[("legacy", &legacy), ("modern", &modern)]);
    mcp.max_response_mb = 1;
    let engine = engine(mcp, None);
    for server in ["legacy", "modern"] {
        let code = format!(
            "mcp.{server}.echo({{ text: 'x'.repeat(2e6) }}).then(() => 'answered', (e) => ({{ code: e.code, message: e.message }}))"
        );
        let value = json_result(&stateless(&engine, &code).await);
        assert_eq!(value["code"], "MCP_TOO_LARGE", "{server}: {value}");
        let message = value["message"].as_str().unwrap();
        assert!(
            message.contains("more than 1 MiB") && message.contains("MCP_V8_MCP_MAX_RESPONSE_MB"),
            "{server}: {message}"
        );
        assert!(!message.contains("rmcp::"), "{server}: {message}");
        // A smaller answer from the same connection still comes back.
        let small = stateless(&engine, &format!("mcp.{server}.echo({{ text: 'ok' }})")).await;
        assert_eq!(completed(&small), "\"ok\"", "{server}");
    }
}
