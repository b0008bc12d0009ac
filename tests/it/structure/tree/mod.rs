//! What the source tree must not hold again, read from `src/` (the shape
//! docs/architecture.md describes; tests/it/structure/layers.rs holds the imports):
//! host services found through statics, polling loops, structs that
//! mirror the run contract across the worker pipe, a second
//! content-addressing helper, a module the README's layout omits.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod docs;

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
/// the composition root (src/compose.rs), not through the engine.
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

/// A MiB is written as bytes in one place (`src/units.rs`), so no bound
/// converts its own way: every other size says `MIB`, unit tests included.
#[test]
fn a_mib_is_written_once() {
    fn walk(dir: &Path, found: &mut Vec<String>) {
        for path in std::fs::read_dir(dir).unwrap().flatten().map(|e| e.path()) {
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for (n, line) in text.lines().enumerate() {
                    if line.contains("1024 * 1024") {
                        found.push(format!("{}:{}", path.display(), n + 1));
                    }
                }
            }
        }
    }
    let mut found = Vec::new();
    walk(&src(), &mut found);
    let units = src().join("units.rs").display().to_string();
    assert_eq!(
        found,
        [format!("{units}:4")],
        "write N * MIB (crate::units)"
    );
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// The engine's root holds its facade and the files it calls; the rest is
/// in rooms (`src/engine/mod.rs`'s table).
#[test]
fn the_engine_root_holds_at_most_ten_files() {
    let files: Vec<String> = std::fs::read_dir(src().join("engine"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    assert!(files.len() <= 10, "{files:?}");
    assert!(files.contains(&"mod.rs".to_owned()), "{files:?}");
}

/// A generated file is marked in .gitattributes (so reviews and tools
/// fold it) and names its generator near its top; every file that says it
/// is generated is marked.
#[test]
fn generated_files_are_marked_and_name_their_generator() {
    let attributes = std::fs::read_to_string(root().join(".gitattributes")).unwrap();
    let marked: Vec<&str> = attributes
        .lines()
        .filter(|l| l.contains("linguist-generated=true"))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(marked.len() >= 3, "{marked:?}");
    for file in &marked {
        let text = std::fs::read_to_string(root().join(file))
            .unwrap_or_else(|e| panic!("{file} is marked generated: {e}"));
        let head: String = text.chars().take(4096).collect();
        assert!(
            generator_of(&head).is_some(),
            "{file} does not name its generator (a build.mjs) near its top"
        );
    }
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if entry.file_name() != "node_modules" {
                    walk(&path, found);
                }
            } else {
                found.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&src(), &mut files);
    for path in files {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let relative = path.strip_prefix(root()).unwrap().to_str().unwrap();
        let head: String = text.lines().take(3).collect::<Vec<_>>().join("\n");
        if head.contains("GENERATED by") {
            assert!(
                marked.contains(&relative),
                "{relative} says it is generated but .gitattributes does not mark it"
            );
        }
    }
}

/// The `build.mjs` a generated file's first lines name.
fn generator_of(head: &str) -> Option<String> {
    head.split(|c: char| c.is_whitespace() || c == '`')
        .map(|word| word.trim_end_matches(['.', ',', ';', ')']))
        .find(|word| {
            (word.starts_with("scripts/") || word.starts_with("src/"))
                && word.ends_with("/build.mjs")
        })
        .map(str::to_owned)
}

/// Generators follow one convention: a `build.mjs` beside the
/// `package.json` and lock file of what it bundles, run by `node`, writing
/// the committed files, and comparing instead with `--check`. Each marked
/// file is what its generator makes of the sources: the test fails when
/// they changed and the generator was not run.
#[test]
fn every_generated_file_is_what_its_generator_builds() {
    let attributes = std::fs::read_to_string(root().join(".gitattributes")).unwrap();
    let mut generators = std::collections::BTreeSet::new();
    for file in attributes
        .lines()
        .filter(|l| l.contains("linguist-generated=true"))
        .filter_map(|l| l.split_whitespace().next())
    {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        let head: String = text.chars().take(4096).collect();
        generators
            .insert(generator_of(&head).unwrap_or_else(|| panic!("{file} names no build.mjs")));
    }
    assert!(generators.len() >= 2, "{generators:?}");
    for generator in generators {
        let dir = root().join(&generator);
        let dir = dir.parent().unwrap();
        assert!(
            dir.join("package-lock.json").exists(),
            "{generator} has no package-lock.json beside it"
        );
        assert!(
            dir.join("node_modules/rolldown").exists(),
            "{generator}'s bundler is not installed: run scripts/install-test-deps.sh"
        );
        let output = std::process::Command::new("node")
            .arg(root().join(&generator))
            .arg("--check")
            .output()
            .expect("node runs");
        assert!(
            output.status.success(),
            "{generator} --check: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// A file is read whole by whoever changes it: none under `src/` holds
/// more than 700 lines of code besides its unit tests; a longer one is
/// split by what its parts do.
#[test]
fn no_file_of_src_is_over_700_lines_besides_its_tests() {
    let long: Vec<String> = sources()
        .into_iter()
        .filter(|(_, code)| code.lines().count() > 700)
        .map(|(file, code)| format!("{file}: {} lines", code.lines().count()))
        .collect();
    assert!(sources().len() > 100, "the reader must see the files");
    assert!(long.is_empty(), "{long:#?}");
}

/// The integration tests' files, each under 700 lines: a longer one is
/// split into a folder by what its tests drive.
#[test]
fn no_test_file_is_over_700_lines() {
    let mut files = Vec::new();
    let mut dirs = vec![root().join("tests/it")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    assert!(files.len() > 100, "the reader must see the files");
    let long: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let lines = std::fs::read_to_string(path).unwrap().lines().count();
            (lines > 700).then(|| format!("{}: {lines} lines", path.display()))
        })
        .collect();
    assert!(long.is_empty(), "{long:#?}");
}

/// One word per thing: no folder holds two names that differ only by a
/// plural (`capability.rs` beside `capabilities.rs`, `app.rs` beside
/// `apps/`), and `fn execute` means one thing (running a task's call).
#[test]
fn no_name_says_two_things() {
    fn walk(dir: &Path, found: &mut Vec<String>) {
        let names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().into_string().unwrap())
            .collect();
        let stems: Vec<&str> = names
            .iter()
            .map(|n| n.strip_suffix(".rs").unwrap_or(n))
            .collect();
        for stem in &stems {
            if stems.contains(&format!("{stem}s").as_str()) {
                found.push(format!("{}: {stem} and {stem}s", dir.display()));
            }
        }
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            if entry.path().is_dir() {
                walk(&entry.path(), found);
            }
        }
    }
    let mut found = Vec::new();
    walk(&src(), &mut found);
    assert!(found.is_empty(), "{found:#?}");
    let executes: Vec<String> = sources()
        .into_iter()
        .filter(|(_, code)| code.contains("fn execute("))
        .map(|(file, _)| file)
        .collect();
    assert!(executes.len() <= 2, "fn execute in {executes:?}");
}

/// The words that named two things once (docs/architecture.md, "Words")
/// name one type each: the transport's session and the caller's logical
/// session, a tool's answer and an upstream's, a task's run and a
/// worker's.
#[test]
fn each_word_that_named_two_things_names_one_type() {
    let words = [
        "Call",
        "Answer",
        "ToolAnswer",
        "UpstreamAnswer",
        "Answered",
        "InputAnswered",
        "Ran",
        "Executed",
        "WorkerOutcome",
        "SessionId",
        "McpSessionId",
        "LogicalSession",
    ];
    let mut declared: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (file, code) in sources() {
        for line in code_lines(&code) {
            let line = line
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub(super) ")
                .trim_start_matches("pub ");
            for word in words {
                let named = ["struct ", "enum ", "type ", "trait "].iter().any(|kind| {
                    line.strip_prefix(kind)
                        .and_then(|rest| rest.strip_prefix(word))
                        .is_some_and(|rest| !rest.starts_with(|c: char| c.is_alphanumeric()))
                });
                if named {
                    declared.entry(word).or_default().push(file.clone());
                }
            }
        }
    }
    let twice: Vec<_> = declared
        .iter()
        .filter(|(_, files)| files.len() > 1)
        .collect();
    assert!(
        twice.is_empty(),
        "declared in more than one file: {twice:#?}"
    );
    assert!(
        declared.contains_key("McpSessionId") && declared.contains_key("LogicalSession"),
        "the reader must see the session pair: {declared:?}"
    );
}

/// The integration tests sort into a few folders by axis.
#[test]
fn the_integration_tests_have_at_most_fifteen_modules_at_their_top() {
    let main = std::fs::read_to_string(root().join("tests/it/main.rs")).unwrap();
    let modules: Vec<&str> = main
        .lines()
        .filter_map(|l| l.strip_prefix("mod "))
        .collect();
    assert!(modules.len() >= 5, "{modules:?}");
    assert!(modules.len() <= 15, "{modules:?}");
}

/// The integration tests run V8 as the binary does, in engine workers: an
/// engine is built only through `common::engine::on_workers` and an app
/// through `common::app_on_workers` (which give them workers), never with
/// `Engine::new`, `compose::app` or the in-process config themselves.
#[test]
fn no_integration_test_runs_v8_in_its_own_process() {
    let tests = root().join("tests/it");
    let helpers = [tests.join("common/engine.rs"), tests.join("common/mod.rs")];
    let mut found = Vec::new();
    let mut dirs = vec![tests];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") && !helpers.contains(&path) {
                let text = std::fs::read_to_string(&path).unwrap();
                // Split so that this file does not name what it looks for.
                let needles = [
                    ["Engine::", "new("].concat(),
                    ["compose::", "app("].concat(),
                    ["EngineConfig::", "in_process("].concat(),
                ];
                if needles.iter().any(|n| text.contains(n.as_str())) {
                    found.push(path.display().to_string());
                }
            }
        }
    }
    assert!(found.is_empty(), "engines built in process: {found:?}");
    let helper = std::fs::read_to_string(&helpers[0]).unwrap();
    assert!(helper.contains("config.engine_workers > 0"));
}
