//! GETs for the module loader (`import "https://…"`): `fetch`'s client
//! and limits, used from async code rather than a run's event loop.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use url::Url;

use super::PolicyError;
use super::client::{Client, Completion, Launch, RedirectMode, Request, RequestParts};
/// GETs for the module loader (`import "https://…"`): the policy, the
/// checking resolver, the injected headers and the limits of `fetch`, from
/// async code rather than a run's event loop.
pub(crate) struct Getter {
    client: Arc<Client>,
    started: std::sync::atomic::AtomicU32,
    bytes: Arc<AtomicU64>,
    slots: Arc<tokio::sync::Semaphore>,
    deadline: Instant,
}

impl std::fmt::Debug for Getter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Getter")
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

/// What a [`Getter`] read.
#[derive(Debug)]
pub(crate) struct Got {
    /// After redirects.
    pub(crate) url: Url,
    pub(crate) status: u16,
    pub(crate) content_type: Option<String>,
    pub(crate) body: Vec<u8>,
}

impl Getter {
    /// `deadline`: when the run's time is up.
    pub(crate) fn new(client: Arc<Client>, deadline: Instant) -> Self {
        Self {
            slots: Arc::new(tokio::sync::Semaphore::new(client.concurrency as usize)),
            client,
            started: std::sync::atomic::AtomicU32::new(0),
            bytes: Arc::new(AtomicU64::new(0)),
            deadline,
        }
    }

    /// Whether the policy lets `url` be fetched at all.
    pub(crate) fn check(&self, url: &Url) -> Result<(), PolicyError> {
        self.client.policy.check_url(url)
    }

    /// GETs `url`, following redirects (each hop checked).
    pub(crate) async fn get(&self, url: Url) -> Result<Got, Launch> {
        self.check(&url)?;
        let max_requests = self.client.max_requests;
        if self.started.fetch_add(1, Ordering::Relaxed) >= max_requests {
            return Err(Launch::TooMany(max_requests));
        }
        let steps = Arc::new(std::sync::Mutex::new(Vec::new()));
        let request = Request {
            id: 0,
            client: self.client.clone(),
            slots: self.slots.clone(),
            bytes: self.bytes.clone(),
            deadline: tokio::time::Instant::from_std(self.deadline),
            report: Arc::new({
                let steps = steps.clone();
                move |step| {
                    steps
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push(step);
                }
            }),
        };
        let parts = RequestParts {
            method: "GET".into(),
            url: url.to_string(),
            headers: Vec::new(),
            body: None,
            redirect: RedirectMode::Follow,
        };
        // The exchange has sent every completion by the time it returns.
        request.run(parts, url).await;
        let mut head = None;
        let steps = std::mem::take(
            &mut *steps
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for completion in steps {
            match completion {
                Completion::Head { result, .. } => head = Some(result.map_err(Launch::Invalid)?),
                Completion::Body { result, .. } => {
                    let head = head
                        .take()
                        .ok_or_else(|| Launch::Invalid("a body without a head".into()))?;
                    let body = result.map_err(Launch::Invalid)?;
                    let content_type = head
                        .headers
                        .iter()
                        .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
                        .map(|(_, v)| v.clone());
                    return Ok(Got {
                        url: Url::parse(&head.url).map_err(|e| Launch::Invalid(e.to_string()))?,
                        status: head.status,
                        content_type,
                        body,
                    });
                }
            }
        }
        Err(Launch::Invalid(
            "the request ended without a response".into(),
        ))
    }
}
