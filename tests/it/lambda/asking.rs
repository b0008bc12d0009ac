//! A run that asks the person, under the Lambda entry (2026-07-28): the
//! first answer comes from one instance, each retry is served by another,
//! and while the person decides no invocation runs: the environment that
//! answered is idle and frozen.

use serde_json::{Value, json};

use crate::common::runtime_api::Answer;
use crate::lambda::post_response::{Instance, LIMIT, moto_env, moto_env_of};
use crate::lambda::{event_2026, rpc_body};

const CODE: &str = "let sum = 0; \
    for (let i = 1; i <= 2; i++) { \
      const a = await elicit({ message: `Factor ${i}?`, requestedSchema: { type: 'object', \
        properties: { n: { type: 'integer' } }, required: ['n'] } }); \
      sum += i * a.content.n; \
    } \
    sum";

/// A 2026-07-28 run_js event from a client that takes form elicitations,
/// retrying with `retry`'s responses and state when given.
fn event(retry: Option<(Value, &str)>) -> String {
    let mut params =
        json!({ "name": "run_js", "arguments": { "code": CODE, "session": "lambda-asks" } });
    if let Some((responses, state)) = retry {
        params["inputResponses"] = responses;
        params["requestState"] = json!(state);
    }
    let mut event: Value =
        serde_json::from_str(&event_2026("tools/call", Some("run_js"), params)).unwrap();
    let mut body: Value = serde_json::from_str(event["body"].as_str().unwrap()).unwrap();
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["elicitation"] =
        json!({ "form": {} });
    event["body"] = body.to_string().into();
    event.to_string()
}

async fn give(instance: &mut Instance, event: String) -> Value {
    let id = instance.api.give(event);
    let answer: Answer = instance.api.answer(LIMIT).await;
    assert_eq!(answer.request_id, id);
    rpc_body(&answer)["result"].clone()
}

fn state_of(result: &Value, key: &str) -> String {
    assert_eq!(result["resultType"], "input_required", "{result}");
    assert!(result["inputRequests"][key].is_object(), "{result}");
    result["requestState"].as_str().unwrap().to_owned()
}

fn n(key: &str, n: i64) -> Value {
    json!({ key: { "action": "accept", "content": { "n": n } } })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_asks_continues_on_whichever_instance_the_retry_reaches() {
    let cache = tempfile::tempdir().unwrap();
    let env = moto_env("asks", &cache.path().join("a"));
    let mut a = Instance::start(&env).await;
    let mut b = Instance::start(&moto_env_of(&env, &cache.path().join("b"))).await;

    let first = give(&mut a, event(None)).await;
    let state = state_of(&first, "elicit-1");
    // While the person decides, the environment that asked runs nothing:
    // it takes the next event, and Lambda freezes it.
    a.frozen(1).await;
    assert!(
        a.api.idle(),
        "an invocation is still running on the instance that asked"
    );

    let second = give(&mut b, event(Some((n("elicit-1", 3), &state)))).await;
    let state = state_of(&second, "elicit-2");
    let done = give(&mut a, event(Some((n("elicit-2", 4), &state)))).await;
    assert_eq!(done["isError"], false, "{done}");
    assert_eq!(done["structuredContent"]["result"], "11", "{done}");
}
