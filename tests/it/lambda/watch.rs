//! Under `cargo lambda watch`: the function and its URL emulated as Lambda
//! runs them, driven by the real clients.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::clients::{SURFACE_EVENTS, drive, finish, logged_runs, names, node, project};
use crate::common;

/// `cargo lambda watch` (installed in the venv by scripts/test.sh) emulating
/// Lambda and its function URL on `port`, in a process group of its own so
/// that stopping it stops the function instance too.
struct Watch {
    child: Child,
    port: u16,
    env: Vec<(String, String)>,
    /// More arguments of `cargo lambda watch`.
    args: Vec<String>,
}

/// Variables `cargo test` sets for a test binary, which the `cargo run`
/// under `cargo lambda watch` must not inherit: build scripts watch some of
/// them (ring reruns when `CARGO_MANIFEST_DIR` changes), so with them every
/// crate above ring was rebuilt inside the test, minutes of CI's time.
/// How this test binary's crate was built, for the `cargo run` under
/// `cargo lambda watch`: its release profile when the tests are built in
/// it, so that the watch finds the binary built and rebuilds nothing. (The
/// target and the flags come from the environment scripts/test.sh exports.)
const BUILT_AS: [&str; 1] = [if cfg!(debug_assertions) {
    ""
} else {
    "--release"
}];

fn set_by_cargo_test(name: &str) -> bool {
    matches!(
        name,
        "CARGO_MANIFEST_DIR"
            | "CARGO_MANIFEST_PATH"
            | "CARGO_CRATE_NAME"
            | "CARGO_PRIMARY_PACKAGE"
            | "CARGO_TARGET_TMPDIR"
            | "CARGO_BIN_NAME"
    ) || name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_BIN_EXE_")
}

impl Watch {
    fn start(port: u16, env: Vec<(String, String)>) -> Self {
        Self::start_with(port, env, Vec::new())
    }

    fn start_with(port: u16, env: Vec<(String, String)>, args: Vec<String>) -> Self {
        use std::os::unix::process::CommandExt;
        let bin = project().join(".venv/bin");
        assert!(
            bin.join("cargo-lambda").exists(),
            "cargo-lambda is not installed: run scripts/test.sh"
        );
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let child = Command::new("cargo")
            .args([
                "lambda",
                "watch",
                "--quiet",
                // A reload mid-test would be a new instance the test did not ask for.
                "--ignore-changes",
                // The emulator's URL events carry no IAM caller: the local
                // loop as docs/deployment.md gives it.
                "--env-var",
                "MCP_V8_ALLOW_UNAUTHENTICATED=true",
                "-A",
                "127.0.0.1",
                "-P",
                &port.to_string(),
            ])
            .args(BUILT_AS.iter().copied().filter(|arg| !arg.is_empty()))
            .args(&args)
            .current_dir(project())
            .env_clear()
            .envs(std::env::vars().filter(|(name, _)| !set_by_cargo_test(name)))
            .envs(env.iter().cloned())
            .env("PATH", path)
            .env("RUST_LOG", "warn")
            // The function exits with an error when its emulator is killed;
            // one line says so, a backtrace would only bury the test output.
            .env("RUST_BACKTRACE", "0")
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting cargo lambda watch");
        let watch = Self {
            child,
            port,
            env,
            args,
        };
        watch.wait_until_the_function_answers();
        watch
    }

    /// The emulator listens before the function is built and running, and
    /// holds requests until then. A GET reaches the MCP handler only once the
    /// function runs, which answers it 405 with `Allow`; until then the probe
    /// times out or gets the emulator's own error. The budget covers a cold
    /// build, which CI's `cargo build` beforehand normally makes a no-op.
    fn wait_until_the_function_answers(&self) {
        let started = Instant::now();
        loop {
            match self.probe() {
                Ok(status) if status.starts_with("HTTP/1.1 405") => return,
                outcome => assert!(
                    started.elapsed() < Duration::from_secs(900),
                    "the function under cargo lambda watch never answered: {outcome:?}"
                ),
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// One GET of the function URL; the response's status line.
    fn probe(&self) -> std::io::Result<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        write!(
            stream,
            "GET /lambda-url/mcp-v8-lambda/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )?;
        let mut status = String::new();
        BufReader::new(stream).read_line(&mut status)?;
        Ok(status)
    }

    pub(crate) fn url(&self) -> String {
        format!(
            "http://127.0.0.1:{}/lambda-url/mcp-v8-lambda/mcp",
            self.port
        )
    }

    fn stop(&mut self) {
        let group = format!("-{}", self.child.id());
        // Already gone after a restart's stop; nothing to report then.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.wait();
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.port)).is_ok()
            && started.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops this emulator (and its function instance) and starts a new one
    /// on the same port: a cold start of a new Lambda instance.
    fn restart(&mut self) {
        self.stop();
        *self = Watch::start_with(self.port, self.env.clone(), self.args.clone());
    }

    /// `cargo lambda invoke` of an event file's text; the function URL
    /// response (`statusCode`, `headers`, `body`).
    fn invoke(&self, event: &str) -> Value {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), event).unwrap();
        let output = Command::new(project().join(".venv/bin/cargo-lambda"))
            .args([
                "lambda",
                "invoke",
                "-A",
                "127.0.0.1",
                "-P",
                &self.port.to_string(),
                "mcp-v8-lambda",
                "-F",
            ])
            .arg(file.path())
            .current_dir(project())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop();
    }
}

fn event_file(name: &str, session: &str) -> String {
    std::fs::read_to_string(project().join("events").join(format!("{name}.json")))
        .unwrap()
        .replace("REPLACE_WITH_SESSION_ID", session)
}

// `cargo lambda watch` runs the function with `cargo run`, whose build
// differs from the one `cargo test` made (no dev-dependency features), so in a
// clean clone it compiles the dependencies again. scripts/test.sh runs
// `cargo build` first, and `Watch::start` waits for the function itself, so
// the client's 60 s request timeout never covers a build.
/// Two `cargo lambda watch` emulators side by side do not both come up
/// (the second never answered in CI): the tests that start one take turns.
static ONE_EMULATOR_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Response streaming through the Lambda entry, as a function URL with
/// `InvokeMode: RESPONSE_STREAM` runs it: the TypeScript client's 14 s run
/// completes under its 10 s request timeout because progress arrives.
#[test]
fn under_cargo_lambda_watch_progress_streams_and_resets_the_client_timeout() {
    let _turn = ONE_EMULATOR_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let bucket = common::moto::unique("stream");
    let prefix = format!("{}-", common::moto::unique("s"));
    let dir = tempfile::tempdir().unwrap();
    let mut env = common::moto::serve_env(&bucket, &prefix, &dir.path().join("cache"));
    env.push(("MCP_V8_INVOKE_MODE".into(), "RESPONSE_STREAM".into()));
    common::moto::setup(&env);
    let watch = Watch::start(common::net::free_port(), env);
    let events = drive(&watch.url(), "surface", || unreachable!("no restart"));
    assert_eq!(names(&events), SURFACE_EVENTS);
}

#[test]
fn under_cargo_lambda_watch_a_session_survives_a_new_instance_and_every_event_answers() {
    let _turn = ONE_EMULATOR_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let bucket = common::moto::unique("watch");
    let prefix = format!("{}-", common::moto::unique("w"));
    let dir = tempfile::tempdir().unwrap();
    let env = common::moto::serve_env(&bucket, &prefix, &dir.path().join("cache"));
    common::moto::setup(&env);

    let mut watch = Watch::start(common::net::free_port(), env);
    let url = watch.url();
    let events = drive(&url, "replay", || watch.restart());
    assert_eq!(
        names(&events),
        ["restart", "continued", "not_found", "done"]
    );
    assert_eq!(
        events[0]["session"], events[1]["session"],
        "the new instance continued the session"
    );
    assert_eq!(
        logged_runs(&prefix, "ts-replay"),
        3,
        "every run across both instances is in the session log"
    );

    let init = watch.invoke(&event_file("initialize", ""));
    assert_eq!(init["statusCode"], 200, "{init}");
    let session = init["headers"]["mcp-session-id"]
        .as_str()
        .unwrap()
        .to_owned();
    for (name, status) in [
        ("initialized", 202),
        ("tools-list", 200),
        ("run-js", 200),
        ("unknown-session", 404),
        ("delete", 204),
        ("run-js-2026", 200),
    ] {
        let response = watch.invoke(&event_file(name, &session));
        assert_eq!(response["statusCode"], status, "{name}: {response}");
        if name == "run-js" {
            let body: Value = serde_json::from_str(response["body"].as_str().unwrap()).unwrap();
            assert_eq!(body["result"]["structuredContent"]["result"], "1", "{body}");
        }
    }
}

/// docs/deployment.md's "Local development", as a new user runs it:
/// `infra/local-stack.sh` (its build, moto, `setup`, the environment it
/// prints), then `cargo lambda watch` with the flags the docs give. A 14 s
/// run reports progress through the streamed function URL, and a run the
/// client makes a task is handed to a new invocation through the
/// emulator's own Invoke API and completes. A session's run that asks the
/// person sends its asks on the streamed response and gets the replies.
#[test]
fn under_cargo_lambda_watch_the_documented_local_stack_streams_progress_and_runs_a_task() {
    use std::os::unix::process::CommandExt;
    let _turn = ONE_EMULATOR_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let moto_port = common::net::free_port();
    /// The script's process group (moto with it), ended when the test is.
    struct Stack(Child);
    impl Drop for Stack {
        fn drop(&mut self) {
            let _ = Command::new("kill")
                .args(["-TERM", "--", &format!("-{}", self.0.id())])
                .status();
            let _ = self.0.wait();
        }
    }
    let mut stack = Stack(
        Command::new(project().join("infra/local-stack.sh"))
            .arg(moto_port.to_string())
            .args(BUILT_AS.iter().copied().filter(|arg| !arg.is_empty()))
            .current_dir(project())
            .env_clear()
            .envs(std::env::vars().filter(|(name, _)| !set_by_cargo_test(name)))
            .process_group(0)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting infra/local-stack.sh"),
    );
    // The environment the script tells the user to export.
    let mut env = Vec::new();
    let mut args = Vec::new();
    for line in BufReader::new(stack.0.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if let Some(exports) = line.strip_prefix("export ") {
            env.extend(exports.split_whitespace().filter_map(|pair| {
                let (name, value) = pair.split_once('=')?;
                Some((name.to_owned(), value.to_owned()))
            }));
        }
        if line.starts_with("cargo lambda watch") {
            // The documented command's own variables and instance count.
            let words: Vec<&str> = line.split_whitespace().collect();
            for pair in words.windows(2) {
                match pair[0] {
                    "--env-var" => {
                        let (name, value) = pair[1].split_once('=').unwrap();
                        env.push((name.to_owned(), value.to_owned()));
                    }
                    "--concurrency" => {
                        args.extend(["--concurrency".to_owned(), pair[1].to_owned()])
                    }
                    _ => {}
                }
            }
            break;
        }
    }
    assert!(
        env.iter().any(|(name, _)| name == "MCP_V8_INVOKE_MODE"),
        "the printed watch command streams responses: {env:?}"
    );
    assert!(
        env.iter().any(|(name, _)| name == "MCP_V8_TABLE_PREFIX"),
        "the script printed no environment: {env:?}"
    );
    assert!(
        !args.is_empty(),
        "the printed watch command runs instances side by side, as tasks need"
    );
    let watch = Watch::start_with(common::net::free_port(), env, args);
    let events = drive(&watch.url(), "surface", || unreachable!("no restart"));
    assert_eq!(names(&events), SURFACE_EVENTS);
    let events = drive(&watch.url(), "task", || unreachable!("no restart"));
    assert_eq!(names(&events), ["task_completed"]);
    assert_eq!(
        events[0]["messages"][0], "taskCreated",
        "the run became a task: {events:?}"
    );
    // A 2025-11-25 session whose run asks twice: each elicitation/create
    // goes out on the call's streamed function URL response, and each reply
    // (a POST that may reach another instance) comes back to the run.
    let mut asks = node();
    asks.args([watch.url().as_str(), "asks"]);
    let done = finish(asks);
    assert_eq!(
        done["asked"],
        serde_json::json!(["Factor 1?", "Factor 2?"]),
        "{done}"
    );
    assert_eq!(done["result"], "210", "{done}");
    events_readme_commands_answer_as_its_table_says(&watch);
}

/// events/README.md's commands, run as written against the documented
/// emulator (its port and a scratch directory for `/tmp/` are the only
/// changes): each row of its table gets the status it names, read from the
/// response `cargo lambda invoke` prints, though the function URL streams.
fn events_readme_commands_answer_as_its_table_says(watch: &Watch) {
    let readme = std::fs::read_to_string(project().join("events/README.md")).unwrap();
    let commands: Vec<&str> = readme
        .lines()
        .filter_map(|line| line.strip_prefix("    "))
        .filter(|line| line.starts_with("cargo lambda invoke") || line.starts_with("sed "))
        .collect();
    let [initialize, substitute, invoke] = commands[..] else {
        panic!("events/README.md gives initialize, a sed and an invoke: {commands:?}");
    };
    let scratch = tempfile::tempdir().unwrap();
    let path = format!(
        "{}:{}",
        project().join(".venv/bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |script: String, session: &str| -> Value {
        let script = script.replace("/tmp/", &format!("{}/", scratch.path().display()));
        let output = Command::new("bash")
            .args(["-euo", "pipefail", "-c", &script])
            .current_dir(project())
            .env("PATH", &path)
            .env("SESSION", session)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{script}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
            panic!(
                "{script} printed no response ({e}): {}",
                String::from_utf8_lossy(&output.stdout)
            )
        })
    };
    let port = format!(" --invoke-port {}", watch.port);
    let mut session = String::new();
    let mut rows = 0;
    for row in readme.lines().filter(|line| line.starts_with("| `")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let file = cells[1].trim_matches('`');
        let expected: u16 = cells[3]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|status| status.parse().ok())
            .unwrap_or_else(|| panic!("{row}: the expected column starts with a status"));
        let response = if file == "initialize.json" {
            assert!(
                initialize.contains("events/initialize.json"),
                "{initialize}"
            );
            run(format!("{initialize}{port}"), "")
        } else {
            let name = file.trim_end_matches(".json");
            let script = format!(
                "{}\n{}{port}",
                substitute.replace("run-js", name),
                invoke.replace("run-js", name)
            );
            run(script, &session)
        };
        rows += 1;
        assert_eq!(response["statusCode"], expected, "{file}: {response}");
        let body: Value =
            serde_json::from_str(response["body"].as_str().unwrap_or("null")).unwrap_or_default();
        match file {
            "initialize.json" => {
                session = response["headers"]["mcp-session-id"]
                    .as_str()
                    .unwrap_or_else(|| panic!("no mcp-session-id header: {response}"))
                    .to_owned();
            }
            "run-js.json" => {
                assert_eq!(body["result"]["structuredContent"]["result"], "1", "{body}");
                assert!(
                    body["result"]["structuredContent"]["heap"].is_string(),
                    "{body}"
                );
            }
            "unknown-session.json" => assert_eq!(body["error"]["code"], -32001, "{body}"),
            "run-js-2026.json" => {
                assert_eq!(
                    body["result"]["structuredContent"]["result"], "42",
                    "{body}"
                );
                assert_eq!(body["result"]["resultType"], "complete", "{body}");
            }
            _ => {}
        }
    }
    let files = std::fs::read_dir(project().join("events"))
        .unwrap()
        .filter(|entry| {
            entry
                .as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".json")
        })
        .count();
    assert_eq!(rows, files, "the table has a row for every event file");
}
