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

/// Node code runs: `Buffer`, `process` (an empty `env`, `/work` as the
/// working directory, `nextTick`, `hrtime`), `node:events`, `node:util`,
/// `node:stream` over `/work` files, `node:string_decoder`, `node:assert`,
/// npm's `buffer/` specifier; a `Buffer` kept in a heap is still one when
/// the heap is restored, and `process.exit` ends the run saying so.
#[test]
fn node_code_runs_with_its_everyday_globals_and_modules() {
    let session = |code: &str| json!({"code": code, "session": "node", "heap": "latest"});
    let calls = json!([
        session("globalThis.b = Buffer.from('hello'); b.toString('base64')"),
        session("Buffer.isBuffer(b) && b instanceof Uint8Array && b.toString('hex')"),
        {"code": "[process.env.HOME, process.cwd(), process.platform, typeof process.hrtime.bigint()]"},
        {"code": "process.nextTick(() => console.log('tick')); console.log('first'); 1"},
        {"code": "const { EventEmitter } = require('node:events'); const e = new EventEmitter(); \
                  let got; e.once('x', (v) => got = v); e.emit('x', 7); got"},
        {"code": "const util = require('util'); util.format('%s=%d %j', 'a', 1, {b: 2})"},
        {"code": "const fs = require('fs'); const { pipeline } = require('node:stream/promises'); \
                  fs.writeFileSync('in.csv', 'a,b\\n1,2\\n'); \
                  await pipeline(fs.createReadStream('in.csv'), fs.createWriteStream('out.csv')); \
                  fs.readFileSync('out.csv', 'utf8')"},
        {"code": "const { StringDecoder } = require('string_decoder'); \
                  const d = new StringDecoder('utf8'); d.write(Buffer.from([0xe2, 0x82])) + d.end(Buffer.from([0xac]))"},
        {"code": "const assert = require('node:assert'); \
                  try { assert.deepStrictEqual({a: 1}, {a: 2}); 'no' } catch (e) { e.code }"},
        {"code": "require('buffer/').Buffer === Buffer"},
        {"code": "console.log('before'); process.exit(0); 'after'"},
    ]);
    for answers in answers(&calls) {
        let results: Vec<&Value> = answers.iter().map(|a| &a["structured"]["result"]).collect();
        let expected = [
            json!("\"aGVsbG8=\""),
            json!("\"68656c6c6f\""),
            json!("[null,\"/work\",\"linux\",\"bigint\"]"),
            json!("1"),
            json!("7"),
            json!("\"a=1 {\\\"b\\\":2}\""),
            json!("\"a,b\\n1,2\\n\""),
            json!("\"€\""),
            json!("\"ERR_ASSERTION\""),
            json!("true"),
        ];
        for (i, want) in expected.iter().enumerate() {
            assert_eq!(results[i], want, "call {i}: {}", answers[i]);
        }
        assert_eq!(
            answers[3]["structured"]["output"], "first\ntick\n",
            "{}",
            answers[3]
        );
        let exit = &answers[10];
        assert_eq!(exit["structured"]["status"], "failed", "{exit}");
        assert_eq!(exit["structured"]["output"], "before\n", "{exit}");
        let message = exit["structured"]["error"]["message"].as_str().unwrap();
        assert!(message.contains("process.exit(0) ended the run"), "{exit}");
    }
}

/// A run that ends at its timeout because an interval was left running
/// says which timers were pending and how to stop them.
#[test]
fn a_timeout_names_the_timers_left_running() {
    let calls = json!([
        {"code": "let n = 0; setInterval(() => n++, 100); setTimeout(() => {}, 60000); 'started'",
         "execution_timeout_secs": 1},
    ]);
    for answers in answers(&calls) {
        let outcome = &answers[0]["structured"];
        assert_eq!(outcome["status"], "timed_out", "{outcome}");
        let message = outcome["error"]["message"].as_str().unwrap();
        for part in [
            "setInterval id 1 (every 100 ms)",
            "1 setTimeout",
            "clearInterval(id)",
        ] {
            assert!(message.contains(part), "{part}: {message}");
        }
    }
}

/// A fetch the egress policy refuses is named in the run's warnings even
/// when the code (or a library such as axios, which reports a bare
/// "Network Error") caught the error.
#[test]
fn a_refused_fetch_is_a_warning_whatever_the_code_did_with_it() {
    let calls = json!([
        {"code": "try { await fetch('https://example.com/data.json') } catch {} 'swallowed'"},
        {"code": "1 + 1", "heap": ""},
    ]);
    for answers in answers(&calls) {
        let outcome = &answers[0]["structured"];
        assert_eq!(outcome["result"], "\"swallowed\"", "{outcome}");
        let warnings = outcome["warnings"].to_string();
        for part in [
            "fetch of https://example.com/data.json was refused",
            "MCP_V8_FETCH_ALLOW",
        ] {
            assert!(warnings.contains(part), "{part}: {outcome}");
        }
        assert_eq!(
            answers[1]["structured"]["warnings"],
            json!([]),
            "{}",
            answers[1]
        );
    }
}
