//! The library's module layers (docs/architecture.md) as a test: each
//! top-level module of `src/` may import only the modules listed for it,
//! which keeps the graph free of cycles and of upward imports; inside a
//! module, no two files import each other, even through others; and `src/`
//! holds no module that only tests use.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Modules every other may import: they import nothing themselves.
const EVERYWHERE: &[&str] = &["units"];

/// What each top-level module may import through `crate::`, lowest layer
/// first. A module not listed here fails the test until it is placed.
const ALLOWED: &[(&str, &[&str])] = &[
    ("units", &[]),
    ("protocol", &[]),
    ("apps", &["protocol"]),
    ("tenant", &[]),
    ("clock", &[]),
    ("backends", &[]),
    ("heap", &["backends", "clock", "tenant"]),
    ("files", &["backends", "clock", "tenant"]),
    ("egress", &[]),
    ("packages", &["backends", "egress"]),
    ("upstream", &["egress", "protocol"]),
    ("logs", &[]),
    ("observe", &[]),
    ("skills", &["protocol"]),
    ("session", &["backends", "heap", "protocol"]),
    ("elicit", &["heap", "session", "tenant"]),
    (
        "engine",
        &[
            "backends", "clock", "egress", "elicit", "files", "heap", "packages", "tenant",
            "upstream",
        ],
    ),
    (
        "tasks",
        &["clock", "elicit", "engine", "protocol", "tenant"],
    ),
    (
        "meta",
        &[
            "backends", "clock", "elicit", "heap", "session", "tasks", "tenant",
        ],
    ),
    (
        "tools",
        &[
            "clock", "elicit", "engine", "files", "heap", "meta", "observe", "packages",
            "protocol", "session", "skills", "tenant", "upstream",
        ],
    ),
    (
        "server",
        &[
            "apps", "clock", "elicit", "engine", "egress", "heap", "meta", "protocol", "session",
            "skills", "tasks", "tenant", "tools", "upstream",
        ],
    ),
    (
        "transport",
        &[
            "clock", "elicit", "observe", "protocol", "server", "session", "tenant", "tools",
        ],
    ),
    (
        "config",
        &[
            "backends",
            "egress",
            "engine",
            "tenant",
            "transport",
            "upstream",
        ],
    ),
    ("lambda", &["observe", "tasks", "tools", "transport"]),
    (
        "compose",
        &[
            "backends",
            "config",
            "engine",
            "files",
            "heap",
            "meta",
            "packages",
            "server",
            "session",
            "skills",
            "tasks",
            "tenant",
            "tools",
            "transport",
        ],
    ),
    (
        "cli",
        &[
            "backends",
            "compose",
            "config",
            "engine",
            "heap",
            "lambda",
            "logs",
            "observe",
            "packages",
            "session",
            "tenant",
            "tools",
            "transport",
        ],
    ),
];

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The top-level module a file of `src/` belongs to (`None`: the crate root
/// or the binary).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(src).unwrap();
    let first = relative.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(name, "lib" | "main")).then(|| name.to_owned())
}

/// The top-level modules a file names through `crate::`, in `use` lists
/// (`crate::{a, b}`) and in paths.
fn imports(text: &str, modules: &BTreeSet<&str>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (at, _) in text.match_indices("crate::") {
        let rest = &text[at + "crate::".len()..];
        let names: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            group
                .split(',')
                .map(|item| item.trim().split("::").next().unwrap_or("").trim())
                .collect()
        } else {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            vec![&rest[..end]]
        };
        for name in names {
            if modules.contains(name) {
                found.insert(name.to_owned());
            }
        }
    }
    found
}

#[test]
fn every_module_imports_only_from_the_layers_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let modules: BTreeSet<&str> = allowed.keys().copied().collect();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut violations = Vec::new();
    for file in &files {
        let Some(module) = module_of(&src, file) else {
            continue;
        };
        let Some(may) = allowed.get(module.as_str()) else {
            violations.push(format!("{module} has no place in the layer table"));
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap();
        for import in imports(&text, &modules) {
            if import != module
                && !may.contains(&import.as_str())
                && !EVERYWHERE.contains(&import.as_str())
            {
                violations.push(format!(
                    "{} imports crate::{import}, which {module} may not use",
                    file.strip_prefix(&src).unwrap().display()
                ));
            }
        }
    }
    for module in EVERYWHERE {
        if !allowed.get(module).is_some_and(|may| may.is_empty()) {
            violations.push(format!(
                "{module} is imported everywhere, so it may import nothing"
            ));
        }
    }
    assert!(violations.is_empty(), "{violations:#?}");
}

/// A file's module path below `src/` (`engine/web/mod.rs` is
/// `["engine", "web"]`, `lib.rs` is `[]`).
fn module_path(relative: &str) -> Vec<String> {
    let stem = relative.strip_suffix(".rs").unwrap_or(relative);
    let mut parts: Vec<String> = stem.split('/').map(str::to_owned).collect();
    if parts
        .last()
        .is_some_and(|last| matches!(last.as_str(), "mod" | "lib" | "main"))
    {
        parts.pop();
    }
    parts
}

/// The file that holds the longest prefix of `path` that is a module.
fn file_of(files: &BTreeMap<String, String>, path: &[String]) -> Option<String> {
    (0..=path.len()).rev().find_map(|n| {
        let prefix = path[..n].join("/");
        let candidates = if n == 0 {
            vec!["lib.rs".to_owned()]
        } else {
            vec![format!("{prefix}.rs"), format!("{prefix}/mod.rs")]
        };
        candidates.into_iter().find(|c| files.contains_key(c))
    })
}

fn identifier_end(text: &str) -> usize {
    text.find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len())
}

/// The paths a line names through `crate::`, `super::` and `self::`, and
/// through the file's own child modules, each as a module path.
fn named_paths(line: &str, me: &[String], children: &BTreeSet<String>) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let bytes = line.as_bytes();
    let mut at = 0;
    while at < line.len() {
        let rest = &line[at..];
        let starts_word = at == 0 || {
            let before = bytes[at - 1] as char;
            !(before.is_alphanumeric() || before == '_' || before == ':')
        };
        let word = &rest[..identifier_end(rest)];
        if !starts_word || word.is_empty() || !rest[word.len()..].starts_with("::") {
            at += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        }
        let base: Vec<String> = match word {
            "crate" => Vec::new(),
            "super" => me[..me.len().saturating_sub(1)].to_vec(),
            "self" => me.to_vec(),
            child if children.contains(child) => {
                let mut base = me.to_vec();
                base.push(child.to_owned());
                base
            }
            _ => {
                at += word.len();
                continue;
            }
        };
        let mut path = base;
        let mut segments = &rest[word.len() + 2..];
        loop {
            if let Some(group) = segments.strip_prefix('{') {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                for item in group.split(',') {
                    let mut grouped = path.clone();
                    grouped.extend(
                        item.trim()
                            .split("::")
                            .map(|s| s[..identifier_end(s)].to_owned())
                            .filter(|s| !s.is_empty() && s != "self"),
                    );
                    found.push(grouped);
                }
                break;
            }
            let name = &segments[..identifier_end(segments)];
            if name.is_empty() {
                found.push(path);
                break;
            }
            path.push(name.to_owned());
            match segments[name.len()..].strip_prefix("::") {
                Some(next) => segments = next,
                None => {
                    found.push(path);
                    break;
                }
            }
        }
        at += word.len() + 2;
    }
    found
}

/// `line` without the paths of `pub(in …)` visibilities, which say who
/// may see an item and import nothing.
fn without_visibility_paths(line: &str) -> String {
    let mut line = line.to_owned();
    while let Some(at) = line.find("pub(in ") {
        let end = line[at..].find(')').map_or(line.len(), |end| at + end + 1);
        line.replace_range(at..end, "pub");
    }
    line
}

/// Which files of `src/` each file imports. Declaring a child (`mod x;`)
/// is not an import, and neither is a `pub use` (a parent's facade over
/// its children, as in object_store); test modules are left out.
fn file_imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    let files: BTreeMap<String, String> = paths
        .iter()
        .map(|p| {
            let relative = p.strip_prefix(&src).unwrap().to_str().unwrap().to_owned();
            (relative, std::fs::read_to_string(p).unwrap())
        })
        .collect();
    let mut graph = BTreeMap::new();
    for (relative, text) in &files {
        let me = module_path(relative);
        let code = &crate::common::source::production_code(text);
        let children: BTreeSet<String> = code
            .lines()
            .filter_map(|line| {
                let line = line.trim();
                let declared = line
                    .strip_prefix("mod ")
                    .or_else(|| line.strip_prefix("pub mod "))
                    .or_else(|| line.strip_prefix("pub(crate) mod "))?;
                declared.strip_suffix(';').map(str::to_owned)
            })
            .collect();
        let mut imports = BTreeSet::new();
        for line in code.lines().map(str::trim) {
            let facade = ["pub use ", "pub(crate) use ", "pub(super) use "]
                .iter()
                .any(|p| line.starts_with(p));
            if line.starts_with("//") || facade || line.contains("mod ") && line.ends_with(';') {
                continue;
            }
            for path in named_paths(&without_visibility_paths(line), &me, &children) {
                if let Some(file) = file_of(&files, &path)
                    && file != *relative
                {
                    imports.insert(file);
                }
            }
        }
        graph.insert(relative.clone(), imports);
    }
    graph
}

/// A cycle through `graph`, if it has one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, done, path) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut done, &mut Vec::new()))
}

#[test]
fn no_two_files_of_src_import_each_other() {
    let graph = file_imports();
    assert!(
        graph["engine/run/mod.rs"].contains("engine/contract/registration.rs"),
        "the reader must see the run core's imports: {:?}",
        graph["engine/run/mod.rs"]
    );
    assert_eq!(find_cycle(&graph), None, "an import cycle between files");
}

/// The families (the Web platform's, Node's and the host's capabilities) sit below
/// the run core: they may use each other, the layer's table and helpers,
/// the capability trait, the run's control and memory, the egress and
/// upstream clients, and the host's services, never what runs them: the
/// run core, the isolate paths, the workers, the registration, the run
/// contract or the engine's front.
#[test]
fn no_family_imports_what_runs_it() {
    let above = [
        "engine/mod.rs",
        "engine/admission.rs",
        "engine/plan.rs",
        "engine/dispatch.rs",
        "engine/run/",
        "engine/worker/",
        "engine/contract/",
        "engine/heap_keeping/",
        "engine/prelude/",
        "engine/layer/mod.rs",
    ];
    let graph = file_imports();
    let families: Vec<&String> = graph
        .keys()
        .filter(|f| {
            ["engine/web/", "engine/host/", "engine/node/"]
                .iter()
                .any(|d| f.starts_with(d))
        })
        .collect();
    assert!(
        families.len() >= 15,
        "the reader must see the families: {families:?}"
    );
    let mut violations = Vec::new();
    for file in families {
        for import in &graph[file] {
            if above.iter().any(|a| import.starts_with(a)) {
                violations.push(format!("{file} imports {import}"));
            }
        }
    }
    assert!(violations.is_empty(), "{violations:#?}");
}

/// Inside `engine/`, the modules (a file or a room: `capability`,
/// `contract`, `run`, `layer`, `web`, `node`, `host`, `worker`, …) form no cycle: the layer is handed
/// its families and imports none, the families import the layer, the
/// registration imports both. The facade, `engine/mod.rs`, is the engine
/// itself and is left out.
#[test]
fn inside_the_engine_no_module_imports_one_that_depends_on_it() {
    fn module(file: &str) -> Option<String> {
        let rest = file.strip_prefix("engine/")?;
        if rest == "mod.rs" {
            return None;
        }
        Some(match rest.split_once('/') {
            Some((folder, _)) => folder.to_owned(),
            None => rest.trim_end_matches(".rs").to_owned(),
        })
    }
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, imports) in file_imports() {
        let Some(from) = module(&file) else { continue };
        let node = graph.entry(from.clone()).or_default();
        for to in imports.iter().filter_map(|i| module(i)) {
            if to != from {
                node.insert(to);
            }
        }
    }
    assert!(
        graph["contract"].contains("layer") && graph["web"].contains("layer"),
        "the reader must see the registration and the families use the layer: {graph:?}"
    );
    assert!(graph.contains_key("node"), "{graph:?}");
    assert_eq!(
        find_cycle(&graph),
        None,
        "a cycle between the engine's modules"
    );
}

#[test]
fn the_cycle_finder_finds_a_cycle_through_three_files() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a.rs", vec!["b.rs"]),
        ("b.rs", vec!["c.rs"]),
        ("c.rs", vec!["a.rs"]),
        ("d.rs", vec!["a.rs"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
    .collect();
    assert_eq!(
        find_cycle(&graph),
        Some(vec![
            "a.rs".into(),
            "b.rs".into(),
            "c.rs".into(),
            "a.rs".into()
        ])
    );
    let mut acyclic = graph.clone();
    acyclic.get_mut("c.rs").unwrap().clear();
    assert_eq!(find_cycle(&acyclic), None);
}

#[test]
fn the_path_reader_sees_super_crate_and_child_paths() {
    let me = vec!["engine".to_owned(), "web".to_owned(), "console".to_owned()];
    let children: BTreeSet<String> = ["bytes".to_owned()].into();
    let line = "use super::registry::{Natives, define}; crate::engine::control::RunControl; bytes::string(x); v8::Local";
    let paths = named_paths(line, &me, &children);
    let joined: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        joined,
        [
            "engine::web::registry::Natives",
            "engine::web::registry::define",
            "engine::control::RunControl",
            "engine::web::console::bytes::string",
        ]
    );
}

#[test]
fn the_layer_table_has_no_cycle() {
    // Each module may use only modules listed before it: a topological
    // order, so no cycle can pass the test above.
    let mut seen = BTreeSet::new();
    for (module, may) in ALLOWED {
        for dependency in *may {
            assert!(
                seen.contains(dependency),
                "{module} uses {dependency}, which is not below it"
            );
        }
        seen.insert(*module);
    }
}

#[test]
fn the_library_holds_no_test_only_module() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    for file in files {
        let name = file.file_stem().unwrap().to_str().unwrap();
        assert!(
            !matches!(name, "conformance" | "faults"),
            "{} belongs under tests/it/common/",
            file.display()
        );
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            !text.contains("#[doc(hidden)]\npub mod"),
            "{} hides a public module, as test-only code was",
            file.display()
        );
    }
}

#[test]
fn the_import_reader_sees_grouped_and_plain_imports() {
    let modules: BTreeSet<&str> = ["heap", "meta", "tools"].into();
    let text =
        "use crate::{heap::HeapKey, meta};\nlet x = crate::tools::Toolbox;\nuse crate::BoxError;";
    assert_eq!(
        imports(text, &modules),
        ["heap", "meta", "tools"]
            .into_iter()
            .map(String::from)
            .collect()
    );
}

/// A module's layer: 0 when it imports nothing (but what every module
/// may), else one above the highest layer it may import.
fn layer_of(module: &str, allowed: &BTreeMap<&str, &[&str]>) -> usize {
    allowed[module]
        .iter()
        .filter(|m| !EVERYWHERE.contains(m))
        .map(|m| layer_of(m, allowed) + 1)
        .max()
        .unwrap_or(0)
}

/// The rows of docs/architecture.md's module table (`| layer | module |
/// may import | job | seam |`) that do not say what [`ALLOWED`] says: the
/// module's layer and what it may import, one row per module.
fn stale_rows(architecture: &str) -> Vec<String> {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut stale = Vec::new();
    let mut seen = BTreeSet::new();
    for line in architecture.lines() {
        let cells: Vec<&str> = line
            .split(" | ")
            .map(|c| c.trim_matches(['|', ' ']))
            .collect();
        let Some(module) = cells
            .get(1)
            .and_then(|c| c.strip_prefix('`')?.strip_suffix('`'))
        else {
            continue;
        };
        let Ok(layer) = cells[0].parse::<usize>() else {
            continue;
        };
        let Some(may) = allowed.get(module) else {
            stale.push(format!("{module}: no such module in the layer table"));
            continue;
        };
        seen.insert(module);
        if layer != layer_of(module, &allowed) {
            stale.push(format!(
                "{module}: layer {layer}, where its imports make it {}",
                layer_of(module, &allowed)
            ));
        }
        let listed: BTreeSet<&str> = cells
            .get(2)
            .map(|c| {
                c.split(", ")
                    .map(|m| m.trim_matches('`'))
                    .filter(|m| *m != "–")
                    .collect()
            })
            .unwrap_or_default();
        if listed != may.iter().copied().collect() {
            stale.push(format!(
                "{module}: may import {listed:?}, where the layer table says {may:?}"
            ));
        }
    }
    for module in allowed.keys().filter(|m| !seen.contains(*m)) {
        stale.push(format!("{module}: no row"));
    }
    stale
}

/// docs/architecture.md's layers and arrows are this file's table.
#[test]
fn the_architecture_table_states_the_layers_as_they_are() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md");
    let architecture = std::fs::read_to_string(path).unwrap();
    assert_eq!(stale_rows(&architecture), Vec::<String>::new());
}

/// A row whose layer or imports are stale is found, as is a module the
/// table lacks.
#[test]
fn a_stale_architecture_row_fails() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md");
    let architecture = std::fs::read_to_string(path).unwrap();
    let row = |module: &str| {
        architecture
            .lines()
            .find(|l| l.contains(&format!(" | `{module}` | ")))
            .unwrap()
            .to_owned()
    };
    let tools = row("tools");
    let layered = architecture.replace(&tools, &tools.replacen("| 7 |", "| 1 |", 1));
    assert!(
        stale_rows(&layered)
            .iter()
            .any(|s| s.starts_with("tools: layer 1"))
    );
    let importing = architecture.replace(&tools, &tools.replacen("`clock`, ", "", 1));
    assert!(
        stale_rows(&importing)
            .iter()
            .any(|s| s.starts_with("tools: may import"))
    );
    let without = architecture.replace(&row("clock"), "");
    assert_eq!(stale_rows(&without), ["clock: no row"]);
}
