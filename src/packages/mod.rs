//! Packages: npm packages an operator installs with `mcp-v8-lambda
//! packages add`, bundled for the engine (`install`), kept content-addressed
//! beside the heaps (`PackageStore`), and handed to runs (`Packages`).
//!
//! Packages belong to the deployment, not to a tenant: every tenant's runs
//! see one set. A run that imported a package keeps it in its heap, so a
//! restore never needs the store again.

mod builtins;
mod bundle;
mod bundler;
mod fs;
mod install;
mod lexer;
mod prepare;
mod registry;
mod s3;
mod set;
mod spec;
mod tarball;
mod url;
mod versions;

use std::collections::BTreeMap;
use std::fmt;

use async_trait::async_trait;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

pub use builtins::{ENGINE_BUILTINS, NODE_BUILTINS};
pub use bundle::{Bundle, BundleError, Entry};
pub use fs::DirPackageStore;
pub(crate) use install::Scratch;
pub use install::{Build, DEFAULT_REGISTRY, Declared, InstallOptions, Prepared, Unpacked, fetch};
pub use s3::S3PackageStore;
pub use set::{PackageView, Packages, REFRESH, ResolveError, Resolved};
pub use spec::{PackageSpec, SpecError};
pub(crate) use url::{Fetching, Stopped, UrlFetch};
pub use url::{UrlImportError, UrlModule, is_url};

use crate::BoxError;
use crate::backends::content::ContentKey;

/// What is installed: one version of each package name, and its bundle.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageIndex {
    /// By package name.
    pub packages: BTreeMap<String, Installed>,
    /// Modules runs imported by URL: URL → bundle key. Written by the
    /// instance that fetched each, so others serve it from the store.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub urls: BTreeMap<String, ContentKey>,
}

/// One installed package.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Installed {
    /// The exact version installed.
    pub version: String,
    /// SHA-256 of the bundle's bytes: its key in the store.
    pub bundle: ContentKey,
    /// Size of the bundle, in bytes.
    pub bytes: u64,
    /// The subpaths it can be imported by (`.`, `./fp`, …).
    pub entries: Vec<String>,
    /// What the load check found it to be; `None` in indexes written
    /// before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Shape>,
}

/// What a package is, as `packages list` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shape {
    /// The build installed: Node's, or the browser's when Node's does not
    /// load in a run.
    pub build: Build,
    /// Whether its main entry is an ES module (else CommonJS).
    pub esm: bool,
    /// How many names its main entry gives a run.
    pub exports: usize,
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let module = if self.esm { "ES module" } else { "CommonJS" };
        let build = match self.build {
            Build::Node => "Node build",
            Build::Browser => "browser build",
        };
        write!(f, "{module}, {} exports, {build}", self.exports)
    }
}

impl PackageIndex {
    /// `name@version` of each package, sorted by name.
    pub fn listing(&self) -> Vec<String> {
        self.packages
            .iter()
            .map(|(name, p)| format!("{name}@{}", p.version))
            .collect()
    }
}

/// Why a package could not be installed; nothing was stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InstallError {
    /// The registry has no such package.
    #[error("the registry has no package named {0:?}")]
    NotFound(String),
    /// No published version satisfies the range.
    #[error("no version of {name} matches {range:?}; latest is {latest}")]
    NoVersion {
        /// Package name.
        name: String,
        /// What was asked.
        range: String,
        /// The `latest` tag.
        latest: String,
    },
    /// The registry failed or answered something else.
    #[error("registry: {0}")]
    Registry(String),
    /// A tarball does not match what the registry published.
    #[error(
        "{what}: the tarball does not match its published integrity ({algorithm}); nothing was installed"
    )]
    Integrity {
        /// `name@version`.
        what: String,
        /// The hash checked.
        algorithm: String,
    },
    /// Over a size cap.
    #[error("{what} is over the {max}-byte limit")]
    TooLarge {
        /// What was too large.
        what: String,
        /// The limit.
        max: usize,
    },
    /// A tarball that cannot be unpacked safely.
    #[error("{what}: {reason}")]
    Tarball {
        /// The tarball.
        what: String,
        /// Why.
        reason: String,
    },
    /// The bundler refused the package.
    #[error("bundling {name} failed: {reason}")]
    Bundle {
        /// Package name.
        name: String,
        /// The bundler's diagnostics.
        reason: String,
    },
    /// The package bundled but its code does not load in a run.
    #[error(
        "{name}@{version} was bundled but does not load in a run, so it was not installed: {reason}"
    )]
    DoesNotLoad {
        /// Package name.
        name: String,
        /// Exact version.
        version: String,
        /// What the run threw importing it.
        reason: String,
    },
    /// Local I/O.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Proves a prepared package loads before it is installed.
///
/// # Contract
/// - `loads` imports and requires the package as a run would (its main
///   entry, or each entry when it has no main one), in a fresh isolate
///   that sees only this package, and is `Err` with what the import threw
///   (the module it could not find, the global it lacked) when it fails.
/// - `Ok` holds the names the main entry gives a run, sorted: the keys of
///   what `require` returns (when an object or a function) and of the
///   namespace `import` gives, `default` left out; empty for a package
///   without a main entry.
/// - It stores nothing and changes no installed package.
#[async_trait]
pub trait LoadCheck: Send + Sync {
    /// The names `package`'s main entry gives a run, when it loads.
    async fn loads(&self, package: &Prepared) -> Result<Vec<String>, String>;
}

/// The index's revision as the store last saw it, for a conditional update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revision(pub String);

/// What can go wrong reading or writing packages.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PackageStoreError {
    /// The index changed since it was read; read it again and retry.
    #[error("the package index changed while it was being updated; run the command again")]
    Conflict,
    /// Stored bytes failed verification.
    #[error("package bundle {key} failed verification: {reason}")]
    Corrupt {
        /// The bundle asked for.
        key: String,
        /// What was wrong.
        reason: String,
    },
    /// The stored index is not an index.
    #[error("the package index in the {store} store cannot be read: {source}")]
    BadIndex {
        /// Backend name.
        store: &'static str,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// The backend itself failed.
    #[error("{store} package store failed ({what}): {source}")]
    Backend {
        /// Backend name, `directory` or `s3`.
        store: &'static str,
        /// The object read or written.
        what: String,
        /// The backend's error.
        #[source]
        source: BoxError,
    },
}

/// Where installed packages live.
///
/// # Contract
/// - Bundles are content-addressed: `put_bundle` of a key already stored
///   succeeds without rewriting it; `get_bundle` verifies the SHA-256 of
///   what it read and returns [`PackageStoreError::Corrupt`] rather than
///   other bytes. A key never stored is `Ok(None)`.
/// - `index` of a store never written is `Ok(None)`.
/// - `put_index` is a compare-and-swap: it succeeds only while the stored
///   revision is still `expected` (`None`: no index yet), else it is
///   [`PackageStoreError::Conflict`] and nothing changes; a reader sees the
///   old index or the new one, never a mix.
/// - Packages belong to the deployment: no tenant namespaces.
#[async_trait]
pub trait PackageStore: Send + Sync + fmt::Debug + 'static {
    /// The index and its revision.
    async fn index(&self) -> Result<Option<(PackageIndex, Revision)>, PackageStoreError>;
    /// Replaces the index if it is still at `expected`.
    async fn put_index(
        &self,
        index: &PackageIndex,
        expected: Option<&Revision>,
    ) -> Result<(), PackageStoreError>;
    /// The bundle stored under `key`, verified.
    async fn get_bundle(&self, key: &ContentKey) -> Result<Option<Bytes>, PackageStoreError>;
    /// Stores `bytes` under their SHA-256.
    async fn put_bundle(&self, bytes: &Bytes) -> Result<ContentKey, PackageStoreError>;
}

/// `bytes` if they hash to `key`.
pub(crate) fn verified(key: &ContentKey, bytes: Bytes) -> Result<Bytes, PackageStoreError> {
    key.verify(bytes)
        .map_err(|actual| PackageStoreError::Corrupt {
            key: key.to_string(),
            reason: format!("its bytes hash to {actual}"),
        })
}

/// Installs `specs` into `store`: each is prepared (resolved, downloaded,
/// verified, bundled) and proven to load by `check`, then its bundle is
/// stored and the index updated once; one that fails installs nothing. The
/// packages added, as `name@version`.
pub async fn add(
    store: &dyn PackageStore,
    specs: &[String],
    options: &InstallOptions,
    check: &dyn LoadCheck,
) -> Result<Vec<String>, BoxError> {
    let mut prepared = Vec::new();
    for spec in specs {
        let spec = PackageSpec::parse(spec)?;
        let unpacked = fetch(&spec, options).await?;
        prepared.push(checked(&unpacked, options, check).await?);
    }
    let mut added = Vec::new();
    for package in &prepared {
        store.put_bundle(&package.bundle).await?;
    }
    update_index(store, |index| {
        added.clear();
        for package in &prepared {
            index
                .packages
                .insert(package.name.clone(), package.installed.clone());
            added.push(format!("{}@{}", package.name, package.installed.version));
        }
        Ok(())
    })
    .await?;
    Ok(added)
}

/// `unpacked` bundled as Node loads it when that loads in a run and gives
/// what its source declares, else as a browser bundler takes it (a Node
/// build needing `node:http`); refused with both reasons when neither does.
async fn checked(
    unpacked: &Unpacked,
    options: &InstallOptions,
    check: &dyn LoadCheck,
) -> Result<Prepared, InstallError> {
    let refused = |reason: String| InstallError::DoesNotLoad {
        name: unpacked.name().to_owned(),
        version: unpacked.version().to_owned(),
        reason,
    };
    let node = unpacked.bundle(Build::Node, options).await?;
    let node_failure = match loads_whole(&node, Build::Node, check).await {
        Ok(shape) => return Ok(with_shape(node, shape)),
        Err(reason) => reason,
    };
    let browser = unpacked.bundle(Build::Browser, options).await?;
    if browser.installed.bundle == node.installed.bundle {
        return Err(refused(node_failure));
    }
    match loads_whole(&browser, Build::Browser, check).await {
        Ok(shape) => Ok(with_shape(browser, shape)),
        Err(reason) => Err(refused(format!(
            "{node_failure}; its browser build fails too: {reason}"
        ))),
    }
}

fn with_shape(mut package: Prepared, shape: Shape) -> Prepared {
    package.installed.shape = Some(shape);
    package
}

/// The shape of `package` (bundled as `build`) when it loads and a run gets what its main entry's
/// source declares: refused when it gives none of those names (an empty
/// module) or lacks most of them.
async fn loads_whole(
    package: &Prepared,
    build: Build,
    check: &dyn LoadCheck,
) -> Result<Shape, String> {
    let given = check.loads(package).await?;
    let shape = Shape {
        build,
        esm: package.declared.as_ref().is_some_and(|d| d.esm),
        exports: given.len(),
    };
    let Some(declared) = &package.declared else {
        return Ok(shape);
    };
    let missing: Vec<&String> = declared
        .names
        .iter()
        .filter(|name| given.binary_search(name).is_err())
        .collect();
    let found = declared.names.len() - missing.len();
    if declared.names.is_empty() || (found > 0 && missing.len() * 2 <= declared.names.len()) {
        return Ok(shape);
    }
    const SHOWN: usize = 12;
    let list = |names: &mut dyn Iterator<Item = &String>, total: usize| {
        let mut text = names.take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
        if total > SHOWN {
            text.push_str(&format!(", … ({total} in all)"));
        }
        text
    };
    Err(format!(
        "a run gets {} from it, but its entry {} declares {}; missing: {}",
        if given.is_empty() {
            "no exports".to_owned()
        } else {
            format!(
                "{} names ({})",
                given.len(),
                list(&mut given.iter(), given.len())
            )
        },
        declared.file,
        list(&mut declared.names.iter(), declared.names.len()),
        list(&mut missing.into_iter(), declared.names.len() - found),
    ))
}

/// Removes `names` from the index (their bundles stay: heaps do not need
/// them, and another name may share one). Unknown names are an error that
/// lists what is installed, and nothing is removed.
pub async fn remove(store: &dyn PackageStore, names: &[String]) -> Result<Vec<String>, BoxError> {
    let mut removed = Vec::new();
    update_index(store, |index| {
        removed.clear();
        let unknown: Vec<&String> = names
            .iter()
            .filter(|n| !index.packages.contains_key(*n) && !index.urls.contains_key(*n))
            .collect();
        if !unknown.is_empty() {
            return Err(format!(
                "not installed: {}; installed: {}",
                unknown
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                installed_list(&index.packages)
            )
            .into());
        }
        for name in names {
            if let Some(p) = index.packages.remove(name) {
                removed.push(format!("{name}@{}", p.version));
            } else if index.urls.remove(name).is_some() {
                // A module by URL: instances that have it keep it until they
                // end; others fetch it again.
                removed.push(name.clone());
            }
        }
        Ok(())
    })
    .await?;
    Ok(removed)
}

/// The installed packages, `name@version`, or "none".
pub fn installed_list(packages: &BTreeMap<String, Installed>) -> String {
    if packages.is_empty() {
        return "none".to_owned();
    }
    let listed: Vec<String> = packages
        .iter()
        .map(|(name, p)| format!("{name}@{}", p.version))
        .collect();
    listed.join(", ")
}

/// Reads the index, applies `change`, and writes it back conditionally,
/// retrying a few times when another writer got there first.
async fn update_index(
    store: &dyn PackageStore,
    mut change: impl FnMut(&mut PackageIndex) -> Result<(), BoxError>,
) -> Result<(), BoxError> {
    for _ in 0..5 {
        let (mut index, revision) = match store.index().await? {
            Some((index, revision)) => (index, Some(revision)),
            None => (PackageIndex::default(), None),
        };
        change(&mut index)?;
        match store.put_index(&index, revision.as_ref()).await {
            Ok(()) => return Ok(()),
            Err(PackageStoreError::Conflict) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(PackageStoreError::Conflict.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_naming_a_bundle_by_anything_but_a_key_is_refused() {
        let index = r#"{"packages":{"x":{"version":"1.0.0","bundle":"../../etc/passwd","bytes":1,"entries":["."]}}}"#;
        let err = serde_json::from_str::<PackageIndex>(index).unwrap_err();
        assert!(err.to_string().contains("not 64 lowercase hex"), "{err}");
    }

    #[test]
    fn bytes_that_do_not_hash_to_their_key_are_refused() {
        let key = ContentKey::of(b"right");
        assert!(verified(&key, Bytes::from_static(b"right")).is_ok());
        let err = verified(&key, Bytes::from_static(b"wrong")).unwrap_err();
        assert!(matches!(err, PackageStoreError::Corrupt { .. }), "{err}");
    }
}
