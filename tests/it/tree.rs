//! What the source tree must not hold again, read from `src/` (the shape
//! docs/architecture.md describes; tests/it/layers.rs holds the imports):
//! host services found through statics, polling loops, structs that
//! mirror the run contract across the worker pipe, a second
//! content-addressing helper, a module the README's layout omits.

use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file of `src/`, with its path relative to it and its code
/// but its unit tests (all of it, also what follows a test module).
fn sources() -> Vec<(String, String)> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&src(), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let code = crate::common::source::production_code(&text);
            let relative = path
                .strip_prefix(src())
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned();
            (relative, code)
        })
        .collect()
}

/// Lines of code (not comments) of `code`.
fn code_lines(code: &str) -> impl Iterator<Item = &str> {
    code.lines()
        .map(str::trim)
        .filter(|line| !line.starts_with("//"))
}

#[test]
fn no_static_holds_a_runtime_or_a_client() {
    let mut found = Vec::new();
    for (file, code) in sources() {
        for line in code_lines(&code) {
            let is_static = line.starts_with("static ") || line.contains(" static ");
            let holds = ["Runtime", "Client", "Upstreams", "Egress", "reqwest"]
                .iter()
                .any(|held| line.contains(held));
            if is_static && holds {
                found.push(format!("{file}: {line}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "host services are passed in, not kept in statics: {found:#?}"
    );
}

#[test]
fn host_work_is_waited_for_in_one_place_without_polling() {
    let mut found = Vec::new();
    for (file, code) in sources() {
        for line in code_lines(&code) {
            if line.contains("recv_timeout(") && file != "engine/services/work.rs" {
                found.push(format!("{file}: {line}"));
            }
            if line.contains("from_millis(1)") {
                found.push(format!("{file}: {line}"));
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn the_worker_pipe_carries_the_run_contract_as_it_is() {
    let mut found = Vec::new();
    for (file, code) in sources() {
        if !file.starts_with("engine/worker/") {
            continue;
        }
        for line in code_lines(&code) {
            let declares = ["struct ", "enum "].iter().find_map(|kind| {
                let at = line.find(kind)?;
                let name: String = line[at + kind.len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                Some(name)
            });
            if let Some(name) = declares
                && (name.ends_with("Header") || name.contains("Job") || name.contains("Result"))
            {
                found.push(format!("{file}: {line}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "a struct mirroring the run contract: {found:#?}"
    );
    let wire = std::fs::read_to_string(src().join("engine/worker/wire.rs")).unwrap();
    assert!(
        wire.contains("Result(Box<JobResult>)"),
        "results cross as JobResult"
    );
}

#[test]
fn one_helper_addresses_content_for_every_store() {
    let mut found = Vec::new();
    for (file, code) in sources() {
        let store = ["heap/", "files/", "packages/"]
            .iter()
            .any(|dir| file.starts_with(dir));
        // The registry checks npm's own integrity digests, which are not keys.
        if !store || file == "packages/registry.rs" {
            continue;
        }
        for line in code_lines(&code) {
            if line.contains("Sha256") || line.contains("sha2::") || line.contains("crate::heap::")
            {
                found.push(format!("{file}: {line}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "stores hash and verify through backends::content: {found:#?}"
    );
}

/// A content-addressed store's key is a type that only a digest or a check
/// makes, so no backend re-checks text or could be handed a path.
#[test]
fn content_addressed_stores_take_typed_keys() {
    let mut found = Vec::new();
    for (file, code) in sources() {
        if !(file.starts_with("files/") || file.starts_with("packages/")) {
            continue;
        }
        // Each `get`/`put` signature, however rustfmt wrapped it.
        for (at, _) in code
            .match_indices("fn get")
            .chain(code.match_indices("fn put"))
        {
            let rest = &code[at..];
            let signature = &rest[..rest.find(['{', ';']).unwrap_or(rest.len())];
            if signature.contains("key: &str") || signature.contains("Result<String,") {
                found.push(format!(
                    "{file}: {}",
                    signature.split_whitespace().collect::<Vec<_>>().join(" ")
                ));
            }
        }
    }
    assert!(found.is_empty(), "keys are ContentKeys: {found:#?}");
}

/// The stores and clients reach the tools and the server as values from
/// the composition root (src/app.rs), not through the engine.
#[test]
fn tools_and_the_server_do_not_find_stores_through_the_engine() {
    let mut found = Vec::new();
    for (file, code) in sources() {
        if !(file.starts_with("tools/") || file.starts_with("server/")) {
            continue;
        }
        for line in code_lines(&code) {
            for getter in [
                ".heaps()",
                ".file_store()",
                ".packages()",
                "engine.upstreams()",
            ] {
                if line.contains(getter) {
                    found.push(format!("{file}: {line}"));
                }
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn the_readme_layout_names_every_module_of_src() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let layout = &readme[readme.find("## Layout").expect("a Layout section")..];
    let layout = &layout[..layout[3..].find("\n## ").map_or(layout.len(), |i| i + 3)];
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(src()).unwrap().flatten() {
        let name = entry.file_name().into_string().unwrap();
        if matches!(name.as_str(), "lib.rs" | "main.rs") {
            continue;
        }
        let shown = if entry.path().is_dir() {
            format!("`src/{name}/`")
        } else {
            format!("`src/{name}`")
        };
        if !layout.contains(&shown) {
            missing.push(shown);
        }
    }
    assert!(missing.is_empty(), "README's Layout lacks {missing:?}");
}
