//! The services the host lends a run: a runtime for host work, the file
//! store, the `fetch` client and the upstream MCP connections. Whoever runs
//! the engine passes them in: the server through the engine, which the
//! composition root builds; an engine worker from its own main. `work` is
//! the one event source through which host work reports back to its run.

pub(crate) mod memory;
pub(crate) mod work;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;

use crate::backends::content::ContentKey;
use crate::egress::{self, FetchConfig};
use crate::upstream::{UpstreamConfig, Upstreams};

/// What the host lends a run.
#[derive(Clone, Debug)]
pub(crate) struct HostServices {
    /// Where host work runs (isolate threads have no runtime of their own).
    pub runtime: tokio::runtime::Handle,
    /// Where `/work`'s older files are read from; `None`: none exist.
    pub files: Option<Arc<dyn FileSource>>,
    /// The clients runs share.
    pub clients: Arc<Clients>,
}

/// The host's `fetch` client and upstream MCP connections, built on first
/// use for the settings a run brings and kept while runs bring the same
/// (a server's never change; an engine worker's follow its server's).
#[derive(Debug, Default)]
pub struct Clients {
    fetch: Mutex<Option<Built<FetchConfig, egress::Client>>>,
    upstreams: Mutex<Option<Built<UpstreamConfig, Upstreams>>>,
}

/// A client and the settings it was built from (kept in memory only, like
/// the client itself: they hold secrets).
type Built<S, T> = (S, Result<Arc<T>, String>);

fn reuse<S: Clone + PartialEq, T>(
    slot: &Mutex<Option<Built<S, T>>>,
    settings: &S,
    build: impl FnOnce() -> Result<Arc<T>, String>,
) -> Result<Arc<T>, String> {
    let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
    match slot.as_ref() {
        Some((built_for, built)) if built_for == settings => built.clone(),
        _ => {
            let built = build();
            *slot = Some((settings.clone(), built.clone()));
            built
        }
    }
}

impl Clients {
    /// The `fetch` client for `config`, its connections on `runtime`.
    pub(crate) fn fetch(
        &self,
        config: &FetchConfig,
        runtime: &tokio::runtime::Handle,
    ) -> Result<Arc<egress::Client>, String> {
        reuse(&self.fetch, config, || {
            egress::Client::new(config, runtime).map_err(|e| e.to_string())
        })
    }

    /// The upstream MCP servers of `config`, their connections on `runtime`.
    pub fn upstreams(
        &self,
        config: &UpstreamConfig,
        runtime: &tokio::runtime::Handle,
    ) -> Result<Arc<Upstreams>, String> {
        reuse(&self.upstreams, config, || {
            Upstreams::new(config, runtime.clone())
        })
    }

    /// Returns once what cancels the upstream calls of ended runs (their
    /// `notifications/cancelled`) has been sent.
    pub(crate) async fn cancellations_sent(&self) {
        let upstreams = self
            .upstreams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .and_then(|(_, built)| built.clone().ok());
        if let Some(upstreams) = upstreams {
            upstreams.cancellations_sent().await;
        }
    }
}

/// Where the bytes of files written by earlier runs come from.
///
/// # Contract
/// - `read` gives the bytes stored under `key` (a SHA-256 the tree
///   holds), `Ok(None)` when the store has none: at once, or as work the
///   run waits for within its time and cancel ([`super::work::HostWork::block_on`]).
/// - An answer given at once is bounded by the run's time elsewhere (an
///   engine worker's server answers by the run's deadline, or ends it).
/// - It never returns bytes of another tenant than the run's.
pub trait FileSource: Send + Sync + std::fmt::Debug {
    /// The bytes of `key`.
    fn read(&self, key: &ContentKey) -> FileRead;
}

/// A [`FileSource`]'s answer.
pub enum FileRead {
    /// Answered already.
    Ready(Result<Option<Bytes>, String>),
    /// To be run on the host's runtime.
    Pending(Pin<Box<dyn Future<Output = Result<Option<Bytes>, String>> + Send>>),
}
