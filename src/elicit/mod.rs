//! A run that asks the person: `elicit()` in the engine gives a request
//! checked here, a run with nothing left but waiting for its requests is
//! suspended as a heap ([`suspension`]), and the client's answer comes
//! back as 2026-07-28's `inputResponses` with a `requestState` this
//! deployment signed ([`state`]). docs/protocol.md, "A run that asks".
//!
//! The words: an *elicitation* is one request to the person (MCP's
//! `elicitation/create` params); its *response* is the client's
//! `ElicitResult`; a *suspended run* is the heap that waits for them.

pub mod schema;
pub mod state;
pub mod suspension;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use self::schema::{check_request, check_response};
pub use self::state::{RequestState, StateKey};
pub use self::suspension::Suspension;

/// The most elicitations one run may have waiting at once (one round).
pub const MAX_WAITING: usize = 8;
/// The most elicitations one call may make over all its rounds.
pub const MAX_PER_CALL: usize = 64;
/// The longest `message`, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024;
/// The longest `requestedSchema` (or `url`), in bytes of JSON.
pub const MAX_SCHEMA_BYTES: usize = 16 * 1024;
/// The most bytes of one response's JSON a run is given.
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024;
/// The most runs one tenant may suspend in one suspended-run lifetime
/// (`MCP_V8_SUSPENDED_RUN_TTL_SECS`, counted in fixed windows of it): so
/// at most twice this many wait at once.
pub const MAX_SUSPENDED_PER_WINDOW: u32 = 1000;
/// The method of an elicitation, in `inputRequests` and on a session's stream.
pub const METHOD: &str = "elicitation/create";

/// What a 2026-07-28 retry of a call that asked brings (SEP-2322): the
/// responses, by the keys of the `inputRequests`, and the echoed state.
/// A task keeps the one its run continues with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Retry {
    /// `inputResponses`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<Map<String, Value>>,
    /// `requestState`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

impl Retry {
    /// Whether the call carries either field.
    pub fn is_retry(&self) -> bool {
        self.input_responses.is_some() || self.request_state.is_some()
    }
}

/// What a suspended run waits for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Waiting {
    /// The requests, by key: the params of each `elicitation/create`.
    pub requests: Map<String, Value>,
    /// Elicitations the call has made, all rounds counted.
    pub asked: usize,
}

/// What a run's `elicit()` may do: whom it can ask, and how many
/// elicitations the call's earlier rounds made (the engine's part of
/// [`ElicitContext`], carried to the run).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElicitAsk {
    /// Whether and how the client can be asked.
    pub reach: Reach,
    /// Elicitations the call made in its earlier rounds.
    pub asked_before: usize,
}

/// What a call brings its run's `elicit()`: whom it can ask, what its
/// earlier rounds asked, and the responses it resumes with.
#[derive(Debug, Clone, Default)]
pub struct ElicitContext {
    /// Whether and how the client can be asked.
    pub reach: Reach,
    /// Elicitations the call made in its earlier rounds.
    pub asked_before: usize,
    /// The responses of a retry, by key, each checked: the run resumes
    /// from its suspended heap with them instead of running its code.
    pub responses: Option<Map<String, Value>>,
}

/// Why a session-era call's run cannot wait for the person: its asks
/// travel on the call's stream, and this answer cannot be one.
pub const NO_STREAM: &str = "this call's answer cannot be an event stream (it came in a JSON-RPC \
     batch, or this deployment buffers responses: a Lambda function URL in BUFFERED mode), and in \
     a session the asks travel on that stream, so this run cannot wait for an answer: call run_js \
     on its own, or ask in your reply instead";
/// Why a stateless server's run cannot wait for the person.
pub const STATELESS: &str = "this server keeps no heaps (stateless), so a run cannot be suspended \
     to wait for an answer: ask in your reply instead";

/// Whether and how a run's `elicit()` reaches the person: the modes the
/// client declared, or why it cannot be asked at all.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reach {
    /// The client takes form elicitations.
    pub form: bool,
    /// The client takes URL elicitations.
    pub url: bool,
    /// Why no elicitation can be answered in this call even though the
    /// client may take them (a stateless server, a task, a session-era
    /// call); `elicit()` throws it.
    pub refused: Option<String>,
}

/// What a call knows of whom its run could ask: the modes its client
/// declared, and why the call cannot wait for an answer when it cannot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Declared {
    /// The client takes form elicitations.
    pub form: bool,
    /// The client takes URL elicitations.
    pub url: bool,
    /// Why this call cannot wait for an answer, whatever the client takes.
    pub refused: Option<&'static str>,
}

impl Declared {
    /// The `elicitation` capability these modes are, as a task keeps it
    /// for its run; `None` when the call could not ask at all.
    pub fn capability(self) -> Option<Value> {
        if self.refused.is_some() || !(self.form || self.url) {
            return None;
        }
        let mut modes = Map::new();
        if self.form {
            modes.insert("form".into(), Value::Object(Map::new()));
        }
        if self.url {
            modes.insert("url".into(), Value::Object(Map::new()));
        }
        Some(Value::Object(modes))
    }

    /// The modes of an `elicitation` capability kept by
    /// [`Declared::capability`].
    pub fn of_capability(capability: Option<&Value>) -> Self {
        let mut capabilities = Map::new();
        if let Some(capability) = capability {
            capabilities.insert("elicitation".into(), capability.clone());
        }
        Self::of(Some(&capabilities))
    }

    /// The modes a client declares in its `elicitation` capability: `{}`
    /// (form only, as 2025-06-18 had it), `{ form: {}, url: {} }`, either.
    pub fn of(capabilities: Option<&Map<String, Value>>) -> Self {
        let Some(Value::Object(declared)) = capabilities.and_then(|c| c.get("elicitation")) else {
            return Self::default();
        };
        let (form, url) = (declared.contains_key("form"), declared.contains_key("url"));
        Self {
            form: form || !url,
            url,
            refused: None,
        }
    }

    /// These modes, in a call that cannot wait for an answer because `why`.
    pub fn refused(self, why: &'static str) -> Self {
        Self {
            refused: Some(self.refused.unwrap_or(why)),
            ..self
        }
    }
}

impl Reach {
    /// What a run may ask in a call that knows `declared`, unless `why`
    /// says this server cannot wait.
    pub fn of(declared: Declared, why: Option<&str>) -> Self {
        Self {
            form: declared.form,
            url: declared.url,
            refused: declared.refused.or(why).map(str::to_owned),
        }
    }

    /// Why a request in `mode` cannot be sent, if it cannot.
    pub fn refusal(&self, mode: &str) -> Option<String> {
        if let Some(why) = &self.refused {
            return Some(format!("elicit: {why}"));
        }
        let declared = match mode {
            "url" => self.url,
            _ => self.form,
        };
        if declared {
            return None;
        }
        Some(if !self.form && !self.url {
            "elicit: this client cannot be asked: it did not declare the elicitation capability \
             (clientCapabilities.elicitation). Ask the person in your reply instead, or use a client \
             that supports elicitation"
                .to_owned()
        } else {
            format!(
                "elicit: this client takes only {} elicitations, not {mode}",
                if self.form { "form" } else { "url" }
            )
        })
    }
}
