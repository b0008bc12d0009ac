//! The shipped binary allocates with mimalloc (the `mimalloc` feature, on by
//! default), which docs/performance.md's stateful figures depend on.

use std::process::Command;

#[cfg(feature = "mimalloc")]
#[test]
fn the_binary_starts_mimalloc() {
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-v8-lambda"))
        .arg("--version")
        .env("MIMALLOC_VERBOSE", "1")
        .output()
        .expect("the binary runs");
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("mimalloc: process init"),
        "stderr: {stderr}"
    );
}
