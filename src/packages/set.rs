//! The installed packages as the engine sees them: the index, read from the
//! store at most every [`REFRESH`], and the bundles in a local directory a
//! run reads synchronously (the store's own directory for the embedded
//! store; a cache filled from S3, as heaps are, on Lambda).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::bundle::Bundle;
use super::{Installed, PackageIndex, PackageStore, installed_list};
use crate::backends::content::ContentKey;

/// How long an instance uses the index it read before reading it again:
/// `packages add` reaches running servers within this.
pub const REFRESH: Duration = Duration::from_secs(30);

/// The packages a deployment has, for the engine.
#[derive(Debug)]
pub struct Packages {
    store: Arc<dyn PackageStore>,
    /// Where a run reads bundles, by key.
    local: PathBuf,
    /// Whether `local` is a cache to fill from the store (else it is the
    /// store's own directory).
    fill: bool,
    /// The view last read and when.
    state: tokio::sync::Mutex<Option<(Arc<PackageView>, Instant)>>,
    /// One publisher at a time.
    publishing: tokio::sync::Mutex<()>,
}

/// The installed packages at one moment, and where their bundles are; sent
/// to engine workers with each job.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PackageView {
    /// By name.
    pub packages: BTreeMap<String, Installed>,
    /// Modules by URL the store has: URL → bundle key.
    #[serde(default)]
    pub urls: BTreeMap<String, ContentKey>,
    /// The directory of bundles, by key.
    pub dir: PathBuf,
}

impl Packages {
    /// Packages from `store`, read by runs from `local`; `fill`: copy each
    /// bundle there first (a cache), else `local` is the store's directory.
    pub fn new(store: Arc<dyn PackageStore>, local: PathBuf, fill: bool) -> Self {
        Self {
            store,
            local,
            fill,
            state: tokio::sync::Mutex::new(None),
            publishing: tokio::sync::Mutex::new(()),
        }
    }

    /// The view a run starts with: the index, read again when older than
    /// [`REFRESH`], with every bundle present locally. A store that fails
    /// leaves the last view in use (logged).
    pub async fn view(&self) -> Arc<PackageView> {
        let mut state = self.state.lock().await;
        if let Some((view, at)) = state.as_ref()
            && at.elapsed() < REFRESH
        {
            return view.clone();
        }
        let view = match self.read().await {
            Ok(view) => Arc::new(view),
            Err(error) => {
                tracing::warn!(%error, "reading the package index failed; runs keep the packages they had");
                match state.as_ref() {
                    Some((view, _)) => view.clone(),
                    None => Arc::new(PackageView {
                        dir: self.local.clone(),
                        ..PackageView::default()
                    }),
                }
            }
        };
        *state = Some((view.clone(), Instant::now()));
        view
    }

    async fn read(&self) -> Result<PackageView, crate::BoxError> {
        let index = self
            .store
            .index()
            .await?
            .map(|(index, _)| index)
            .unwrap_or_default();
        if self.fill {
            tokio::fs::create_dir_all(&self.local).await?;
            let keys = index
                .packages
                .values()
                .map(|installed| &installed.bundle)
                .chain(index.urls.values());
            for key in keys {
                let path = self.local.join(key.as_str());
                if tokio::fs::try_exists(&path).await.unwrap_or(false) {
                    continue;
                }
                if let Some(bytes) = self.store.get_bundle(key).await? {
                    let temporary = self.local.join(format!(".tmp-{}", uuid::Uuid::new_v4()));
                    tokio::fs::write(&temporary, &bytes).await?;
                    tokio::fs::rename(&temporary, &path).await?;
                }
            }
        }
        let PackageIndex { packages, urls } = index;
        Ok(PackageView {
            packages,
            urls,
            dir: self.local.clone(),
        })
    }

    /// Puts the modules runs on this instance fetched by URL into the store
    /// and its index, so other instances serve them rather than fetch them
    /// again. Runs (engine workers too) leave a record of each under
    /// `local/urls`, removed once the index has it (so a restart does not
    /// undo a `packages remove URL`); a failure is logged and tried again
    /// after the next run.
    pub async fn publish(&self) {
        if let Err(error) = self.try_publish().await {
            tracing::warn!(%error, "keeping modules fetched by URL in the package store failed");
        }
    }

    async fn try_publish(&self) -> Result<(), crate::BoxError> {
        let _publishing = self.publishing.lock().await;
        let mut found = Vec::new();
        let mut records = match tokio::fs::read_dir(self.local.join(super::url::RECORDS)).await {
            Ok(records) => records,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        while let Some(record) = records.next_entry().await? {
            let Some(name) = ContentKey::parse(&record.file_name().to_string_lossy()) else {
                continue;
            };
            let Ok(text) = tokio::fs::read_to_string(record.path()).await else {
                continue;
            };
            let Some(key) = ContentKey::parse(text.trim()) else {
                continue;
            };
            let bytes = tokio::fs::read(self.local.join(key.as_str())).await?;
            let bundle = Bundle::from_bytes(&bytes)?;
            // The record's name is the SHA-256 of the URL the bundle says it is.
            if ContentKey::of(bundle.name.as_bytes()) != name {
                continue;
            }
            if self.fill {
                self.store.put_bundle(&bytes.into()).await?;
            }
            found.push((record.path(), bundle.name, key));
        }
        if found.is_empty() {
            return Ok(());
        }
        super::update_index(self.store.as_ref(), |index| {
            for (_, url, key) in &found {
                index.urls.insert(url.clone(), key.clone());
            }
            Ok(())
        })
        .await?;
        for (record, _, _) in found {
            let _ = tokio::fs::remove_file(record).await;
        }
        Ok(())
    }
}

/// Where an import leads: a file of a loaded bundle.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// `name@version`.
    pub id: String,
    /// The entry file.
    pub file: String,
    /// Whether the entry was an ES module.
    pub esm: bool,
    /// Whether `module.exports` is the file's `default` ([`super::Entry`]).
    pub wrapped: bool,
    /// The bundle.
    pub bundle: Arc<Bundle>,
}

/// An import that leads nowhere, with what exists and what to do.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// No package of that name.
    #[error(
        "Cannot find package '{name}': it is not installed. Installed packages: {installed}. \
         Packages are added by an operator with `mcp-v8-lambda packages add {name}`; a run cannot install them"
    )]
    NotInstalled {
        /// The name imported.
        name: String,
        /// `name@version, …` or `none`.
        installed: String,
    },
    /// The package has no such subpath.
    #[error("Package subpath '{subpath}' is not exported by {id}; it exports: {available}")]
    NoSubpath {
        /// `name@version`.
        id: String,
        /// As imported.
        subpath: String,
        /// Some of those it has.
        available: String,
    },
    /// The bundle cannot be read on this instance.
    #[error("package {id} cannot be loaded: {reason}")]
    Unavailable {
        /// `name@version`.
        id: String,
        /// Why.
        reason: String,
    },
}

impl PackageView {
    /// Whether nothing is installed.
    pub fn is_empty(&self) -> bool {
        self.packages.is_empty()
    }

    /// `name@version, …`, or `none`.
    pub fn listing(&self) -> String {
        installed_list(&self.packages)
    }

    /// Resolves a bare specifier (`lodash`, `lodash/fp`, `@scope/x/sub`)
    /// for `import`.
    pub fn resolve(&self, specifier: &str) -> Result<Resolved, ResolveError> {
        self.resolve_for(specifier, false)
    }

    /// Resolves a bare specifier for `require` (`required`), which takes a
    /// dual package's CommonJS build where it has one, or for `import`.
    pub fn resolve_for(&self, specifier: &str, required: bool) -> Result<Resolved, ResolveError> {
        let (name, subpath) = split(specifier);
        let Some(installed) = self.packages.get(name) else {
            return Err(ResolveError::NotInstalled {
                name: name.to_owned(),
                installed: self.listing(),
            });
        };
        let id = format!("{name}@{}", installed.version);
        let bundle = self.bundle(&id, installed)?;
        let lookup = |subpath: &str| {
            required
                .then(|| bundle.require.get(subpath))
                .flatten()
                .or_else(|| bundle.entries.get(subpath))
        };
        let entry = lookup(&subpath)
            .or_else(|| {
                // `lodash/fp.js` names the same module as `lodash/fp`.
                let trimmed = subpath
                    .strip_suffix(".js")
                    .or_else(|| subpath.strip_suffix("/index.js"))?;
                lookup(trimmed)
            })
            .ok_or_else(|| {
                // Public subpaths first: `./_internal` ones say little.
                let mut keys: Vec<&str> = bundle.entries.keys().map(String::as_str).collect();
                keys.sort_by_key(|k| (k.starts_with("./_"), *k));
                let shown: Vec<&str> = keys.into_iter().take(20).collect();
                let more = bundle.entries.len().saturating_sub(shown.len());
                let mut available = shown.join(", ");
                if more > 0 {
                    available.push_str(&format!(" and {more} more"));
                }
                ResolveError::NoSubpath {
                    id: id.clone(),
                    subpath: subpath.clone(),
                    available,
                }
            })?;
        Ok(Resolved {
            file: entry.file.clone(),
            esm: entry.esm,
            wrapped: entry.wrapped,
            id,
            bundle,
        })
    }

    /// Resolves a module by URL: under the run's `fetch` policy, from this
    /// instance or the store when either has it, else fetched within the
    /// run's time ([`super::url::load`]).
    pub(crate) fn resolve_url(
        &self,
        specifier: &str,
        fetch: super::url::UrlFetch<'_>,
    ) -> Result<Resolved, super::UrlImportError> {
        let known = self.urls.get(specifier);
        let dir = (!self.dir.as_os_str().is_empty()).then_some(self.dir.as_path());
        let module = super::url::load(specifier, fetch, dir, known)?;
        let entry = module.bundle.entries.get(".").cloned().ok_or_else(|| {
            super::UrlImportError::Failed {
                url: specifier.to_owned(),
                reason: "its bundle has no entry".into(),
            }
        })?;
        Ok(Resolved {
            id: specifier.to_owned(),
            file: entry.file,
            esm: entry.esm,
            wrapped: entry.wrapped,
            bundle: module.bundle,
        })
    }

    /// The bundle of `id` (`name@version`, or a module's URL), when this
    /// instance has it.
    pub fn bundle_of(&self, id: &str) -> Option<Arc<Bundle>> {
        if super::is_url(id) {
            let known = self.urls.get(id);
            let dir = (!self.dir.as_os_str().is_empty()).then_some(self.dir.as_path());
            return super::url::cached(id, dir, known).map(|m| m.bundle);
        }
        let (name, version) = id.rsplit_once('@')?;
        let installed = self.packages.get(name).filter(|p| p.version == version)?;
        self.bundle(id, installed).ok()
    }

    /// The bundle of `installed`, read once per process.
    fn bundle(&self, id: &str, installed: &Installed) -> Result<Arc<Bundle>, ResolveError> {
        static LOADED: Mutex<Option<HashMap<ContentKey, Arc<Bundle>>>> = Mutex::new(None);
        let unavailable = |reason: String| ResolveError::Unavailable {
            id: id.to_owned(),
            reason,
        };
        if let Some(bundle) = LOADED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert_default()
            .get(&installed.bundle)
        {
            return Ok(bundle.clone());
        }
        let bytes = std::fs::read(self.dir.join(installed.bundle.as_str())).map_err(|e| {
            unavailable(format!(
                "its bundle is not on this instance ({e}); try again shortly"
            ))
        })?;
        let bytes = super::verified(&installed.bundle, bytes.into())
            .map_err(|e| unavailable(e.to_string()))?;
        let bundle = Arc::new(Bundle::from_bytes(&bytes).map_err(|e| unavailable(e.to_string()))?);
        LOADED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert_default()
            .insert(installed.bundle.clone(), bundle.clone());
        Ok(bundle)
    }
}

/// `(name, subpath)` of a bare specifier: `("lodash", "./fp")`.
fn split(specifier: &str) -> (&str, String) {
    let cut = if specifier.starts_with('@') {
        specifier.match_indices('/').nth(1).map(|(i, _)| i)
    } else {
        specifier.find('/')
    };
    match cut {
        Some(i) => (&specifier[..i], format!(".{}", &specifier[i..])),
        None => (specifier, ".".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specifiers_split_into_name_and_subpath() {
        assert_eq!(split("lodash"), ("lodash", ".".into()));
        assert_eq!(split("lodash/fp"), ("lodash", "./fp".into()));
        assert_eq!(split("@s/x"), ("@s/x", ".".into()));
        assert_eq!(split("@s/x/a/b"), ("@s/x", "./a/b".into()));
    }

    #[test]
    fn an_unknown_package_names_what_is_installed_and_who_adds_packages() {
        let view = PackageView::default();
        let err = view.resolve("zod").unwrap_err().to_string();
        assert!(err.contains("'zod'") && err.contains("none"), "{err}");
        assert!(err.contains("mcp-v8-lambda packages add zod"), "{err}");
    }
}
