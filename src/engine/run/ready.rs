//! A heap kept for the next call. Where the process may fork (an engine
//! worker on Linux), the run's isolate itself stays live: a forked copy of
//! the worker writes the heap's blob while the worker waits for the call
//! that continues it, which then only runs (no snapshot, no restore on its
//! path). Elsewhere, after an engine worker sends a run's snapshot, it
//! restores that snapshot into a snapshot creator and makes its context,
//! the two steps whose cost grows with the heap, while the agent thinks.
//! The pool decides which heaps stay ready and for how long
//! (`worker/mod.rs`, bounded by `MCP_V8_READY_HEAPS_MB`; the fork in
//! `worker/fork.rs`).

use bytes::Bytes;

use crate::engine::heap_limit::HeapLimit;
use crate::engine::run::{HeapGuard, READ_ONLY_HEAP, snapshot_isolate};

/// A restored heap and its context, waiting for the job that continues
/// it.
pub(crate) struct Ready {
    parts: Option<Parts>,
    pub(crate) heap_limit: HeapLimit,
}

/// What a job takes from a [`Ready`] to run on it. Fields drop in order:
/// the context handle before its isolate, the isolate before the bounds V8
/// points at, the process's read-only heap lock last.
pub(crate) struct Parts {
    pub context: v8::Global<v8::Context>,
    pub isolate: v8::OwnedIsolate,
    pub guard: Box<HeapGuard>,
    pub exclusive: parking_lot::RwLockWriteGuard<'static, ()>,
}

impl Ready {
    /// The isolate a run just completed in, with its context, kept for the
    /// run that continues it while a forked copy writes its blob.
    pub(crate) fn live(parts: Parts, heap_limit: HeapLimit) -> Ready {
        Ready {
            parts: Some(parts),
            heap_limit,
        }
    }

    /// Restores `payload` with `heap_limit`, as a job restoring it
    /// would, up to its first context; `settle`: then collects garbage,
    /// which leaves V8 no background work on the heap.
    pub(crate) fn restore(payload: Bytes, heap_limit: HeapLimit, settle: bool) -> Ready {
        crate::engine::run::platform::init();
        let exclusive = READ_ONLY_HEAP.write();
        let guard = HeapGuard::new(heap_limit);
        let params = guard.params();
        let mut isolate = snapshot_isolate(true, Some(payload), params);
        guard.arm(&mut isolate);
        let context = {
            v8::scope!(let scope, &mut isolate);
            let context = v8::Context::new(scope, Default::default());
            v8::Global::new(scope, context)
        };
        if settle {
            isolate.low_memory_notification();
        }
        Ready {
            parts: Some(Parts {
                context,
                isolate,
                guard,
                exclusive,
            }),
            heap_limit,
        }
    }

    /// The isolate, its context and bounds, for the job that continues
    /// the heap.
    pub(crate) fn take(mut self) -> Parts {
        self.parts.take().expect("a ready heap is taken once")
    }
}

impl Drop for Ready {
    /// V8 makes a snapshot creator write a blob before it goes, here of a
    /// copy of the heap's context: as costly as a save, which is why the
    /// pool ends a worker rather than have it drop a ready heap
    /// (`worker/mod.rs`).
    fn drop(&mut self) {
        let Some(Parts {
            context,
            mut isolate,
            guard,
            exclusive,
        }) = self.parts.take()
        else {
            return;
        };
        drop(context);
        {
            v8::scope!(let scope, &mut isolate);
            let copy = v8::Context::new(scope, Default::default());
            scope.set_default_context(copy);
        }
        drop(isolate.create_blob(v8::FunctionCodeHandling::Clear));
        drop((guard, exclusive));
    }
}
