//! The binary as a process under test: `serve` on a free loopback port,
//! its memory read from `/proc`, its engine workers found by their parent.

use std::time::Duration;

use serde_json::{Value, json};

/// A `serve` process on its own data directory; killed when dropped.
pub struct Serve {
    pub child: std::process::Child,
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    /// `serve` with `args` and `env`, once it listens.
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> Serve {
        let dir = tempfile::tempdir().unwrap();
        let port = super::net::free_port();
        let child = spawn(dir.path(), port, args, env);
        Serve {
            child,
            port,
            _dir: dir,
        }
    }

    /// Kills the process with SIGKILL, as an out-of-memory killer or a
    /// crash would, and starts `serve` again on the same data directory.
    pub fn restart_after_kill(&mut self, args: &[&str], env: &[(&str, &str)]) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.port = super::net::free_port();
        self.child = spawn(self._dir.path(), self.port, args, env);
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its data directory.
    pub fn data_dir(&self) -> &std::path::Path {
        self._dir.path()
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
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

/// `serve` on `dir` and `port` with `args` and `env`, once it listens.
fn spawn(
    dir: &std::path::Path,
    port: u16,
    args: &[&str],
    env: &[(&str, &str)],
) -> std::process::Child {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-v8-lambda"))
        .args(["serve", "--port", &port.to_string(), "--data-dir"])
        .arg(dir)
        .args(args)
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    super::net::wait_listening(port, "serve", Duration::from_secs(20));
    child
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
