//! Bundling a fetched package for the engine: every subpath it exports
//! (or, without `exports`, the ones its files suggest) bundled into
//! CommonJS with rolldown, so a run loads one package without any
//! resolution of its own.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use rolldown::{Bundler, BundlerOptions, InputItem, IsExternal, ResolveOptions};

use super::builtins::left_to_the_run;
use super::bundle::{Bundle, Entry};
use super::bundler::Build;
use super::install::{Declared, InstallOptions, Prepared, Unpacked};
use super::{InstallError, Installed};
use crate::backends::content::ContentKey;

impl Unpacked {
    /// The package bundled as `build` takes it, with its index entry.
    pub async fn bundle(
        &self,
        build: Build,
        options: &InstallOptions,
    ) -> Result<Prepared, InstallError> {
        let (root, name, version) = (&self.scratch.0, &self.name, &self.version);
        let subpaths = &self.subpaths;
        let (bundle, declared) = match bundle(
            root,
            name,
            version,
            &subpaths.paths,
            subpaths.conditional,
            build,
        )
        .await
        {
            Ok(done) => done,
            // Subpaths guessed from the files of a package without `exports`
            // may include files that are not modules; its main entry alone
            // still makes it importable.
            Err(_) if subpaths.guessed && subpaths.paths.len() > 1 => {
                bundle(
                    root,
                    name,
                    version,
                    &[".".to_owned()],
                    subpaths.conditional,
                    build,
                )
                .await?
            }
            Err(e) => return Err(e),
        };
        let bytes = Bytes::from(bundle.to_bytes());
        if bytes.len() > options.max_bundle_bytes {
            return Err(InstallError::TooLarge {
                what: format!(
                    "{name}@{version}'s bundle ({} bytes; MCP_V8_MAX_PACKAGE_MB)",
                    bytes.len()
                ),
                max: options.max_bundle_bytes,
            });
        }
        Ok(Prepared {
            installed: Installed {
                version: version.clone(),
                bundle: ContentKey::of(&bytes),
                bytes: bytes.len() as u64,
                entries: bundle.entries.keys().cloned().collect(),
                shape: None,
            },
            name: name.clone(),
            bundle: bytes,
            declared,
        })
    }
}

/// How a bundle's entries are resolved: as Node's `import` does, or as its
/// `require` does (the `require` condition of `exports`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loaded {
    Imported,
    Required,
}

impl Loaded {
    /// The prefix of entry names (`e0.js`, `r0.js`): one bundle holds both.
    fn prefix(self) -> char {
        match self {
            Self::Imported => 'e',
            Self::Required => 'r',
        }
    }
}

/// Bundles `subpaths` of the package `name` unpacked under `root` as Node's
/// `import` resolves them, and, for a package whose `exports` has
/// conditions (`conditional`), again as its `require` does: the subpaths
/// whose module then differs (a dual package's CommonJS build) get
/// `require` entries.
async fn bundle(
    root: &Path,
    name: &str,
    version: &str,
    subpaths: &[String],
    conditional: bool,
    build: Build,
) -> Result<(Bundle, Option<Declared>), InstallError> {
    let (mut bundle, imported) =
        bundle_as(root, name, version, subpaths, Loaded::Imported, build).await?;
    let declared = imported.get(".").and_then(|module| {
        let path = Path::new(module);
        let (esm, names) = super::lexer::declared_exports(path)?;
        let file = path
            .strip_prefix(root.join("node_modules").join(name))
            .unwrap_or(path)
            .display()
            .to_string();
        Some(Declared { file, esm, names })
    });
    if !conditional {
        return Ok((bundle, declared));
    }
    let subpaths: Vec<String> = bundle.entries.keys().cloned().collect();
    let (required, modules) =
        bundle_as(root, name, version, &subpaths, Loaded::Required, build).await?;
    let differ: Vec<(String, Entry)> = required
        .entries
        .into_iter()
        .filter(|(subpath, _)| modules.get(subpath) != imported.get(subpath))
        .collect();
    if differ.is_empty() {
        return Ok((bundle, declared));
    }
    // Files of both passes share one namespace: entries are `e…`/`r…`, and
    // chunks are named by their content's hash.
    bundle.files.extend(required.files);
    bundle.require.extend(differ);
    Ok((bundle, declared))
}

/// One pass of [`bundle`]; with each subpath's module. Subpaths that name
/// one module (`"."` and `"./index"` of a package whose main file is
/// `index.js`) become one entry: given the same module twice, rolldown makes
/// the second entry a facade of a shared chunk that exports nothing, so
/// `require` of it was `{}` (readable-stream 3's `"."`).
async fn bundle_as(
    root: &Path,
    name: &str,
    version: &str,
    subpaths: &[String],
    loaded: Loaded,
    build: Build,
) -> Result<(Bundle, HashMap<String, String>), InstallError> {
    let output = generate(root, name, subpaths, loaded, build).await?;
    let mut modules: HashMap<String, String> = HashMap::new();
    let mut first_of: HashMap<String, usize> = HashMap::new();
    let mut same: Vec<(usize, usize)> = Vec::new();
    for (index, chunk) in entry_chunks(&output.assets, loaded) {
        let Some(module) = chunk.facade_module_id.as_ref() else {
            continue;
        };
        modules.insert(subpaths[index].clone(), module.to_string());
        match first_of.entry(module.to_string()) {
            std::collections::hash_map::Entry::Occupied(first) => {
                same.push((index, *first.get()));
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(index);
            }
        }
    }
    if same.is_empty() {
        let bundle = assemble(name, version, subpaths, &output.assets, loaded)?;
        return Ok((bundle, modules));
    }
    let unique: Vec<String> = subpaths
        .iter()
        .enumerate()
        .filter(|(index, _)| !same.iter().any(|(again, _)| again == index))
        .map(|(_, subpath)| subpath.clone())
        .collect();
    let output = generate(root, name, &unique, loaded, build).await?;
    let mut bundle = assemble(name, version, &unique, &output.assets, loaded)?;
    for (again, first) in same {
        if let Some(entry) = bundle.entries.get(&subpaths[first]).cloned() {
            bundle.entries.insert(subpaths[again].clone(), entry);
        }
    }
    Ok((bundle, modules))
}

/// Rolldown's output for `subpaths` of `name` as entries `e0`, `e1`, … (or
/// `r0`, … resolved as `require` resolves them).
async fn generate(
    root: &Path,
    name: &str,
    subpaths: &[String],
    loaded: Loaded,
    build: Build,
) -> Result<rolldown::BundleOutput, InstallError> {
    let input: Vec<InputItem> = subpaths
        .iter()
        .enumerate()
        .map(|(i, sub)| InputItem {
            name: Some(format!("{}{i}", loaded.prefix())),
            import: format!("{name}{}", sub.strip_prefix('.').unwrap_or(sub)),
        })
        .collect();
    let external = IsExternal::Fn(Some(Arc::new(
        |specifier: &str, importer: Option<&str>, resolved: bool| {
            let external = !resolved && left_to_the_run(specifier, importer);
            Box::pin(async move { Ok(external) })
        },
    )));
    let options = BundlerOptions {
        external: Some(external),
        // `import` or `require` by how each module is reached, as Node
        // takes them, beside `node` (or `browser`) and `default`: naming both (and
        // `module`) for every import let whichever the package lists first
        // win, so a dual package's `require` got its ES module build.
        resolve: Some(ResolveOptions {
            condition_names: Some(vec!["default".to_owned()]),
            ..ResolveOptions::default()
        }),
        chunk_filenames: Some("c-[hash].js".to_owned().into()),
        ..super::bundler::options(input, root.to_owned(), build)
    };
    let failed = |reason: String| bundle_failed(name, reason);
    let mut bundler = match loaded {
        Loaded::Imported => Bundler::new(options),
        Loaded::Required => Bundler::with_plugins(options, vec![Arc::new(RequiredEntries)]),
    }
    .map_err(|e| failed(e.to_string()))?;
    bundler.generate().await.map_err(|e| failed(e.to_string()))
}

/// Resolves a bundle's entries as `require("name/sub")` would: the
/// `require` condition of `exports` in place of `import`.
#[derive(Debug)]
struct RequiredEntries;

impl rolldown::plugin::Plugin for RequiredEntries {
    fn name(&self) -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("mcp-v8-lambda:required-entries")
    }

    async fn resolve_id(
        &self,
        ctx: &rolldown::plugin::PluginContext,
        args: &rolldown::plugin::HookResolveIdArgs<'_>,
    ) -> rolldown::plugin::HookResolveIdReturn {
        if !args.is_entry {
            return Ok(None);
        }
        let options = rolldown::plugin::PluginContextResolveOptions {
            import_kind: rolldown_common::ImportKind::Require,
            is_entry: true,
            ..Default::default()
        };
        match ctx
            .resolve(args.specifier, args.importer, Some(options))
            .await?
        {
            Ok(resolved) => Ok(Some(
                rolldown::plugin::HookResolveIdOutput::from_resolved_id(resolved),
            )),
            Err(_) => Ok(None),
        }
    }

    fn register_hook_usage(&self) -> rolldown::plugin::HookUsage {
        rolldown::plugin::HookUsage::ResolveId
    }
}

fn bundle_failed(name: &str, reason: String) -> InstallError {
    InstallError::Bundle {
        name: name.to_owned(),
        reason,
    }
}

/// The entry chunks of `assets`, each with the index of its subpath.
fn entry_chunks(
    assets: &[rolldown_common::Output],
    loaded: Loaded,
) -> impl Iterator<Item = (usize, &rolldown_common::OutputChunk)> {
    assets.iter().filter_map(move |asset| {
        let rolldown_common::Output::Chunk(chunk) = asset else {
            return None;
        };
        let index = chunk
            .name
            .strip_prefix(loaded.prefix())?
            .parse::<usize>()
            .ok()?;
        chunk.is_entry.then_some((index, &**chunk))
    })
}

/// The bundle of `assets`, rolldown's output for `subpaths`.
fn assemble(
    name: &str,
    version: &str,
    subpaths: &[String],
    assets: &[rolldown_common::Output],
    loaded: Loaded,
) -> Result<Bundle, InstallError> {
    let mut bundle = Bundle::new(name, version);
    super::bundler::add_chunks(&mut bundle, assets);
    for (index, chunk) in entry_chunks(assets, loaded) {
        let esm = chunk
            .facade_module_id
            .as_ref()
            .is_some_and(|id| super::lexer::is_esm(Path::new(id.as_str())));
        let wrapped = !esm && chunk.exports.len() == 1 && chunk.exports[0] == "default";
        bundle.entries.insert(
            subpaths[index].clone(),
            Entry {
                file: chunk.filename.to_string(),
                esm,
                wrapped,
            },
        );
    }
    if bundle.entries.is_empty() {
        return Err(bundle_failed(
            name,
            "it has no entry point a run can import".into(),
        ));
    }
    Ok(bundle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_core_module_name_with_a_slash_is_the_npm_package_when_one_is_there() {
        let root = tempfile::tempdir().unwrap();
        let importer = root.path().join("node_modules/aws-sdk/lib/util.js");
        std::fs::create_dir_all(root.path().join("node_modules/buffer")).unwrap();
        std::fs::write(root.path().join("node_modules/buffer/package.json"), "{}").unwrap();
        let importer = importer.to_str();
        // Built-ins, by Node's reading.
        for builtin in [
            "buffer",
            "node:buffer",
            "fs/promises",
            "node:string_decoder/",
        ] {
            assert!(left_to_the_run(builtin, importer), "{builtin}");
        }
        // The package the importer can see is bundled.
        assert!(!left_to_the_run("buffer/", importer));
        assert!(!left_to_the_run("buffer/index.js", importer));
        // No such package: the run's port answers.
        assert!(left_to_the_run("events/", importer));
        assert!(left_to_the_run("buffer/", None));
        assert!(!left_to_the_run("lodash", importer));
        // A core module runs lack is the package, when there is one; one
        // runs have is theirs, as Node prefers its own.
        for name in ["os", "punycode", "querystring"] {
            let dir = root.path().join("node_modules").join(name);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("package.json"), "{}").unwrap();
        }
        assert!(!left_to_the_run("os", importer));
        assert!(left_to_the_run("punycode", importer));
        assert!(left_to_the_run("querystring", importer));
        assert!(left_to_the_run("string_decoder", importer));
    }
}
