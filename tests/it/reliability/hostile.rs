//! A hostile caller against the service (docs/reliability.md, "No run
//! ends a process it shares"): code that makes V8 end its process, values
//! that outlive their deadline, callers that hold every runner, memory the
//! host holds for a run, and results past every cap. In each mode the
//! binary has (serve stateless and stateful, the Lambda entry) the caller
//! gets a tool result that says what happened, the process lives on and
//! serves the next run, and its memory stays within its budget.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_v8_lambda::engine::{EngineConfig, EngineError, RunRequest, RunStatus};
use mcp_v8_lambda::heap::FileHeapStore;
use mcp_v8_lambda::tenant::Tenant;
use serde_json::{Value, json};

use crate::common;
use crate::common::process::{Serve, children, proc_kib, wait_spinning};

/// Code whose one value passes what V8 can hold, which ends V8's process
/// with a fatal error no callback can turn into an exception; the status
/// each ends with and a word its message must have.
const ENDS_V8: &[(&str, &str, &str)] = &[
    (
        "JSON.stringify('ab'.repeat(2 ** 27)).length",
        "out_of_memory",
        "heap_memory_max_mb",
    ),
    (
        "'x'.repeat(2 ** 29 - 24).toUpperCase().length",
        "out_of_memory",
        "heap_memory_max_mb",
    ),
    (
        "'x'.repeat(2 ** 29 - 24).split('').length",
        "failed",
        "2**29 - 24",
    ),
    (
        "new Array(2 ** 25).fill(1.5).length",
        "out_of_memory",
        "heap_memory_max_mb",
    ),
];

/// What the serving process may hold, whatever its runs do: runs execute
/// in engine workers, and a result crosses to the server already capped.
const SERVER_BUDGET_MIB: u64 = 256;

fn status(outcome: &Value) -> &str {
    outcome["status"]
        .as_str()
        .unwrap_or_else(|| panic!("{outcome}"))
}

fn message(outcome: &Value) -> &str {
    outcome["error"]["message"].as_str().unwrap_or("")
}

async fn answers_the_next_run(server: &Serve, arguments: Value) {
    let next = server.run_js(arguments).await;
    assert_eq!(next["result"], "42", "the next run is served: {next}");
}

/// Under `serve`, stateless and stateful: each run that ends V8's process
/// ends its worker only, says why and what to do, and the next run is
/// served; a 300 MB result comes back capped and the server never holds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_that_ends_v8s_process_ends_only_its_worker_under_serve() {
    for args in [&["--stateless"][..], &[][..]] {
        let mut server = Serve::start(args, &[]);
        let arguments = |code: &str| {
            if args.is_empty() {
                json!({"code": code, "session": "hostile"})
            } else {
                json!({"code": code})
            }
        };
        answers_the_next_run(&server, arguments("6 * 7")).await;
        for (code, ended, word) in ENDS_V8 {
            let outcome = server.run_js(arguments(code)).await;
            assert_eq!(status(&outcome), *ended, "{args:?} {code}: {outcome}");
            assert!(
                message(&outcome).contains(word)
                    && message(&outcome).contains("nothing was stored"),
                "{args:?} {code}: {outcome}"
            );
            assert!(outcome["heap"].is_null(), "{code}: nothing stored");
            assert!(server.alive(), "{args:?} {code}: the server died");
            answers_the_next_run(&server, arguments("6 * 7")).await;
        }
        for code in ["'x'.repeat(3e8)", "'y'.repeat(2e8) + 'z'"] {
            let outcome = server.run_js(arguments(code)).await;
            assert_eq!(status(&outcome), "completed", "{code}: {outcome}");
            // Over the answer budget, the result is its stand-in, naming
            // the whole size though the engine kept only the record's bound.
            let stand_in = &outcome["result"];
            assert_eq!(stand_in["type"], "string", "{code}: {stand_in}");
            let whole = stand_in["bytes"].as_u64().unwrap();
            assert!(whole >= 200_000_000, "{code}: {whole} bytes");
        }
        let peak = proc_kib(server.pid(), "VmHWM:") / 1024;
        assert!(
            peak < SERVER_BUDGET_MIB,
            "{args:?}: the server's RSS peaked at {peak} MiB"
        );
    }
}

/// The Lambda entry, on moto: the same code ends only the function's engine
/// worker, the invocation is answered with what happened, and the function
/// serves the next invocation (standard Lambda runs one invocation at a
/// time, in one worker).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_that_ends_v8s_process_ends_only_its_worker_under_the_lambda_entry() {
    let cache = tempfile::tempdir().unwrap();
    let mut env = common::moto::serve_env(
        &common::moto::unique("hostile"),
        &format!("{}-", common::moto::unique("hostile")),
        cache.path(),
    );
    common::moto::setup(&env);
    let mut api = common::runtime_api::RuntimeApi::start().await;
    env.extend(api.function_env());
    let mut function = crate::lambda::start_function(env);
    let limit = Duration::from_secs(120);
    let mut run = async |code: &str| {
        api.give(crate::lambda::run_js_event(
            json!({"code": code, "session": "hostile"}),
        ));
        let body = crate::lambda::rpc_body(&api.answer(limit).await);
        body["result"]["structuredContent"].clone()
    };
    assert_eq!(run("6 * 7").await["result"], "42");
    for (code, ended, word) in ENDS_V8 {
        let outcome = run(code).await;
        assert_eq!(status(&outcome), *ended, "{code}: {outcome}");
        assert!(message(&outcome).contains(word), "{code}: {outcome}");
        assert!(function.alive(), "{code}: the function's process died");
        assert_eq!(run("6 * 7").await["result"], "42", "after {code}");
    }
}

/// Getters, `toJSON` and indexed accessors that never return, reached only
/// when the completion value is rendered, and a built-in that finishes far
/// past the deadline: each run ends `timed_out` at its deadline, never
/// `completed`, stateless and stateful.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deadline_holds_while_the_result_is_rendered() {
    let dir = tempfile::tempdir().unwrap();
    let store = || Some(Arc::new(FileHeapStore::new(dir.path().join("heaps"))) as _);
    let one_worker = || EngineConfig {
        engine_workers: 1,
        ..EngineConfig::default()
    };
    let engines = [
        (
            "stateless",
            common::engine::on_workers(one_worker(), None),
            false,
        ),
        (
            "stateful",
            common::engine::on_workers(one_worker(), store()),
            true,
        ),
    ];
    let never_returns = [
        "({ get a() { while (true) {} } })",
        "const a = [1]; Object.defineProperty(a, 0, { get() { while (true) {} } }); a",
        "({ toJSON() { for (;;) {} } })",
        "({ get a() { for (;;) {} }, get b() { for (;;) {} }, c: { get d() { for (;;) {} } } })",
        "new Map([[{ get k() { for (;;) {} } }, 1]])",
    ];
    for (mode, engine, stateful) in &engines {
        for code in never_returns {
            let outcome = common::engine::run(
                engine,
                RunRequest {
                    code: code.into(),
                    stateful: *stateful,
                    timeout: Some(Duration::from_millis(500)),
                    ..Default::default()
                },
            )
            .await;
            assert_eq!(
                outcome.status,
                RunStatus::TimedOut,
                "{mode}: {code}: {outcome:#?}"
            );
            assert!(outcome.heap.is_none(), "{mode}: {code}");
        }
        // 80 million characters take a built-in far longer than 1 ms to
        // decode; the value it returns after the deadline is not an answer.
        let outcome = common::engine::run(
            engine,
            RunRequest {
                code: "atob('QUFB'.repeat(2e7)).length".into(),
                stateful: *stateful,
                timeout: Some(Duration::from_millis(1)),
                heap_limit_mb: Some(512),
                ..Default::default()
            },
        )
        .await;
        assert_eq!(outcome.status, RunStatus::TimedOut, "{mode}: {outcome:#?}");
        let next = common::engine::run(
            engine,
            RunRequest {
                code: "6 * 7".into(),
                stateful: *stateful,
                ..Default::default()
            },
        )
        .await;
        assert_eq!(next.result.as_deref(), Some("42"), "{mode}: {next:#?}");
    }
}

/// A native over input far larger than the run's budget is refused before
/// it copies anything, with a `RangeError` naming the limit.
#[tokio::test]
async fn natives_refuse_input_past_the_budget_naming_the_limit() {
    let engine = common::engine::on_workers(EngineConfig::default(), None);
    for code in [
        "atob('QUFB'.repeat(6e7)).length",
        "btoa('a'.repeat(1e8)).length",
        "new URL('https://example.com/?q=' + 'x'.repeat(1e8)).href.length",
    ] {
        let outcome = common::engine::stateless(&engine, code).await;
        let error = outcome
            .error
            .as_ref()
            .unwrap_or_else(|| panic!("{code}: {outcome:#?}"));
        assert_eq!(error.name, "RangeError", "{code}: {outcome:#?}");
        assert!(
            error
                .message
                .contains("limited to 64 MiB (heap_memory_max_mb)"),
            "{code}: {outcome:#?}"
        );
    }
}

/// What a run makes the host hold outside V8's heap counts against its
/// budget: two million timers, or URLSearchParams of large values, end in
/// a `RangeError` naming the limit, and the worker that ran them stays
/// within its budgets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timers_and_host_copies_count_against_the_runs_budget() {
    let server = Serve::start(&["--stateless", "--engine-workers", "1"], &[]);
    let cases = [
        "const f = () => {}; for (let i = 0; i < 2e6; i++) setTimeout(f, 1e6); 'scheduled'",
        "const p = new URLSearchParams(); const v = 'v'.repeat(1e6); \
         for (let i = 0; i < 200; i++) p.append('k' + i, v); p.toString().length",
    ];
    for code in cases {
        let outcome = server
            .run_js(json!({"code": code, "heap_memory_max_mb": 16}))
            .await;
        assert_ne!(status(&outcome), "completed", "{code}: {outcome}");
        let text = outcome.to_string();
        assert!(
            text.contains("limited to 16 MiB") || status(&outcome) == "out_of_memory",
            "{code}: {outcome}"
        );
        answers_the_next_run(&server, json!({"code": "6 * 7"})).await;
        let workers = children(server.pid());
        assert_eq!(workers.len(), 1, "one worker: {workers:?}");
        let peak = proc_kib(workers[0], "VmHWM:") / 1024;
        // V8 itself, the heap at 16 MiB (the near-limit callback lets it
        // pass by as much before the run ends), the buffers' 16 MiB.
        assert!(
            peak < 16 * 3 + 16 + 160,
            "{code}: the worker peaked at {peak} MiB"
        );
    }
}

/// With more runners than cores, two callers whose runs loop to their
/// timeout do not hold a third caller's short run: it is answered while
/// they still run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_run_is_not_held_behind_two_long_ones() {
    for args in [&["--stateless"][..], &[][..]] {
        let server = Serve::start(args, &[]);
        let stateful = args.is_empty();
        let call = |code: &str, session: &str, timeout: u64| {
            let mut arguments = json!({"code": code, "execution_timeout_secs": timeout});
            if stateful {
                arguments["session"] = json!(session);
            }
            server.run_js(arguments)
        };
        // Workers start on demand: three of them first.
        let warm = (0..3).map(|i| call("1", ["w0", "w1", "w2"][i], 5));
        futures_util::future::join_all(warm).await;
        let looping = |session: &'static str| call("for (;;) {}", session, 6);
        let started = Instant::now();
        let (first, second, quick) = tokio::join!(
            async { (looping("a").await, Instant::now()) },
            async { (looping("b").await, Instant::now()) },
            async {
                wait_spinning(server.pid(), 2).await;
                (call("6 * 7", "c", 5).await, Instant::now())
            },
        );
        assert_eq!(quick.0["result"], "42", "{args:?}: {}", quick.0);
        for looped in [&first, &second] {
            assert_eq!(status(&looped.0), "timed_out", "{args:?}: {}", looped.0);
            assert!(
                quick.1 < looped.1,
                "{args:?}: the short run waited for the loops"
            );
        }
        assert!(started.elapsed() < Duration::from_secs(60));
    }
}

/// Past its runners, a run waits at most the queue's bound, then is refused
/// with a message naming the variables; nothing runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_finds_no_runner_in_time_is_refused_naming_the_bounds() {
    let server = Serve::start(
        &["--stateless", "--engine-workers", "1"],
        &[("MCP_V8_QUEUE_WAIT_MS", "300")],
    );
    let (looped, refused) = tokio::join!(
        server.run_js(json!({"code": "for (;;) {}", "execution_timeout_secs": 3})),
        async {
            wait_spinning(server.pid(), 1).await;
            server.run_js(json!({"code": "globalThis.ran = 1"})).await
        }
    );
    assert_eq!(status(&looped), "timed_out", "{looped}");
    let text = refused["error_text"]
        .as_str()
        .unwrap_or_else(|| panic!("{refused}"));
    assert!(
        text.contains("busy")
            && text.contains("MCP_V8_ENGINE_WORKERS")
            && text.contains("MCP_V8_QUEUE_WAIT_MS"),
        "{text}"
    );
    answers_the_next_run(&server, json!({"code": "6 * 7"})).await;
}

/// Past its share of the runners a tenant never takes the last free one:
/// its next run waits (and is refused, past the bound, naming the share)
/// while another tenant's run starts at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_past_its_share_waits_while_another_tenant_runs() {
    let engine = common::engine::on_workers(
        EngineConfig {
            engine_workers: 2,
            tenant_runs: Some(1),
            queue_wait: Duration::from_millis(300),
            ..EngineConfig::default()
        },
        None,
    );
    let looping = Arc::new(mcp_v8_lambda::engine::RunControl::default());
    let run = |principal: &str, code: &str, control: Option<Arc<_>>| {
        engine.run(RunRequest {
            code: code.into(),
            tenant: Tenant::of_principal(principal),
            timeout: Some(Duration::from_secs(2)),
            control,
            ..Default::default()
        })
    };
    // The others come once the loop runs: it says so first.
    let started = async {
        while looping.console_lines() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    let (looped, (again, other)) = tokio::join!(
        run(
            "jwt:a",
            "console.log('looping'); for (;;) {}",
            Some(looping.clone())
        ),
        async {
            started.await;
            tokio::join!(run("jwt:a", "1", None), run("jwt:b", "6 * 7", None))
        },
    );
    assert_eq!(looped.unwrap().outcome.status, RunStatus::TimedOut);
    let refused = again.unwrap_err();
    assert!(
        matches!(
            refused,
            EngineError::Busy {
                tenant_runs: Some(1),
                ..
            }
        ),
        "{refused:?}"
    );
    assert!(
        refused.to_string().contains("MCP_V8_TENANT_RUNS"),
        "{refused}"
    );
    assert_eq!(other.unwrap().outcome.result.as_deref(), Some("42"));
}

/// The binary never runs code in its own process: 0 engine workers is
/// refused at start with the reason.
#[test]
fn the_binary_refuses_to_run_code_in_its_own_process() {
    let flag = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-v8-lambda"))
        .args(["serve", "--engine-workers", "0", "--port", "0"])
        .output()
        .unwrap();
    assert!(!flag.status.success());
    let variable = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-v8-lambda"))
        .args(["serve", "--port", "0"])
        .env("MCP_V8_ENGINE_WORKERS", "0")
        .output()
        .unwrap();
    assert!(!variable.status.success());
    let said = String::from_utf8_lossy(&variable.stderr);
    assert!(said.contains("engine worker process"), "{said}");
}
