//! Natives of `fetch`: requests start here and are carried out by
//! `crate::egress` on the host's runtime; their heads and bodies come back
//! through the run's host work ([`deliver`]). Injected headers never pass
//! through here.

use std::collections::HashMap;
use std::sync::Arc;

use v8::MapFnTo;

use crate::egress::{Completion, Egress, FetchCount, RedirectMode, RequestParts};
use crate::engine::capability::outcome::RunReport;
use crate::engine::capability::{Capability, RunScope};
use crate::engine::layer::bytes::{bytes_of, flat_pairs, string, uint8_array};
use crate::engine::layer::registry::throw_type_error;
use crate::engine::layer::registry::{Family, Natives};

pub(crate) fn natives() -> Natives {
    vec![("start", start.map_fn_to()), ("abort", abort.map_fn_to())]
}

/// The promise a request's head settles, then the one its body settles.
type Waiting = (
    Option<v8::Global<v8::PromiseResolver>>,
    Option<v8::Global<v8::PromiseResolver>>,
);

/// What `fetch` would say when it is off.
const OFF: &str =
    "fetch refused by the egress policy (MCP_V8_FETCH_ALLOW): no origin is allowed, fetch is off";

/// Refusals a run's result names at most; more are counted.
const MAX_REFUSALS: usize = 5;

/// What a run's `fetch` did: the requests it made, and the requests the
/// egress policy refused, which become warnings of the run's result
/// whatever the code did with the error (a library may report it as a
/// plain network error, or swallow it).
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct FetchReport {
    /// What the run fetched, when it fetched anything.
    pub count: Option<FetchCount>,
    /// A warning per refused request, the first [`MAX_REFUSALS`].
    pub refused: Vec<String>,
    /// Refused requests past those.
    pub more_refused: usize,
}

/// A run's requests and the promises waiting on them.
pub(crate) struct FetchRun {
    egress: Result<Egress, String>,
    refused: Vec<String>,
    more_refused: usize,
    /// Per request: the head's resolver, then the body's.
    waiting: HashMap<u32, Waiting>,
}

impl FetchRun {
    /// Heads and bodies still to come.
    fn pending(&self) -> usize {
        self.egress.as_ref().map(Egress::pending).unwrap_or(0)
    }

    /// Notes a refusal by the egress policy of a request (to `url`, when
    /// the refusal is the URL's rather than the address it resolved to).
    fn refusal(&mut self, url: Option<&str>, message: &str) {
        if !message.contains("egress policy") {
            return;
        }
        if self.refused.len() >= MAX_REFUSALS {
            self.more_refused += 1;
            return;
        }
        let what = url.map_or_else(|| "a fetch".to_owned(), |url| format!("fetch of {url}"));
        self.refused.push(format!(
            "{what} was refused: {message}. The code or a library may have caught the error \
             and reported it otherwise (as a network error)"
        ));
    }

    /// What the run fetched, for its outcome; `None` when it fetched nothing.
    fn count(&self) -> Option<FetchCount> {
        self.egress
            .as_ref()
            .ok()
            .map(Egress::count)
            .filter(|c| c.count > 0)
    }
}

impl Capability for FetchRun {
    const FAMILY: Option<&'static Family> = Some(&Family {
        name: "fetch",
        source: include_str!("fetch.js"),
        deps: &["events", "http"],
        natives,
        globals: &["fetch"],
        version: 1,
    });
    // What `fetch` may reach is the run's egress policy, which modules by
    // URL share: the engine's, not this capability's.
    type Settings = ();
    type Ask = ();
    type Report = FetchReport;

    fn show(report: &mut FetchReport, shown: &mut RunReport) {
        let outcome = &mut shown.outcome;
        outcome.fetches = report.count;
        outcome.warnings.append(&mut report.refused);
        if report.more_refused > 0 {
            outcome.warnings.push(format!(
                "{} more fetches were refused by the egress policy",
                report.more_refused
            ));
        }
    }

    fn begin(isolate: &mut v8::Isolate, _: &(), run: &RunScope<'_>) {
        // Off, the slot still notes what the run tried to fetch.
        let egress = match run.egress.map(Arc::as_ref).filter(|c| c.enabled()) {
            None => Err(OFF.to_owned()),
            Some(config) => {
                let host = run.host;
                let sink = run.work.clone();
                let report: crate::egress::Report = Arc::new(move |completion| {
                    sink.deliver(move |scope| deliver(scope, completion));
                });
                host.clients
                    .fetch(config, &host.runtime)
                    .map(|client| Egress::new(client, host.runtime.clone(), run.deadline, report))
            }
        };
        isolate.set_slot(FetchRun {
            egress,
            refused: Vec::new(),
            more_refused: 0,
            waiting: HashMap::new(),
        });
    }

    fn pending(isolate: &v8::Isolate) -> bool {
        isolate
            .get_slot::<FetchRun>()
            .is_some_and(|f| f.pending() > 0)
    }

    /// Dropping the run's requests aborts those still running.
    fn end(isolate: &mut v8::Isolate) -> Self::Report {
        isolate
            .remove_slot::<FetchRun>()
            .map(|fetch| FetchReport {
                count: fetch.count(),
                refused: fetch.refused,
                more_refused: fetch.more_refused,
            })
            .unwrap_or_default()
    }
}

fn state<'a>(scope: &'a mut v8::PinScope<'_, '_>) -> Option<&'a mut FetchRun> {
    scope.get_slot_mut::<FetchRun>()
}

fn text(scope: &mut v8::PinScope<'_, '_>, value: v8::Local<'_, v8::Value>) -> String {
    value.to_rust_string_lossy(scope)
}

/// `start(method, url, [name, value, …], body | null, redirect)` →
/// `[id, head promise, body promise]`; throws a `TypeError` when the
/// request may not start (the policy, the run's request limit).
fn start<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let method = text(scope, args.get(0));
    let url = text(scope, args.get(1));
    let mut headers = Vec::new();
    if let Ok(flat) = v8::Local::<v8::Array>::try_from(args.get(2)) {
        let Some(pairs) = flat_pairs(scope, flat) else {
            return;
        };
        for (name, value) in pairs {
            headers.push((text(scope, name), text(scope, value)));
        }
    }
    let body = if args.get(3).is_null_or_undefined() {
        None
    } else {
        bytes_of(args.get(3))
    };
    let redirect = match text(scope, args.get(4)).as_str() {
        "error" => RedirectMode::Error,
        "manual" => RedirectMode::Manual,
        _ => RedirectMode::Follow,
    };
    let parts = RequestParts {
        method,
        url,
        headers,
        body,
        redirect,
    };
    let url = parts.url.clone();
    let started: Result<u32, String> = match state(scope) {
        None => Err(OFF.to_owned()),
        Some(run) => {
            let started = match &mut run.egress {
                Err(error) => Err(error.clone()),
                Ok(egress) => egress.start(parts).map_err(|e| e.to_string()),
            };
            if let Err(message) = &started {
                run.refusal(Some(&url), message);
            }
            started
        }
    };
    let id = match started {
        Ok(id) => id,
        Err(message) => {
            throw_type_error(scope, &message);
            return;
        }
    };
    let (Some(head), Some(body)) = (
        v8::PromiseResolver::new(scope),
        v8::PromiseResolver::new(scope),
    ) else {
        return;
    };
    let promises = [
        v8::Integer::new_from_unsigned(scope, id).into(),
        head.get_promise(scope).into(),
        body.get_promise(scope).into(),
    ];
    let globals = (
        Some(v8::Global::new(scope, head)),
        Some(v8::Global::new(scope, body)),
    );
    if let Some(run) = state(scope) {
        run.waiting.insert(id, globals);
    }
    rv.set(v8::Array::new_with_elements(scope, &promises).into());
}

/// `abort(id, reason)`: the request's signal fired; what is still to come
/// rejects with the reason.
fn abort<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue<'s, v8::Value>,
) {
    let Some(id) = args.get(0).uint32_value(scope) else {
        return;
    };
    let Some(run) = state(scope) else {
        return;
    };
    if let Ok(egress) = &mut run.egress {
        egress.abort(id);
    }
    let Some((head, body)) = run.waiting.remove(&id) else {
        return;
    };
    let reason = args.get(1);
    for resolver in [head, body].into_iter().flatten() {
        let resolver = v8::Local::new(scope, resolver);
        resolver.reject(scope, reason);
    }
}

fn type_error<'s>(scope: &mut v8::PinScope<'s, '_>, message: &str) -> v8::Local<'s, v8::Value> {
    let message = string(scope, message).unwrap_or_else(|| v8::String::empty(scope));
    v8::Exception::type_error(scope, message)
}

/// Settles the promise a completion is for.
fn deliver(scope: &mut v8::PinScope<'_, '_>, completion: Completion) {
    let id = match &completion {
        Completion::Head { id, .. } | Completion::Body { id, .. } => *id,
    };
    let Some(run) = state(scope) else {
        return;
    };
    // A step of a request aborted meanwhile settles nothing.
    if !run.egress.as_mut().is_ok_and(|e| e.arrived(&completion)) {
        return;
    }
    let Some(entry) = run.waiting.get_mut(&id) else {
        return;
    };
    match completion {
        Completion::Head { result, .. } => {
            let Some(head) = entry.0.take() else {
                return;
            };
            if result.is_err() {
                run.waiting.remove(&id);
            }
            let head = v8::Local::new(scope, head);
            match result {
                Ok(parts) => {
                    let object = v8::Object::new(scope);
                    let flat: Vec<v8::Local<v8::Value>> = parts
                        .headers
                        .iter()
                        .flat_map(|(n, v)| [n.as_str(), v.as_str()])
                        .filter_map(|s| string(scope, s).map(Into::into))
                        .collect();
                    let flat = v8::Array::new_with_elements(scope, &flat);
                    let kind = if parts.opaque_redirect {
                        "opaqueredirect"
                    } else {
                        "basic"
                    };
                    let fields: [(&str, v8::Local<v8::Value>); 6] = [
                        (
                            "status",
                            v8::Integer::new(scope, i32::from(parts.status)).into(),
                        ),
                        (
                            "statusText",
                            string(scope, &parts.status_text)
                                .map(Into::into)
                                .unwrap_or_else(|| v8::undefined(scope).into()),
                        ),
                        ("headers", flat.into()),
                        (
                            "url",
                            string(scope, &parts.url)
                                .map(Into::into)
                                .unwrap_or_else(|| v8::undefined(scope).into()),
                        ),
                        (
                            "redirected",
                            v8::Boolean::new(scope, parts.redirected).into(),
                        ),
                        (
                            "type",
                            string(scope, kind)
                                .map(Into::into)
                                .unwrap_or_else(|| v8::undefined(scope).into()),
                        ),
                    ];
                    for (key, value) in fields {
                        if let Some(key) = string(scope, key) {
                            object.set(scope, key.into(), value);
                        }
                    }
                    head.resolve(scope, object.into());
                }
                Err(message) => {
                    // A name that resolved to an address the policy refuses.
                    if let Some(run) = state(scope) {
                        run.refusal(None, &message);
                    }
                    let error = type_error(scope, &message);
                    head.reject(scope, error);
                }
            }
        }
        Completion::Body { result, .. } => {
            let Some((_, Some(body))) = run.waiting.remove(&id) else {
                return;
            };
            let body = v8::Local::new(scope, body);
            match result {
                Ok(bytes) => {
                    if let Some(array) = uint8_array(scope, &bytes) {
                        body.resolve(scope, array.into());
                    }
                }
                Err(message) => {
                    let error = type_error(scope, &message);
                    body.reject(scope, error);
                }
            }
        }
    }
}
