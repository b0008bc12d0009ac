//! The library's module layers (docs/architecture.md) as a test: each
//! top-level module of `src/` may import only the modules listed for it,
//! which keeps the graph free of cycles and of upward imports, and `src/`
//! holds no module that only tests use.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What each top-level module may import through `crate::`, lowest layer
/// first. A module not listed here fails the test until it is placed.
const ALLOWED: &[(&str, &[&str])] = &[
    ("protocol", &[]),
    ("tenant", &[]),
    ("heap", &["tenant"]),
    ("backends", &[]),
    ("logs", &[]),
    ("session", &["backends", "heap", "protocol"]),
    ("egress", &[]),
    ("engine", &["egress", "heap", "tenant"]),
    ("meta", &["backends", "engine", "heap", "session", "tenant"]),
    (
        "tools",
        &["engine", "heap", "meta", "protocol", "session", "tenant"],
    ),
    (
        "server",
        &["meta", "protocol", "session", "tenant", "tools"],
    ),
    (
        "transport",
        &["protocol", "server", "session", "tenant", "tools"],
    ),
    ("config", &["backends", "egress", "tenant", "transport"]),
    ("lambda", &["transport"]),
    (
        "app",
        &[
            "backends",
            "config",
            "engine",
            "heap",
            "meta",
            "server",
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
            if import != module && !may.contains(&import.as_str()) {
                violations.push(format!(
                    "{} imports crate::{import}, which {module} may not use",
                    file.strip_prefix(&src).unwrap().display()
                ));
            }
        }
    }
    assert!(violations.is_empty(), "{violations:#?}");
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
