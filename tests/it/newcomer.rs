//! What a model meets writing the code it writes everywhere else, read as
//! the model reads it: through the official TypeScript SDK, over HTTP
//! (`serve`) and stdio. Each case is one `run_js` call; `ts_client.mjs
//! calls` sends them and prints the answers.

use serde_json::{Value, json};

use crate::common;
use crate::e2e::{Serve, finish, node};

/// The answers to `calls`, over HTTP and over stdio (each on its own data
/// directory).
fn answers(calls: &Value) -> [Vec<Value>; 2] {
    let http = {
        let dir = tempfile::tempdir().unwrap();
        let serve = Serve::start(dir.path(), common::net::free_port());
        let mut command = node();
        command.args([serve.url(), "calls".into(), calls.to_string()]);
        finish(command)
    };
    let stdio = {
        let dir = tempfile::tempdir().unwrap();
        let mut command = node();
        command
            .args([env!("CARGO_BIN_EXE_mcp-v8-lambda"), "calls"])
            .arg(calls.to_string())
            .arg(dir.path());
        finish(command)
    };
    [http, stdio].map(|done| {
        assert_eq!(done["event"], "done", "{done}");
        done["answers"].as_array().unwrap().clone()
    })
}

/// Syntax errors name the mistake in the code as sent: a typo in
/// TypeScript is not blamed on its types, a typo beside top-level `await`
/// is not an `await` error; a class and an `await` on one line run; code
/// pasted in a Markdown fence runs, with a warning that says so.
#[test]
fn syntax_errors_blame_the_mistake_and_pasted_code_runs() {
    let calls = json!([
        {"code": "type A = { x: number };\nconst a: A = { x: 1 };\nconst b = a.x +;"},
        {"code": "const a = await Promise.resolve(1);\nif (a > 0 {\n}"},
        {"code": "const a = await Promise.resolve(1);\nif (a > 0 {\n}", "language": "javascript"},
        {"code": "class K { v() { return 7 } } await null; new K().v()"},
        {"code": "```js\nconst x = 20;\nx * 2 + 2\n```"},
    ]);
    for answers in answers(&calls) {
        let [ts, tla, tla_js, class, fenced] = &answers[..] else {
            panic!("{answers:?}")
        };
        for (answer, line) in [(ts, 3), (tla, 2), (tla_js, 2)] {
            assert_eq!(answer["isError"], true, "{answer}");
            let error = &answer["structured"]["error"];
            assert_eq!(error["name"], "SyntaxError", "{answer}");
            let message = error["message"].as_str().unwrap();
            assert!(message.contains(&format!("(line {line},")), "{answer}");
            assert!(!message.contains("await"), "{answer}");
        }
        assert_eq!(class["structured"]["result"], "7", "{class}");
        assert_eq!(fenced["structured"]["result"], "42", "{fenced}");
        let warnings = fenced["structured"]["warnings"].to_string();
        assert!(warnings.contains("Markdown fence"), "{fenced}");
    }
}
