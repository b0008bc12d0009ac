//! A POST body through the endpoint's decoding (tests/fuzz/bodies/request.rs).
#![no_main]

include!("../bodies/request.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| run(data));
