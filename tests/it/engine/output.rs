//! What a run prints and returns: console lines and how values render, the
//! output cap and its marker, results as JSON or readable text.

use super::*;

#[tokio::test]
async fn console_output_is_captured_in_order_with_prefixes() {
    let f = fixture();
    let out = f
        .stateless("console.log('plain', 1, {a: 1}, [1, 2, 3]); console.info('i'); console.warn('w'); console.error('e'); console.debug('d'); 0")
        .await;
    completed(&out);
    assert_eq!(
        out.output,
        "plain 1 { a: 1 } [ 1, 2, 3 ]\n[INFO] i\n[WARN] w\n[ERROR] e\n[DEBUG] d\n"
    );
}

#[tokio::test]
async fn console_renders_values_readably() {
    let f = fixture();
    let out = f
        .stateless(
            "const o = { s: 'x', n: null, u: undefined, f() {}, nested: { deep: { deeper: { deepest: 1 } } } }; o.self = o;\
             console.log(o); console.log(new Map([[1, 'a']]), new Set([2]), 10n, Symbol('s'), new Error('e').message, class K {});",
        )
        .await;
    completed(&out);
    // What Node 22 prints for the same two lines.
    assert_eq!(
        out.output,
        "<ref *1> {\n  s: 'x',\n  n: null,\n  u: undefined,\n  f: [Function: f],\n  \
         nested: { deep: { deeper: [Object] } },\n  self: [Circular *1]\n}\n\
         Map(1) { 1 => 'a' } Set(1) { 2 } 10n Symbol(s) e [class K]\n"
    );
}

/// `console.log` and `util.inspect` are one inspector (Node's), so a value
/// prints the same way through either; `%s`-style formats work as in Node.
#[tokio::test]
async fn console_log_prints_what_util_inspect_shows() {
    let f = fixture();
    let values = "[{ a: [1, 2, { b: new Map([['k', new Set([1])]]) }] }, Array.from({ length: 30 }, (_, i) => i), \
                  Object.create(null), [1, , 3], { s: \"it's\" }, new Uint8Array([1, 2]), -0, 1n]";
    let out = f
        .stateless(&format!(
            "const util = require('node:util'); const values = {values}; \
             for (const v of values) console.log(v); \
             console.log('%s has %d items', 'list', 3); \
             values.map((v) => util.inspect(v)).join('\\n') + '\\nlist has 3 items'"
        ))
        .await;
    let inspected: String = serde_json::from_str(completed(&out)).unwrap();
    assert_eq!(out.output, format!("{inspected}\n"));
    assert!(out.output.contains("[\n   0,  1,  2,"), "{}", out.output);
}

#[tokio::test]
async fn output_is_capped_with_a_visible_marker() {
    let dir = tempfile::tempdir().unwrap();
    let config = EngineConfig {
        capabilities: CapabilitySettings {
            console: ConsoleSettings {
                max_output_bytes: 1000,
            },
            ..Default::default()
        },
        ..Default::default()
    };
    let engine = crate::common::engine::on_workers(
        config,
        Some(Arc::new(FileHeapStore::new(dir.path())) as Arc<dyn HeapStore>),
    );
    let out = engine
        .run(RunRequest {
            code: "for (let i = 0; i < 10000; i++) console.log('line', i); 'done'".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .outcome;
    assert_eq!(completed(&out), "\"done\"");
    assert!(out.output.len() < 1200, "{}", out.output.len());
    // Both ends: the first lines, and the last, where an error would be.
    assert!(out.output.starts_with("line 0\n"), "{}", out.output);
    assert!(out.output.ends_with("line 9999\n"), "{}", out.output);
    assert!(
        out.output.contains("bytes dropped from the middle"),
        "{}",
        out.output
    );
}

#[tokio::test]
async fn results_are_json_when_possible_and_readable_otherwise() {
    let f = fixture();
    assert_eq!(
        completed(&f.stateless("({a: [1, 'two', null]})").await),
        r#"{"a":[1,"two",null]}"#
    );
    assert_eq!(completed(&f.stateless("'text'").await), "\"text\"");
    assert_eq!(
        completed(&f.stateless("(function named() {})").await),
        "[Function: named]"
    );
    assert_eq!(completed(&f.stateless("12n").await), "12n");
    assert_eq!(completed(&f.stateless("NaN").await), "NaN");
    let out = f.stateless("undefined").await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.result, None);
    let cyclic = f.stateless("const c = {}; c.c = c; c").await;
    assert_eq!(completed(&cyclic), "{ c: [Circular] }");
}

/// The marker of output cut in the middle reads in docs/tools.md as the
/// code writes it, numbers standing as D, N, H and T.
#[tokio::test]
async fn the_output_marker_is_the_one_docs_tools_md_shows() {
    let engine = crate::common::engine::on_workers(
        EngineConfig {
            capabilities: CapabilitySettings {
                console: ConsoleSettings {
                    max_output_bytes: 1000,
                },
                ..Default::default()
            },
            ..EngineConfig::default()
        },
        None,
    );
    let outcome = engine::stateless(
        &engine,
        "for (let i = 0; i < 300; i++) console.log('line ' + i)",
    )
    .await;
    let marker = outcome
        .output
        .lines()
        .find(|l| l.starts_with("[output truncated:"))
        .unwrap_or_else(|| panic!("{}", outcome.output));
    let mut letters = ["D", "N", "H", "T"].into_iter();
    let mut shown = String::new();
    let mut digits = false;
    for c in marker.chars() {
        if c.is_ascii_digit() {
            if !digits {
                shown.push_str(letters.next().expect("four numbers"));
            }
            digits = true;
        } else {
            digits = false;
            shown.push(c);
        }
    }
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/tools.md")).unwrap();
    let docs = docs.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        docs.contains(&format!("`{shown}`")),
        "{shown} is not in docs/tools.md"
    );
}

/// One console value, and the displayed result, are shown up to 64 KiB;
/// past it the text ends with a marker naming the string's length and the
/// rule, so the model knows the text is not whole.
#[tokio::test]
async fn a_console_value_past_64_kib_is_cut_with_a_marker() {
    let engine = crate::common::engine::on_workers(EngineConfig::default(), None);
    let report = engine::run_report(
        &engine,
        "console.log('y'.repeat(100000)); new Map([[1, 'z'.repeat(100000)]])",
        None,
    )
    .await;
    let output = &report.outcome.output;
    assert!(output.len() < 66 * 1024, "{} bytes", output.len());
    assert!(
        output.trim_end().ends_with(
            "…[cut: a string of 100000 characters; one value is shown up to its first 64 KiB; \
             write larger text to a /work file to keep it whole]"
        ),
        "{}",
        &output[output.len() - 200..]
    );
    let display = report.repl.expect("a displayed value");
    assert!(
        display.contains("[cut: a string of 100000 characters"),
        "{}",
        &display[display.len() - 200..]
    );
}
