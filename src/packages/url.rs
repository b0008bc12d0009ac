//! Modules imported by URL (`import { x } from "https://esm.sh/x@1"`):
//! fetched under the run's egress policy, their graph bundled by rolldown
//! into one CommonJS file, and kept content-addressed beside the packages so
//! that a URL is fetched once. Bare imports inside them stay imports of
//! installed packages. docs/engine.md, "Modules by URL".

use std::borrow::Cow;
use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use rolldown::plugin::{
    HookLoadArgs, HookLoadOutput, HookLoadReturn, HookResolveIdArgs, HookResolveIdOutput,
    HookResolveIdReturn, HookUsage, Plugin, PluginContext, SharedLoadPluginContext,
};
use rolldown::{Bundler, BundlerOptions, InputItem};
use rolldown_common::{CodeSplittingMode, ModuleType, ResolvedExternal};
use url::Url;

use super::builtins::is_builtin;
use super::bundle::{Bundle, Entry};
use super::verified;
use crate::backends::content::ContentKey;
use crate::egress::{Client, Getter};

/// Where records of fetched URLs are kept, under a bundle directory: one
/// file per URL, named by the SHA-256 of the URL, holding its bundle's key.
pub(crate) const RECORDS: &str = "urls";

/// An import by URL that cannot be served, with what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum UrlImportError {
    /// Fetch is off, so no URL may be imported.
    #[error(
        "Cannot import '{url}': modules by URL follow fetch's egress policy, and it allows no origin \
         (MCP_V8_FETCH_ALLOW is empty). Import installed packages by name instead, or ask an operator \
         to allow the origin"
    )]
    Off {
        /// As imported.
        url: String,
    },
    /// Not a URL this loader fetches.
    #[error("Cannot import '{url}': only http: and https: URLs can be imported")]
    Scheme {
        /// As imported.
        url: String,
    },
    /// The policy refused it, a request failed, the bundler failed.
    #[error("Cannot import '{url}': {reason}")]
    Failed {
        /// As imported.
        url: String,
        /// Why, naming the policy for a refusal.
        reason: String,
    },
    /// The run's time ran out while the module was loading.
    #[error("Cannot import '{url}': the run's time ran out while the module was loading")]
    Timeout {
        /// As imported.
        url: String,
    },
    /// The run was cancelled while the module was loading.
    #[error("Cannot import '{url}': the run was cancelled while the module was loading")]
    Cancelled {
        /// As imported.
        url: String,
    },
}

/// How a run fetches a module by URL: its `fetch` client (`None`: fetch is
/// off; `Err`: the client could not be built, and why), its deadline, and
/// a way to wait for the fetch within its time and cancel.
pub(crate) struct UrlFetch<'a> {
    pub(crate) client: Option<Result<Arc<Client>, String>>,
    pub(crate) deadline: Instant,
    pub(crate) wait: &'a mut dyn FnMut(Fetching) -> Result<Result<Bundle, String>, Stopped>,
}

/// A module's fetch and bundling, for [`UrlFetch::wait`] to run.
pub(crate) type Fetching = Pin<Box<dyn Future<Output = Result<Bundle, String>> + Send>>;

/// Why a wait for a module ended early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stopped {
    /// The run's time ran out.
    Deadline,
    /// The run was cancelled.
    Cancelled,
}

/// A module by URL, ready to load.
#[derive(Debug, Clone)]
pub struct UrlModule {
    /// Its bundle's key.
    pub key: ContentKey,
    /// One entry, `.`.
    pub bundle: Arc<Bundle>,
}

/// Whether `specifier` is an absolute URL rather than a package name.
pub fn is_url(specifier: &str) -> bool {
    specifier.contains("://")
}

/// The record file of `url` under `dir`.
pub(crate) fn record_path(dir: &Path, url: &str) -> PathBuf {
    dir.join(RECORDS)
        .join(ContentKey::of(url.as_bytes()).as_str())
}

/// URLs loaded by this process, by URL.
fn loaded() -> &'static Mutex<HashMap<String, UrlModule>> {
    static LOADED: std::sync::OnceLock<Mutex<HashMap<String, UrlModule>>> =
        std::sync::OnceLock::new();
    LOADED.get_or_init(Default::default)
}

/// The module of `url` if this instance has it: loaded already, or its
/// bundle under `dir` (`known`: its key from the package index).
pub(super) fn cached(
    url: &str,
    dir: Option<&Path>,
    known: Option<&ContentKey>,
) -> Option<UrlModule> {
    if let Some(module) = loaded()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(url)
    {
        return Some(module.clone());
    }
    let dir = dir?;
    let key = match known {
        Some(key) => key.clone(),
        None => ContentKey::parse(std::fs::read_to_string(record_path(dir, url)).ok()?.trim())?,
    };
    let bytes = verified(&key, std::fs::read(dir.join(key.as_str())).ok()?.into()).ok()?;
    let module = UrlModule {
        key,
        bundle: Arc::new(Bundle::from_bytes(&bytes).ok()?),
    };
    loaded()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(url.to_owned(), module.clone());
    Some(module)
}

/// The module `specifier` names: checked against the egress policy first
/// (a cached module too), then served from this instance when it has it,
/// else fetched with its imports within the run's time (or until it is
/// cancelled), bundled, and kept under `dir` (without one, in this process
/// only).
pub(super) fn load(
    specifier: &str,
    fetch: UrlFetch<'_>,
    dir: Option<&Path>,
    known: Option<&ContentKey>,
) -> Result<UrlModule, UrlImportError> {
    let failed = |reason: String| UrlImportError::Failed {
        url: specifier.to_owned(),
        reason,
    };
    let url = Url::parse(specifier).map_err(|e| failed(format!("not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(UrlImportError::Scheme {
            url: specifier.to_owned(),
        });
    }
    let Some(client) = fetch.client else {
        return Err(UrlImportError::Off {
            url: specifier.to_owned(),
        });
    };
    let getter = Getter::new(client.map_err(failed)?, fetch.deadline);
    getter.check(&url).map_err(|e| failed(e.to_string()))?;
    if let Some(module) = cached(specifier, dir, known) {
        return Ok(module);
    }
    let started = std::time::Instant::now();
    let bundled = (fetch.wait)(Box::pin(bundle(Arc::new(getter), url)))
        .map_err(|stopped| {
            let url = specifier.to_owned();
            match stopped {
                Stopped::Cancelled => UrlImportError::Cancelled { url },
                Stopped::Deadline => UrlImportError::Timeout { url },
            }
        })?
        .map_err(failed)?;
    let bytes = bundled.to_bytes();
    let key = ContentKey::of(&bytes);
    if let Some(dir) = dir {
        keep(dir, specifier, &key, &bytes).map_err(|e| {
            failed(format!(
                "it was fetched, but keeping it under {} failed: {e}",
                dir.display()
            ))
        })?;
    }
    tracing::info!(url = %specifier, bundle = %key, bytes = bytes.len(),
        ms = started.elapsed().as_millis() as u64, "module fetched by URL");
    let module = UrlModule {
        key,
        bundle: Arc::new(bundled),
    };
    loaded()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(specifier.to_owned(), module.clone());
    Ok(module)
}

/// Writes the bundle and then its record, each whole or not at all.
fn keep(dir: &Path, url: &str, key: &ContentKey, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir.join(RECORDS))?;
    let write = |path: PathBuf, bytes: &[u8]| {
        let temporary = dir.join(format!(".tmp-{}", uuid::Uuid::new_v4()));
        std::fs::write(&temporary, bytes)?;
        std::fs::rename(&temporary, path)
    };
    let path = dir.join(key.as_str());
    if !path.exists() {
        write(path, bytes)?;
    }
    write(record_path(dir, url), key.as_str().as_bytes())
}

/// Bundles the graph that starts at `url` into one CommonJS file.
async fn bundle(getter: Arc<Getter>, url: Url) -> Result<Bundle, String> {
    // The resolver never reads the host's files: every id is a URL or an
    // external, and the working directory is empty.
    let empty = std::env::temp_dir().join("mcp-v8-url-modules");
    std::fs::create_dir_all(&empty).map_err(|e| format!("{}: {e}", empty.display()))?;
    let input = vec![InputItem {
        name: Some("e0".into()),
        import: url.to_string(),
    }];
    let options = BundlerOptions {
        // One file: a later run needs nothing more from this instance.
        code_splitting: Some(CodeSplittingMode::Bool(false)),
        ..super::bundler::options(input, empty, super::bundler::Build::Browser)
    };
    let plugin = Arc::new(UrlPlugin {
        getter,
        landed: Mutex::new(HashMap::new()),
        failure: Mutex::new(None),
    });
    let mut bundler =
        Bundler::with_plugins(options, vec![plugin.clone()]).map_err(|e| e.to_string())?;
    let output = bundler.generate().await.map_err(|e| {
        // rolldown's message names the plugin, not what went wrong in it.
        plugin
            .failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .unwrap_or_else(|| e.to_string())
    })?;
    let mut bundled = Bundle::new(url.as_str(), "");
    let entries: Vec<String> = super::bundler::add_chunks(&mut bundled, &output.assets)
        .into_iter()
        .map(|chunk| chunk.filename.to_string())
        .collect();
    for file in entries {
        bundled.entries.insert(
            ".".into(),
            Entry {
                file,
                // Browsers and Deno load modules by URL as ES modules.
                esm: true,
                wrapped: false,
            },
        );
    }
    if bundled.entries.is_empty() {
        return Err("the bundler made no entry of it".into());
    }
    Ok(bundled)
}

/// Resolves and loads the `http:`/`https:` ids of one bundle.
#[derive(Debug)]
struct UrlPlugin {
    getter: Arc<Getter>,
    /// Where each id landed after redirects: its imports are relative to that.
    landed: Mutex<HashMap<String, Url>>,
    /// The first hook that failed, and why.
    failure: Mutex<Option<String>>,
}

impl UrlPlugin {
    fn failed(&self, error: anyhow::Error) -> anyhow::Error {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert_with(|| format!("{error:#}"));
        error
    }
}

fn external(id: &str) -> HookResolveIdReturn {
    Ok(Some(HookResolveIdOutput {
        id: id.into(),
        external: Some(ResolvedExternal::Bool(true)),
        ..HookResolveIdOutput::default()
    }))
}

/// The module type of a fetched file: its extension, else its media type.
fn module_type(url: &Url, content_type: Option<&str>) -> ModuleType {
    let path = url.path();
    let extension = path.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    match extension {
        "ts" | "mts" | "cts" => return ModuleType::Ts,
        "tsx" => return ModuleType::Tsx,
        "jsx" => return ModuleType::Jsx,
        "json" => return ModuleType::Json,
        _ => {}
    }
    match content_type.map(|c| c.split(';').next().unwrap_or("").trim()) {
        Some("application/typescript" | "text/typescript" | "video/mp2t") => ModuleType::Ts,
        Some("application/json") => ModuleType::Json,
        _ => ModuleType::Js,
    }
}

impl Plugin for UrlPlugin {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("mcp-v8-lambda:url-modules")
    }

    async fn resolve_id(
        &self,
        _ctx: &PluginContext,
        args: &HookResolveIdArgs<'_>,
    ) -> HookResolveIdReturn {
        self.resolve(args).map_err(|e| self.failed(e))
    }

    async fn load(&self, _ctx: SharedLoadPluginContext, args: &HookLoadArgs<'_>) -> HookLoadReturn {
        self.fetch(args.id).await.map_err(|e| self.failed(e))
    }

    fn register_hook_usage(&self) -> HookUsage {
        HookUsage::ResolveId | HookUsage::Load
    }
}

impl UrlPlugin {
    fn resolve(&self, args: &HookResolveIdArgs<'_>) -> HookResolveIdReturn {
        let specifier = args.specifier;
        if is_builtin(specifier) {
            return external(specifier);
        }
        if let Ok(url) = Url::parse(specifier) {
            if !matches!(url.scheme(), "http" | "https") {
                anyhow::bail!("{specifier}: only http: and https: URLs can be imported");
            }
            return Ok(Some(HookResolveIdOutput::from_id(url.as_str())));
        }
        let relative = specifier.starts_with("./")
            || specifier.starts_with("../")
            || specifier.starts_with('/');
        match args.importer.filter(|i| is_url(i)) {
            Some(importer) if relative => {
                let base = self
                    .landed
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get(importer)
                    .cloned();
                let base = match base {
                    Some(base) => base,
                    None => Url::parse(importer)?,
                };
                let url = base.join(specifier)?;
                Ok(Some(HookResolveIdOutput::from_id(url.as_str())))
            }
            // A bare name inside a module by URL: an installed package,
            // resolved by the run's loader.
            Some(_) => external(specifier),
            None => anyhow::bail!("{specifier}: not a URL"),
        }
    }

    async fn fetch(&self, id: &str) -> HookLoadReturn {
        let url = Url::parse(id)?;
        let got = self
            .getter
            .get(url.clone())
            .await
            .map_err(|e| anyhow::anyhow!("{url}: {e}"))?;
        if !(200..300).contains(&got.status) {
            anyhow::bail!("GET {url} answered {}", got.status);
        }
        let code = String::from_utf8(got.body)
            .map_err(|_| anyhow::anyhow!("{url}: the module is not UTF-8 text"))?;
        let module_type = module_type(&got.url, got.content_type.as_deref());
        self.landed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.to_owned(), got.url);
        Ok(Some(HookLoadOutput {
            code: code.into(),
            module_type: Some(module_type),
            ..HookLoadOutput::default()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_types_come_from_the_extension_then_the_media_type() {
        let url = |s: &str| Url::parse(s).unwrap();
        assert_eq!(
            module_type(&url("https://a.example/x.ts"), None),
            ModuleType::Ts
        );
        assert_eq!(
            module_type(
                &url("https://a.example/x"),
                Some("application/typescript; charset=utf-8")
            ),
            ModuleType::Ts
        );
        assert_eq!(
            module_type(&url("https://a.example/x.mjs"), Some("text/javascript")),
            ModuleType::Js
        );
        assert_eq!(
            module_type(&url("https://a.example/d.json"), None),
            ModuleType::Json
        );
    }

    #[test]
    fn a_url_import_with_fetch_off_says_so_and_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let mut wait = |_: Fetching| -> Result<Result<Bundle, String>, Stopped> {
            panic!("nothing is fetched")
        };
        let fetch = UrlFetch {
            client: None,
            deadline: Instant::now(),
            wait: &mut wait,
        };
        let error = load("https://esm.sh/x", fetch, Some(dir.path()), None).unwrap_err();
        let text = error.to_string();
        assert!(text.contains("MCP_V8_FETCH_ALLOW"), "{text}");
        assert!(text.contains("installed packages"), "{text}");
        let fetch = UrlFetch {
            client: None,
            deadline: Instant::now(),
            wait: &mut wait,
        };
        let error = load("ftp://a.example/x", fetch, Some(dir.path()), None).unwrap_err();
        assert!(matches!(error, UrlImportError::Scheme { .. }), "{error}");
    }
}
