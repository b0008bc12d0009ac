//! Modules imported by URL (src/packages/url.rs): fetched under fetch's
//! egress policy from a server on loopback, bundled with their relative
//! imports, kept content-addressed and published to the package store, and
//! kept in the heap like packages. No request leaves this machine.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use mcp_v8_lambda::egress::FetchConfig;
use mcp_v8_lambda::engine::{Engine, EngineConfig, RunOutcome, RunStatus};
use mcp_v8_lambda::heap::{FileHeapStore, HeapStore};
use mcp_v8_lambda::packages::{self, DirPackageStore, InstallOptions, PackageStore, Packages};

use crate::common::engine::{error_text, run_code, worker_program};
use crate::common::npm::fixture;

/// The modules the server has, by path.
const MODULES: &[(&str, &str, &str)] = &[
    (
        "greet.mjs",
        "text/javascript",
        "import { shout } from './lib/util.mjs';\n\
         export const greet = (name) => shout('hi ' + name);\n\
         export default greet;\n",
    ),
    (
        "lib/util.mjs",
        "text/javascript",
        "let calls = 0;\n\
         export const shout = (s) => { calls += 1; return s.toUpperCase() + '!'; };\n\
         export const count = () => calls;\n",
    ),
    (
        "pairs.js",
        "application/javascript",
        "import chunk from 'lodash/chunk';\nexport const pairs = (a) => chunk(a, 2);\n",
    ),
    (
        "typed",
        "application/typescript",
        "export const answer: number = 42;\nexport function twice(n: number): number { return 2 * n; }\n",
    ),
    (
        "broken.mjs",
        "text/javascript",
        "import { nothing } from '/missing.mjs';\nexport default nothing;\n",
    ),
];

/// Requests seen, by path.
type Seen = Arc<Mutex<HashMap<String, usize>>>;

struct ModuleServer {
    address: SocketAddr,
    seen: Seen,
    task: tokio::task::JoinHandle<()>,
}

impl ModuleServer {
    fn origin(&self) -> String {
        format!("http://{}", self.address)
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.origin())
    }

    fn requests(&self, path: &str) -> usize {
        self.seen.lock().unwrap().get(path).copied().unwrap_or(0)
    }

    fn total(&self) -> usize {
        self.seen.lock().unwrap().values().sum()
    }
}

impl Drop for ModuleServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(State(seen): State<Seen>, Path(path): Path<String>) -> Response {
    *seen.lock().unwrap().entry(path.clone()).or_default() += 1;
    if path == "slow.mjs" {
        tokio::time::sleep(std::time::Duration::from_secs(20)).await;
    }
    if path == "latest" {
        // Where CDNs send a version range: the modules it imports are
        // relative to where it landed.
        return (StatusCode::FOUND, [(header::LOCATION, "/greet.mjs")]).into_response();
    }
    match MODULES.iter().find(|(p, _, _)| *p == path) {
        Some((_, media, body)) => ([(header::CONTENT_TYPE, *media)], *body).into_response(),
        None => (StatusCode::NOT_FOUND, "no such module").into_response(),
    }
}

async fn start() -> ModuleServer {
    let seen = Seen::default();
    let app = axum::Router::new()
        .route("/{*path}", get(serve))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    ModuleServer {
        address,
        seen,
        task,
    }
}

fn allowing(origins: &[String]) -> FetchConfig {
    FetchConfig {
        allow: origins.to_vec(),
        ..FetchConfig::off()
    }
}

/// A directory package store with lodash added from its tarball.
async fn store() -> (tempfile::TempDir, Arc<DirPackageStore>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(DirPackageStore::new(dir.path().join("packages")));
    let options = InstallOptions::new(None, 32 * 1024 * 1024).unwrap();
    packages::add(
        store.as_ref(),
        &[fixture("lodash").display().to_string()],
        &options,
        &crate::engine::packages::checker(),
    )
    .await
    .unwrap();
    (dir, store)
}

fn engine(
    fetch: FetchConfig,
    packages: Option<Arc<Packages>>,
    heaps: Option<Arc<dyn HeapStore>>,
    worker: Option<&std::path::Path>,
) -> Engine {
    let mut config = EngineConfig {
        fetch,
        ..EngineConfig::default()
    };
    if let Some(dir) = worker {
        config.engine_workers = 1;
        config.worker_program = Some(worker_program(dir, "url-modules-worker-under-test"));
    }
    let engine = crate::common::engine::on_workers(config, heaps);
    match packages {
        Some(packages) => engine.with_packages(packages),
        None => engine,
    }
}

fn completed(code: &str, outcome: &RunOutcome) -> String {
    assert_eq!(outcome.status, RunStatus::Completed, "{code}: {outcome:#?}");
    assert!(outcome.warnings.is_empty(), "{code}: {outcome:#?}");
    outcome.result.clone().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modules_by_url_load_with_their_imports_once_and_are_published() {
    let server = start().await;
    let (_dir, store) = store().await;
    let packages = Arc::new(Packages::new(store.clone(), store.bundle_dir(), false));
    let loader = engine(
        allowing(&[server.origin()]),
        Some(packages.clone()),
        None,
        None,
    );
    let greet = server.url("greet.mjs");
    let cases = [
        // Static default and named imports, a relative import inside.
        format!("import greet, {{ greet as g }} from '{greet}';\n[greet('ada'), g === greet]"),
        // Dynamic import, in a later run: the same module, not fetched again.
        format!("const m = await import('{greet}');\nm.default('bob')"),
        // A bare import inside a module by URL is an installed package.
        format!(
            "import {{ pairs }} from '{}';\nJSON.stringify(pairs([1, 2, 3]))",
            server.url("pairs.js")
        ),
        // TypeScript by media type, its types stripped.
        format!(
            "import {{ answer, twice }} from '{}';\ntwice(answer)",
            server.url("typed")
        ),
        // A redirect: its imports resolve against where it landed.
        format!(
            "import {{ greet }} from '{}';\ngreet('cy')",
            server.url("latest")
        ),
    ];
    let expected = [
        "[\"HI ADA!\",true]",
        "\"HI BOB!\"",
        "\"[[1,2],[3]]\"",
        "84",
        "\"HI CY!\"",
    ];
    for (code, expected) in cases.iter().zip(expected) {
        let outcome = run_code(&loader, code, None).await;
        assert_eq!(completed(code, &outcome), expected);
    }
    assert_eq!(
        server.requests("greet.mjs"),
        2,
        "once by its URL, once after the redirect"
    );
    assert_eq!(server.requests("lib/util.mjs"), 2);
    // This process has the module now, but an engine whose policy does not
    // allow its origin is refused it all the same.
    let elsewhere = engine(
        allowing(&["https://esm.sh".to_owned()]),
        Some(packages.clone()),
        None,
        None,
    );
    let outcome = run_code(&elsewhere, &cases[0], None).await;
    let error = error_text(&cases[0], &outcome);
    assert!(error.contains("egress policy"), "{error}");
    // The run published what it fetched: the store's index names each URL
    // with a bundle the store has.
    let (index, _) = store.index().await.unwrap().unwrap();
    assert_eq!(index.urls.len(), 4, "{:?}", index.urls);
    for key in index.urls.values() {
        assert!(store.get_bundle(key).await.unwrap().is_some());
    }
    // `packages list` shows them; `remove` takes one out of the index.
    packages::remove(store.as_ref(), &[server.url("typed")])
        .await
        .unwrap();
    let (index, _) = store.index().await.unwrap().unwrap();
    assert!(!index.urls.contains_key(&server.url("typed")));
    // A restarted server over the same directory publishes what is new
    // only: the removal stands.
    Packages::new(store.clone(), store.bundle_dir(), false)
        .publish()
        .await;
    let (index, _) = store.index().await.unwrap().unwrap();
    assert!(!index.urls.contains_key(&server.url("typed")));
    assert_eq!(index.urls.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_instance_serves_a_published_module_from_the_store() {
    let server = start().await;
    let (dir, store) = store().await;
    let first = Arc::new(Packages::new(store.clone(), store.bundle_dir(), false));
    let code = format!(
        "import greet from '{}';\ngreet('dee')",
        server.url("greet.mjs")
    );
    let outcome = run_code(
        &engine(allowing(&[server.origin()]), Some(first), None, None),
        &code,
        None,
    )
    .await;
    assert_eq!(completed(&code, &outcome), "\"HI DEE!\"");
    let fetched = server.total();
    // Another instance: its own empty cache filled from the store (as
    // Lambda's /tmp is from S3), in an engine worker (a process that never
    // loaded it). The origin is still allowed but never asked again.
    let other = Arc::new(Packages::new(store.clone(), dir.path().join("cache"), true));
    let worker = engine(
        allowing(&[server.origin()]),
        Some(other),
        Some(Arc::new(FileHeapStore::new(dir.path().join("heaps")))),
        Some(dir.path()),
    );
    let outcome = run_code(&worker, &code, None).await;
    assert_eq!(completed(&code, &outcome), "\"HI DEE!\"");
    assert_eq!(
        server.total(),
        fetched,
        "served from the store, not fetched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_module_by_url_lives_in_the_heap() {
    let server = start().await;
    let dir = tempfile::tempdir().unwrap();
    let heaps: Arc<dyn HeapStore> = Arc::new(FileHeapStore::new(dir.path().join("heaps")));
    let url = server.url("lib/util.mjs");
    let setup = format!("import {{ shout, count }} from '{url}';\nshout('a'); shout('b'); count()");
    let first = engine(
        allowing(&[server.origin()]),
        None,
        Some(heaps.clone()),
        None,
    );
    let outcome = run_code(&first, &setup, None).await;
    assert_eq!(completed(&setup, &outcome), "2");
    let heap = outcome.heap.unwrap();
    // The server is gone and a worker process restores the heap with fetch
    // off: the module and its state come from the heap alone, and
    // importing it again binds the same module.
    drop(server);
    let restored = engine(FetchConfig::off(), None, Some(heaps), Some(dir.path()));
    let again = format!(
        "import {{ shout as s2, count as c2 }} from '{url}';\n[shout('c'), s2 === shout, c2()]"
    );
    let outcome = run_code(&restored, &again, Some(&heap)).await;
    assert_eq!(completed(&again, &outcome), "[\"C!\",true,3]");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modules_by_url_follow_the_egress_policy_and_failures_say_why() {
    let server = start().await;
    let greet = server.url("greet.mjs");
    // Fetch off: nothing may be imported by URL, and the message says what
    // to do.
    let off = engine(FetchConfig::off(), None, None, None);
    let code = format!("import greet from '{greet}'; greet('x')");
    let outcome = run_code(&off, &code, None).await;
    let error = error_text(&code, &outcome);
    assert!(error.contains("MCP_V8_FETCH_ALLOW"), "{error}");
    assert!(error.contains(&greet), "{error}");
    // Another origin allowed: refused by the policy, dynamic import too.
    let other = engine(allowing(&["https://esm.sh".to_owned()]), None, None, None);
    for code in [
        format!("import greet from '{greet}'; greet('x')"),
        format!("(await import('{greet}')).default('x')"),
    ] {
        let outcome = run_code(&other, &code, None).await;
        let error = error_text(&code, &outcome);
        assert!(error.contains("egress policy"), "{error}");
    }
    assert_eq!(server.total(), 0, "a refused module is never requested");
    // Allowed, but missing, or importing what is missing: the failure names
    // the URL and the status.
    let allowed = engine(allowing(&[server.origin()]), None, None, None);
    for (path, said) in [("nope.mjs", "404"), ("broken.mjs", "missing.mjs")] {
        let code = format!("import x from '{}'; x", server.url(path));
        let outcome = run_code(&allowed, &code, None).await;
        let error = error_text(&code, &outcome);
        assert!(
            error.contains(said) && error.contains("Cannot import"),
            "{error}"
        );
    }
    // Not http(s).
    let code = "import x from 'ftp://example.com/x.mjs'; x";
    let outcome = run_code(&allowed, code, None).await;
    let error = error_text(code, &outcome);
    assert!(error.contains("only http: and https:"), "{error}");
}

/// Cancelling a run whose import waits on a slow server ends it at once,
/// not when the fetch or the run's deadline ends; the next run is
/// unaffected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_run_stops_the_fetch_of_its_module() {
    let server = start().await;
    let engine = Arc::new(engine(allowing(&[server.origin()]), None, None, None));
    let control = Arc::new(mcp_v8_lambda::engine::RunControl::default());
    let started = std::time::Instant::now();
    let running = {
        let engine = engine.clone();
        let control = control.clone();
        let code = format!("import slow from {:?}; slow", server.url("slow.mjs"));
        tokio::spawn(async move {
            engine
                .run(mcp_v8_lambda::engine::RunRequest {
                    code,
                    timeout: Some(std::time::Duration::from_secs(60)),
                    control: Some(control),
                    ..Default::default()
                })
                .await
                .unwrap()
                .outcome
        })
    };
    while server.requests("slow.mjs") == 0 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "the request never arrived"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    control.cancel();
    let out = running.await.unwrap();
    assert_eq!(out.status, RunStatus::Cancelled, "{out:?}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "the run waited for its module's fetch"
    );
    let code = format!(
        "import {{ greet }} from {:?}; greet('x')",
        server.url("greet.mjs")
    );
    let next = run_code(&engine, &code, None).await;
    assert_eq!(completed(&code, &next), "\"HI X!\"");
}
