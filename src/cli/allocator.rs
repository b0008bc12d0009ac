//! The allocator's options for a process that runs V8 in its engine
//! workers.

/// A process whose engine workers run V8 gives freed memory back at once
/// rather than after mimalloc's one-second delay (why: docs/configuration.md,
/// "Allocator", and docs/performance.md, round 4). A `MIMALLOC_PURGE_DELAY`
/// in the environment still wins.
#[cfg(feature = "mimalloc")]
pub(super) fn return_freed_memory_promptly() {
    // `mi_option_purge_delay` in the `mi_option_e` of the mimalloc.h that the
    // pinned crate bundles (Cargo.toml).
    const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;
    unsafe extern "C" {
        fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    }
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one integer option; mimalloc reads it on each purge.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
    }
}
