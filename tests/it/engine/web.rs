//! The Web platform inside run_js (src/engine/web): the corpus under
//! tests/web run in every mode the engine has, objects that must survive
//! snapshots, a heap made before the Web layer, and docs/engine.md's table.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_v8_lambda::engine::{Engine, EngineConfig, RunOutcome, RunStatus};
use mcp_v8_lambda::heap::{FileHeapStore, HeapKey, HeapStore};
use mcp_v8_lambda::tenant::Tenant;
use serde_json::Value;

use crate::common::engine::{completed, stateful, stateless};

/// The corpus files, one per API family, in docs/engine.md's order.
pub const FAMILIES: &[&str] = &[
    "url", "encoding", "clone", "crypto", "events", "blob", "http", "host", "console", "fetch",
];

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/web")
}

/// The code that runs one family's corpus and evaluates to its report.
pub fn corpus_code(family: &str) -> String {
    let harness = std::fs::read_to_string(corpus_dir().join("harness.js")).unwrap();
    let tests = std::fs::read_to_string(corpus_dir().join(format!("{family}.js"))).unwrap();
    format!("{harness}\n{tests}\n__report({family:?})")
}

/// `(asserted, failures)` from a corpus run's result.
pub fn report(outcome: &RunOutcome) -> (u64, Vec<String>) {
    let report: Value = serde_json::from_str(completed(outcome)).expect("a JSON report");
    let failed = report["failed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_owned())
        .collect();
    (report["asserted"].as_u64().unwrap(), failed)
}

/// Runs every family in one mode; each must pass whole, with as many
/// assertions as in every other mode.
async fn all_families(
    mode: &str,
    mut run_one: impl AsyncFnMut(String) -> RunOutcome,
) -> Vec<(&'static str, u64)> {
    let mut counts = Vec::new();
    for family in FAMILIES {
        let outcome = run_one(corpus_code(family)).await;
        // The fetch corpus provokes the egress policy's refusals on purpose;
        // each is a warning of the run (engine.md, "fetch").
        let unexpected: Vec<&String> = outcome
            .warnings
            .iter()
            .filter(|w| !(*family == "fetch" && w.contains("refused by the egress policy")))
            .filter(|w| !(*family == "fetch" && w.contains("more fetches were refused")))
            .collect();
        assert!(unexpected.is_empty(), "{mode}, {family}: {unexpected:?}");
        let (asserted, failed) = report(&outcome);
        assert!(failed.is_empty(), "{mode}, {family}: {failed:#?}");
        assert!(
            asserted > 10,
            "{mode}, {family}: only {asserted} assertions"
        );
        counts.push((*family, asserted));
    }
    counts
}

struct Stateful {
    engine: Engine,
    store: FileHeapStore,
    _dir: tempfile::TempDir,
}

fn stateful_engine(config: EngineConfig) -> Stateful {
    let dir = tempfile::tempdir().unwrap();
    let store = FileHeapStore::new(dir.path().join("heaps"));
    let engine = crate::common::engine::on_workers(
        config,
        Some(Arc::new(store.clone()) as Arc<dyn HeapStore>),
    );
    Stateful {
        engine,
        store,
        _dir: dir,
    }
}

#[tokio::test]
async fn the_corpus_passes_in_every_engine_mode() {
    let plain = crate::common::engine::on_workers(EngineConfig::default(), None);
    let cold = all_families("stateless", async |code| stateless(&plain, &code).await).await;

    let local = stateful_engine(EngineConfig::default());
    let fresh = all_families("stateful fresh", async |code| {
        stateful(&local.engine, &code, None).await
    })
    .await;
    let base = stateful(&local.engine, "globalThis.base = 1", None).await;
    let base = base.heap.expect("a heap");
    let restored = all_families("stateful restored", async |code| {
        stateful(&local.engine, &restored_only(&code), Some(&base)).await
    })
    .await;

    for (mode, counts) in [("stateful fresh", &fresh), ("stateful restored", &restored)] {
        assert_eq!(counts, &cold, "{mode} ran other assertions than stateless");
    }
}

/// `code`, failing unless it runs in the restored base heap (on its first
/// line, so the corpus keeps its line numbers).
fn restored_only(code: &str) -> String {
    format!("if (globalThis.base !== 1) throw new Error('the base heap was not restored'); {code}")
}

/// docs/engine.md's table is the corpus's own count: a family or an
/// assertion added without the table fails here.
#[tokio::test]
async fn the_docs_table_matches_the_corpus() {
    let engine = crate::common::engine::on_workers(EngineConfig::default(), None);
    let counts = all_families("stateless", async |code| stateless(&engine, &code).await).await;
    let docs =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/engine.md"))
            .unwrap();
    let mut expected = String::new();
    for (family, asserted) in &counts {
        expected.push_str(&format!("| {family} | {asserted} | {asserted} |\n"));
    }
    assert!(
        docs.contains(&expected),
        "docs/engine.md's corpus table should have these rows:\n{expected}"
    );
}

#[tokio::test]
async fn console_methods_print_as_documented() {
    let engine = crate::common::engine::on_workers(EngineConfig::default(), None);
    let outcome = stateless(&engine, &corpus_code("console")).await;
    assert!(report(&outcome).1.is_empty());
    let output = outcome.output;
    let expected = "\
default: 1
default: 2
x: 1
default: 1
[WARN] Count for 'never' does not exist
[ERROR] Assertion failed: shown 1
[ERROR] Assertion failed
outer
  in 1
    [INFO] in 2
out
{ a: { b: 1 } }
┌─────────┬───┬─────┐
│ (index) │ a │ b   │
├─────────┼───┼─────┤
│ 0       │ 1 │     │
│ 1       │ 2 │ 'x' │
└─────────┴───┴─────┘
┌─────────┬────────┐
│ (index) │ Values │
├─────────┼────────┤
│ 0       │ 'p'    │
│ 1       │ 'q'    │
└─────────┴────────┘
5
[WARN] Timer 't' already exists
";
    assert!(output.starts_with(expected), "{output}");
    let rest = &output[expected.len()..];
    let lines: Vec<&str> = rest.lines().collect();
    assert!(
        lines[0].starts_with("t: ") && lines[0].ends_with("ms mid"),
        "{rest}"
    );
    assert!(
        lines[1].starts_with("t: ") && lines[1].ends_with("ms"),
        "{rest}"
    );
    assert_eq!(lines[2], "[WARN] Timer 't' does not exist", "{rest}");
    assert_eq!(lines[3], "[ERROR] Trace: here", "{rest}");
    assert!(lines[4].trim_start().starts_with("at "), "{rest}");
}

#[tokio::test]
async fn errors_are_the_platforms() {
    let engine = crate::common::engine::on_workers(EngineConfig::default(), None);
    for (code, name) in [
        ("new URL('nope')", "TypeError"),
        ("atob('%')", "InvalidCharacterError"),
        ("structuredClone(() => 1)", "DataCloneError"),
        ("new TextDecoder('nope')", "RangeError"),
        (
            "new TextDecoder('utf-8', {fatal: true}).decode(new Uint8Array([255]))",
            "TypeError",
        ),
        (
            "crypto.getRandomValues(new Uint8Array(70000))",
            "QuotaExceededError",
        ),
        ("new Response(null, {status: 99})", "RangeError"),
        ("new Headers({'a b': 1})", "TypeError"),
        ("AbortSignal.abort().throwIfAborted()", "AbortError"),
    ] {
        let outcome = stateless(&engine, code).await;
        assert_eq!(outcome.status, RunStatus::Failed, "{code}: {outcome:?}");
        let error = outcome.error.expect("an error");
        assert_eq!(error.name, name, "{code}: {error:?}");
    }
}

/// The issue's list: each kept on `globalThis` in one run, used in the next
/// with `instanceof` intact; also through an engine worker.
const KEEP: &str = r#"
class Bus extends EventTarget { count = 0; constructor() { super(); this.addEventListener("tick", () => this.count++); } }
globalThis.kept = {
  url: new URL("https://example.com/a?x=1"),
  headers: new Headers({ "x-kept": "yes" }),
  blob: new Blob(["kept blob"], { type: "text/plain" }),
  controller: new AbortController(),
  decoder: new TextDecoder(),
  bus: new Bus(),
  request: new Request("https://example.com/", { method: "POST", body: "req body" }),
  response: Response.json({ kept: true }),
  params: new URLSearchParams("a=1"),
  form: new FormData(),
  key: null,
};
kept.form.append("f", new File(["in a file"], "f.txt"));
kept.decoder.decode(new Uint8Array([0xF0, 0x9F]), { stream: true });
kept.bus.dispatchEvent(new Event("tick"));
crypto.subtle.importKey("raw", new TextEncoder().encode("k"), { name: "HMAC", hash: "SHA-256" }, true, ["sign"]).then((k) => { kept.key = k; });
"#;

const USE_KEPT: &str = r#"
(async () => {
  kept.bus.dispatchEvent(new Event("tick"));
  kept.url.searchParams.append("y", "2");
  kept.controller.abort("later");
  const sig = new Uint8Array(await crypto.subtle.sign("HMAC", kept.key, new TextEncoder().encode("m")));
  return [
    kept.url instanceof URL, kept.url.href,
    kept.headers instanceof Headers, kept.headers.get("X-Kept"),
    kept.blob instanceof Blob, await kept.blob.text(),
    kept.controller.signal instanceof AbortSignal, kept.controller.signal.reason,
    kept.decoder instanceof TextDecoder, kept.decoder.decode(new Uint8Array([0x98, 0x80])),
    kept.bus instanceof EventTarget, kept.bus.count,
    kept.request instanceof Request, await kept.request.text(),
    kept.response instanceof Response, (await kept.response.json()).kept,
    kept.params instanceof URLSearchParams, kept.params.get("a"),
    kept.form.get("f") instanceof File, await kept.form.get("f").text(),
    kept.key instanceof CryptoKey, sig.length,
  ];
})()
"#;

const KEPT: &str = r#"[true,"https://example.com/a?x=1&y=2",true,"yes",true,"kept blob",true,"later",true,"😀",true,2,true,"req body",true,true,true,"1",true,"in a file",true,32]"#;

#[tokio::test]
async fn web_objects_survive_snapshots_with_their_prototypes() {
    let local = stateful_engine(EngineConfig::default());
    let made = stateful(&local.engine, KEEP, None).await;
    completed(&made);
    let used = stateful(&local.engine, USE_KEPT, made.heap.as_ref()).await;
    assert_eq!(completed(&used), KEPT);
}

#[tokio::test]
async fn a_heap_made_before_the_web_layer_gains_it_on_restore() {
    // tests/fixtures/heaps/d429e185… was written by this engine before
    // src/engine/web existed (tests/it/engine/mod.rs has the code that made it).
    let local = stateful_engine(EngineConfig::default());
    std::fs::create_dir_all(local.store.dir()).unwrap();
    let old =
        HeapKey::parse("d429e185687e796df3f46b967d33e601e46fc10ac5c6e14e6f9c111d13d64f74").unwrap();
    std::fs::copy(
        format!("{}/tests/fixtures/heaps/{old}", env!("CARGO_MANIFEST_DIR")),
        local.store.path_of(&Tenant::anonymous(), &old),
    )
    .unwrap();
    let probe = "JSON.stringify([m.get('b'), k.p, typeof URL, new URL('b', 'https://x.example/a/').href, \
                 typeof console.table, typeof structuredClone, btoa('old')])";
    let from_old = stateful(&local.engine, probe, Some(&old)).await;
    let expected = r#"[[1,2,3],7,"function","https://x.example/a/b","function","function","b2xk"]"#;
    assert_eq!(
        completed(&from_old),
        serde_json::to_string(expected).unwrap()
    );
    // What the old heap leads to keeps both its state and the layer.
    let kept = stateful(&local.engine, KEEP, from_old.heap.as_ref()).await;
    completed(&kept);
    let used = stateful(&local.engine, USE_KEPT, kept.heap.as_ref()).await;
    assert_eq!(completed(&used), KEPT);
}

#[tokio::test]
async fn code_that_defines_a_global_keeps_its_own_across_restores() {
    let local = stateful_engine(EngineConfig::default());
    let made = stateful(
        &local.engine,
        "globalThis.URL = function URL() { return 'mine'; }; 1",
        None,
    )
    .await;
    let next = stateful(&local.engine, "URL()", made.heap.as_ref()).await;
    assert_eq!(completed(&next), "\"mine\"");
}

#[tokio::test]
async fn an_abort_timeout_does_not_hold_the_run() {
    let engine = crate::common::engine::on_workers(EngineConfig::default(), None);
    let started = Instant::now();
    let outcome = stateless(
        &engine,
        "globalThis.s = AbortSignal.timeout(20000); setTimeout(() => {}, 5); s.aborted",
    )
    .await;
    assert_eq!(completed(&outcome), "false");
    // A bound, not a timing figure: the signal's 20 s would fail it.
    assert!(started.elapsed() < Duration::from_secs(15));
}

/// A run that uses none of the layer stores none of its code: an empty
/// context's heap stays near its size before the layer (docs/performance.md
/// has the measured figures).
#[tokio::test]
async fn an_unused_web_layer_is_not_in_the_snapshot() {
    let local = stateful_engine(EngineConfig::default());
    let bare = stateful(&local.engine, "1", None).await;
    let used = stateful(
        &local.engine,
        "new Response(new Blob([new URL('https://x.example/').href])); crypto.randomUUID(); 1",
        None,
    )
    .await;
    let size = async |outcome: &RunOutcome| {
        let key = outcome.heap.clone().expect("a heap");
        let heap = local.store.get(&Tenant::anonymous(), &key).await.unwrap();
        heap.unwrap().payload().len()
    };
    let (bare, used) = (size(&bare).await, size(&used).await);
    assert!(
        used > bare + 20_000,
        "loading families adds their code ({bare} → {used} bytes)"
    );
}
