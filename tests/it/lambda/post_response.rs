//! A call costs its run on Lambda too: the function answers a `latest` run
//! before its heap is stored and stores it in the invocation's
//! post-response phase, under a Runtime API that freezes the function's
//! whole process group as Lambda does (tests/it/common/runtime_api.rs).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common;
use crate::common::delay_proxy::DelayProxy;
use crate::common::runtime_api::RuntimeApi;
use crate::lambda::{
    Function, rpc_body, run_js_event, start_frozen_function, start_frozen_function_logging,
};

pub(crate) const LIMIT: Duration = Duration::from_secs(120);

/// One function process and its Runtime API: one execution environment.
pub(crate) struct Instance {
    pub(crate) api: RuntimeApi,
    _function: Function,
}

impl Instance {
    pub(crate) async fn start(env: &[(String, String)]) -> Instance {
        let api = RuntimeApi::start().await;
        let function = start_frozen_function(&api, env.to_vec());
        Instance {
            api,
            _function: function,
        }
    }

    /// `run_js` with `arguments`: the tool result, its request id and when
    /// it arrived.
    async fn run_js(&mut self, arguments: Value) -> (Value, String, Instant) {
        self.run_js_within(arguments, Duration::from_secs(300))
            .await
    }

    async fn run_js_within(
        &mut self,
        arguments: Value,
        deadline: Duration,
    ) -> (Value, String, Instant) {
        let id = self
            .api
            .give_with_deadline(run_js_event(arguments), deadline);
        let answer = self.api.answer(LIMIT).await;
        assert_eq!(answer.request_id, id);
        (rpc_body(&answer)["result"].clone(), id, answer.at)
    }

    /// Waits until the environment has been frozen `times` times in all.
    pub(crate) async fn frozen(&self, times: usize) {
        let deadline = Instant::now() + LIMIT;
        while self.api.freezes() < times {
            assert!(
                Instant::now() < deadline,
                "the environment was never frozen"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A function's environment on moto with a bucket and tables of its own.
pub(crate) fn moto_env(stem: &str, cache: &std::path::Path) -> Vec<(String, String)> {
    let env = common::moto::serve_env(
        &common::moto::unique(stem),
        &format!("{}-", common::moto::unique(stem)),
        cache,
    );
    common::moto::setup(&env);
    env
}

fn outcome(result: &Value) -> &Value {
    assert_eq!(result["isError"], false, "{result}");
    &result["structuredContent"]
}

/// A ~5 MB heap: its run is answered before the heap is stored, the
/// extension holds the environment until the heap is stored, and then the
/// function is frozen. Five seconds later it is thawed by the next call,
/// which continues the state; so does a cold instance afterwards, which
/// can only have read it from the stores. Without the post-response phase
/// the answer carries `heap` (it waited for the save).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_latest_run_answers_first_and_a_frozen_function_continues_after_a_thaw() {
    let cache = tempfile::tempdir().unwrap();
    let env = moto_env("frozen", &cache.path().join("a"));
    let mut a = Instance::start(&env).await;
    let (first, id, answered) = a
        .run_js(json!({
            "code": "globalThis.rows = Array.from({ length: 60000 }, (_, i) => ({ i, name: 'row ' + i })); rows.length",
            "heap": "latest",
            "session": "frozen",
        }))
        .await;
    let first = outcome(&first);
    assert_eq!(first["result"], "60000", "{first}");
    assert!(
        first["heap"].is_null(),
        "the answer waited for the save: {first}"
    );
    assert!(first["heap_saving"].is_string(), "{first}");
    assert_eq!(
        a.api.extensions(),
        1,
        "the function registered no extension"
    );
    let over = a.api.phase_over(&id, LIMIT).await;
    assert!(over >= answered, "the phase ended before the answer");
    a.frozen(1).await;

    tokio::time::sleep(Duration::from_secs(5)).await;
    let (second, id, _) = a
        .run_js(json!({"code": "rows.push({ i: -1 }); rows.length", "heap": "latest", "session": "frozen"}))
        .await;
    assert_eq!(outcome(&second)["result"], "60001", "{second}");
    a.api.phase_over(&id, LIMIT).await;
    a.frozen(2).await;

    let mut cold = Instance::start(&moto_env_of(&env, &cache.path().join("b"))).await;
    let (third, _, _) = cold
        .run_js(
            json!({"code": "rows.at(-1).i + rows.length", "heap": "latest", "session": "frozen"}),
        )
        .await;
    assert_eq!(outcome(&third)["result"], "60000", "{third}");
}

/// The heap an engine worker keeps for the next call is ready before the
/// environment is frozen: the worker keeps the run's isolate live while a
/// forked copy writes its snapshot, and the post-response phase waits for
/// that snapshot's save, so the next call, after a thaw, only runs on the
/// heap kept (the engine says so in its log) and restores nothing.
/// (Before live heaps, the worker restored the heap from its blob, and the
/// phase waited for that restore: a freeze cut it in two otherwise.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_heap_kept_ready_is_ready_before_the_environment_freezes() {
    let cache = tempfile::tempdir().unwrap();
    let mut env = moto_env("settle", &cache.path().join("a"));
    env.push((
        "RUST_LOG".into(),
        "warn,mcp_v8_lambda::lambda::post_response=debug,mcp_v8_lambda::engine::plan=debug,mcp_v8_lambda::engine::heap_keeping=debug".into(),
    ));
    let log = cache.path().join("function.log");
    let api = RuntimeApi::start().await;
    let function =
        start_frozen_function_logging(&api, env, std::fs::File::create(&log).unwrap().into());
    let mut a = Instance {
        api,
        _function: function,
    };
    let call = |code: &str| json!({"code": code, "heap": "latest", "session": "settle"});
    let (first, id, _) = a
        .run_js(call(
            "globalThis.rows = Array.from({ length: 60000 }, (_, i) => ({ i, name: 'row ' + i })); rows.length",
        ))
        .await;
    assert_eq!(outcome(&first)["result"], "60000", "{first}");
    a.api.phase_over(&id, LIMIT).await;
    a.frozen(1).await;
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(
        said.lines()
            .any(|line| line.contains("post-response phase over") && line.contains(&id)),
        "no end of the phase in the log:\n{said}"
    );
    let (second, _, _) = a.run_js(call("rows.length + 1")).await;
    assert_eq!(outcome(&second)["result"], "60001", "{second}");
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(
        said.contains("the heap is ready in an engine worker"),
        "the call after the thaw did not continue the heap kept ready:\n{said}"
    );
}

/// `env` with another heap cache: another instance's disk.
pub(crate) fn moto_env_of(
    env: &[(String, String)],
    cache: &std::path::Path,
) -> Vec<(String, String)> {
    env.iter()
        .map(|(k, v)| {
            if k == "MCP_V8_HEAP_CACHE_DIR" {
                (k.clone(), cache.to_str().unwrap().to_owned())
            } else {
                (k.clone(), v.clone())
            }
        })
        .collect()
}

/// Two instances of one function, each with a disk of its own, whose S3
/// goes through a proxy that can hold writes back, so that saves take a
/// while; the temporary directory holds their disks.
async fn two_instances_on_slow_s3(
    stem: &str,
) -> (DelayProxy, Instance, Instance, tempfile::TempDir) {
    let cache = tempfile::tempdir().unwrap();
    let proxy = DelayProxy::start(&common::moto::moto().endpoint).await;
    let mut env = moto_env(stem, &cache.path().join("a"));
    env.push(("AWS_ENDPOINT_URL_S3".into(), proxy.endpoint.clone()));
    let a = Instance::start(&env).await;
    let b = Instance::start(&moto_env_of(&env, &cache.path().join("b"))).await;
    (proxy, a, b, cache)
}

/// Lambda hands an event only to an idle environment, so a call that
/// follows while the first instance still stores its heap runs on another:
/// it waits there for the pending save (read through DynamoDB), only for
/// that save, says so in `save_wait_ms` and a warning naming another
/// instance, and continues the state; so does the call after it on the
/// first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_with_no_pause_on_two_instances_each_continue_the_state_before() {
    let (proxy, mut a, mut b, _cache) = two_instances_on_slow_s3("b2b").await;
    let call = |code: &str| json!({"code": code, "heap": "latest", "session": "b2b"});
    proxy.delay_puts(Duration::from_millis(1500));

    let (first, first_id, _) = a.run_js(call("globalThis.n = 1; n")).await;
    assert_eq!(outcome(&first)["result"], "1");
    assert!(
        outcome(&first)["heap_saving"].is_string(),
        "the answer waited for the save: {first}"
    );
    // At once, as an agent's next call with no pause: the first instance is
    // storing its heap, so Lambda would hand this event to another.
    let given = Instant::now();
    let (second, second_id, _) = b.run_js(call("n += 1; n")).await;
    assert_eq!(outcome(&second)["result"], "2", "{second}");
    // The S3 write held 1.5 s: most of it is the wait, which is said.
    assert!(
        outcome(&second)["save_wait_ms"]
            .as_u64()
            .is_some_and(|ms| ms >= 500),
        "{second}"
    );
    assert!(
        outcome(&second)["warnings"]
            .to_string()
            .contains("another instance"),
        "{second}"
    );
    let over = a.api.phase_over(&first_id, LIMIT).await;
    assert!(
        over > given,
        "the first instance had stored its heap before the next call came: its answer waited for the save"
    );
    let (third, _, _) = a.run_js(call("n += 1; n")).await;
    assert_eq!(outcome(&third)["result"], "3", "{third}");
    b.api.phase_over(&second_id, LIMIT).await;
}

/// A save the invocation's deadline would cut short is given up before the
/// deadline and recorded in the session's pending save: the next call, on
/// another instance, says at once that the heap is lost and names the last
/// heap stored. The environment was not ended by the deadline: the
/// extension finished its phase in time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_save_the_deadline_cuts_short_makes_the_next_call_say_so() {
    let (proxy, mut a, mut b, _cache) = two_instances_on_slow_s3("deadline").await;
    let call = |code: &str| json!({"code": code, "heap": "latest", "session": "cut"});

    let (first, first_id, _) = a.run_js(call("globalThis.n = 1; n")).await;
    assert_eq!(outcome(&first)["result"], "1");
    a.api.phase_over(&first_id, LIMIT).await;

    proxy.delay_puts(Duration::from_secs(8));
    let (second, second_id, _) = a
        .run_js_within(call("n += 1; n"), Duration::from_secs(4))
        .await;
    assert_eq!(outcome(&second)["result"], "2", "{second}");
    a.api.phase_over(&second_id, LIMIT).await;
    assert!(
        a.api.timed_out().is_empty(),
        "the deadline ended the environment: the phase did not give the save up in time"
    );

    proxy.delay_puts(Duration::ZERO);
    let (third, _, _) = b.run_js(call("n")).await;
    assert_eq!(third["isError"], true, "{third}");
    let text = third["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("is lost"), "{text}");
    assert!(text.contains("deadline"), "{text}");
    assert!(text.contains("(log entry 0)"), "{text}");
}
