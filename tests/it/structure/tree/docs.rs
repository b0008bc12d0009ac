//! The docs tell the truth: every path they and the comments name exists, every
//! test they name is where they say, and the README's layout and the
//! architecture table name every module.

use super::*;

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

/// The `src/`, `tests/` and `scripts/` paths `text` names: a `*` is a glob
/// of one file name, a path cut by `…` is a prefix.
fn named_paths(text: &str) -> Vec<(String, bool)> {
    let mut found = Vec::new();
    for top in ["src/", "tests/", "scripts/"] {
        for (at, _) in text.match_indices(top) {
            let before = text[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || matches!(c, '/' | '.' | '-' | '_')) {
                continue;
            }
            let rest = &text[at..];
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || matches!(c, '/' | '.' | '-' | '_' | '*')))
                .unwrap_or(rest.len());
            let path = rest[..end].trim_end_matches(['.', ',', ':', ';']);
            let cut = rest[end..].starts_with('…');
            found.push((path.to_owned(), cut));
        }
    }
    found
}

fn exists(path: &str, cut: bool) -> bool {
    let full = root().join(path);
    if !cut && !path.contains('*') {
        return full.exists();
    }
    let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
    let (before, after) = if cut {
        (name, "")
    } else {
        name.split_once('*').unwrap()
    };
    std::fs::read_dir(root().join(dir)).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            let n = e.file_name().into_string().unwrap_or_default();
            n.starts_with(before) && n.ends_with(after) && n.len() >= before.len() + after.len()
        })
    })
}

/// What the docs say about the tree is read by an engineer finding their
/// way: every path they name exists, in docs/, the README, Cargo.toml's
/// comments and the comments of the code and the tests.
#[test]
fn every_path_the_docs_and_comments_name_exists() {
    let mut texts: Vec<(String, String)> = Vec::new();
    for entry in std::fs::read_dir(root().join("docs")).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "md") {
            texts.push((
                path.display().to_string(),
                std::fs::read_to_string(&path).unwrap(),
            ));
        }
    }
    texts.push((
        "README.md".into(),
        std::fs::read_to_string(root().join("README.md")).unwrap(),
    ));
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let manifest_comments: Vec<&str> = manifest
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('#'))
        .collect();
    texts.push(("Cargo.toml".into(), manifest_comments.join("\n")));
    fn comments(dir: &Path, texts: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if path.is_dir() && name != "node_modules" && name != "fixtures" {
                comments(&path, texts);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                let comments: Vec<&str> = text
                    .lines()
                    .map(str::trim)
                    .filter(|l| l.starts_with("//"))
                    .collect();
                texts.push((path.display().to_string(), comments.join("\n")));
            }
        }
    }
    comments(&src(), &mut texts);
    comments(&root().join("tests"), &mut texts);
    let mut missing = Vec::new();
    let mut checked = 0;
    for (file, text) in &texts {
        for (path, cut) in named_paths(text) {
            checked += 1;
            if !exists(&path, cut) {
                missing.push(format!("{file}: {path}"));
            }
        }
    }
    assert!(checked > 200, "the reader must see the paths: {checked}");
    assert!(missing.is_empty(), "paths that do not exist: {missing:#?}");
}

#[test]
fn the_path_reader_reads_globs_and_cut_paths() {
    let text = "see `src/engine/node/modules.*`, tests/fixtures/heaps/d429e185… and src/nowhere.rs; not v8/src/x.cc";
    let paths = named_paths(text);
    assert_eq!(
        paths,
        [
            ("src/engine/node/modules.*".to_owned(), false),
            ("src/nowhere.rs".to_owned(), false),
            ("tests/fixtures/heaps/d429e185".to_owned(), true),
        ]
    );
    assert!(exists(&paths[0].0, false));
    assert!(!exists(&paths[1].0, false));
    assert!(exists(&paths[2].0, true));
}

/// docs/architecture.md's module table has a row for every top-level
/// module, and the README lists every document.
#[test]
fn the_architecture_table_and_the_readme_name_every_module_and_document() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let architecture = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let modules: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|m| m.trim_end_matches(';'))
        .collect();
    assert!(modules.len() >= 20, "{modules:?}");
    let unlisted: Vec<&&str> = modules
        .iter()
        .filter(|m| {
            !architecture
                .lines()
                .any(|l| l.starts_with("| ") && l.contains(&format!("| `{m}` |")))
        })
        .collect();
    assert!(
        unlisted.is_empty(),
        "docs/architecture.md's table lacks {unlisted:?}"
    );
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let docs_row = readme
        .lines()
        .find(|l| l.starts_with("| `docs/` |"))
        .expect("the Layout's docs row");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(root().join("docs")).unwrap().flatten() {
        let name = entry.file_name().into_string().unwrap();
        let Some(stem) = name.strip_suffix(".md") else {
            continue;
        };
        if !docs_row.contains(stem) || !readme.contains(&format!("(docs/{name})")) {
            missing.push(name);
        }
    }
    assert!(missing.is_empty(), "README does not list {missing:?}");
}

/// Where the docs name a test by its file (a path under tests/it, then the test's name),
/// the test is in that file (or that folder), so a split or a rename that
/// moves it makes the docs say where it went.
#[test]
fn every_test_the_docs_name_is_where_they_say() {
    let mut defined: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut dirs = vec![root().join("tests/it")];
    let fn_name = regex::Regex::new(r"fn ([a-z0-9_]+)\(").unwrap();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let file = path.strip_prefix(root()).unwrap().display().to_string();
                for name in fn_name.captures_iter(&std::fs::read_to_string(&path).unwrap()) {
                    defined
                        .entry(name[1].to_owned())
                        .or_default()
                        .push(file.clone());
                }
            }
        }
    }
    let reference =
        regex::Regex::new(r"`(tests/it/[a-z0-9_/]+(?:\.rs|/))`((?::? ?`[a-z0-9_]+`(?:, )?)+)")
            .unwrap();
    let name = regex::Regex::new(r"`([a-z0-9_]+)`").unwrap();
    let mut docs = vec![root().join("README.md"), root().join("tests/README.md")];
    for entry in std::fs::read_dir(root().join("docs")).unwrap().flatten() {
        docs.push(entry.path());
    }
    let mut named = 0;
    let mut wrong = Vec::new();
    for doc in docs
        .iter()
        .filter(|d| d.extension().is_some_and(|e| e == "md"))
    {
        let text = std::fs::read_to_string(doc).unwrap();
        for found in reference.captures_iter(&text) {
            let path = &found[1];
            for test in name.captures_iter(&found[2]) {
                named += 1;
                let files = defined.get(&test[1]).map(Vec::as_slice).unwrap_or_default();
                let here = files
                    .iter()
                    .any(|f| f == path || (path.ends_with('/') && f.starts_with(path)));
                if !here {
                    wrong.push(format!(
                        "{}: {path}: {} is in {files:?}",
                        doc.display(),
                        &test[1]
                    ));
                }
            }
        }
    }
    assert!(named > 20, "the reader must see the docs' tests: {named}");
    assert!(wrong.is_empty(), "{wrong:#?}");
}
