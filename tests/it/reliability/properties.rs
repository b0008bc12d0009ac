//! Property tests over the decoders, run in CI: whatever bytes arrive, the
//! endpoint answers with a JSON-RPC error or a result, never a panic or a
//! 500, on both protocol eras; snapshot files that are not exactly what was
//! written never verify; tool arguments of any shape are a tool result.
//! (The coverage-guided fuzz targets over the same decoders: tests/fuzz/.)

use crate::common;

use axum::body::Body;
use axum::http::StatusCode;
use common::{Server, post, server};
use mcp_v8_lambda::heap::{HeapKey, Snapshot};
use mcp_v8_lambda::protocol::jsonrpc::nests_deeper_than;
use proptest::prelude::*;
use serde_json::{Value, json};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The runtime of the engines shared by every case: an engine's workers
/// talk over pipes registered with the runtime that started them, which
/// must outlive the cases.
fn engine_runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    })
}

/// Any JSON value, nested a few levels.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[ -~]{0,12}".prop_map(Value::String),
        prop::sample::select(vec![
            "jsonrpc",
            "2.0",
            "id",
            "method",
            "params",
            "tools/call",
            "tools/list",
            "initialize",
            "_meta",
            "run_js",
            "name",
            "arguments",
        ])
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "jsonrpc",
                    "id",
                    "method",
                    "params",
                    "name",
                    "arguments",
                    "_meta",
                    "io.modelcontextprotocol/protocolVersion",
                    "io.modelcontextprotocol/clientCapabilities",
                    "code",
                    "tags",
                    "x",
                ])
                .prop_map(str::to_owned),
                inner,
                0..6,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A body: raw bytes, or JSON shaped like (but not always) a request.
fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..256),
        json_value().prop_map(|v| v.to_string().into_bytes()),
        (json_value(), json_value()).prop_map(|(method, params)| {
            json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
                .to_string()
                .into_bytes()
        }),
    ]
}

async fn post_bytes(s: &Server, body: Vec<u8>, headers: &[(&str, &str)]) -> (StatusCode, Value) {
    let mut builder = post();
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let reply = s.send(builder.body(Body::from(body)).unwrap()).await;
    (reply.status, reply.body)
}

fn assert_answered(status: StatusCode, body: &Value) {
    assert!(
        status != StatusCode::INTERNAL_SERVER_ERROR,
        "a decoding problem is never a 500: {body}"
    );
    if status != StatusCode::ACCEPTED {
        assert_eq!(body["jsonrpc"], "2.0", "{status}: {body}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn any_body_gets_a_json_rpc_answer_in_both_eras(body in body()) {
        let rt = runtime();
        rt.block_on(async {
            let s = server();
            let sid = s.initialize().await;
            let (status, reply) =
                post_bytes(&s, body.clone(), &[("mcp-session-id", &sid)]).await;
            assert_answered(status, &reply);
            let (status, reply) = post_bytes(
                &s,
                body,
                &[("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call")],
            )
            .await;
            assert_answered(status, &reply);
            // The session is unharmed by whatever came before.
            let (status, _) = post_bytes(
                &s,
                json!({"jsonrpc":"2.0","id":2,"method":"ping"}).to_string().into_bytes(),
                &[("mcp-session-id", &sid)],
            )
            .await;
            assert_eq!(status, StatusCode::OK);
        });
    }

    #[test]
    fn tool_arguments_of_any_shape_are_a_tool_result(
        tool in prop::sample::select(vec![
            "get_heap_tags", "set_heap_tags", "delete_heap_tags", "query_heaps_by_tags",
            "list_session_snapshots", "list_sessions", "get_execution",
        ]),
        arguments in json_value(),
    ) {
        let rt = runtime();
        rt.block_on(async {
            let s = server();
            let sid = s.initialize().await;
            let reply = s
                .rpc(Some(&sid), json!({"jsonrpc":"2.0","id":3,"method":"tools/call",
                    "params":{"name": tool, "arguments": arguments}}))
                .await;
            assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
            let result = &reply.body["result"];
            assert!(result["isError"].is_boolean(), "{tool}: {}", reply.body);
        });
    }

    #[test]
    fn only_the_exact_framed_bytes_verify(
        payload in prop::collection::vec(any::<u8>(), 100 * 1024..100 * 1024 + 64),
        flip in any::<prop::sample::Index>(),
        cut in any::<prop::sample::Index>(),
        junk in prop::collection::vec(any::<u8>(), 0..128),
    ) {
        let snapshot = Snapshot::from_payload(&payload).unwrap();
        let key = snapshot.key().clone();
        let framed = snapshot.framed().clone();
        prop_assert!(Snapshot::verify(&key, framed.clone()).is_ok());

        let mut flipped = framed.to_vec();
        let at = flip.index(flipped.len());
        flipped[at] ^= 0x01;
        prop_assert!(Snapshot::verify(&key, flipped.into()).is_err());

        let truncated = framed.slice(..cut.index(framed.len()));
        prop_assert!(Snapshot::verify(&key, truncated).is_err());

        let other = HeapKey::of_payload(&junk);
        prop_assert!(Snapshot::verify(&other, framed).is_err());
        prop_assert!(Snapshot::verify(&key, junk.into()).is_err());
    }

    #[test]
    fn nesting_depth_matches_the_json_structure(value in json_value()) {
        fn depth(v: &Value) -> usize {
            match v {
                Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
                Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
                _ => 0,
            }
        }
        let text = value.to_string();
        let d = depth(&value);
        prop_assert!(!nests_deeper_than(text.as_bytes(), d));
        if d > 0 {
            prop_assert!(nests_deeper_than(text.as_bytes(), d - 1));
        }
    }
}

/// How many graphs `kept_object_graphs` tries: a few in CI, many when
/// `scripts/fuzz.sh` sets `MCP_V8_FUZZ_CASES`.
fn kept_graph_cases() -> u32 {
    std::env::var("MCP_V8_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(24)
}

/// A stateful engine, its runs in engine workers as the binary's are: a
/// graph V8 could not snapshot ends only a worker.
fn kept_graph_engine() -> &'static (mcp_v8_lambda::engine::Engine, tempfile::TempDir) {
    static ENGINE: std::sync::OnceLock<(mcp_v8_lambda::engine::Engine, tempfile::TempDir)> =
        std::sync::OnceLock::new();
    ENGINE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let store: std::sync::Arc<dyn mcp_v8_lambda::heap::HeapStore> = std::sync::Arc::new(
            mcp_v8_lambda::heap::FileHeapStore::new(dir.path().join("heaps")),
        );
        let engine = crate::common::engine::on_workers(
            mcp_v8_lambda::engine::EngineConfig::default(),
            Some(store),
        );
        (engine, dir)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(kept_graph_cases()))]

    /// The twin of the kept_objects fuzz target (tests/fuzz): any graph of
    /// kept objects is answered with an outcome, and a stored heap restores.
    #[test]
    fn kept_object_graphs_snapshot_or_fail_cleanly(seed in prop::collection::vec(any::<u8>(), 0..64)) {
        use mcp_v8_lambda::engine::{RunRequest, RunStatus};
        let builder = include_str!("../../fuzz/kept_objects.js");
        let engine = &kept_graph_engine().0;
        let code = format!("(function (seed) {{ return {builder}; }})({seed:?})");
        engine_runtime().block_on(async {
            let outcome = engine
                .run(RunRequest { code, stateful: true, ..Default::default() })
                .await
                .unwrap()
                .outcome;
            match &outcome.heap {
                Some(heap) => {
                    prop_assert_eq!(outcome.status, RunStatus::Completed);
                    let restored = engine
                        .run(RunRequest {
                            code: "Object.keys(globalThis).length".into(),
                            heap: Some(heap.clone()),
                            stateful: true,
                            ..Default::default()
                        })
                        .await
                        .unwrap()
                        .outcome;
                    prop_assert_eq!(restored.status, RunStatus::Completed, "{:?}", restored);
                }
                None => {
                    let name = outcome.error.as_ref().map(|e| e.name.as_str());
                    prop_assert!(
                        matches!(name, Some("SnapshotError" | "RangeError")),
                        "{:?}",
                        outcome
                    );
                }
            }
            Ok(())
        })?;
    }
}

/// A completion value built from hostile pieces: strings past every cap and
/// past the heap (ropes), lone surrogates, getters and `toJSON`s that throw
/// or never return, cycles, proxies, huge sparse arrays, promises of them.
fn completion_value() -> impl Strategy<Value = String> {
    let leaf = prop::sample::select(vec![
        "'a'.repeat(10)",
        "'a'.repeat(4000)",
        "'é'.repeat(5000)",
        "'a'.repeat(3e8)",
        "'\\ud800'.repeat(3) + '\\u0001\"\\\\\\n'",
        "123n",
        "Symbol('s')",
        "-0",
        "NaN",
        "undefined",
        "null",
        "new Array(1e7)",
        "new Uint8Array(70000)",
        "new Date(NaN)",
        "new Error('e')",
        "(() => { const o = {}; o.self = o; return o })()",
        "new Proxy({}, {})",
        "({ get g() { throw new Error('g') } })",
        "({ get g() { for (;;) {} } })",
        "({ toJSON() { return 'x'.repeat(3e8) } })",
        "({ toJSON() { throw 1 } })",
        "({ toJSON() { for (;;) {} } })",
        "Object.create(null)",
        "(function named() {})",
        "class K {}",
    ])
    .prop_map(str::to_owned);
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("[{a}, {b}]")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({{ a: {a}, 'b c': {b} }})")),
            inner.clone().prop_map(|a| format!("Promise.resolve({a})")),
            inner.clone().prop_map(|a| format!("new Map([[{a}, 1]])")),
            inner.prop_map(|a| format!("new Set([{a}])")),
        ]
    })
}

/// An engine with one worker and small caps, so that a value that ends
/// V8's process ends only the worker, and cuts happen often.
fn rendering_engine() -> &'static (mcp_v8_lambda::engine::Engine, tempfile::TempDir) {
    static ENGINE: std::sync::OnceLock<(mcp_v8_lambda::engine::Engine, tempfile::TempDir)> =
        std::sync::OnceLock::new();
    ENGINE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let engine = crate::common::engine::on_workers(
            mcp_v8_lambda::engine::EngineConfig {
                engine_workers: 1,
                worker_program: Some(common::engine::worker_program(dir.path(), "render-worker")),
                max_result_bytes: 4096,
                ..mcp_v8_lambda::engine::EngineConfig::default()
            },
            None,
        );
        (engine, dir)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(kept_graph_cases()))]

    /// Whatever the completion value, the run is answered within its
    /// deadline's reach with a status, its result and display within the
    /// result cap (marker included), and the next run is served.
    #[test]
    fn completion_values_are_rendered_within_the_caps_and_the_deadline(value in completion_value()) {
        use mcp_v8_lambda::engine::{RunRequest, RunStatus};
        let engine = &rendering_engine().0;
        engine_runtime().block_on(async {
            let report = engine
                .run(RunRequest {
                    code: value.clone(),
                    timeout: Some(std::time::Duration::from_millis(500)),
                    ..Default::default()
                })
                .await
                .unwrap();
            let outcome = &report.outcome;
            prop_assert!(
                matches!(
                    outcome.status,
                    RunStatus::Completed | RunStatus::Failed | RunStatus::TimedOut | RunStatus::OutOfMemory
                ),
                "{value}: {outcome:?}"
            );
            for text in [outcome.result.as_deref(), report.repl.as_deref()].into_iter().flatten() {
                prop_assert!(text.len() <= 4096 + 128, "{value}: {} bytes", text.len());
            }
            if outcome.status == RunStatus::Completed && value == "'a'.repeat(10)" {
                prop_assert_eq!(outcome.result.as_deref(), Some("\"aaaaaaaaaa\""));
            }
            let next = engine
                .run(RunRequest { code: "6 * 7".into(), ..Default::default() })
                .await
                .unwrap()
                .outcome;
            prop_assert_eq!(next.result.as_deref(), Some("42"), "after {}: {:?}", value, next);
            Ok(())
        })?;
    }
}
