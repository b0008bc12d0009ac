//! Every example in the built-in skills, run as a model would and checked to
//! do what its text says, and the matcher that checks them.

use super::*;

/// One example call of a skill: a tool and its arguments, and what its
/// answer must hold.
struct Example {
    file: String,
    tool: String,
    arguments: String,
    expected: Option<Value>,
}

/// The examples of a skill file: each ```json <tool> block is a call, and
/// a ```json answer block after it what the answer's text (the JSON a model
/// reads) must hold. Any other code block is an error: every example runs.
fn examples_of(file: &str, text: &str) -> Result<Vec<Example>, String> {
    let mut examples: Vec<Example> = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(info) = line.strip_prefix("```") else {
            continue;
        };
        let body: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.starts_with("```"))
            .collect();
        let body = body.join("\n");
        match info.split_whitespace().collect::<Vec<_>>().as_slice() {
            ["json", "answer"] => {
                let last = examples
                    .last_mut()
                    .filter(|last| last.expected.is_none())
                    .ok_or(format!("{file}: an answer that follows no call"))?;
                last.expected =
                    Some(serde_json::from_str(&body).map_err(|e| {
                        format!("{file}: an answer that is not JSON ({e}): {body}")
                    })?);
            }
            ["json", tool] => examples.push(Example {
                file: file.to_owned(),
                tool: (*tool).to_owned(),
                arguments: body,
                expected: None,
            }),
            other => {
                return Err(format!(
                    "{file}: a code block ({other:?}) the examples test cannot run"
                ));
            }
        }
    }
    Ok(examples)
}

/// Whether `actual` holds `expected`: objects hold the expected keys,
/// arrays the same number of elements, and an expected string with `…`
/// matches any text around its parts, in order.
fn holds(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::Object(actual), Value::Object(expected)) => expected
            .iter()
            .all(|(key, value)| actual.get(key).is_some_and(|a| holds(a, value))),
        (Value::Array(actual), Value::Array(expected)) => {
            actual.len() == expected.len() && actual.iter().zip(expected).all(|(a, e)| holds(a, e))
        }
        (Value::String(actual), Value::String(expected)) if expected.contains('…') => {
            let parts: Vec<&str> = expected.split('…').collect();
            let mut rest = actual.as_str();
            for (i, part) in parts.iter().enumerate() {
                if i == 0 {
                    let Some(after) = rest.strip_prefix(part) else {
                        return false;
                    };
                    rest = after;
                } else if i == parts.len() - 1 && !part.is_empty() {
                    return rest.ends_with(part);
                } else {
                    let Some(at) = rest.find(part) else {
                        return false;
                    };
                    rest = &rest[at + part.len()..];
                }
            }
            true
        }
        (Value::Array(actual), Value::String(expected)) if expected.contains('…') => {
            // A list of sentences of which one holds the pattern.
            actual
                .iter()
                .any(|a| holds(a, &Value::String(expected.clone())))
        }
        _ => actual == expected,
    }
}

/// The skill files `host` serves, by URI.
async fn served_files(host: &mut impl Host) -> Vec<(String, String)> {
    let mut files = Vec::new();
    let listed = host.call("skills/list", json!({})).await.unwrap();
    for entry in listed["skills"].as_array().unwrap() {
        for resource in entry["resources"].as_array().unwrap() {
            let uri = resource["uri"].as_str().unwrap().to_owned();
            let read = host
                .call("resources/read", json!({"uri": uri}))
                .await
                .unwrap();
            let text = read["contents"][0]["text"].as_str().unwrap().to_owned();
            files.push((uri, text));
        }
    }
    files
}

/// `arguments` with `<heap of call N>` and `<execution_id of call N>`
/// replaced by what call N of the same file answered.
fn filled(arguments: &str, answers: &[Value]) -> String {
    let mut text = arguments.to_owned();
    for (field, label) in [("heap", "heap"), ("execution_id", "execution_id")] {
        for (i, answer) in answers.iter().enumerate() {
            let placeholder = format!("<{label} of call {}>", i + 1);
            if let Some(value) = answer[field].as_str() {
                text = text.replace(&placeholder, value);
            }
        }
    }
    assert!(
        !text.contains("<heap of") && !text.contains("<execution_id of"),
        "{text}"
    );
    text
}

/// Every example of the built-in skills, as served, run against `serve`
/// (with lodash installed and an upstream MCP server, so every skill is
/// there): each call's answer holds what the skill says it does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_example_in_the_builtin_skills_does_what_it_says() {
    let upstream = crate::engine::code_mode::Upstream::session_era();
    let data = tempfile::tempdir().unwrap();
    let added = Command::new(env!("CARGO_BIN_EXE_mcp-v8-lambda"))
        .args(["packages", "add", "--data-dir"])
        .arg(data.path())
        .arg(common::npm::fixture("lodash"))
        .output()
        .unwrap();
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    let servers = crate::engine::code_mode::servers_json(&[("demo", &upstream)]);
    let serve = crate::common::process::Serve::at_with(
        data.path(),
        common::net::free_port(),
        vec![("MCP_V8_MCP_SERVERS".to_owned(), servers)],
    );
    let mut host = Http::new(serve.url(), Era::Sessionless).await;
    let files = served_files(&mut host).await;
    let skills: std::collections::BTreeSet<&str> = files
        .iter()
        .filter_map(|(uri, _)| uri.strip_suffix("/SKILL.md"))
        .collect();
    assert_eq!(
        skills.len(),
        BUILTIN_NAMES.len() + 1,
        "code-mode too: {skills:?}"
    );
    let mut ran = 0;
    // Every mismatch, so one run shows them all.
    let mut mismatches = Vec::new();
    for (uri, text) in &files {
        let mut answers: Vec<Value> = Vec::new();
        for example in examples_of(uri, text).unwrap() {
            let arguments: Value = serde_json::from_str(&filled(&example.arguments, &answers))
                .unwrap_or_else(|e| panic!("{}: arguments that are not JSON ({e})", example.file));
            let result = host
                .call(
                    "tools/call",
                    json!({"name": example.tool, "arguments": arguments}),
                )
                .await
                .unwrap_or_else(|e| panic!("{}: {} failed: {e:?}", example.file, example.tool));
            let text = result["content"][0]["text"].as_str().unwrap();
            let answer: Value = serde_json::from_str(text).unwrap_or_else(|_| json!(text));
            let expected = example
                .expected
                .as_ref()
                .unwrap_or_else(|| panic!("{}: a call without an answer", example.file));
            if !holds(&answer, expected) {
                mismatches.push(format!(
                    "{}: {} {}\nanswered {answer:#}\nthe skill says {expected:#}",
                    example.file, example.tool, example.arguments
                ));
            }
            answers.push(answer);
            ran += 1;
        }
    }
    eprintln!("{ran} examples ran");
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n\n"));
    assert!(ran >= 20, "only {ran} examples ran");
}

/// The examples test can fail: an answer that lacks a field, has another
/// value or another number of elements does not hold what a skill says,
/// and a code block it cannot run is refused.
#[test]
fn the_example_matcher_refuses_what_an_answer_does_not_hold() {
    let answer = json!({"status": "completed", "result": "'done'", "warnings": ["a heap was not found; pass heap: \"latest\""],
                        "entries": [{"index": 5, "output_heap": "ab"}]});
    for (expected, held) in [
        (json!({"status": "completed"}), true),
        (json!({"result": "'…'"}), true),
        (json!({"warnings": ["…latest…"]}), true),
        (json!({"warnings": "…latest…"}), true),
        (json!({"entries": [{"index": 5, "output_heap": "…"}]}), true),
        (json!({"status": "failed"}), false),
        (json!({"error": {"name": "SyntaxError"}}), false),
        (json!({"result": "'undone'"}), false),
        (json!({"warnings": ["…stored…"]}), false),
        (json!({"entries": [{"index": 4}]}), false),
        (json!({"entries": [{"index": 5}, {"index": 6}]}), false),
        (json!({"result": "'done'…x"}), false),
    ] {
        assert_eq!(holds(&answer, &expected), held, "{expected}");
    }
    let examples = examples_of(
        "t.md",
        "```json run_js\n{\"code\": \"1\"}\n```\n\n```json answer\n{\"result\": \"1\"}\n```\n",
    )
    .unwrap();
    assert_eq!(examples.len(), 1);
    assert_eq!(examples[0].tool, "run_js");
    let refused = examples_of("t.md", "```js\n1 + 1\n```\n")
        .err()
        .unwrap_or_default();
    assert!(
        refused.contains("cannot run"),
        "a block the test cannot run is refused"
    );
    assert!(examples_of("t.md", "```json answer\n{}\n```\n").is_err());
}
