//! The answer budget: what a model reads of a run stays within
//! `MCP_V8_ANSWER_BUDGET_KB`, parses, and links what it leaves out
//! (docs/tools.md, "The answer budget").

use serde_json::{Value, json};

use crate::common::{self, Server};

const BUDGET: usize = 32 * 1024;

/// 3 MB of output, a 2 MB string, 200k rows.
const LARGE: [(&str, &str); 3] = [
    (
        "output",
        "for (let i = 0; i < 300000; i++) console.log(`line ${i}`); 'logged'",
    ),
    ("string", "'ab'.repeat(1 << 20)"),
    (
        "rows",
        "Array.from({ length: 200000 }, (_, i) => ({ id: i, name: `row ${i}`, value: i * 2 }))",
    ),
];

async fn read(s: &Server, sid: &str, uri: &str) -> Value {
    s.rpc(
        Some(sid),
        json!({"jsonrpc": "2.0", "id": 5, "method": "resources/read", "params": {"uri": uri}}),
    )
    .await
    .body
}

/// The URI a note in the warnings names.
fn linked(outcome: &Value) -> Option<String> {
    let warnings = outcome["warnings"].as_array()?;
    let note = warnings
        .iter()
        .filter_map(Value::as_str)
        .find(|w| w.contains("mcp-v8://executions/"))?;
    let at = note.find("mcp-v8://executions/")?;
    let uri: String = note[at..]
        .chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, ')' | '?' | ','))
        .collect();
    Some(uri)
}

/// Each of the three answers is within the budget in its text and in its
/// structuredContent, both parse, the result that does not fit is a typed
/// stand-in, and the link reads the whole back, and by page.
#[tokio::test(flavor = "multi_thread")]
async fn three_large_answers_stay_within_the_budget_parse_and_link_the_rest() {
    let s = common::server();
    let sid = s.initialize().await;
    for (name, code) in LARGE {
        let result = s.call(&sid, json!({ "code": code })).await;
        assert_eq!(result["isError"], false, "{name}");
        let text = result["content"][0]["text"].as_str().unwrap();
        let outcome = &result["structuredContent"];
        let structured = outcome.to_string();
        assert!(text.len() <= BUDGET, "{name}: text of {}", text.len());
        assert!(
            structured.len() <= BUDGET,
            "{name}: structuredContent of {}",
            structured.len()
        );
        let shown: Value = serde_json::from_str(text).unwrap();
        let uri = linked(outcome).unwrap_or_else(|| panic!("{name}: {outcome}"));
        // The REPL's view of 200k rows fits (`... 199900 more items`), so
        // only the structured copy has something to link.
        if name != "rows" {
            assert_eq!(
                linked(&shown),
                Some(uri.clone()),
                "{name}: the text links it too"
            );
        }
        let whole = read(&s, &sid, &uri).await;
        let whole = whole["result"]["contents"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: {whole}"));
        assert!(whole.len() > BUDGET, "{name}: {}", whole.len());
        assert!(
            !whole.contains("truncated"),
            "{name}: the link opens the whole"
        );
        let first = read(&s, &sid, &format!("{uri}?page=1")).await;
        let first = first["result"]["contents"][0]["text"].as_str().unwrap();
        assert!(first.len() <= BUDGET, "{name}");
        let past = read(&s, &sid, &format!("{uri}?page=9999")).await;
        let message = past["error"]["message"].as_str().unwrap();
        assert!(message.contains("pages, each "), "{message}");
        assert!(message.contains("?page=1 to ?page="), "{message}");
        match name {
            "output" => {
                assert!(
                    whole.trim_end().ends_with("line 299999"),
                    "{}",
                    &whole[whole.len() - 80..]
                );
                let output = outcome["output"].as_str().unwrap();
                assert!(output.starts_with("line 0\nline 1\n"), "{name}");
                assert!(output.trim_end().ends_with("line 299999"), "{name}");
                assert_eq!(outcome["result"], "\"logged\"");
                assert!(uri.ends_with("/output"), "{uri}");
            }
            _ => {
                let stand_in = &outcome["result"];
                assert_eq!(stand_in["uri"], uri.as_str(), "{stand_in}");
                let kind = if name == "string" { "string" } else { "array" };
                assert_eq!(stand_in["type"], kind, "{stand_in}");
                assert_eq!(stand_in["bytes"], whole.len(), "{stand_in}");
                assert!(whole.starts_with(stand_in["preview"].as_str().unwrap()));
                // The text the model reads shows the value's start, cut
                // with a marker, not the stand-in.
                assert!(shown["result"].is_string(), "{}", shown["result"]);
            }
        }
    }
    // get_execution answers within the same budget, with the same link.
    let result = s.call(&sid, json!({ "code": LARGE[0].1 })).await;
    let id = result["structuredContent"]["execution_id"]
        .as_str()
        .unwrap();
    let record = s
        .tool(&sid, "get_execution", json!({ "execution_id": id }))
        .await;
    assert!(record["content"][0]["text"].as_str().unwrap().len() <= BUDGET);
    assert!(record["structuredContent"].to_string().len() <= BUDGET);
    assert_eq!(
        linked(&record["structuredContent"]),
        Some(format!("mcp-v8://executions/{id}/output"))
    );
}

/// A run whose answer fits is answered as it always was: the whole
/// outcome, the REPL's view in the text, no note.
#[tokio::test(flavor = "multi_thread")]
async fn a_normal_answer_is_unchanged() {
    let s = common::server();
    let sid = s.initialize().await;
    let result = s
        .call(
            &sid,
            json!({ "code": "console.log('hi'); ({ a: [1, 2], n: NaN })" }),
        )
        .await;
    let outcome = &result["structuredContent"];
    assert_eq!(outcome["result"], r#"{"a":[1,2],"n":null}"#);
    assert_eq!(outcome["output"], "hi\n");
    assert_eq!(outcome["warnings"], json!([]));
    let mut shown: Value =
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(shown["result"], "{ a: [ 1, 2 ], n: NaN }");
    shown["result"] = outcome["result"].clone();
    assert_eq!(&shown, outcome);
}

/// The budget is the operator's: `MCP_V8_ANSWER_BUDGET_KB` sets it, the
/// tool description states it, and a stateless server, which keeps no
/// runs, says the rest is gone instead of naming a link that cannot work.
#[tokio::test(flavor = "multi_thread")]
async fn the_budget_is_configured_stated_and_honest_on_a_stateless_server() {
    let mut config = common::test_config(3600, true);
    config.engine.answer_budget_kb = 8;
    let s = common::server_configured(config, |stores| stores);
    let sid = s.initialize().await;
    let tools = s.tools_list(&sid).await;
    let description = common::listed_tool(&tools, "run_js")["description"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        description.contains("An answer's text stays within 8 KiB"),
        "{description}"
    );
    let result = s.call(&sid, json!({ "code": LARGE[0].1 })).await;
    let text = result["content"][0]["text"].as_str().unwrap();
    let outcome = &result["structuredContent"];
    assert!(text.len() <= 8 * 1024, "{}", text.len());
    assert!(outcome.to_string().len() <= 8 * 1024);
    let note = outcome["warnings"][0].as_str().unwrap();
    assert!(
        note.contains("the rest is not kept (a stateless server keeps no runs)"),
        "{note}"
    );
    assert!(!note.contains("mcp-v8://"), "{note}");
}

/// A value out of range is refused with the variable and the range.
#[test]
fn a_budget_out_of_range_is_refused_by_name() {
    for bad in ["2", "4096", "lots"] {
        let error = mcp_v8_lambda::config::Config::from_lookup(|name| {
            (name == "MCP_V8_ANSWER_BUDGET_KB").then(|| bad.to_owned())
        })
        .unwrap_err()
        .to_string();
        assert!(error.contains("MCP_V8_ANSWER_BUDGET_KB"), "{error}");
    }
}

/// Past `MCP_V8_RECORD_MAX_MB` the record keeps what it can, and the note
/// and the stand-in say how much of how much: nothing is cut silently. Below
/// it the whole is kept beside the record, and each page of an array
/// result is a JSON array of whole elements.
#[tokio::test(flavor = "multi_thread")]
async fn the_record_keeps_the_whole_up_to_its_bound_and_says_what_it_kept_past_it() {
    let mut config = common::test_config(3600, false);
    config.engine.record_max_mb = 1;
    config.engine.max_result_bytes = 1024 * 1024;
    let s = common::server_configured(config, |stores| stores);
    let sid = s.initialize().await;

    let result = s.call(&sid, json!({ "code": LARGE[0].1 })).await;
    let note = result["structuredContent"]["warnings"][0]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        note.contains("(only its first ") && note.contains("MCP_V8_RECORD_MAX_MB"),
        "{note}"
    );
    let result = s.call(&sid, json!({ "code": LARGE[2].1 })).await;
    let stand_in = &result["structuredContent"]["result"];
    let bytes = stand_in["bytes"].as_u64().unwrap();
    assert!(
        bytes > 5_000_000,
        "the stand-in names the whole size: {stand_in}"
    );

    // Under the bound: whole, beside the record, in pages that parse.
    let result = s
        .call(&sid, json!({ "code": "Array.from({ length: 20000 }, (_, i) => ({ i, s: 'é'.repeat(i % 7) }))" }))
        .await;
    let uri = result["structuredContent"]["result"]["uri"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut rows = Vec::new();
    for n in 1.. {
        let page = read(&s, &sid, &format!("{uri}?page={n}")).await;
        let contents = &page["result"]["contents"][0];
        let items: Vec<Value> = serde_json::from_str(contents["text"].as_str().unwrap()).unwrap();
        rows.extend(items);
        let place = &contents["_meta"]["mcp-v8-lambda/page"];
        assert_eq!(place["items"]["to"], rows.len(), "{place}");
        assert_eq!(place["items"]["of"], 20000, "{place}");
        if place["page"] == place["pages"] {
            break;
        }
    }
    assert_eq!(rows.len(), 20000);
    assert_eq!(
        rows[19999],
        json!({ "i": 19999, "s": "é".repeat(19999 % 7) })
    );
    let kept = std::fs::read_dir(s.data_dir().join("records"))
        .unwrap()
        .count();
    assert!(kept >= 1, "the texts are kept under records/");
}
