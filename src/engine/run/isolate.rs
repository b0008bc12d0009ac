//! The snapshot path: a run that creates or restores a heap snapshot, alone
//! in the process (see [`READ_ONLY_HEAP`]), on the calling thread.

use crate::engine::contract::{Job, JobResult};
use crate::engine::host::fs::files_kept;
use crate::engine::layer;
use crate::engine::run::ready::{Parts, Ready};
use crate::engine::services::HostServices;

use crate::engine::capability::outcome::{RunError, RunStatus};
use crate::engine::contract::CodeHandling;
use crate::engine::run::watchdog::Watchdog;
use crate::engine::run::{self, Classified, HeapGuard, READ_ONLY_HEAP, snapshot_isolate};
use crate::engine::web;
use crate::units::MIB;

/// Runs a job that creates or restores a snapshot on the calling thread:
/// on the heap `ready` holds when the job says so (any other ready heap is
/// dropped first), else restored or made fresh. When the job asks for its
/// answer first, `ran` gets a completed stateful run's answer before its
/// heap is snapshotted, and the returned result keeps only the heap.
/// A job that keeps its heap ready (`keep_ready`), given `keep_live`,
/// keeps the isolate itself when `keep_live` has a forked copy write the
/// blob: `ready` then holds the isolate live, and the returned result has
/// no blob (`snapshot_pending`).
pub(crate) fn run(
    mut job: Job,
    services: &HostServices,
    ready: &mut Option<Ready>,
    ran: &mut dyn FnMut(JobResult),
    keep_live: Option<KeepLive<'_>>,
) -> JobResult {
    crate::engine::run::platform::init();
    let taken = ready
        .take()
        .filter(|r| job.from_ready && r.heap_limit.mb() == job.heap_limit.mb());
    if job.from_ready && taken.is_none() {
        return JobResult::failed(RunError::new(
            "EngineError",
            "the heap this run continues was no longer ready in its engine process; retry the call",
        ));
    }
    let fresh = job.restore.is_none() && taken.is_none();
    // A plain isolate made from a heap that still has `Error.stackTraceLimit`
    // aborts V8 when a context is made in it (a descriptor check): heaps
    // other than the prelude's are restored by a snapshot creator, whose
    // blob a stateless run makes and drops.
    let creator = job.stateful || (!fresh && !job.plain_restore);
    let live = job.stateful && creator && job.keep_ready.is_some() && keep_live.is_some();
    let (exclusive, guard, mut isolate, made_context) = match taken {
        Some(ready) => {
            let parts = ready.take();
            (
                parts.exclusive,
                parts.guard,
                parts.isolate,
                Some(parts.context),
            )
        }
        None => {
            let exclusive = READ_ONLY_HEAP.write();
            let guard = HeapGuard::new(job.heap_limit);
            let params = guard.params();
            let restore = job.restore.take().map(|section| section.0);
            let mut isolate = snapshot_isolate(creator, restore, params);
            guard.arm(&mut isolate);
            (exclusive, guard, isolate, None)
        }
    };
    let mut watchdog = Watchdog::new(isolate.thread_safe_handle());
    let started = run::start(&mut isolate, &job, services, &mut watchdog, &guard);
    // The context a live heap keeps for the next run.
    let mut kept_context = None;
    let classified = {
        v8::scope!(let scope, &mut isolate);
        let context = match made_context {
            Some(made) => v8::Local::new(scope, made),
            None => v8::Context::new(scope, Default::default()),
        };
        let scope = &mut v8::ContextScope::new(scope, context);
        let global = context.global(scope);
        if fresh {
            layer::install_host(scope, global);
        } else {
            layer::after_restore(scope, global, !creator);
        }
        // A restored heap made before the Web layer gains it here.
        layer::install(scope, global);
        let ended = started.evaluate(scope, &job, None);
        let (mut classified, _) = run::settle(ended, &job, &mut watchdog, &guard);
        if job.stateful
            && classified.keeps_heap()
            && let Some(kept) = web::unsnapshottable(scope)
        {
            classified = Classified::unsnapshottable(&kept);
        }
        if creator
            && job.stateful
            && classified.keeps_heap()
            && let Err(why) = files_kept(scope)
        {
            classified = Classified::files_unsealed(&why);
        }
        if creator {
            if classified.keeps_heap() && job.stateful {
                // A small heap's snapshot costs less than a fork: it is made
                // here and restored for the next call, as before. A
                // suspended run's is made here too: its answer names it.
                let large = scope.get_heap_statistics().used_heap_size() >= LIVE_FROM_BYTES;
                if live && large && classified.completed() {
                    // The forked copy prepares its own heap for the blob.
                    kept_context = Some(v8::Global::new(scope, context));
                } else {
                    layer::before_snapshot(scope, global);
                    scope.set_default_context(context);
                }
            } else {
                // The blob of a failed run is thrown away, but V8 insists on
                // one being made. A new copy of the input context keeps that
                // cheap: the failed run's garbage is unreachable from it.
                scope.cancel_terminate_execution();
                let clean = v8::Context::new(scope, Default::default());
                scope.set_default_context(clean);
            }
        }
        classified
    };
    let mut result = run::finish(&mut isolate, &job, classified);
    if job.stateful {
        if result.status == RunStatus::Completed {
            result.heap_used_bytes = heap_used_bytes(&mut isolate);
            if job.answer_first {
                ran(result.answer());
            }
        }
        if let Some(context) = kept_context {
            let keep_live = keep_live.filter(|_| result.status == RunStatus::Completed);
            if let Some(keep_live) = keep_live
                && keep_live(&mut isolate, &context, handling(job.code_handling))
            {
                result.snapshot_pending = true;
                let parts = Parts {
                    context,
                    isolate,
                    guard,
                    exclusive,
                };
                *ready = Some(Ready::live(parts, job.heap_limit));
                return result;
            }
            // Snapshotted here after all: as a run that keeps no live heap.
            v8::scope!(let scope, &mut isolate);
            let local = v8::Local::new(scope, &context);
            let scope = &mut v8::ContextScope::new(scope, local);
            let global = local.global(scope);
            layer::before_snapshot(scope, global);
            scope.set_default_context(local);
            drop(context);
        }
        snapshot(isolate, job.code_handling, &mut result);
    } else if creator {
        drop(isolate.create_blob(v8::FunctionCodeHandling::Clear));
    } else {
        drop(isolate);
    }
    drop(guard);
    drop(exclusive);
    result
}

/// The V8 heap from which a completed run's isolate is kept live and its
/// snapshot written by a forked copy (docs/performance.md, "A call at an
/// agent's pace": below it, the fork and the copy's start cost more than
/// the snapshot they take off the call's path).
const LIVE_FROM_BYTES: usize = 4 * MIB;

/// Has a forked copy of this process write the snapshot of the heap of an
/// isolate with its default context: whether one does (`worker/fork.rs`).
pub(crate) type KeepLive<'a> = &'a mut dyn FnMut(
    &mut v8::OwnedIsolate,
    &v8::Global<v8::Context>,
    v8::FunctionCodeHandling,
) -> bool;

fn handling(handling: CodeHandling) -> v8::FunctionCodeHandling {
    match handling {
        CodeHandling::Keep => v8::FunctionCodeHandling::Keep,
        CodeHandling::Clear => v8::FunctionCodeHandling::Clear,
    }
}

/// Bytes of V8's heap in use now.
fn heap_used_bytes(isolate: &mut v8::Isolate) -> u64 {
    isolate.get_heap_statistics().used_heap_size() as u64
}

/// Consumes a snapshot creator: the blob of a completed run goes into
/// `result`, or a failure when V8 could not make one. V8 makes a blob of a
/// failed run too; it is dropped.
fn snapshot(isolate: v8::OwnedIsolate, code: CodeHandling, result: &mut JobResult) {
    let started = std::time::Instant::now();
    let created = isolate.create_blob(handling(code));
    if !result.status.keeps_heap() {
        return;
    }
    // Where a save's time goes (docs/performance.md, "Where a save goes").
    tracing::debug!(
        create_blob_ms = started.elapsed().as_secs_f64() * 1000.0,
        bytes = created.as_ref().map_or(0, |blob| blob.len()),
        "V8 made the heap's snapshot"
    );
    match created {
        Some(data) => result.blob = Some(data.to_vec().into()),
        None => {
            result.status = RunStatus::Failed;
            result.result = None;
            result.repl = None;
            result.error = Some(RunError::new(
                "SnapshotError",
                "V8 could not create a snapshot of the heap",
            ));
        }
    }
}
