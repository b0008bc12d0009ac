//! An npm registry on loopback, serving the tarballs in
//! `tests/fixtures/npm` with the documents and integrity the public
//! registry publishes for them: the packages tests never touch the network.
//! [`serve_installed`] serves what `npm ci` put in a `node_modules` instead,
//! so `packages add` gets the very files Node loads.

use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use serde_json::{Value, json};
use sha2::Digest;

/// Node 22, the reference the tests compare runs with: the `node` package
/// the conformance suite installs (scripts/install-test-deps.sh).
pub fn node22() -> PathBuf {
    let node =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/node_modules/.bin/node");
    assert!(
        node.exists(),
        "Node 22 is not installed: run scripts/install-test-deps.sh"
    );
    node
}

/// The fixture tarball of `name`.
pub fn fixture(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/npm");
    std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            let file = p.file_name().unwrap().to_string_lossy().into_owned();
            file.strip_suffix(".tgz")
                .and_then(|stem| stem.rsplit_once('-'))
                .is_some_and(|(n, _)| n == name)
        })
        .unwrap_or_else(|| panic!("no fixture tarball for {name}"))
}

/// The name of every fixture tarball.
fn fixtures() -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/npm");
    std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| {
            let file = e.file_name().to_string_lossy().into_owned();
            let stem = file.strip_suffix(".tgz")?;
            Some(stem.rsplit_once('-')?.0.to_owned())
        })
        .collect()
}

/// The `package.json` inside a tarball.
pub fn manifest(tarball: &[u8]) -> Value {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(tarball));
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        if entry.path().unwrap().to_string_lossy() == "package/package.json" {
            let mut text = String::new();
            entry.read_to_string(&mut text).unwrap();
            return serde_json::from_str(&text).unwrap();
        }
    }
    panic!("no package.json");
}

struct Served {
    documents: HashMap<String, Value>,
    tarballs: HashMap<String, Vec<u8>>,
}

/// A running registry; its URL ends with `/`.
pub struct Registry {
    pub url: String,
    _task: tokio::task::JoinHandle<()>,
}

/// Serves every fixture; the packages named in `tampered` publish an
/// integrity their tarball does not match.
pub async fn start(tampered: &[&str]) -> Registry {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let mut served = Served {
        documents: HashMap::new(),
        tarballs: HashMap::new(),
    };
    for name in fixtures() {
        let name = name.as_str();
        let bytes = std::fs::read(fixture(name)).unwrap();
        let manifest = manifest(&bytes);
        let hashed = tampered.contains(&name).then_some(&b"other bytes"[..]);
        served.publish(&url, &manifest, bytes, hashed);
    }
    serve(listener, url, served)
}

impl Served {
    /// Serves the tarball `bytes` of `manifest`'s package and version, its
    /// integrity that of `hashed` when given (a tampered package), else of
    /// the bytes.
    fn publish(&mut self, url: &str, manifest: &Value, bytes: Vec<u8>, hashed: Option<&[u8]>) {
        let name = manifest["name"].as_str().unwrap().to_owned();
        let version = manifest["version"].as_str().unwrap().to_owned();
        let integrity = format!(
            "sha512-{}",
            base64::engine::general_purpose::STANDARD
                .encode(sha2::Sha512::digest(hashed.unwrap_or(&bytes)))
        );
        let file = format!("{}-{version}.tgz", name.replace('/', "-"));
        let mut entry = json!({
            "name": name,
            "version": version,
            "dist": { "tarball": format!("{url}-/{file}"), "integrity": integrity },
        });
        for field in ["dependencies", "peerDependencies"] {
            if let Some(deps) = manifest.get(field) {
                entry[field] = deps.clone();
            }
        }
        let document = self.documents.entry(name.clone()).or_insert_with(
            || json!({ "name": name, "dist-tags": { "latest": version }, "versions": {} }),
        );
        document["versions"][&version] = entry;
        self.tarballs.insert(file, bytes);
    }
}

/// Answers registry requests for `served` on `listener`.
fn serve(listener: tokio::net::TcpListener, url: String, served: Served) -> Registry {
    let router = axum::Router::new()
        .route("/-/{file}", axum::routing::get(tarball))
        .route("/{*name}", axum::routing::get(document))
        .with_state(Arc::new(served));
    let task = tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    Registry { url, _task: task }
}

async fn document(State(served): State<Arc<Served>>, Path(name): Path<String>) -> Response {
    match served.documents.get(&name) {
        Some(document) => axum::Json(document.clone()).into_response(),
        None => (StatusCode::NOT_FOUND, "{\"error\":\"Not found\"}").into_response(),
    }
}

async fn tarball(State(served): State<Arc<Served>>, Path(file): Path<String>) -> Response {
    match served.tarballs.get(&file) {
        Some(bytes) => bytes.clone().into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// Serves every package `npm ci` installed under `node_modules` (scoped
/// and nested ones too), each version packed again as npm packs it: the
/// files under `package/`.
pub async fn serve_installed(node_modules: &std::path::Path) -> Registry {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let mut served = Served {
        documents: HashMap::new(),
        tarballs: HashMap::new(),
    };
    let mut dirs = Vec::new();
    installed_dirs(node_modules, &mut dirs);
    for dir in dirs {
        let manifest: Value =
            serde_json::from_slice(&std::fs::read(dir.join("package.json")).unwrap()).unwrap();
        served.publish(&url, &manifest, pack(&dir), None);
    }
    serve(listener, url, served)
}

/// The package directories under `node_modules`, nested ones included.
fn installed_dirs(node_modules: &std::path::Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(node_modules) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !path.is_dir() {
            continue;
        }
        if name.starts_with('@') {
            installed_dirs(&path, out);
        } else if path.join("package.json").is_file() {
            installed_dirs(&path.join("node_modules"), out);
            out.push(path);
        }
    }
}

/// `dir` as an npm tarball, its nested `node_modules` left out.
fn pack(dir: &std::path::Path) -> Vec<u8> {
    let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut archive = tar::Builder::new(encoder);
    let mut files = Vec::new();
    walk(dir, dir, &mut files);
    files.sort();
    for relative in files {
        archive
            .append_path_with_name(
                dir.join(&relative),
                PathBuf::from("package").join(&relative),
            )
            .unwrap();
    }
    archive.into_inner().unwrap().finish().unwrap()
}

fn walk(root: &std::path::Path, dir: &std::path::Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            if entry.file_name() != "node_modules" {
                walk(root, &path, out);
            }
        } else {
            out.push(path.strip_prefix(root).unwrap().to_owned());
        }
    }
}
