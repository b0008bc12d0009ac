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
                "was large values (each over about 128 KiB",
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
        Mistake {
            what: "a top-level return",
            before: &[],
            arguments: json!({"code": "const total = 1 + 2;\nreturn total;"}),
            says: &[
                "Illegal return statement (line 2",
                "leave `return` out",
                "`return x` becomes `x`",
            ],
            not: &[],
        },
        Mistake {
            what: "Python's print",
            before: &[],
            arguments: json!({"code": "print('hi')"}),
            says: &["print is not defined", "use console.log"],
            not: &["fresh isolate"],
        },
        Mistake {
            what: "a browser's document",
            before: &[],
            arguments: json!({"code": "document.title = 'report';"}),
            says: &[
                "document is not defined",
                "not a browser",
                "display(html, { mimeType: \"text/html\" })",
            ],
            not: &[],
        },
        Mistake {
            what: "a browser's localStorage",
            before: &[],
            arguments: json!({"code": "localStorage.setItem('k', '1');"}),
            says: &["localStorage is not defined", "no storage", "/work files"],
            not: &[],
        },
        Mistake {
            what: "a core module as Node's REPL has it, without require",
            before: &[],
            arguments: json!({"code": "const text = fs.readFileSync('/work/a.txt', 'utf8');"}),
            says: &["fs is not defined", "`const fs = require('node:fs')`"],
            not: &[],
        },
        Mistake {
            what: "a name of an earlier run, in a fresh isolate",
            before: &[],
            arguments: json!({"code": "sales.length"}),
            says: &[
                "sales is not defined",
                "started from a fresh isolate",
                "heap: \"latest\"",
            ],
            not: &[],
        },
        Mistake {
            what: "a name of a heap that is in no store",
            before: &[],
            arguments: json!({
                "code": "data.rows",
                "heap": "0000000000000000000000000000000000000000000000000000000000000000"
            }),
            says: &[
                "data is not defined",
                "heap 0000000000000000000000000000000000000000000000000000000000000000 was not found in storage",
                "list_session_snapshots",
                "define `data` again",
            ],
            not: &[],
        },
        Mistake {
            what: "a write stream into a directory that does not exist",
            before: &[],
            arguments: json!({"code": "const fs = require('node:fs');\nconst out = fs.createWriteStream('reports/out.csv');\nout.write('a,b\\n');\nawait new Promise((ok, fail) => { out.on('error', fail); out.on('finish', ok); out.end(); });"}),
            says: &[
                "ENOENT: no such file or directory, open 'reports/out.csv'",
                "directory '/work/reports' does not exist",
                "fs.mkdirSync('/work/reports', { recursive: true })",
                "The stream was created at:",
                "run_js.js:2:",
            ],
            not: &[],
        },
        Mistake {
            what: "a const of an earlier run assigned again",
            before: &["const rate = 0.1;"],
            arguments: json!({"code": "rate = 0.2;"}),
            says: &[
                "Assignment to constant variable.",
                "an earlier run of this heap declared stays const",
                "another name",
            ],
            not: &[],
        },
        Mistake {
            what: "await in a function that is not async",
            before: &[],
            arguments: json!({"code": "function load() {\n  return await Promise.resolve(1);\n}"}),
            says: &["(line 2", "mark the function that holds it async"],
            not: &[],
        },
        Mistake {
            what: "a timeout past the maximum",
            before: &[],
            arguments: json!({"code": "1", "execution_timeout_secs": 100000}),
            says: &[
                "execution_timeout_secs is at most",
                "in parts over several runs",
            ],
            not: &["positive number"],
        },
        Mistake {
            what: "a heap limit past the maximum",
            before: &[],
            arguments: json!({"code": "1", "heap_memory_max_mb": 100000}),
            says: &[
                "heap_memory_max_mb must be from 8 to",
                "got 100000",
                "/work files",
            ],
            not: &[],
        },
        Mistake {
            what: "data inlined in code past its limit",
            before: &[],
            arguments: json!({"code": format!("const data = {:?};", "x".repeat(1_100_000))}),
            says: &["over the 1048576-byte limit", "pass data as `files`"],
            not: &[],
        },
        Mistake {
            what: "a log of megabytes",
            before: &[],
            arguments: json!({"code": "for (let i = 0; i < 200000; i++) console.log(`row ${i}`);"}),
            says: &[
                "over this answer's budget of 32768 bytes (MCP_V8_ANSWER_BUDGET_KB)",
                "its first and last",
                "/output",
            ],
            not: &[],
        },
        Mistake {
            what: "a result of 100k rows",
            before: &[],
            arguments: json!({"code": "Array.from({ length: 100000 }, (_, i) => ({ i, name: `n${i}` }))"}),
            says: &[
                "over this answer's budget",
                "keep it in a variable",
                "/result",
            ],
            not: &[],
        },
    ];
    // The body limit lets the row with 1 MB of code reach the engine.
    let mut config = common::test_config(3600, false);
    config.transport.max_body_bytes = 4 << 20;
    let s = common::server_configured(config, |stores| stores);
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

/// An out-of-memory message names the limit the run had: a heap kept
/// ready under the limit its call asked for keeps that limit for a call
/// that names none, and the message says that one, not the default.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_memory_names_the_limit_the_run_had() {
    let s = common::server_with_workers(common::test_config(3600, false), 2, |stores| stores);
    let sid = s.initialize().await;
    let first = s
        .call(
            &sid,
            json!({"code": "globalThis.n = 1", "session": "lim", "heap": "latest", "heap_memory_max_mb": 48}),
        )
        .await;
    assert_eq!(first["structuredContent"]["status"], "completed", "{first}");
    let message = out_of_memory_message(&s, &sid, "lim").await;
    assert!(message.contains("(this run had 48 MiB;"), "{message}");
}

/// The message of a run in `session`'s latest heap that fills memory
/// until it runs out, which it must.
async fn out_of_memory_message(s: &common::Server, sid: &str, session: &str) -> String {
    let ran = s
        .call(
            sid,
            json!({
                "code": "const rows = [];\nwhile (true) rows.push(new Array(1e5).fill(1));",
                "session": session,
                "heap": "latest"
            }),
        )
        .await;
    let outcome = &ran["structuredContent"];
    assert_eq!(outcome["status"], "out_of_memory", "{ran}");
    outcome["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A continued heap too large for the default limit is restored under a
/// limit raised for its size, though the call names none (no heap is kept
/// ready here, so it is read from the store): running out of memory then
/// names the limit the run had, not the default it did not have.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_memory_in_a_large_continued_heap_names_the_raised_limit() {
    let mut config = common::test_config(3600, false);
    config.engine.ready_heaps_mb_set = Some(0);
    let s = common::server_with_engine(
        config,
        2,
        |stores| stores,
        |engine| engine.default_heap_limit_mb = 16,
    );
    let sid = s.initialize().await;
    let first = s
        .call(
            &sid,
            json!({
                "code": "globalThis.big = Array.from({ length: 1.5e6 }, (_, i) => i + 0.5); big.length",
                "session": "large",
                "heap": "latest",
                "heap_memory_max_mb": 96
            }),
        )
        .await;
    assert_eq!(first["structuredContent"]["status"], "completed", "{first}");
    let message = out_of_memory_message(&s, &sid, "large").await;
    let had: usize = message
        .split("(this run had ")
        .nth(1)
        .and_then(|rest| rest.split(" MiB").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no limit named: {message}"));
    // Raised past the default by what the ~12 MB heap needs to restore.
    assert!(
        had >= 32,
        "the run had more than the default 16 MiB: {message}"
    );
}
