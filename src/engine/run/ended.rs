//! How a run ended: evaluation's end, its causes told apart (a timeout,
//! the heap limit, a cancel, a throw), and what held a heap that reached
//! its limit.

use std::time::Duration;

use super::package_hint::add_package_hint;
use crate::engine::capability::outcome::{RunError, RunStatus};
use crate::engine::capability::positions::SCRIPT_NAME;
use crate::engine::heap_limit::HeapLimit;
use crate::engine::host::fs::TreeEntry;
use crate::engine::web::Rendered;
use crate::engine::web::thrown::error_from;
use crate::units::MIB;

/// How evaluation ended, before termination causes are told apart.
pub(crate) enum Ended {
    Value {
        rendered: Rendered,
        warnings: Vec<String>,
    },
    /// The `/work` tree of a [`Task::ListFiles`].
    Listed(Vec<TreeEntry>),
    /// Nothing left but waiting for elicitations: the run suspends.
    Suspended,
    Threw(RunError),
    Terminated,
    DeadlineBeforeTimer,
}

/// How a run ended, causes told apart.
pub(crate) enum Classified {
    Completed {
        rendered: Rendered,
        warnings: Vec<String>,
    },
    Listed(Vec<TreeEntry>),
    /// Waits for the person: its heap, stored, is the continuation.
    Suspended,
    /// Failed, timed out or out of memory, with the error saying which.
    Ended(RunStatus, RunError),
    Cancelled,
}

impl Classified {
    pub(super) fn completed(&self) -> bool {
        matches!(self, Self::Completed { .. })
    }

    /// Completed or suspended: the heap is snapshotted and stored.
    pub(super) fn keeps_heap(&self) -> bool {
        matches!(self, Self::Completed { .. } | Self::Suspended)
    }

    /// A completed run whose heap cannot be snapshotted: failed, saying
    /// what it keeps and what to do.
    pub(super) fn unsnapshottable(kept: &str) -> Self {
        Self::Ended(
            RunStatus::Failed,
            RunError::new(
                "SnapshotError",
                format!(
                    "the run completed, but its heap keeps {kept}, which V8 cannot write into a \
                     heap snapshot; nothing was stored and the input heap is unchanged. Make such \
                     objects inside functions when they are needed, or drop them before the run \
                     ends (delete the global, or set it to null)"
                ),
            ),
        )
    }

    /// A completed run whose `/work` files could not be sealed for storing
    /// (the local disk failed or filled): failed, as no heap may name
    /// bytes that were never stored.
    pub(super) fn files_unsealed(why: &str) -> Self {
        Self::Ended(
            RunStatus::Failed,
            RunError::new(
                "StorageError",
                format!(
                    "the run completed, but the files it wrote to /work could not be prepared                      for storing ({why}); nothing was stored and the input heap is unchanged.                      Write less to /work in one call, or remove files you no longer need"
                ),
            ),
        )
    }

    /// After the allocator refused a buffer: V8's bare "Array buffer
    /// allocation failed" says nothing of why, so the error (or, when the
    /// code caught it, a warning) names the limit and what counts.
    pub(super) fn name_buffer_limit(&mut self, limit: usize) {
        let why = format!(
            "ArrayBuffer memory (typed arrays, Blob, TextEncoder output, structuredClone \
             copies, fetch bodies) is limited to {} MiB per run, the run's heap_memory_max_mb; \
             an allocation past it was refused",
            limit / MIB
        );
        match self {
            Self::Ended(RunStatus::Failed, error)
                if error.message.contains("Array buffer allocation failed") =>
            {
                error.message = format!("{}: {why}", error.message);
            }
            // V8 may treat a refused buffer as the heap running out, which
            // terminates the run (and cannot be caught).
            Self::Ended(RunStatus::OutOfMemory, error) => {
                error.message = format!("{why}, and the run was terminated");
            }
            // V8 retries a refused buffer after collecting garbage, so a
            // run may complete past a refusal; or the code caught it.
            Self::Completed { warnings, .. } => warnings.push(format!(
                "{why} once (the code caught the RangeError, or V8 freed memory and retried)"
            )),
            _ => {}
        }
    }
}

/// What held a heap that reached its limit, as far as V8 can say: it
/// counts bytes by space, not by type, and its large-object spaces hold
/// each value over about 128 KiB (a big array's backing store, a long
/// string), which tells one huge value from very many small ones.
pub(super) fn what_held(isolate: &mut v8::Isolate) -> Option<String> {
    let mut large = 0usize;
    let mut other = 0usize;
    for index in 0..isolate.number_of_heap_spaces() {
        let Some(space) = isolate.get_heap_space_statistics(index) else {
            continue;
        };
        let name = space.space_name().to_string_lossy();
        if name.contains("lo_space") || name.contains("large_object") {
            large += space.space_used_size();
        } else {
            other += space.space_used_size();
        }
    }
    let mib = |bytes: usize| bytes.div_ceil(MIB);
    if large + other == 0 {
        return None;
    }
    Some(if large >= other {
        format!(
            "most of it, {} MiB, was large values (each over about 128 KiB: a long array, string \
             or Map), {} MiB many smaller objects",
            mib(large),
            mib(other)
        )
    } else {
        format!(
            "most of it, {} MiB, was many small objects (rows, records, closures), {} MiB large \
             values (each over about 128 KiB)",
            mib(other),
            mib(large)
        )
    })
}

/// `fired`: the deadline passed before the run was taken down, so whatever
/// value it had is not its answer (a run past its deadline never completes).
pub(super) fn classify(
    ended: Ended,
    out_of_memory: bool,
    fired: bool,
    timeout: (Duration, Option<(usize, usize)>),
    heap_limit: HeapLimit,
) -> Classified {
    match ended {
        _ if out_of_memory => Classified::Ended(
            RunStatus::OutOfMemory,
            RunError::new(
                "OutOfMemoryError",
                format!(
                    "the JavaScript heap reached its {} MiB limit and the run was terminated",
                    heap_limit.mb()
                ),
            ),
        ),
        Ended::Terminated | Ended::DeadlineBeforeTimer => timed_out(timeout),
        Ended::Value { .. } | Ended::Listed(_) | Ended::Threw(_) | Ended::Suspended if fired => {
            timed_out(timeout)
        }
        Ended::Suspended => Classified::Suspended,
        Ended::Value { rendered, warnings } => Classified::Completed { rendered, warnings },
        Ended::Listed(tree) => Classified::Listed(tree),
        Ended::Threw(error) => Classified::Ended(RunStatus::Failed, error),
    }
}

/// A timeout's error, naming where the code was (`stopped_at`, in the
/// script as run; the run's positions map it back to the code as sent).
pub(super) fn timed_out((timeout, stopped_at): (Duration, Option<(usize, usize)>)) -> Classified {
    let mut error = RunError::new(
        "TimeoutError",
        format!(
            "execution did not finish within {} ms and was terminated",
            timeout.as_millis()
        ),
    );
    if let Some((line, column)) = stopped_at {
        error.message = format!(
            "{} while running (line {line}, column {column})",
            error.message
        );
        error.stack = Some(format!(
            "TimeoutError: {}\n    at {}:{line}:{column}",
            error.message, SCRIPT_NAME
        ));
    }
    Classified::Ended(RunStatus::TimedOut, error)
}

/// Turns the exception pending in a `TryCatch` into how the run ended.
pub(super) fn caught<'s>(
    tc: &mut v8::PinnedRef<'s, v8::TryCatch<'_, '_, v8::HandleScope<'_>>>,
) -> Ended {
    if tc.has_terminated() || tc.is_execution_terminating() {
        return Ended::Terminated;
    }
    match tc.exception() {
        Some(exception) => {
            let message = tc.message();
            let mut error = error_from(tc, exception, message);
            add_package_hint(tc, &mut error);
            Ended::Threw(error)
        }
        None => Ended::Threw(RunError::new(
            "Error",
            "the script failed without an exception",
        )),
    }
}
