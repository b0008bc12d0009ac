//! Fetching a package for the engine: resolve its version and its
//! dependencies' from the registry (npm's hoisted `node_modules` layout),
//! download and verify each tarball, and unpack them into a scratch
//! directory (`Unpacked`), which `prepare` bundles.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use nodejs_semver::Version;

pub use super::bundler::Build;
use super::registry::{Packument, Registry};
use super::spec::{PackageSpec, valid_name};
use super::tarball::{manifest_in, unpack};
use super::versions::{candidates, parse_range, parse_version, pick};
use super::{InstallError, Installed};
use crate::units::MIB;

/// Where packages come from and how large they may be.
#[derive(Debug, Clone)]
pub struct InstallOptions {
    /// The registry's base URL (`--registry`, `MCP_V8_NPM_REGISTRY`).
    pub registry: url::Url,
    /// Largest tarball downloaded.
    pub max_tarball_bytes: usize,
    /// Largest bundle stored for one package (`MCP_V8_MAX_PACKAGE_MB`).
    pub max_bundle_bytes: usize,
    /// Most packages one install may unpack (the package and its
    /// dependencies).
    pub max_packages: usize,
}

/// The public registry.
pub const DEFAULT_REGISTRY: &str = "https://registry.npmjs.org/";

impl InstallOptions {
    /// Options for `registry` (the public one when `None`).
    pub fn new(registry: Option<&str>, max_bundle_bytes: usize) -> Result<Self, InstallError> {
        let mut base = registry.unwrap_or(DEFAULT_REGISTRY).to_owned();
        if !base.ends_with('/') {
            base.push('/');
        }
        let registry = url::Url::parse(&base)
            .map_err(|e| InstallError::Registry(format!("registry URL {base:?}: {e}")))?;
        Ok(Self {
            registry,
            max_tarball_bytes: 64 * MIB,
            max_bundle_bytes,
            max_packages: 500,
        })
    }
}

/// A package ready to store: its bundle and its index entry.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// Package name.
    pub name: String,
    /// Its index entry.
    pub installed: Installed,
    /// The bundle's bytes (their SHA-256 is `installed.bundle`).
    pub bundle: Bytes,
    /// What its main entry's source says it exports, for the load check to
    /// compare with what a run gets; `None` for a package without a main
    /// entry.
    pub declared: Option<Declared>,
}

/// The export names a package's main entry declares in its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    /// The entry file, relative to the package.
    pub file: String,
    /// Whether it is an ES module (else CommonJS).
    pub esm: bool,
    /// Its names, as [`super::lexer`] finds them in the source: an ES
    /// module's `export`s, a CommonJS module's as Node's cjs-module-lexer
    /// would; `default` left out.
    pub names: Vec<String>,
}

/// A package and its dependencies unpacked as npm lays them out, to be
/// bundled for Node or, failing that, for the browser.
pub struct Unpacked {
    pub(super) scratch: Scratch,
    pub(super) name: String,
    pub(super) version: String,
    pub(super) subpaths: Subpaths,
}

impl Unpacked {
    /// The package's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The exact version unpacked.
    pub fn version(&self) -> &str {
        &self.version
    }
}

/// A scratch directory removed when dropped.
pub(crate) struct Scratch(pub(crate) PathBuf);

impl Scratch {
    /// A new, not yet created, directory under the system's temporary one.
    pub(crate) fn named(prefix: &str) -> Self {
        Self(std::env::temp_dir().join(format!("{prefix}-{}", uuid::Uuid::new_v4())))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Resolves, downloads, verifies and bundles `spec`.
pub async fn fetch(spec: &PackageSpec, options: &InstallOptions) -> Result<Unpacked, InstallError> {
    let registry = Registry {
        base: options.registry.clone(),
        client: reqwest::Client::builder()
            .user_agent(concat!("mcp-v8-lambda/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| InstallError::Registry(e.to_string()))?,
        max_tarball_bytes: options.max_tarball_bytes,
    };
    let scratch = Scratch::named("mcp-v8-install");
    let root = &scratch.0;
    std::fs::create_dir_all(root)?;
    // package.json at the root keeps the resolver from looking above it.
    std::fs::write(root.join("package.json"), b"{\"private\":true}")?;

    let mut documents: HashMap<String, Packument> = HashMap::new();
    let (manifest, tarball) = match spec {
        PackageSpec::Registry { name, range } => {
            let manifest = pick(&registry, &mut documents, name, range.as_deref()).await?;
            let tarball = registry.tarball(&manifest).await?;
            (manifest, tarball)
        }
        PackageSpec::Tarball(path) => {
            let bytes = std::fs::read(path).map_err(|e| {
                std::io::Error::new(e.kind(), format!("reading {}: {e}", path.display()))
            })?;
            if bytes.len() > options.max_tarball_bytes {
                return Err(InstallError::TooLarge {
                    what: path.display().to_string(),
                    max: options.max_tarball_bytes,
                });
            }
            let manifest = manifest_in(&path.display().to_string(), &bytes)?;
            (manifest, Bytes::from(bytes))
        }
    };
    let name = manifest.name.clone();
    let top = format!("node_modules/{name}");
    unpack(
        &format!("{name}@{}", manifest.version),
        &tarball,
        &root.join(&top),
    )?;

    // Dependencies, breadth first, each placed as high as it can go
    // without clashing with a version already there (npm's hoisting).
    let mut placed: BTreeMap<String, Version> = BTreeMap::new();
    placed.insert(top.clone(), parse_version(&manifest)?);
    let mut queue: VecDeque<(String, String, String)> = manifest
        .needed()
        .into_iter()
        .map(|(n, r)| (top.clone(), n, r))
        .collect();
    while let Some((parent, dep, range)) = queue.pop_front() {
        if !valid_name(&dep) {
            return Err(InstallError::Registry(format!(
                "{parent} depends on {dep:?}, not a package name"
            )));
        }
        let wanted = parse_range(&dep, &range)?;
        let mut location = None;
        let mut satisfied = false;
        for candidate in candidates(&parent, &dep) {
            match placed.get(&candidate) {
                Some(version) if wanted.satisfies(version) => {
                    satisfied = true;
                    break;
                }
                Some(_) => {
                    location = Some(format!("{parent}/node_modules/{dep}"));
                    break;
                }
                None => {}
            }
        }
        if satisfied {
            continue;
        }
        let location = location.unwrap_or_else(|| format!("node_modules/{dep}"));
        if placed.len() >= options.max_packages {
            return Err(InstallError::TooLarge {
                what: format!("{name}'s dependency tree (packages)"),
                max: options.max_packages,
            });
        }
        let dependency = pick(&registry, &mut documents, &dep, Some(&range)).await?;
        let tarball = registry.tarball(&dependency).await?;
        unpack(
            &format!("{dep}@{}", dependency.version),
            &tarball,
            &root.join(&location),
        )?;
        placed.insert(location.clone(), parse_version(&dependency)?);
        for (n, r) in dependency.needed() {
            queue.push_back((location.clone(), n, r));
        }
    }

    let subpaths = entry_points(&root.join(&top))?;
    Ok(Unpacked {
        scratch,
        name,
        version: manifest.version,
        subpaths,
    })
}

/// The subpaths a package is imported by.
pub(super) struct Subpaths {
    pub(super) paths: Vec<String>,
    /// Guessed from its files, as it has no `exports`.
    pub(super) guessed: bool,
    /// Its `exports` has conditions (an object with a key that is not a
    /// subpath), under which `import` and `require` may resolve to
    /// different modules.
    pub(super) conditional: bool,
}

/// Most subpaths guessed from a package's files.
const MAX_GUESSED_SUBPATHS: usize = 2000;

fn entry_points(dir: &Path) -> Result<Subpaths, InstallError> {
    let text = std::fs::read_to_string(dir.join("package.json"))?;
    let manifest: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    // Folder mappings (`"./es/": "./es/"`) are gone from Node since 17:
    // nothing imports them, and they are no module to bundle.
    let code = |key: &str| {
        !key.contains('*')
            && !key.ends_with('/')
            && key != "./package.json"
            && ![".json", ".css", ".d.ts", ".map", ".node", ".wasm"]
                .iter()
                .any(|ext| key.ends_with(ext))
    };
    let conditional = manifest.get("exports").is_some_and(has_conditions);
    match manifest.get("exports") {
        Some(serde_json::Value::Object(map)) if map.keys().any(|k| k.starts_with('.')) => {
            let paths: Vec<String> = map
                .iter()
                .filter(|(k, v)| code(k) && !v.is_null())
                .map(|(k, _)| k.clone())
                .collect();
            Ok(Subpaths {
                paths,
                guessed: false,
                conditional,
            })
        }
        Some(serde_json::Value::Null) | None => {
            let mut paths = vec![".".to_owned()];
            let mut names: Vec<String> = std::fs::read_dir(dir)?
                .filter_map(Result::ok)
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let file_type = e.file_type().ok()?;
                    if name.starts_with('.') || name == "node_modules" {
                        return None;
                    }
                    if file_type.is_file() {
                        let stem = name
                            .strip_suffix(".js")
                            .or_else(|| name.strip_suffix(".cjs"))
                            .or_else(|| name.strip_suffix(".mjs"))?;
                        Some(format!("./{stem}"))
                    } else if file_type.is_dir()
                        && (e.path().join("index.js").is_file()
                            || e.path().join("package.json").is_file())
                    {
                        Some(format!("./{name}"))
                    } else {
                        None
                    }
                })
                .collect();
            names.sort();
            names.dedup();
            names.truncate(MAX_GUESSED_SUBPATHS);
            paths.extend(names);
            Ok(Subpaths {
                paths,
                guessed: true,
                conditional,
            })
        }
        // A string, an array or conditions: the package's main entry only.
        Some(_) => Ok(Subpaths {
            paths: vec![".".to_owned()],
            guessed: false,
            conditional,
        }),
    }
}

/// Whether an `exports` value has conditions (an object with a key that
/// is not a subpath), at any depth.
fn has_conditions(value: &serde_json::Value) -> bool {
    match value {
        serde_json::Value::Object(map) => map
            .iter()
            .any(|(key, value)| !key.starts_with('.') || has_conditions(value)),
        serde_json::Value::Array(items) => items.iter().any(has_conditions),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dependency_is_looked_for_from_its_parent_up() {
        assert_eq!(
            candidates("node_modules/a/node_modules/b", "c"),
            [
                "node_modules/a/node_modules/b/node_modules/c",
                "node_modules/a/node_modules/c",
                "node_modules/c"
            ]
        );
        assert_eq!(
            candidates("node_modules/a", "c"),
            ["node_modules/a/node_modules/c", "node_modules/c"]
        );
    }
}
