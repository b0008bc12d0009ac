//! The binary as a process under test: `serve` on a free loopback port,
//! its memory read from `/proc`, its engine workers found by their parent.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A running `serve` process, killed when dropped: the one way tests run
/// the binary (or the conformance fixtures' server) over HTTP.
pub struct Serve {
    pub child: Child,
    pub port: u16,
    /// How it was started, which a restart repeats.
    how: Spawn,
    /// The data directory it owns, removed when dropped.
    _dir: Option<tempfile::TempDir>,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    /// `serve` with `args` and `env` on a data directory of its own and a
    /// free port, once it listens; its log lines go nowhere.
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> Serve {
        let dir = tempfile::tempdir().unwrap();
        let how = Spawn {
            program: env!("CARGO_BIN_EXE_mcp-v8-lambda").into(),
            data_dir: dir.path().to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: owned(env),
            logs: false,
        };
        let mut serve = Self::spawn(how, super::net::free_port());
        serve._dir = Some(dir);
        serve
    }

    /// `serve` on `data_dir` and `port`, which the test keeps (a restart
    /// reuses both), its warnings on the test's stderr.
    pub fn at(data_dir: &Path, port: u16) -> Serve {
        Self::at_with(data_dir, port, Vec::new())
    }

    /// [`Self::at`] with `env`.
    pub fn at_with(data_dir: &Path, port: u16, env: Vec<(String, String)>) -> Serve {
        let how = Spawn {
            program: env!("CARGO_BIN_EXE_mcp-v8-lambda").into(),
            data_dir: data_dir.to_owned(),
            args: Vec::new(),
            env,
            logs: true,
        };
        Self::spawn(how, port)
    }

    /// [`Self::at`] of the conformance fixtures' server.
    pub fn fixtures_at(data_dir: &Path, port: u16) -> Serve {
        let how = Spawn {
            program: fixture_server(),
            data_dir: data_dir.to_owned(),
            args: Vec::new(),
            env: Vec::new(),
            logs: true,
        };
        Self::spawn(how, port)
    }

    fn spawn(how: Spawn, port: u16) -> Serve {
        let mut command = Command::new(&how.program);
        command
            .args(["serve", "--port", &port.to_string(), "--data-dir"])
            .arg(&how.data_dir)
            .args(&how.args);
        if how.logs {
            command.env("RUST_LOG", "warn").stderr(Stdio::inherit());
        } else {
            command.stderr(Stdio::null());
        }
        let child = command
            .envs(how.env.iter().cloned())
            .stdout(Stdio::null())
            .spawn()
            .expect("starting serve");
        super::net::wait_listening(port, "serve", Duration::from_secs(20));
        Serve {
            child,
            port,
            how,
            _dir: None,
        }
    }

    /// A new process of the same program on the same port, data, arguments
    /// and environment, once the old one is gone.
    fn again(&mut self) {
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "old serve still listening"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let next = Self::spawn(self.how.clone(), self.port);
        // The data directory stays with the process that uses it.
        let dir = self._dir.take();
        *self = next;
        self._dir = dir;
    }

    /// Its MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its data directory.
    pub fn data_dir(&self) -> &Path {
        &self.how.data_dir
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Kills the process outright (no graceful shutdown) and starts a new
    /// one on the same port and data directory: a new instance, same store.
    pub fn restart(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.again();
    }

    /// Kills the process with SIGKILL, as an out-of-memory killer or a
    /// crash would, and starts `serve` again on the same data directory,
    /// with `args` and `env` and a new port.
    pub fn restart_after_kill(&mut self, args: &[&str], env: &[(&str, &str)]) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.port = super::net::free_port();
        self.how.args = args.iter().map(|a| (*a).to_owned()).collect();
        self.how.env = owned(env);
        self.again();
    }

    /// Stops the process as a service manager does (SIGTERM), asserts it
    /// exits cleanly within `within`, and starts a new one on the same port
    /// and data directory.
    pub fn stop_and_restart(&mut self, within: Duration) {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let started = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                started.elapsed() < within,
                "serve still running {within:?} after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "serve ended {status} on SIGTERM");
        self.again();
    }

    /// `run_js` with `arguments` as a 2026-07-28 call: its structured
    /// content, or the tool error's text under `"error_text"`.
    pub async fn run_js(&self, arguments: Value) -> Value {
        let params = json!({"name": "run_js", "arguments": arguments});
        let answer = super::post_2026(self.port, "tools/call", Some("run_js"), params).await;
        let result = &answer["result"];
        match result.get("structuredContent") {
            Some(content) if !content.is_null() => content.clone(),
            _ => json!({"error_text": result["content"][0]["text"], "answer": answer}),
        }
    }

    /// Any tool as a 2026-07-28 call: its structured content, or the tool
    /// error's text under `"error_text"`.
    pub async fn tool(&self, name: &str, arguments: Value) -> Value {
        let params = json!({"name": name, "arguments": arguments});
        let answer = super::post_2026(self.port, "tools/call", Some(name), params).await;
        let result = &answer["result"];
        match result.get("structuredContent") {
            Some(content) if !content.is_null() && result["isError"] != true => content.clone(),
            _ => json!({"error_text": result["content"][0]["text"], "answer": answer}),
        }
    }
}

/// How a [`Serve`] is started, on whichever port.
#[derive(Clone)]
struct Spawn {
    program: PathBuf,
    data_dir: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    /// Its log lines go to the test's stderr (`RUST_LOG=warn` unless the
    /// environment says otherwise), or nowhere.
    logs: bool,
}

fn owned(env: &[(&str, &str)]) -> Vec<(String, String)> {
    env.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// The conformance suite's fixture server (examples/conformance_fixtures:
/// the command line with the suite's fixture tools), built beside this
/// test binary by scripts/test.sh.
fn fixture_server() -> PathBuf {
    let deps = std::env::current_exe().unwrap();
    let program = deps
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("examples/conformance_fixtures");
    assert!(
        program.exists(),
        "the conformance fixtures' server is not built at {}: run scripts/test.sh, or cargo build \
         --release --examples",
        program.display()
    );
    program
}

/// A `/proc/PID/status` field in KiB (`VmRSS:`, `VmHWM:`).
pub fn proc_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("no {field} in {status}"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The pids of `parent`'s children (its engine workers).
pub fn children(parent: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                // The fields after the command's closing parenthesis: state, ppid, …
                stat.rsplit_once(") ")
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(parent)
            })
        })
        .collect()
}

/// CPU time `pid` has used (user and system, in clock ticks); `None` once
/// it is gone.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command's closing parenthesis: state is field 3, utime 14.
    let mut fields = stat.rsplit_once(") ")?.1.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(user + system)
}

/// Waits until `count` of `parent`'s children (its engine workers) run code
/// that keeps a core busy (most of 200 ms each): a looping run has started
/// in them. For tests whose order needs it, instead of a sleep.
pub async fn wait_spinning(parent: u32, count: usize) {
    const WINDOW: Duration = Duration::from_millis(200);
    let started = std::time::Instant::now();
    loop {
        let before: Vec<_> = children(parent)
            .into_iter()
            .filter_map(|pid| Some((pid, cpu_ticks(pid)?)))
            .collect();
        tokio::time::sleep(WINDOW).await;
        // Clock ticks are 10 ms: at least 100 of the window's 200 ms.
        let busy = before
            .iter()
            .filter(|(pid, ticks)| cpu_ticks(*pid).is_some_and(|now| now >= ticks + 10))
            .count();
        if busy >= count {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{busy} of {parent}'s workers spin, not {count}"
        );
    }
}
