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

mod hosts;
mod settings;

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
