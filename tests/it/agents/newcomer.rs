//! What a model meets writing the code it writes everywhere else, read as
//! the model reads it: through the official TypeScript SDK, over HTTP
//! (`serve`) and stdio. Each case is one `run_js` call; `ts_client.mjs
//! calls` sends them and prints the answers.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::clients::{Serve, finish, node};
use crate::common;
use crate::common::npm;
use crate::engine::code_mode::{TOOLS, Upstream, servers_json};

/// The answers to `calls`, over HTTP and over stdio (each on its own data
/// directory).
fn answers(calls: &Value) -> [Vec<Value>; 2] {
    answers_with(calls, &[], |_| {})
}

/// The answers to `calls` from servers with the variables `env`, each on a
/// data directory `prepare` was given first.
fn answers_with(calls: &Value, env: &[(&str, String)], prepare: impl Fn(&Path)) -> [Vec<Value>; 2] {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(name, value)| ((*name).to_owned(), value.clone()))
        .collect();
    // In a file: a call may be larger than a command line may be.
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), calls.to_string()).unwrap();
    let calls = format!("@{}", file.path().display());
    let http = {
        let dir = tempfile::tempdir().unwrap();
        prepare(dir.path());
        let serve = Serve::at_with(dir.path(), common::net::free_port(), env.clone());
        let mut command = node();
        command.args([serve.url(), "calls".into(), calls.clone()]);
        finish(command)
    };
    let stdio = {
        let dir = tempfile::tempdir().unwrap();
        prepare(dir.path());
        let variables: serde_json::Map<String, Value> = env
            .iter()
            .map(|(name, value)| (name.clone(), Value::String(value.clone())))
            .collect();
        let mut command = node();
        command
            .args([env!("CARGO_BIN_EXE_mcp-v8-lambda"), "calls"])
            .arg(&calls)
            .arg(dir.path())
            .arg(Value::Object(variables).to_string());
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
/// npm's `buffer/` specifier, `global`; a `Buffer` kept in a heap is still
/// one when the heap is restored, and `process.exit` ends the run saying so.
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
        {"code": "global === globalThis && global.Buffer === Buffer"},
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
        assert_eq!(results[11], "true", "{}", answers[11]);
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
            "setInterval (every 100 ms)",
            "1 setTimeout",
            "clearInterval(what setInterval returned)",
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

/// A package that requires a Node module by its npm name
/// (readable-stream 2 needs `string_decoder/`) is installed by the CLI and
/// works in a run; one that cannot load is refused, naming what it lacks.
#[test]
fn packages_that_need_node_module_names_load() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let registry = runtime.block_on(npm::start(&[]));
    let add = |dir: &Path, spec: &str| {
        Command::new(env!("CARGO_BIN_EXE_mcp-v8-lambda"))
            .args(["packages", "add", "--registry", &registry.url, "--data-dir"])
            .arg(dir)
            .arg(spec)
            .env_remove("MCP_V8_HEAP_BUCKET")
            .output()
            .unwrap()
    };
    let prepare = |dir: &Path| {
        let added = add(dir, "readable-stream@^2");
        assert_eq!(
            String::from_utf8_lossy(&added.stdout),
            "added readable-stream@2.3.8\n",
            "{added:?}"
        );
        let refused = add(dir, &npm::fixture("get-port").display().to_string());
        assert!(!refused.status.success());
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(
            stderr.contains("get-port@5.1.1 was bundled but does not load")
                && stderr.contains("Cannot find module 'node:net'"),
            "{stderr}"
        );
    };
    let calls = json!([{"code": "const { Readable } = require('readable-stream');\n\
        const r = new Readable({ read() {} });\n\
        r.setEncoding('utf8');\n\
        r.push(Buffer.from('h\\u00e9llo'));\n\
        r.read()"}]);
    for answers in answers_with(&calls, &[], prepare) {
        assert_eq!(
            answers[0]["structured"]["result"], "\"h\u{e9}llo\"",
            "{answers:?}"
        );
    }
}

/// Code mode as an agent uses it: a tool that returns a number gives the
/// number, conversions are text and no call, the server and its tools can
/// be listed and printed; a server or tool that is not there is an error
/// that says where to look.
#[test]
fn code_mode_gives_values_and_shows_what_it_has() {
    let upstream = Upstream::modern();
    let env = [("MCP_V8_MCP_SERVERS", servers_json(&[("demo", &upstream)]))];
    let calls = json!([
        {"code": "const total = await mcp.demo.count({ text: 'one two three' }); total + 1"},
        {"code": "['' + mcp.demo, `${mcp.demo}`, typeof mcp.demo.then, Object.keys(mcp.demo).sort(), 'count' in mcp.demo]"},
        {"code": "console.log(mcp.demo); 1"},
        {"code": "await mcp.github.search({ q: 'x' })"},
        {"code": "typeof mcp.demo.readResource + ' ' + typeof mcp.demo.echo"},
        {"code": "await mcp.demo.readResource({ uri: 'x' })"},
    ]);
    for answers in answers_with(&calls, &env, |_| {}) {
        let [count, probes, printed, no_server, kinds, no_tool] = &answers[..] else {
            panic!("{answers:?}")
        };
        assert_eq!(count["structured"]["result"], "4", "{count}");
        let probes = &probes["structured"];
        assert_eq!(
            serde_json::from_str::<Value>(probes["result"].as_str().unwrap()).unwrap(),
            json!([
                "[mcp server demo]",
                "[mcp server demo]",
                "undefined",
                TOOLS,
                true
            ]),
            "{probes}"
        );
        assert!(
            probes.get("mcp_calls").is_none_or(Value::is_null),
            "{probes}"
        );
        let text = printed.to_string();
        // The server's tools in its own order, with their arguments.
        assert!(
            text.contains("mcp.demo { add(a, b), count(text), echo(text), code(n), "),
            "{printed}"
        );
        let said = no_server.to_string();
        assert!(
            said.contains("`mcp.github` is undefined") && said.contains("`mcp.servers` names"),
            "{no_server}"
        );
        assert_eq!(
            kinds["structured"]["result"], "\"undefined function\"",
            "{kinds}"
        );
        let said = no_tool.to_string();
        assert!(
            said.contains("lists no tool") && said.contains("mcp.listTools("),
            "{no_tool}"
        );
    }
}

/// A request over the body limit is answered, over stdio and HTTP, with
/// an error the SDK hands the caller naming the variable that raises it;
/// a heap grown under a larger memory limit is continued without it.
#[test]
fn requests_over_limits_are_answered_and_large_heaps_continue() {
    let csv = "a,b\n".repeat(1_100_000 / 4);
    let calls = json!([
        {"code": "1", "files": [{"path": "big.csv", "text": csv}]},
        {"code": "globalThis.big = Array.from({ length: 700000 }, (_, i) => ({ i, s: 'item-' + i })); big.length",
         "heap_memory_max_mb": 256, "session": "big-data"},
        {"code": "big.length + 1", "heap": "latest", "session": "big-data"},
    ]);
    for answers in answers(&calls) {
        let [refused, grown, continued] = &answers[..] else {
            panic!("{answers:?}")
        };
        let said = refused.to_string();
        assert!(said.contains("MCP_V8_MAX_BODY_BYTES"), "{said}");
        assert_eq!(grown["structured"]["result"], "700000", "{grown}");
        assert_eq!(continued["structured"]["result"], "700001", "{continued}");
    }
}
