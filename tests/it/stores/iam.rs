//! The function's IAM policy, as the SAM transform makes it, against a moto
//! that enforces IAM: a principal holding exactly that policy runs every
//! tool, and one holding it less an action cannot. moto enforces IAM on the
//! services it checks (docs/deployment.md says which); the rest is checked
//! by reading (tests/it/lambda/deployment.rs).

use crate::common;

use std::process::Command;

use aws_config::{BehaviorVersion, Region};
use aws_sdk_dynamodb::config::Credentials;
use axum::body::Body;
use http_body_util::BodyExt;
use mcp_v8_lambda::backends::aws::{Clients, TABLES, setup};
use mcp_v8_lambda::config::Config;
use mcp_v8_lambda::transport::{App, router};
use serde_json::{Value, json};
use tower::ServiceExt;

fn project() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The statements of the function role's inline policy in the transformed
/// template, with the bucket and table references resolved for `bucket` and
/// `prefix` (account 123456789012, us-east-1, as moto names them).
fn function_policy(bucket: &str, prefix: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let given = json!({"TablePrefix": prefix, "AWS::Region": "us-east-1"});
    let template = common::sam::transformed(&given, &dir.path().join("t.json"));
    let mut statements = common::sam::function_statements(&common::sam::created(&template, &given));
    let bucket_arn = format!("arn:aws:s3:::{bucket}");
    let table_arn = |resource: &str| {
        let suffix = TABLES
            .iter()
            .find(|t| {
                let camel: String = t
                    .suffix
                    .split('-')
                    .map(|w| w[..1].to_uppercase() + &w[1..])
                    .collect();
                resource == format!("{camel}Table")
            })
            .unwrap_or_else(|| panic!("{resource} is no table of the code"))
            .suffix;
        format!("arn:aws:dynamodb:us-east-1:123456789012:table/{prefix}{suffix}")
    };
    let resolve = |resource: &Value| -> Value {
        if let Some([name, _]) = resource["Fn::GetAtt"].as_array().map(Vec::as_slice) {
            let name = name.as_str().unwrap();
            return Value::from(match name {
                "HeapBucket" => bucket_arn.clone(),
                "McpFunction" => FUNCTION_ARN.to_owned(),
                _ => table_arn(name),
            });
        }
        if let Some(sub) = resource["Fn::Sub"].as_str() {
            return Value::from(sub.replace("${HeapBucket.Arn}", &bucket_arn));
        }
        resource.clone()
    };
    for statement in &mut statements {
        let resource = &statement["Resource"];
        statement["Resource"] = match resource.as_array() {
            Some(list) => Value::Array(list.iter().map(&resolve).collect()),
            None => resolve(resource),
        };
    }
    for_moto(json!({"Version": "2012-10-17", "Statement": statements}))
}

/// The function's ARN as moto's account and region name it.
const FUNCTION_ARN: &str = "arn:aws:lambda:us-east-1:123456789012:function:mcp-v8-lambda";

/// infra/policy.json (the cargo-lambda route's policy) for `bucket` and
/// `prefix`.
fn infra_policy(bucket: &str, prefix: &str) -> Value {
    let text = std::fs::read_to_string(project().join("infra/policy.json"))
        .unwrap()
        .replace("BUCKET", bucket)
        .replace("REGION", "us-east-1")
        .replace("ACCOUNT", "123456789012")
        .replace("PREFIX", prefix)
        .replace("FUNCTION", "mcp-v8-lambda");
    for_moto(serde_json::from_str(&text).unwrap())
}

/// `policy` as moto can evaluate it. moto checks DynamoDB actions against
/// the resource "*", never a table's ARN, so a table-scoped grant would be
/// refused there: the actions are tested here, the table scoping by
/// reading the template. It also checks a TransactWriteItems call as the
/// action dynamodb:TransactWriteItems, which AWS's IAM does not have (AWS
/// checks each item's PutItem, UpdateItem or ConditionCheckItem).
fn for_moto(mut policy: Value) -> Value {
    for statement in policy["Statement"].as_array_mut().unwrap() {
        // Likewise moto checks the Lambda Invoke call against "*", and as
        // the action lambda:Invoke (the operation's name; IAM's is
        // lambda:InvokeFunction): the action is tested here, the function
        // it names by reading (`the_function_may_invoke_itself_and_nothing_else`).
        if statement["Action"]
            .to_string()
            .contains("lambda:InvokeFunction")
        {
            statement["Resource"] = Value::from("*");
            statement["Action"]
                .as_array_mut()
                .unwrap()
                .push(Value::from("lambda:Invoke"));
        }
        if statement["Action"].to_string().contains("dynamodb:") {
            statement["Resource"] = Value::from("*");
            statement["Action"]
                .as_array_mut()
                .unwrap()
                .push(Value::from("dynamodb:TransactWriteItems"));
        }
    }
    policy
}

/// `policy` less `action`.
fn without(policy: &Value, action: &str) -> Value {
    let mut policy = policy.clone();
    let statements = policy["Statement"].as_array_mut().unwrap();
    for statement in statements.iter_mut() {
        if let Some(actions) = statement["Action"].as_array_mut() {
            actions.retain(|a| a != action);
        }
    }
    // A statement left with no action is no statement IAM accepts.
    statements.retain(|s| s["Action"].as_array().is_none_or(|a| !a.is_empty()));
    policy
}

/// AWS configuration for `moto` as the user holding `credentials`.
async fn sdk_as(moto: &common::moto::Moto, credentials: &Value) -> aws_config::SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .endpoint_url(&moto.endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new(
            credentials["id"].as_str().unwrap(),
            credentials["secret"].as_str().unwrap(),
            None,
            None,
            "moto-iam",
        ))
        .load()
        .await
}

/// The app as the function builds it, on `moto` with `credentials`.
async fn app_as(
    moto: &common::moto::Moto,
    credentials: &Value,
    bucket: &str,
    prefix: &str,
    dir: &std::path::Path,
) -> App {
    let sdk = sdk_as(moto, credentials).await;
    let clients = Clients::new(&sdk, true, None);
    let cache = dir.join("cache");
    let config = Config::from_lookup(|name| match name {
        "MCP_V8_HEAP_BUCKET" => Some(bucket.to_owned()),
        "MCP_V8_TABLE_PREFIX" => Some(prefix.to_owned()),
        "MCP_V8_HEAP_CACHE_DIR" => Some(cache.to_str().unwrap().to_owned()),
        _ => None,
    })
    .unwrap();
    crate::common::app_on_workers(&config, dir, Some(&clients))
}

/// The function's asynchronous invocation of itself (a handed task), on
/// `moto` with `credentials`.
async fn hand_off_as(
    moto: &common::moto::Moto,
    credentials: &Value,
) -> Result<(), mcp_v8_lambda::BoxError> {
    use mcp_v8_lambda::tasks::Handoff;
    let sdk = sdk_as(moto, credentials).await;
    let handoff = mcp_v8_lambda::tasks::LambdaHandoff::new(&sdk, "mcp-v8-lambda".into())?;
    handoff
        .hand_off(
            &mcp_v8_lambda::tenant::Tenant::anonymous(),
            uuid::Uuid::new_v4(),
        )
        .await
}

/// The function may invoke one function, itself: the only Lambda action in
/// its role's policies (the template's after the SAM transform, infra's
/// stack and policy document) is `lambda:InvokeFunction` on its own ARN,
/// never a wildcard, so it cannot invoke anything else.
#[test]
fn the_function_may_invoke_itself_and_nothing_else() {
    fn lambda_statements(statements: &[Value]) -> Vec<&Value> {
        statements
            .iter()
            .filter(|s| {
                let actions = s["Action"].to_string();
                actions.contains("lambda:") || actions.contains("\"*\"")
            })
            .collect()
    }
    let dir = tempfile::tempdir().unwrap();
    let given = json!({"TablePrefix": "p-", "AWS::Region": "us-east-1"});
    let template = common::sam::transformed(&given, &dir.path().join("t.json"));
    let statements = common::sam::function_statements(&common::sam::created(&template, &given));
    let found = lambda_statements(&statements);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["Action"], json!(["lambda:InvokeFunction"]));
    assert_eq!(
        found[0]["Resource"],
        json!({"Fn::GetAtt": ["McpFunction", "Arn"]})
    );
    for statement in &statements {
        assert_ne!(
            statement["Resource"], "*",
            "no statement names every resource: {statement}"
        );
    }

    let infra: Value = serde_json::from_str(
        &std::fs::read_to_string(project().join("infra/policy.json")).unwrap(),
    )
    .unwrap();
    let statements = infra["Statement"].as_array().unwrap().clone();
    let found = lambda_statements(&statements);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["Action"], json!(["lambda:InvokeFunction"]));
    assert_eq!(
        found[0]["Resource"],
        "arn:aws:lambda:REGION:ACCOUNT:function:FUNCTION"
    );

    let stack: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(project().join("infra/stack.yaml")).unwrap())
            .unwrap();
    let stack = serde_json::to_value(stack).unwrap();
    let role = &stack["Resources"]["FunctionRole"]["Properties"]["Policies"][0]["PolicyDocument"];
    let statements = role["Statement"].as_array().unwrap().clone();
    let found = lambda_statements(&statements);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["Action"], json!(["lambda:InvokeFunction"]));
    assert!(
        found[0]["Resource"]
            .to_string()
            .contains(":function:${FunctionName}\""),
        "{}",
        found[0]["Resource"]
    );
}

/// One 2026-07-28 tools/call: the tool's result.
async fn tool(app: &App, name: &str, arguments: Value) -> Value {
    let text = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": name, "arguments": arguments,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let request = common::post()
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", name)
        .body(Body::from(text))
        .unwrap();
    let response = router(app.clone()).oneshot(request).await.unwrap();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    body["result"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_template_policy_is_enough_for_every_tool_and_dropping_an_action_fails() {
    let moto = common::moto::Moto::start();
    let bucket = common::moto::unique("iam");
    let prefix = format!("{}-", common::moto::unique("iam"));
    let admin = aws_config::defaults(BehaviorVersion::latest())
        .endpoint_url(&moto.endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "moto"))
        .load()
        .await;
    let clients = Clients::new(&admin, true, None);
    setup(&clients.dynamodb, &clients.s3, &prefix, &bucket)
        .await
        .unwrap();

    let policy = function_policy(&bucket, &prefix);
    let users = json!({
        "function": policy,
        "infra": infra_policy(&bucket, &prefix),
        "no-put": without(&policy, "s3:PutObject"),
        "no-get": without(&policy, "s3:GetObject"),
        "no-query": without(&policy, "dynamodb:Query"),
        "no-invoke": without(&without(&policy, "lambda:InvokeFunction"), "lambda:Invoke"),
    });
    let made = Command::new(project().join(".venv/bin/python"))
        .arg(project().join("tests/moto_iam.py"))
        .arg(&moto.endpoint)
        .arg(users.to_string())
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let keys: Value = serde_json::from_slice(&made.stdout).unwrap();
    // From now on moto checks every request against the caller's policy.
    let enforced = reqwest::Client::new()
        .post(format!("{}/moto-api/reset-auth", moto.endpoint))
        .body("0")
        .send()
        .await
        .unwrap();
    assert!(enforced.status().is_success());

    let dir = tempfile::tempdir().unwrap();
    let app = app_as(&moto, &keys["function"], &bucket, &prefix, dir.path()).await;
    let missing = tool(
        &app,
        "run_js",
        json!({"code": "globalThis.n = 1; n", "heap": "a".repeat(64), "session": "iam"}),
    )
    .await;
    let outcome = &missing["structuredContent"];
    assert_eq!(outcome["status"], "completed", "{missing}");
    assert_eq!(missing["isError"], false, "{missing}");
    assert!(
        outcome["warnings"].to_string().contains("was not found"),
        "a missing heap starts fresh: {missing}"
    );
    let heap = outcome["heap"].as_str().unwrap().to_owned();
    let id = outcome["execution_id"].as_str().unwrap().to_owned();
    let chained = tool(
        &app,
        "run_js",
        json!({"code": "n + 1", "heap": heap, "session": "iam"}),
    )
    .await;
    assert_eq!(chained["structuredContent"]["result"], "2", "{chained}");
    // A heap over 1 MiB is stored as chunks under chunks/<day>/: the same
    // two actions on other keys of the bucket.
    let large = tool(
        &app,
        "run_js",
        json!({"code": "globalThis.big = Array.from({length: 40000}, (_, i) => ({i, s: 'row-' + i})); big.length"}),
    )
    .await;
    assert_eq!(large["structuredContent"]["result"], "40000", "{large}");
    let large_heap = large["structuredContent"]["heap"]
        .as_str()
        .unwrap()
        .to_owned();
    for (name, arguments) in [
        ("list_sessions", json!({})),
        ("list_session_snapshots", json!({"session": "iam"})),
        (
            "set_heap_tags",
            json!({"heap": heap, "tags": {"env": "iam"}}),
        ),
        ("get_heap_tags", json!({"heap": heap})),
        ("query_heaps_by_tags", json!({"tags": {"env": "iam"}})),
        ("delete_heap_tags", json!({"heap": heap})),
        ("get_execution", json!({"execution_id": id})),
    ] {
        let result = tool(&app, name, arguments).await;
        assert_eq!(result["isError"], false, "{name}: {result}");
    }

    let dir = tempfile::tempdir().unwrap();
    let infra = app_as(&moto, &keys["infra"], &bucket, &prefix, dir.path()).await;
    let run = tool(
        &infra,
        "run_js",
        json!({"code": "n + 2", "heap": heap, "session": "iam"}),
    )
    .await;
    assert_eq!(
        run["structuredContent"]["result"], "3",
        "infra/policy.json: {run}"
    );
    // A new instance restores the chunked heap: chunk GETs.
    let restored = tool(
        &infra,
        "run_js",
        json!({"code": "big[39999].i", "heap": large_heap}),
    )
    .await;
    assert_eq!(
        restored["structuredContent"]["result"], "39999",
        "infra/policy.json: {restored}"
    );
    for (name, arguments) in [
        ("list_sessions", json!({})),
        ("list_session_snapshots", json!({"session": "iam"})),
    ] {
        let result = tool(&infra, name, arguments).await;
        assert_eq!(
            result["isError"], false,
            "infra/policy.json, {name}: {result}"
        );
    }

    let dir = tempfile::tempdir().unwrap();
    let no_put = app_as(&moto, &keys["no-put"], &bucket, &prefix, dir.path()).await;
    let refused = tool(&no_put, "run_js", json!({"code": "1"})).await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(refused.to_string().contains("AccessDenied"), "{refused}");

    let dir = tempfile::tempdir().unwrap();
    let no_query = app_as(&moto, &keys["no-query"], &bucket, &prefix, dir.path()).await;
    let refused = tool(
        &no_query,
        "list_session_snapshots",
        json!({"session": "iam"}),
    )
    .await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(refused.to_string().contains("AccessDenied"), "{refused}");

    // A task handed to the function itself: the template's policy lets the
    // call through (moto has no such function: not found, not denied), the
    // policy less lambda:InvokeFunction does not.
    for (user, denied) in [("function", false), ("infra", false), ("no-invoke", true)] {
        let handed = hand_off_as(&moto, &keys[user]).await;
        let message = handed
            .expect_err("moto runs no function of this name")
            .to_string();
        assert_eq!(
            message.contains("AccessDenied"),
            denied,
            "{user}: handing a task off answered {message}"
        );
    }

    let dir = tempfile::tempdir().unwrap();
    let no_get = app_as(&moto, &keys["no-get"], &bucket, &prefix, dir.path()).await;
    let refused = tool(&no_get, "run_js", json!({"code": "1", "heap": heap})).await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(refused.to_string().contains("AccessDenied"), "{refused}");
}
