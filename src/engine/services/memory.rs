//! The memory a run may hold outside V8's heap: the backing stores of
//! `ArrayBuffer`s (typed arrays, `Blob` contents, `TextEncoder` output,
//! `structuredClone` copies, fetch bodies), allocated through an allocator
//! of each isolate's own that counts them against the run's budget.
//!
//! V8 asks the allocator for every buffer it makes, in JavaScript or in a
//! native, and when the allocator says no it throws `RangeError: Array
//! buffer allocation failed` where the code asked: the run fails, or goes
//! on if the code catches it, and the process never holds more than the
//! budget in buffers. The budget is also what keeps a buffer below the
//! 4 GiB that V8's snapshot serialiser can write (see [`MAX_BUDGET_BYTES`]).

use crate::units::MIB;
use std::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The largest budget: V8 aborts the process when it snapshots a buffer
/// of 4 GiB or more, so no run may hold one.
pub(crate) const MAX_BUDGET_BYTES: usize = u32::MAX as usize;

/// Bytes of backing stores an isolate may hold at once, and how many it
/// holds. Shared by the allocator V8 calls (on any thread) and the run.
#[derive(Debug)]
pub(crate) struct Budget {
    limit: usize,
    used: AtomicUsize,
    /// An allocation was refused since the last [`Budget::take_refused`].
    refused: AtomicBool,
}

impl Budget {
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit: limit.min(MAX_BUDGET_BYTES),
            used: AtomicUsize::new(0),
            refused: AtomicBool::new(false),
        })
    }

    /// The budget in bytes.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes held now.
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Whether an allocation was refused since the last call.
    pub(crate) fn take_refused(&self) -> bool {
        self.refused.swap(false, Ordering::Relaxed)
    }

    /// Counts `len` more bytes, unless that would pass the limit.
    fn take(&self, len: usize) -> bool {
        let taken = self
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                used.checked_add(len).filter(|total| *total <= self.limit)
            })
            .is_ok();
        if !taken {
            self.refused.store(true, Ordering::Relaxed);
        }
        taken
    }

    /// Whether `len` more bytes would fit now.
    pub(crate) fn has_room(&self, len: usize) -> bool {
        self.used()
            .checked_add(len)
            .is_some_and(|total| total <= self.limit)
    }

    /// Records a refusal made on the budget's behalf (a native that did not
    /// ask V8 for a buffer that would not fit).
    pub(crate) fn refuse(&self) {
        self.refused.store(true, Ordering::Relaxed);
    }

    /// Counts `len` bytes that are not handed back until the isolate goes
    /// (a resizable buffer's maximum); `false` when they do not fit.
    pub(crate) fn reserve(&self, len: usize) -> bool {
        self.take(len)
    }

    /// Hands back `len` bytes of [`Budget::reserve`] before the isolate
    /// goes (file data a run held, when the run ends: a plain isolate
    /// serves many runs).
    pub(crate) fn release(&self, len: usize) {
        self.give_back(len);
    }

    fn give_back(&self, len: usize) {
        self.used.fetch_sub(len, Ordering::Relaxed);
    }

    /// Counts `len` bytes the host holds for the run (timers, strings a
    /// native copied out of V8) until the [`Held`] is dropped; `None` when
    /// they do not fit.
    pub(crate) fn hold(self: &Arc<Self>, len: usize) -> Option<Held> {
        self.take(len).then(|| Held {
            budget: self.clone(),
            len,
        })
    }

    /// An `ArrayBuffer` allocator that counts against this budget, for one
    /// isolate's `CreateParams`.
    pub(crate) fn allocator(self: &Arc<Self>) -> v8::UniqueRef<v8::Allocator> {
        // SAFETY: the handle is an `Arc` turned into a raw pointer, which
        // `drop_budget` turns back exactly once, when V8 destroys the
        // allocator; the vtable is static and its functions are safe to call
        // from any thread, as V8 requires.
        unsafe { v8::new_rust_allocator(Arc::into_raw(self.clone()), &VTABLE) }
    }
}

/// Bytes of a [`Budget`] the host holds; given back when dropped.
#[derive(Debug)]
pub(crate) struct Held {
    budget: Arc<Budget>,
    len: usize,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.give_back(self.len);
    }
}

static VTABLE: v8::RustAllocatorVtable<Budget> = v8::RustAllocatorVtable {
    allocate,
    allocate_uninitialized,
    free,
    drop: drop_budget,
};

unsafe extern "C" fn allocate(budget: &Budget, len: usize) -> *mut c_void {
    if !budget.take(len) {
        return std::ptr::null_mut();
    }
    // SAFETY: calloc with a non-zero size; a null answer is handed to V8,
    // which reports it as a failed allocation.
    let data = unsafe { libc::calloc(len.max(1), 1) };
    if data.is_null() {
        budget.give_back(len);
    }
    data
}

unsafe extern "C" fn allocate_uninitialized(budget: &Budget, len: usize) -> *mut c_void {
    if !budget.take(len) {
        return std::ptr::null_mut();
    }
    // SAFETY: as in `allocate`; V8 initialises the memory itself.
    let data = unsafe { libc::malloc(len.max(1)) };
    if data.is_null() {
        budget.give_back(len);
    }
    data
}

unsafe extern "C" fn free(budget: &Budget, data: *mut c_void, len: usize) {
    // SAFETY: `data` came from `allocate` or `allocate_uninitialized` of this
    // allocator (V8 frees a backing store with the allocator that made it),
    // with the same `len` it was counted with.
    unsafe { libc::free(data) };
    budget.give_back(len);
}

unsafe extern "C" fn drop_budget(budget: *const Budget) {
    // SAFETY: the pointer `Budget::allocator` made with `Arc::into_raw`;
    // V8 calls this once, when the allocator goes.
    drop(unsafe { Arc::from_raw(budget) });
}

/// Whether the run's budget has room for a buffer of `len` bytes that a
/// native is about to make, after collecting garbage if it must; when it
/// has not, a `RangeError` is thrown as V8 throws one for a refused buffer.
pub(crate) fn room_for(scope: &mut v8::PinScope<'_, '_>, len: usize) -> bool {
    let Some(budget) = scope.get_slot::<Arc<Budget>>().cloned() else {
        return true;
    };
    if budget.has_room(len) {
        return true;
    }
    scope.low_memory_notification();
    if budget.has_room(len) {
        return true;
    }
    budget.refuse();
    let message = v8::String::new(scope, "Array buffer allocation failed").expect("short message");
    let exception = v8::Exception::range_error(scope, message);
    scope.throw_exception(exception);
    false
}

/// `len` bytes the host holds for the run while a native works or a timer
/// waits, from the run's budget; when they do not fit (after collecting
/// garbage), a `RangeError` saying `what` and naming the limit is thrown.
pub(crate) fn hold(
    scope: &mut v8::PinScope<'_, '_>,
    len: usize,
    what: &str,
) -> Option<Option<Held>> {
    let Some(budget) = scope.get_slot::<Arc<Budget>>().cloned() else {
        return Some(None);
    };
    if let Some(held) = budget.hold(len) {
        return Some(Some(held));
    }
    scope.low_memory_notification();
    if let Some(held) = budget.hold(len) {
        return Some(Some(held));
    }
    budget.refuse();
    let text = format!(
        "{what}: the run's memory outside the JavaScript heap is limited to {} MiB \
         (heap_memory_max_mb), and this would pass it; work on smaller pieces",
        budget.limit() / MIB
    );
    let message = v8::String::new(scope, &text).unwrap_or_else(|| v8::String::empty(scope));
    let exception = v8::Exception::range_error(scope, message);
    scope.throw_exception(exception);
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_refuses_past_its_limit_and_takes_back_what_is_freed() {
        let budget = Budget::new(100);
        assert!(budget.take(60));
        assert!(!budget.take(41), "61 + 41 is over 100");
        assert!(budget.take_refused());
        assert!(!budget.take_refused(), "the flag is read once");
        assert!(budget.take(40));
        assert_eq!(budget.used(), 100);
        budget.give_back(60);
        assert_eq!(budget.used(), 40);
        assert!(!budget.take(usize::MAX), "no overflow");
    }

    #[test]
    fn no_budget_reaches_the_size_v8_cannot_snapshot() {
        assert_eq!(Budget::new(usize::MAX).limit(), MAX_BUDGET_BYTES);
    }
}
