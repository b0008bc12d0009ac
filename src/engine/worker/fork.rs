//! Snapshots written by a forked copy of an engine worker, so that the
//! worker keeps a completed run's isolate live for the next call
//! (`engine/run/ready.rs`): the copy makes the blob of the heap as it was when
//! the run ended and writes it to the server itself, while the worker
//! waits for the call that continues the heap, which then only runs.

use super::wire::{self, WorkerFrame};
use crate::engine::capability::section::Section;

/// Where forked copies of this engine worker write snapshots: a pipe the
/// server reads (the worker's fd 3, `worker/mod.rs`), and a lock that keeps
/// one copy's frame whole while another writes. Set only in an engine
/// worker on Linux ([`allow_fork`]): the server never forks, its copy would
/// hold the listener, the stores' clients and every other task.
static SNAPSHOTS: std::sync::OnceLock<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> =
    std::sync::OnceLock::new();

/// Lets this process fork to write snapshots to `pipe`: called by the
/// engine worker's main before V8 starts. V8 runs without background
/// threads then (`--single-threaded`): a fork copies only the thread that
/// forks, and a garbage collector or compiler thread caught mid-task would
/// leave the copy waiting for work nobody does.
pub(crate) fn allow_fork(pipe: std::os::fd::OwnedFd) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: memfd_create(2) with a static name; the descriptor it
        // returns is owned from here on.
        #[allow(unsafe_code)]
        let lock = unsafe { libc::memfd_create(c"snapshot-lock".as_ptr(), libc::MFD_CLOEXEC) };
        if lock < 0 {
            tracing::warn!(error = %std::io::Error::last_os_error(), "no lock for forked snapshots: heaps are snapshotted in the worker");
            return;
        }
        // SAFETY: `lock` is a descriptor memfd_create just returned.
        #[allow(unsafe_code)]
        let lock = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(lock) };
        v8::V8::set_flags_from_string("--single-threaded");
        let _ = SNAPSHOTS.set((pipe, lock));
    }
    #[cfg(not(target_os = "linux"))]
    drop(pipe);
}

/// Whether [`fork_snapshot`] may be used here.
pub(crate) fn forks() -> bool {
    SNAPSHOTS.get().is_some()
}

/// A forked copy of the worker holding a heap's snapshot to write: it
/// waits for its turn (`gate.rs`) on `go`.
#[derive(Debug)]
pub(crate) struct Forked {
    pid: libc::pid_t,
    go: Option<std::os::fd::OwnedFd>,
}

impl Forked {
    /// Where the copy is told to make its blob or leave without one
    /// (`gate::GO`, `gate::DROP`); taken once.
    pub(crate) fn take_go(&mut self) -> Option<std::os::fd::OwnedFd> {
        self.go.take()
    }

    /// Waits for the copy to end, ending it past [`SNAPSHOT_WITHIN`]: `None`
    /// when it wrote the snapshot, else why it did not (it then wrote
    /// nothing, or a frame cut short).
    pub(crate) fn wait(self) -> Option<String> {
        let started = std::time::Instant::now();
        let mut status: libc::c_int = 0;
        loop {
            // SAFETY: waitpid(2) on the child this process forked and has
            // not reaped; `status` is a valid place for its exit status.
            #[allow(unsafe_code)]
            let waited = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
            if waited == self.pid {
                break;
            }
            if waited != 0 {
                return Some(format!(
                    "waiting for the process writing the heap's snapshot failed: {}",
                    std::io::Error::last_os_error()
                ));
            }
            if started.elapsed() > SNAPSHOT_WITHIN {
                // SAFETY: kill(2) on the child this process forked and has
                // not reaped.
                #[allow(unsafe_code)]
                unsafe {
                    libc::kill(self.pid, libc::SIGKILL);
                }
                return Some(format!(
                    "the process writing the heap's snapshot did not finish within {} s and was ended",
                    SNAPSHOT_WITHIN.as_secs()
                ));
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
            return None;
        }
        Some(if libc::WIFSIGNALED(status) {
            format!(
                "the process writing the heap's snapshot was ended by signal {}",
                libc::WTERMSIG(status)
            )
        } else {
            format!(
                "the process writing the heap's snapshot exited with status {}",
                libc::WEXITSTATUS(status)
            )
        })
    }
}

/// How long a forked copy may take to write a snapshot: room for the
/// largest heap (V8 writes about 20 MB a second of heap on this project's
/// 2-core machine), past which it is taken as stuck.
const SNAPSHOT_WITHIN: std::time::Duration = std::time::Duration::from_secs(300);

/// Forks a copy of this process that makes the blob of `isolate`'s heap
/// with `context` as its default context, writes it as job `seq`'s
/// snapshot frame and exits; the caller keeps the isolate and context as
/// they are. The copy runs at a lower priority than the worker, so a run
/// the worker takes meanwhile comes first on a busy machine, and it writes
/// to the server directly: a worker that dies or is ended meanwhile (a
/// later run cancelled, or out of memory) does not take the snapshot with
/// it.
pub(super) fn fork_snapshot(
    isolate: &mut v8::OwnedIsolate,
    context: &v8::Global<v8::Context>,
    handling: v8::FunctionCodeHandling,
    seq: u64,
) -> std::io::Result<Forked> {
    let Some((pipe, lock)) = SNAPSHOTS.get() else {
        return Err(std::io::Error::other("this process does not fork"));
    };
    copy_on_fork();
    let (turn, go) = std::io::pipe()?;
    // SAFETY: fork(2) with V8 idle on this thread and running no other
    // (`--single-threaded`, `allow_fork`). The child touches only what this
    // thread owns (the isolate, the context) and the two descriptors, and
    // leaves by `_exit`, running no destructor and no `atexit` handler of
    // the state it shares with the parent.
    #[allow(unsafe_code)]
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pid == 0 {
        // The worker's stdin and stdout are not the copy's: held open here,
        // they would hide the worker's own end from the server.
        // SAFETY: close(2) on this process's descriptors 0 and 1, which
        // nothing in the copy reads or writes.
        #[allow(unsafe_code)]
        unsafe {
            libc::close(0);
            libc::close(1);
        }
        // Its own copy of the write end would keep it waiting forever.
        drop(go);
        if !my_turn(turn) {
            // SAFETY: as below; a heap a newer run replaced is not written.
            #[allow(unsafe_code)]
            unsafe {
                libc::_exit(0)
            }
        }
        let code = write_snapshot(isolate, context, handling, seq, (pipe, lock));
        // SAFETY: ends the forked copy at once, as fork(2) asks of a child
        // of a multi-threaded process.
        #[allow(unsafe_code)]
        unsafe {
            libc::_exit(code)
        }
    }
    drop(turn);
    Ok(Forked {
        pid,
        go: Some(go.into()),
    })
}

/// Waits on the go pipe for the worker's word: `false` when told to leave
/// unwritten. The pipe's end (the worker is gone) means write: the copy
/// may hold the only state of an answered run.
fn my_turn(turn: std::io::PipeReader) -> bool {
    use std::io::Read;
    let mut word = [0u8; 1];
    let mut turn = turn;
    loop {
        match turn.read(&mut word) {
            Ok(0) => return true,
            Ok(_) => return word[0] != super::gate::DROP,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return true,
        }
    }
}

/// The forked copy's work: the blob of the heap, written to `pipe` as a
/// whole frame under `lock`; its exit status.
fn write_snapshot(
    isolate: &mut v8::OwnedIsolate,
    context: &v8::Global<v8::Context>,
    handling: v8::FunctionCodeHandling,
    seq: u64,
    (pipe, lock): (&std::os::fd::OwnedFd, &std::os::fd::OwnedFd),
) -> libc::c_int {
    use std::os::fd::AsRawFd;
    // SAFETY: setpriority(2) on this process only.
    #[allow(unsafe_code)]
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 10);
    }
    {
        v8::scope!(let scope, &mut *isolate);
        let local = v8::Local::new(scope, context);
        let scope = &mut v8::ContextScope::new(scope, local);
        let global = local.global(scope);
        crate::engine::layer::before_snapshot(scope, global);
        scope.set_default_context(local);
    }
    // SAFETY: this process is a copy that never returns to its caller: the
    // copies of the context handle and the isolate taken here are the only
    // ones it uses from now on, and V8 makes a blob only with no handle to
    // the context left but the default context's own.
    #[allow(unsafe_code)]
    let (context, isolate) = unsafe { (std::ptr::read(context), std::ptr::read(isolate)) };
    drop(context);
    let blob = isolate
        .create_blob(handling)
        .map(|blob| Section::from(blob.to_vec()))
        .ok_or_else(|| "V8 could not create a snapshot of the heap".to_owned());
    let frame = wire::encode(&WorkerFrame::Snapshot { seq, blob });
    let Ok(frame) = frame else {
        return 5;
    };
    // One copy's frame at a time: fcntl locks belong to processes, so the
    // copies of one worker exclude each other, and a copy that dies lets go.
    let whole = libc::flock {
        l_type: libc::F_WRLCK as libc::c_short,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: 0,
        l_len: 0,
        l_pid: 0,
    };
    // SAFETY: fcntl(2) F_SETLKW on the lock's descriptor with a valid flock.
    #[allow(unsafe_code)]
    if unsafe { libc::fcntl(lock.as_raw_fd(), libc::F_SETLKW, &whole) } != 0 {
        return 6;
    }
    let Ok(pipe) = pipe.try_clone() else {
        return 7;
    };
    let mut out = std::fs::File::from(pipe);
    match wire::write_encoded(&mut out, &frame) {
        Ok(()) => 0,
        Err(_) => 4,
    }
}

/// V8 maps its heap `MADV_DONTFORK` (a fork optimisation of its own
/// build), which would leave a forked copy without it: every mapping is
/// marked to be copied again before a fork. Mappings that cannot be
/// advised (the vsyscall page) are left as they are.
fn copy_on_fork() {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return;
    };
    for line in maps.lines() {
        let Some((start, end)) = line
            .split_whitespace()
            .next()
            .and_then(|range| range.split_once('-'))
        else {
            continue;
        };
        let (Ok(start), Ok(end)) = (
            usize::from_str_radix(start, 16),
            usize::from_str_radix(end, 16),
        ) else {
            continue;
        };
        // SAFETY: madvise(2) with MADV_DOFORK changes only whether a
        // mapping of this process is copied by fork; no memory is touched.
        #[allow(unsafe_code)]
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DOFORK);
        }
    }
}
