//! Sizes in bytes, written once: every bound in MiB becomes bytes here.

/// One mebibyte, in bytes.
pub const MIB: usize = 1024 * 1024;

/// [`MIB`] for sizes counted in `u64` (files, stores, disks).
pub const MIB_U64: u64 = MIB as u64;
