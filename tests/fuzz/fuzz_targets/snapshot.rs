//! Bytes read back as a stored snapshot file (tests/fuzz/bodies/snapshot.rs).
#![no_main]

include!("../bodies/snapshot.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| run(data));
