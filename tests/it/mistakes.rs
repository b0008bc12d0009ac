//! Mistakes agents make, and what the answer says: the cause, what to
//! change, and the line. Each row is one `run_js` call (after the calls
//! `before` it in the same logical session) and the words its error or
//! warnings must have, or must not.

use serde_json::{Value, json};

use crate::common::{self, Server};

struct Mistake {
    what: &'static str,
    /// Calls made first, in the same session.
    before: &'static [&'static str],
    arguments: Value,
    /// Words the answer's error message (or, for a completed run, its
    /// warnings) must have.
    says: &'static [&'static str],
    /// Words it must not have.
    not: &'static [&'static str],
}

/// The text a row is read in: the error's message and stack, else the
/// warnings.
fn said(result: &Value) -> String {
    let outcome = &result["structuredContent"];
    match outcome["error"].as_object() {
        Some(error) => format!(
            "{}: {}\n{}",
            error["name"].as_str().unwrap_or_default(),
            error["message"].as_str().unwrap_or_default(),
            error
                .get("stack")
                .and_then(Value::as_str)
                .unwrap_or_default()
        ),
        None => outcome["warnings"].to_string(),
    }
}

async fn answer(s: &Server, sid: &str, session: &str, mistake: &Mistake) -> Value {
    for code in mistake.before {
        let result = s
            .call(
                sid,
                json!({"code": code, "session": session, "heap": "latest"}),
            )
            .await;
        assert_eq!(
            result["structuredContent"]["status"], "completed",
            "{}: {result}",
            mistake.what
        );
    }
    let mut arguments = mistake.arguments.clone();
    if !mistake.before.is_empty() {
        arguments["session"] = json!(session);
        arguments["heap"] = json!("latest");
    }
    s.call(sid, arguments).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_mistake_is_answered_with_its_cause_its_fix_and_its_line() {
    let mistakes = [
        Mistake {
            what: "a loop past the timeout",
            before: &[],
            arguments: json!({"code": "let i = 0;\nwhile (true) i++;", "execution_timeout_secs": 1}),
            says: &[
                "did not finish within 1000 ms and was terminated while running (line 2,",
                "run_js.js:2:",
                "raise execution_timeout_secs (this run had 1 s; at most",
                "in parts over several runs",
            ],
            not: &[],
        },
        Mistake {
            what: "data past the heap limit",
            before: &[],
            arguments: json!({"code": "const rows = [];\nwhile (true) rows.push(new Array(1e6).fill(1));"}),
            says: &[
                "reached its 64 MiB limit",
                "raise heap_memory_max_mb (this run had 64 MiB; at most",
                "/work files",
            ],
            not: &[],
        },
        Mistake {
            what: "the same cell run twice in a continued heap",
            before: &["const sales = [1, 2];"],
            arguments: json!({"code": "const sales = [3, 4];\nsales.length"}),
            says: &[
                "Identifier 'sales' has already been declared (line 1",
                "an earlier run of this heap declared `sales`",
                "`sales = …`",
                "heap \"\"",
            ],
            not: &[],
        },
        Mistake {
            what: "a name declared twice in one run",
            before: &["globalThis.seen = 1;"],
            arguments: json!({"code": "let total = 1;\nlet total = 2;"}),
            says: &["Identifier 'total' has already been declared"],
            not: &["earlier run"],
        },
        Mistake {
            what: "a thrown string",
            before: &[],
            arguments: json!({"code": "const v = 3;\nthrow 'value too large: ' + v;"}),
            says: &[
                "value too large: 3 (line 2, column 1)",
                "not an Error",
                "throw new Error",
                "run_js.js:2:1",
            ],
            not: &[],
        },
        Mistake {
            what: "a thrown object",
            before: &[],
            arguments: json!({"code": "throw { code: 42 };"}),
            says: &["{ code: 42 } (line 1, column 1)", "not an Error"],
            not: &[],
        },
        Mistake {
            what: "a promise left unawaited that never settles",
            before: &[],
            arguments: json!({"code": "new Promise(() => {})"}),
            says: &["never settled", "was an `await` missing?"],
            not: &[],
        },
        Mistake {
            what: "an argument of the wrong type",
            before: &[],
            arguments: json!({"code": "1", "heap_memory_max_mb": "lots"}),
            says: &["`heap_memory_max_mb`", "expected a non-negative integer"],
            not: &["at line 1 column", "usize", "Some("],
        },
        Mistake {
            what: "a timeout argument by Node's name",
            before: &[],
            arguments: json!({"code": "1", "timeout": 5}),
            says: &["unknown field `timeout`", "execution_timeout_secs"],
            not: &["at line 1 column"],
        },
    ];
    let s = common::server();
    let sid = s.initialize().await;
    let mut failures = Vec::new();
    for (i, mistake) in mistakes.iter().enumerate() {
        let result = answer(&s, &sid, &format!("mistake-{i}"), mistake).await;
        let text = match result["structuredContent"].as_object() {
            Some(_) => said(&result),
            // An argument error is a tool error without an outcome.
            None => result["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        };
        for word in mistake.says {
            if !text.contains(word) {
                failures.push(format!("{}: lacks {word:?} in {text:?}", mistake.what));
            }
        }
        for word in mistake.not {
            if text.contains(word) {
                failures.push(format!("{}: has {word:?} in {text:?}", mistake.what));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `await (…)` at the top level awaits, fresh and in a continued heap, as
/// Node's REPL does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn await_before_a_parenthesis_awaits_fresh_and_continued() {
    let s = common::server();
    let sid = s.initialize().await;
    let fresh = s
        .call(&sid, json!({"code": "String(await (Promise.resolve(3)))"}))
        .await;
    assert_eq!(fresh["structuredContent"]["result"], "\"3\"", "{fresh}");
    let first = s
        .call(
            &sid,
            json!({"code": "globalThis.p = Promise.resolve(4); 1", "session": "aw", "heap": "latest"}),
        )
        .await;
    assert_eq!(first["structuredContent"]["status"], "completed", "{first}");
    let continued = s
        .call(
            &sid,
            json!({"code": "JSON.stringify({ v: await (p) })", "session": "aw", "heap": "latest"}),
        )
        .await;
    assert_eq!(
        continued["structuredContent"]["result"], "\"{\\\"v\\\":4}\"",
        "{continued}"
    );
}
