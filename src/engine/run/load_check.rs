//! `packages add` proves a package loads before installing it: its entry is
//! imported in a fresh isolate that sees only that package, exactly as a
//! run imports it (the run's Node ports, its Web platform, its limits).

use std::collections::BTreeMap;

use crate::engine::capability::outcome::RunStatus;
use crate::engine::contract::JobResult;
use crate::engine::run::typescript;
use crate::engine::run::typescript::Language;
use crate::packages::{PackageView, Prepared, Scratch};

/// The check of `package`: the JavaScript that imports it, the view of
/// packages it runs with (that package alone), and the scratch directory
/// holding its bundle, which must outlive the run (it is removed when
/// dropped). The facade runs it as a fresh job (`impl LoadCheck for Engine`).
pub(crate) fn prepare(package: &Prepared) -> Result<(String, PackageView, Scratch), String> {
    let scratch = Scratch::named("mcp-v8-load-check");
    std::fs::create_dir_all(&scratch.0)
        .and_then(|()| {
            std::fs::write(
                scratch.0.join(package.installed.bundle.as_str()),
                &package.bundle,
            )
        })
        .map_err(|e| format!("writing the bundle to {}: {e}", scratch.0.display()))?;
    let view = PackageView {
        packages: BTreeMap::from([(package.name.clone(), package.installed.clone())]),
        urls: BTreeMap::new(),
        dir: scratch.0.clone(),
    };
    let code = import_code(&package.name, &package.installed.entries);
    let prepared = typescript::prepare(&code, Language::Javascript)
        .map_err(|e| format!("the check's own code: {e}"))?;
    Ok((prepared.js, view, scratch))
}

/// The names the package's main entry gives, from the check's result, or
/// why it did not load.
pub(crate) fn names(result: JobResult) -> Result<Vec<String>, String> {
    match (result.status, result.error) {
        (RunStatus::Completed, _) => {
            let mut names: Vec<String> = result
                .result
                .as_deref()
                .and_then(|json| serde_json::from_str::<String>(json).ok())
                .and_then(|text| serde_json::from_str(&text).ok())
                .unwrap_or_default();
            names.sort();
            Ok(names)
        }
        (_, Some(error)) => Err(format!("{}: {}", error.name, error.message)),
        (status, None) => Err(format!("importing it ended {status:?}")),
    }
}

/// Code importing and requiring the package's main entry, or each entry
/// when it has none (a package of subpaths only): a dual package's
/// `require` loads its other build. A failure names the call. Its value is
/// the JSON of the names the main entry gives (see [`LoadCheck`]).
///
/// [`LoadCheck`]: crate::packages::LoadCheck
fn import_code(name: &str, entries: &[String]) -> String {
    let main = entries.iter().any(|e| e == ".");
    let specifiers: Vec<String> = if main {
        vec![name.to_owned()]
    } else {
        entries
            .iter()
            .map(|e| format!("{name}{}", e.strip_prefix('.').unwrap_or(e)))
            .collect()
    };
    let specifiers = serde_json::to_string(&specifiers).expect("strings serialize");
    let given = if main {
        let name = serde_json::to_string(name).expect("strings serialize");
        format!(
            "const required = require({name});\n\
             const names = new Set(Object.keys(await import({name})));\n\
             if (required !== null && (typeof required === \"object\" || typeof required === \"function\")) {{\n\
             \x20 for (const key of Object.keys(required)) names.add(key);\n\
             }}\n\
             names.delete(\"default\");\n\
             JSON.stringify([...names]);\n"
        )
    } else {
        "JSON.stringify([]);\n".to_owned()
    };
    format!(
        "for (const specifier of {specifiers}) {{\n\
         \x20 for (const [call, load] of [[\"import\", (s) => import(s)], [\"require\", (s) => require(s)]]) {{\n\
         \x20   try {{ await load(specifier); }}\n\
         \x20   catch (error) {{\n\
         \x20     const what = error instanceof Error ? `${{error.name}}: ${{error.message}}` : String(error);\n\
         \x20     throw new Error(`${{call}}('${{specifier}}') threw ${{what}}`);\n\
         \x20   }}\n\
         \x20 }}\n\
         }}\n\
         {given}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_main_entry_is_imported_else_every_subpath() {
        let code = import_code("lodash", &[".".into(), "./fp".into()]);
        assert!(code.contains(r#"["lodash"]"#), "{code}");
        let code = import_code("@scope/x", &["./a".into(), "./b".into()]);
        assert!(code.contains(r#"["@scope/x/a","@scope/x/b"]"#), "{code}");
        assert!(code.contains("require(s)"), "{code}");
    }
}
