//! Tenants through the hosts: two principals (two JWT subjects, two IAM
//! callers) against `serve`'s router and the Lambda entry, on the embedded
//! stores and on moto. For every tool, the second caller cannot see or
//! change the first one's data, by guessing a session name, a heap key or
//! an execution id, and sees what it would see for ones that do not exist;
//! the first caller's view is unchanged. `MCP_V8_SHARED_NAMESPACE` puts
//! both in one namespace.

use crate::common;
use crate::protocol::jwt::{AUDIENCE, ISSUER, good, jwks_server};

use axum::body::Body;
use axum::http::StatusCode;
use common::moto::{provisioned, sdk_config, serve_env};
use common::{Reply, post, reply};
use mcp_v8_lambda::backends::aws::Clients;
use mcp_v8_lambda::config::Config;
use mcp_v8_lambda::lambda::service;
use mcp_v8_lambda::transport::{App, router};
use serde_json::{Value, json};
use tower::ServiceExt;

/// Who calls, as the host authenticates it.
#[derive(Debug, Clone)]
enum Who {
    /// `Authorization: Bearer <JWT>`.
    Bearer(String),
    /// A function URL with `AuthType: AWS_IAM` and this caller ARN.
    Iam(String),
}

/// Where the request goes: `serve`'s router or the Lambda entry (a
/// function URL event through the service Lambda runs).
#[derive(Clone)]
enum Host {
    Serve(App),
    Lambda(App),
}

const LAMBDA_EVENT: &str = include_str!("../../../events/run-js.json");

impl Host {
    async fn post(&self, who: &Who, headers: &[(&str, &str)], body: &Value) -> Reply {
        match self {
            Host::Serve(app) => {
                let text = body.to_string();
                let mut builder = post().header("host", "localhost:3000");
                for (name, value) in headers {
                    builder = builder.header(*name, *value);
                }
                match who {
                    Who::Bearer(token) => {
                        builder = builder.header("authorization", format!("Bearer {token}"));
                    }
                    Who::Iam(_) => panic!("serve has no IAM callers"),
                }
                let request = builder.body(Body::from(text)).unwrap();
                reply(router(app.clone()).oneshot(request).await.unwrap()).await
            }
            Host::Lambda(app) => {
                let mut event: Value = serde_json::from_str(LAMBDA_EVENT).unwrap();
                let event_headers = event["headers"].as_object_mut().unwrap();
                event_headers.remove("mcp-session-id");
                for (name, value) in headers {
                    event_headers.insert(name.to_lowercase(), Value::from(*value));
                }
                match who {
                    Who::Bearer(token) => {
                        event_headers
                            .insert("authorization".into(), format!("Bearer {token}").into());
                        event["requestContext"]
                            .as_object_mut()
                            .unwrap()
                            .remove("authorizer");
                    }
                    Who::Iam(arn) => {
                        event["requestContext"]["authorizer"]["iam"]["userArn"] =
                            Value::from(arn.as_str());
                    }
                }
                event["body"] = Value::from(body.to_string());
                let request = lambda_http::request::from_str(&event.to_string()).unwrap();
                reply(service(app.clone(), false).oneshot(request).await.unwrap()).await
            }
        }
    }
}

/// One caller's MCP session (protocol 2025-11-25) with a logical session
/// named by `X-MCP-Session-Id`.
struct Agent {
    host: Host,
    who: Who,
    sid: String,
    /// What `initialize` said of the logical session.
    continuity: Value,
}

impl Agent {
    async fn start(host: &Host, who: &Who, logical: &str) -> Self {
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","clientInfo":{"name":"tenant-test","version":"1"},
            // MCP Apps hosts, so that the View's own tool is theirs too.
            "capabilities":{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}}});
        let reply = host
            .post(who, &[("x-mcp-session-id", logical)], &init)
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        Self {
            host: host.clone(),
            who: who.clone(),
            sid: reply.session_id().unwrap(),
            continuity: reply.body["result"]["_meta"]["mcp-v8/continuity"].clone(),
        }
    }

    /// A tool's `structuredContent`, with `isError` beside it.
    async fn tool(&self, name: &str, arguments: Value) -> (Value, bool) {
        let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
            "params":{"name":name,"arguments":arguments}});
        let reply = self
            .host
            .post(&self.who, &[("mcp-session-id", &self.sid)], &body)
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{name}: {}", reply.body);
        let result = &reply.body["result"];
        let content = if result["structuredContent"].is_null() {
            json!({"text": result["content"][0]["text"]})
        } else {
            result["structuredContent"].clone()
        };
        (content, result["isError"] == true)
    }

    /// Any method of the session; the whole JSON-RPC response.
    async fn call_method(&self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc":"2.0","id":1,"method":method,"params":params});
        let reply = self
            .host
            .post(&self.who, &[("mcp-session-id", &self.sid)], &body)
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{method}: {}", reply.body);
        reply.body
    }

    /// A 2026-07-28 `tools/call` (no session), naming `logical` in its header.
    async fn tool_2026(&self, logical: &str, name: &str, arguments: Value) -> Value {
        let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
            "params":{"name":name,"arguments":arguments,
                "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
                    "io.modelcontextprotocol/clientInfo":{"name":"tenant-test","version":"1"},
                    "io.modelcontextprotocol/clientCapabilities":{}}}});
        let reply = self
            .host
            .post(
                &self.who,
                &[
                    ("mcp-protocol-version", "2026-07-28"),
                    ("mcp-method", "tools/call"),
                    ("mcp-name", name),
                    ("x-mcp-session-id", logical),
                ],
                &body,
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{name}: {}", reply.body);
        reply.body["result"]["structuredContent"].clone()
    }
}

const NOWHERE: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Alice works; Bob, another tenant, probes every tool with her names and
/// keys; Alice's view is then checked unchanged.
async fn second_caller_sees_nothing_of_the_first(host: Host, alice: Who, bob: Who) {
    let project = format!("project-{}", uuid::Uuid::new_v4().simple());
    let a = Agent::start(&host, &alice, &project).await;
    assert_eq!(a.continuity["resumed"], false);
    let (run, failed) = a
        .tool(
            "run_js",
            json!({"code": "globalThis.secret = 'alice-secret'; require('fs').writeFileSync('secret.txt', 'alice-file'); secret"}),
        )
        .await;
    assert!(!failed, "{run}");
    let heap = run["heap"].as_str().unwrap().to_owned();
    let execution = run["execution_id"].as_str().unwrap().to_owned();
    let (_, failed) = a
        .tool(
            "set_heap_tags",
            json!({"heap": heap, "tags": {"owner": "alice", "project": project}}),
        )
        .await;
    assert!(!failed);

    // Bob names the same logical session: it is new to him.
    let b = Agent::start(&host, &bob, &project).await;
    assert_eq!(b.continuity["resumed"], false, "{}", b.continuity);
    assert_eq!(b.continuity["entries"], 0);
    assert_eq!(
        b.tool("list_sessions", json!({})).await.0,
        json!({"sessions": []})
    );
    // Her resources and the prompt on her session: as if they did not exist.
    let listed = b.call_method("resources/list", json!({})).await;
    // The skills are the server's, the same for everyone; nothing else.
    let others: Vec<&serde_json::Value> = listed["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["uri"].as_str().unwrap().starts_with("skill://"))
        .collect();
    assert!(others.is_empty(), "{listed}");
    // Her session names complete for her, not for him.
    let names = json!({"ref": {"type": "ref/prompt", "name": "resume_session"},
                       "argument": {"name": "session", "value": ""}});
    let hers = a.call_method("completion/complete", names.clone()).await;
    assert!(
        hers["result"]["completion"]["values"]
            .as_array()
            .is_some_and(|values| values.contains(&json!(project))),
        "{hers}"
    );
    let completed = b.call_method("completion/complete", names).await;
    assert_eq!(
        completed["result"]["completion"]["values"],
        json!([]),
        "{completed}"
    );
    let log_uri = format!("mcp-v8://sessions/{project}/log");
    let unknown_log = b
        .call_method(
            "resources/read",
            json!({"uri": "mcp-v8://sessions/never-used/log"}),
        )
        .await;
    let hers = b
        .call_method("resources/read", json!({"uri": log_uri}))
        .await;
    assert_eq!(hers["error"]["code"], -32602, "{hers}");
    assert_eq!(hers["error"]["message"], unknown_log["error"]["message"]);
    let execution_uri = format!("mcp-v8://executions/{execution}");
    let hers = b
        .call_method("resources/read", json!({"uri": execution_uri}))
        .await;
    assert_eq!(hers["error"]["code"], -32602, "{hers}");
    // Her heap's files: as a heap that does not exist.
    let file_uri = format!("mcp-v8://heaps/{heap}/files/secret.txt");
    let hers = b
        .call_method("resources/read", json!({"uri": file_uri}))
        .await;
    let unknown = b
        .call_method(
            "resources/read",
            json!({"uri": format!("mcp-v8://heaps/{NOWHERE}/files/secret.txt")}),
        )
        .await;
    assert_eq!(hers["error"]["code"], -32602, "{hers}");
    assert_eq!(hers["error"]["message"], unknown["error"]["message"]);
    assert!(!hers.to_string().contains("alice-file"));
    // ... and through the View's page tool: she reaches her file (not a
    // table), he does not, and hears what a heap that does not exist says.
    let page = |uri: &str| json!({"uri": uri, "offset": 0, "limit": 10});
    let (hers, failed) = a.tool("read_display_page", page(&file_uri)).await;
    assert!(
        failed && hers["text"].as_str().unwrap().contains("is not a table"),
        "{hers}"
    );
    let (his, failed) = b.tool("read_display_page", page(&file_uri)).await;
    let nowhere = format!("mcp-v8://heaps/{NOWHERE}/files/secret.txt");
    let (unknown, _) = b.tool("read_display_page", page(&nowhere)).await;
    assert!(failed, "{his}");
    assert_eq!(
        his["text"].as_str().unwrap().replace(&heap, NOWHERE),
        unknown["text"],
        "{his}"
    );
    assert!(!his.to_string().contains("alice-file"));
    let prompt = b
        .call_method(
            "prompts/get",
            json!({"name": "resume_session", "arguments": {"session": project}}),
        )
        .await;
    let text = prompt["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(
        text.contains("no runs yet") && !text.contains(&heap),
        "{text}"
    );

    // Her log under the name he guessed, and under a name nobody used: the same.
    let (log, _) = b
        .tool("list_session_snapshots", json!({"session": project}))
        .await;
    assert_eq!(log, json!({"entries": []}));
    assert_eq!(
        b.tool("list_session_snapshots", json!({"session": "never-used"}))
            .await
            .0,
        log
    );
    // Her heap's tags and a heap that does not exist: the same.
    let (tags, _) = b.tool("get_heap_tags", json!({"heap": heap})).await;
    assert_eq!(tags, json!({"tags": {}}));
    assert_eq!(
        b.tool("get_heap_tags", json!({"heap": NOWHERE})).await.0,
        tags
    );
    assert_eq!(
        b.tool("query_heaps_by_tags", json!({"tags": {"project": project}}))
            .await
            .0,
        json!({"results": []})
    );
    // Her execution and one that never ran: the same message, id aside.
    let (theirs, failed) = b
        .tool("get_execution", json!({"execution_id": execution}))
        .await;
    assert!(failed);
    let nobody = uuid::Uuid::new_v4().to_string();
    let (unknown, _) = b
        .tool("get_execution", json!({"execution_id": nobody}))
        .await;
    assert_eq!(
        theirs.to_string().replace(&execution, "ID"),
        unknown.to_string().replace(&nobody, "ID")
    );
    // Her heap by key: a fresh isolate with the missing-heap warning.
    let (restored, _) = b
        .tool("run_js", json!({"code": "typeof secret", "heap": heap}))
        .await;
    assert_eq!(restored["result"], "\"undefined\"", "{restored}");
    assert!(
        restored["warnings"][0]
            .as_str()
            .unwrap()
            .contains("was not found"),
        "{restored}"
    );
    // The same through the 2026-07-28 era, which has no session to carry
    // the caller.
    let sessionless = b
        .tool_2026(
            &project,
            "run_js",
            json!({"code": "typeof secret", "heap": heap}),
        )
        .await;
    assert_eq!(sessionless["result"], "\"undefined\"", "{sessionless}");
    assert_eq!(
        b.tool_2026(
            &project,
            "list_session_snapshots",
            json!({"fields": "index"})
        )
        .await["entries"]
            .as_array()
            .unwrap()
            .len(),
        2,
        "Bob's own two runs, not Alice's"
    );
    // Bob writes under her heap key: his own tags only.
    let (_, failed) = b
        .tool(
            "set_heap_tags",
            json!({"heap": heap, "tags": {"owner": "bob"}}),
        )
        .await;
    assert!(!failed);
    let (_, failed) = b.tool("delete_heap_tags", json!({"heap": heap})).await;
    assert!(!failed);
    assert_eq!(
        b.tool("list_sessions", json!({})).await.0,
        json!({"sessions": [project]})
    );

    // Alice's view is unchanged.
    assert_eq!(
        a.tool("list_sessions", json!({})).await.0,
        json!({"sessions": [project]})
    );
    let (log, _) = a
        .tool(
            "list_session_snapshots",
            json!({"fields": "index,output_heap"}),
        )
        .await;
    assert_eq!(log, json!({"entries": [{"index": 0, "output_heap": heap}]}));
    assert_eq!(
        a.tool("get_heap_tags", json!({"heap": heap})).await.0,
        json!({"tags": {"owner": "alice", "project": project}})
    );
    let (found, _) = a
        .tool("query_heaps_by_tags", json!({"tags": {"project": project}}))
        .await;
    assert_eq!(found["results"][0]["heap"], heap.as_str());
    let (record, failed) = a
        .tool("get_execution", json!({"execution_id": execution}))
        .await;
    assert!(!failed, "{record}");
    let (restored, _) = a
        .tool("run_js", json!({"code": "secret", "heap": heap}))
        .await;
    assert_eq!(restored["result"], "\"alice-secret\"", "{restored}");
    let hers = a
        .call_method("resources/read", json!({"uri": log_uri}))
        .await;
    assert!(
        hers["result"]["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains(&heap)
    );
    let hers = a
        .call_method("resources/read", json!({"uri": execution_uri}))
        .await;
    assert!(hers["result"]["contents"].is_array(), "{hers}");
    let hers = a
        .call_method("resources/read", json!({"uri": file_uri}))
        .await;
    assert_eq!(
        hers["result"]["contents"][0]["text"], "alice-file",
        "{hers}"
    );
    let again = Agent::start(&host, &alice, &project).await;
    assert_eq!(again.continuity["resumed"], true);
    assert_eq!(again.continuity["last_output_heap"], restored["heap"]);
    // A display block kept apart from her answer: hers to read, his as a
    // block never kept.
    let shown = a
        .call_method(
            "tools/call",
            json!({"name": "run_js", "arguments": {"code": "display('alice-display '.repeat(4000)); 1"}}),
        )
        .await;
    let kept = shown["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "resource_link")
        .unwrap_or_else(|| panic!("{shown}"))["uri"]
        .as_str()
        .unwrap()
        .to_owned();
    let hers = a.call_method("resources/read", json!({"uri": kept})).await;
    assert!(
        hers["result"]["contents"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("alice-display")),
        "{hers}"
    );
    let his = b.call_method("resources/read", json!({"uri": kept})).await;
    let never = b
        .call_method(
            "resources/read",
            json!({"uri": format!("mcp-v8://displays/{NOWHERE}?type=text%2Fplain")}),
        )
        .await;
    assert_eq!(his["error"]["code"], -32602, "{his}");
    assert_eq!(his["error"]["message"], never["error"]["message"]);
    assert!(!his.to_string().contains("alice-display"));
}

/// Under a shared namespace, what Alice wrote Bob sees and continues. A
/// transport session still answers only its creator, unless the two are one
/// principal (`same_principal`).
async fn a_shared_namespace_is_one_for_both(
    host: Host,
    alice: Who,
    bob: Who,
    same_principal: bool,
) {
    let project = format!("team-{}", uuid::Uuid::new_v4().simple());
    let a = Agent::start(&host, &alice, &project).await;
    let (run, _) = a
        .tool(
            "run_js",
            json!({"code": "globalThis.note = 'shared'; note"}),
        )
        .await;
    let heap = run["heap"].as_str().unwrap().to_owned();
    a.tool(
        "set_heap_tags",
        json!({"heap": heap, "tags": {"team": project}}),
    )
    .await;

    let b = Agent::start(&host, &bob, &project).await;
    assert_eq!(b.continuity["resumed"], true);
    assert_eq!(b.continuity["last_output_heap"], heap.as_str());
    let (sessions, _) = b.tool("list_sessions", json!({})).await;
    assert!(
        sessions["sessions"]
            .as_array()
            .unwrap()
            .contains(&Value::from(project.as_str())),
        "{sessions}"
    );
    assert_eq!(
        b.tool("get_heap_tags", json!({"heap": heap})).await.0,
        json!({"tags": {"team": project}})
    );
    let (restored, _) = b
        .tool("run_js", json!({"code": "note", "heap": heap}))
        .await;
    assert_eq!(restored["result"], "\"shared\"");
    // The transport session is its creator's principal's.
    let stolen = Agent {
        host: host.clone(),
        who: bob.clone(),
        sid: a.sid.clone(),
        continuity: Value::Null,
    };
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/list"});
    let reply = host
        .post(&stolen.who, &[("mcp-session-id", &stolen.sid)], &body)
        .await;
    let expected = if same_principal {
        StatusCode::OK
    } else {
        StatusCode::NOT_FOUND
    };
    assert_eq!(reply.status, expected);
}

fn jwt_vars(jwks: &str) -> Vec<(String, String)> {
    [
        ("MCP_V8_JWKS_URL", jwks),
        ("MCP_V8_JWT_ISSUER", ISSUER),
        ("MCP_V8_JWT_AUDIENCE", AUDIENCE),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

fn config(vars: &[(String, String)]) -> Config {
    Config::from_lookup(|name| vars.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone()))
        .unwrap()
}

/// An app on the embedded stores in `dir`.
fn local_app(vars: &[(String, String)], dir: &std::path::Path) -> App {
    crate::common::app_on_workers(&config(vars), dir, None)
}

/// An app on moto's S3 and DynamoDB, as a function would run.
async fn moto_app(vars: &[(String, String)], dir: &std::path::Path) -> App {
    let (_, _, bucket, prefix) = provisioned().await;
    let mut vars = vars.to_vec();
    vars.extend(serve_env(&bucket, &prefix, &dir.join("cache")));
    let clients = Clients::new(&sdk_config().await, true, None);
    crate::common::app_on_workers(&config(&vars), dir, Some(&clients))
}

#[tokio::test]
async fn two_jwt_subjects_under_serve_see_only_their_own() {
    let (jwks, _) = jwks_server().await;
    let dir = tempfile::tempdir().unwrap();
    let host = Host::Serve(local_app(&jwt_vars(&jwks), dir.path()));
    second_caller_sees_nothing_of_the_first(
        host,
        Who::Bearer(good("alice")),
        Who::Bearer(good("bob")),
    )
    .await;
}

#[tokio::test]
async fn two_jwt_subjects_under_the_lambda_entry_on_moto_see_only_their_own() {
    let (jwks, _) = jwks_server().await;
    let dir = tempfile::tempdir().unwrap();
    let host = Host::Lambda(moto_app(&jwt_vars(&jwks), dir.path()).await);
    second_caller_sees_nothing_of_the_first(
        host,
        Who::Bearer(good("alice")),
        Who::Bearer(good("bob")),
    )
    .await;
}

#[tokio::test]
async fn two_iam_callers_under_the_lambda_entry_see_only_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::Lambda(moto_app(&[], dir.path()).await);
    second_caller_sees_nothing_of_the_first(
        host,
        Who::Iam("arn:aws:iam::123456789012:user/alice".into()),
        Who::Iam("arn:aws:sts::123456789012:assumed-role/Agents/bob-session".into()),
    )
    .await;
}

/// Two sessions of one assumed role are one principal and one tenant: the
/// role is the identity (docs/reliability.md, "Tenants").
#[tokio::test]
async fn sessions_of_one_assumed_role_share_its_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::Lambda(local_app(&[], dir.path()));
    a_shared_namespace_is_one_for_both(
        host,
        Who::Iam("arn:aws:sts::123456789012:assumed-role/Agents/monday".into()),
        Who::Iam("arn:aws:sts::123456789012:assumed-role/Agents/tuesday".into()),
        true,
    )
    .await;
}

#[tokio::test]
async fn the_shared_namespace_switch_gives_every_subject_one_namespace() {
    let (jwks, _) = jwks_server().await;
    let dir = tempfile::tempdir().unwrap();
    let mut vars = jwt_vars(&jwks);
    vars.push(("MCP_V8_SHARED_NAMESPACE".into(), "true".into()));
    let host = Host::Serve(local_app(&vars, dir.path()));
    a_shared_namespace_is_one_for_both(
        host,
        Who::Bearer(good("alice")),
        Who::Bearer(good("bob")),
        false,
    )
    .await;
}

#[tokio::test]
async fn the_shared_namespace_switch_works_under_the_lambda_entry_on_moto() {
    let dir = tempfile::tempdir().unwrap();
    let vars = [("MCP_V8_SHARED_NAMESPACE".to_owned(), "true".to_owned())];
    let host = Host::Lambda(moto_app(&vars, dir.path()).await);
    a_shared_namespace_is_one_for_both(
        host,
        Who::Iam("arn:aws:iam::123456789012:user/alice".into()),
        Who::Iam("arn:aws:iam::123456789012:user/bob".into()),
        false,
    )
    .await;
}
