//! The package store: the directory store's conformance, a damaged bundle
//! refused on read, and the command line that adds, lists and removes.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_directory_store_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().unwrap();
    conformance::run_all(Arc::new(DirPackageStore::new(dir.path().join("packages")))).await;
}

#[tokio::test]
async fn a_damaged_bundle_is_refused_on_read() {
    let dir = tempfile::tempdir().unwrap();
    let store = DirPackageStore::new(dir.path());
    let key = store
        .put_bundle(&bytes::Bytes::from_static(b"{}"))
        .await
        .unwrap();
    std::fs::write(store.bundle_dir().join(key.as_str()), b"{ }").unwrap();
    let err = store.get_bundle(&key).await.unwrap_err();
    assert!(matches!(err, PackageStoreError::Corrupt { .. }), "{err}");
}

#[test]
fn the_cli_adds_lists_and_removes() {
    let dir = tempfile::tempdir().unwrap();
    let cli = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_mcp-v8-lambda"))
            .arg("packages")
            .arg("--data-dir")
            .arg(dir.path())
            .args(args)
            .env_remove("MCP_V8_HEAP_BUCKET")
            .output()
            .unwrap()
    };
    let tarball = fixture("nanoid").display().to_string();
    let added = cli(&["add", &tarball]);
    assert!(added.status.success(), "{added:?}");
    assert_eq!(
        String::from_utf8_lossy(&added.stdout),
        "added nanoid@3.3.7\n"
    );
    let listed = cli(&["list"]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).starts_with("nanoid@3.3.7\t"),
        "{listed:?}"
    );
    let refused = cli(&["remove", "lodash"]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("not installed: lodash; installed: nanoid@3.3.7"),
        "{stderr}"
    );
    let removed = cli(&["remove", "nanoid"]);
    assert_eq!(
        String::from_utf8_lossy(&removed.stdout),
        "removed nanoid@3.3.7\n"
    );
    let listed = cli(&["list"]);
    assert!(String::from_utf8_lossy(&listed.stdout).starts_with("no packages installed"));
    assert!(dir.path().join("packages/index.json").is_file());
}
