//! What every tool runs against ([`Toolbox`]), what it knows of its caller
//! ([`CallContext`]), and how a result is shaped and bounded.

use std::sync::Arc;
use std::time::SystemTime;

use crate::engine::{Engine, HostClients, RunControl};
use crate::files::FileStore;
use crate::meta::MetaStore;
use crate::packages::Packages;
use crate::protocol::mcp::{CallToolResult, Content};
use crate::session::LogicalSession;
use crate::tenant::Tenant;
use crate::units::MIB;
use crate::upstream::{UpstreamConfig, Upstreams};

/// What tools run against.
#[derive(Debug, Clone)]
pub struct Toolbox {
    /// Runs code.
    pub engine: Arc<Engine>,
    /// Session log, tags, executions.
    pub meta: Arc<dyn MetaStore>,
    /// The deployment's packages, when it has a package store (named in
    /// `run_js`'s description).
    pub packages: Option<Arc<Packages>>,
    /// Where the bytes of `/work` files live, when files are kept (read
    /// by the heap file resources).
    pub files: Option<Arc<dyn FileStore>>,
    /// Where runs' whole output and results are kept beside their
    /// records (`None`: inside the records, as the engine capped them).
    pub records: Option<Arc<dyn FileStore>>,
    /// The upstream MCP servers of code mode, when any is configured.
    pub mcp: Option<Arc<UpstreamConfig>>,
    /// The connections to them, shared with the engine's runs.
    pub clients: Arc<HostClients>,
    /// No heaps, no tags, no session tools.
    pub stateless: bool,
    /// How long execution records live, in seconds.
    pub execution_ttl_secs: i64,
    /// How long a run that asked the person waits, in seconds
    /// (`MCP_V8_SUSPENDED_RUN_TTL_SECS`).
    pub suspended_run_ttl_secs: i64,
    /// The deployment's request-state key once read from `meta`, which
    /// keeps it unchanged for good (`MetaStore`'s contract).
    pub state_key: Arc<tokio::sync::OnceCell<crate::elicit::StateKey>>,
    /// An omitted `heap` in a logical session means `"latest"`
    /// (`MCP_V8_CONTINUE_SESSIONS`).
    pub continue_sessions: bool,
    /// A run in a logical session whose heap holds at least this many
    /// bytes is answered before its heap is stored
    /// (`MCP_V8_ANSWER_BEFORE_SAVE_MB`); `None`: every answer waits.
    pub answer_before_save_bytes: Option<u64>,
    /// The saves of heaps answered for before they were stored, going in
    /// this process.
    pub saves: Arc<super::saves::Saves>,
    /// How many of them may wait, per session and in all
    /// (`MCP_V8_UNSAVED_HEAPS`, `MCP_V8_UNSAVED_HEAPS_MB`).
    pub unsaved: super::saves::UnsavedBounds,
    /// Most bytes of JSON a run's answer gives its text, and again its
    /// `structuredContent` (`MCP_V8_ANSWER_BUDGET_KB`): what is over it is
    /// kept with the run and linked (docs/tools.md, "The answer budget").
    pub answer_budget_bytes: usize,
}

/// How a resource URI names a heap: by its key, or by the execution id of
/// the run that left it (which every answer has, before the key exists).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeapName {
    /// The heap's key.
    Key(crate::heap::HeapKey),
    /// The execution id of the run whose output heap it is.
    Run(uuid::Uuid),
}

impl HeapName {
    /// The name a URI's heap segment is, if it is one.
    pub fn parse(segment: &str) -> Option<Self> {
        match crate::heap::HeapKey::parse(segment) {
            Ok(key) => Some(Self::Key(key)),
            Err(_) => segment.parse().ok().map(Self::Run),
        }
    }
}

impl Toolbox {
    /// The upstream MCP servers of code mode, connected on the calling
    /// runtime (the one the engine's runs share); `None` when none is
    /// configured or outside a runtime.
    pub fn upstreams(&self) -> Option<Arc<Upstreams>> {
        let config = self.mcp.as_ref()?;
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        match self.clients.upstreams(config, &runtime) {
            Ok(upstreams) => Some(upstreams),
            Err(error) => {
                tracing::warn!(%error, "the upstream MCP servers cannot be used");
                None
            }
        }
    }

    /// The record of `tenant`'s run `execution_id`, waiting for its save
    /// when this process is storing it (an answer that carried
    /// `heap_saving`): `Ok(None)` for no record.
    pub(super) async fn record_of_run(
        &self,
        tenant: &Tenant,
        execution_id: uuid::Uuid,
    ) -> Result<Option<crate::meta::ExecutionRecord>, RunRecordError> {
        if let Some(Err(why)) = self.saves.wait_for_run(tenant, execution_id).await {
            return Err(RunRecordError::NotStored(why));
        }
        self.meta
            .get_execution(tenant, execution_id, crate::clock::unix_now())
            .await
            .map_err(|e| RunRecordError::Unreadable(e.to_string()))
    }

    /// The output heap of `tenant`'s run `execution_id` ([`Self::record_of_run`]):
    /// `Ok(None)` for a run with no heap or no record, `Err` with why when
    /// its heap was not stored. A superseded run's effects, files
    /// included, are in the heap of the run that superseded it.
    pub async fn heap_of_run(
        &self,
        tenant: &Tenant,
        execution_id: uuid::Uuid,
    ) -> Result<Option<crate::heap::HeapKey>, String> {
        let record = match self.record_of_run(tenant, execution_id).await {
            Ok(record) => record,
            Err(RunRecordError::NotStored(why)) => {
                return Err(format!(
                    "the heap of execution {execution_id} was not stored: {why}"
                ));
            }
            Err(RunRecordError::Unreadable(e)) => {
                return Err(format!("could not read the execution registry: {e}"));
            }
        };
        let Some(record) = record else {
            return Ok(None);
        };
        let own = record
            .outcome
            .get("heap")
            .and_then(|key| key.as_str())
            .and_then(|key| crate::heap::HeapKey::parse(key).ok());
        Ok(own.or_else(|| superseded_of(&record).map(|s| s.heap_after)))
    }

    /// The heap `name` names: the key itself, or the output heap of the run
    /// ([`Self::heap_of_run`]).
    pub async fn heap_named(
        &self,
        tenant: &Tenant,
        name: &HeapName,
    ) -> Result<Option<crate::heap::HeapKey>, String> {
        match name {
            HeapName::Key(key) => Ok(Some(key.clone())),
            HeapName::Run(id) => self.heap_of_run(tenant, *id).await,
        }
    }

    /// The bytes of a `display()` block kept apart from its answer, by the
    /// key its link names; `None` when `tenant` has no such block (or the
    /// key is not one).
    pub async fn kept_display(
        &self,
        tenant: &Tenant,
        key: &str,
    ) -> Result<Option<bytes::Bytes>, String> {
        let (Some(key), Some(store)) = (crate::files::ContentKey::parse(key), self.files.as_ref())
        else {
            return Ok(None);
        };
        store
            .get(tenant, &key)
            .await
            .map_err(|e| format!("could not read the kept display: {e}"))
    }

    /// The bytes of the `/work` file `entry` of one of `tenant`'s heaps
    /// (an empty file has none stored), or a message saying why not.
    pub async fn file_bytes(
        &self,
        tenant: &Tenant,
        entry: &crate::engine::TreeEntry,
    ) -> Result<bytes::Bytes, String> {
        self.file_range(tenant, entry, 0, u64::MAX).await
    }

    /// Bytes `start..end` of the `/work` file `entry`, fetching only the
    /// chunks they cover.
    pub async fn file_range(
        &self,
        tenant: &Tenant,
        entry: &crate::engine::TreeEntry,
        start: u64,
        end: u64,
    ) -> Result<bytes::Bytes, String> {
        let Some(key) = &entry.key else {
            return Ok(bytes::Bytes::new());
        };
        let store = self
            .files
            .as_ref()
            .ok_or("this server keeps no file bytes (no file store)")?;
        crate::files::chunked::read_range(store.as_ref(), tenant, key, entry.chunked, start, end)
            .await
            .map_err(|e| format!("could not read {}: {e}", entry.path))
    }
}

/// What a tool call knows of its caller: the protocol version (which shapes
/// results), whose data it may see, the logical session named by the
/// transport, if any, and when the host must have answered. Built from a
/// replayed session or from one 2026-07-28 request.
#[derive(Debug, Clone, Copy)]
pub struct CallContext<'a> {
    /// The protocol version of the request.
    pub protocol_version: &'a str,
    /// The caller's namespace: every store read and write of the call is
    /// scoped by it.
    pub tenant: &'a Tenant,
    /// The logical session (`X-MCP-Session-Id`); a tool's `session`
    /// argument overrides it.
    pub logical_session: Option<&'a LogicalSession>,
    /// When the host stops waiting for the answer (a Lambda invocation's
    /// deadline); `None` under `serve`.
    pub deadline: Option<SystemTime>,
    /// The transport's handle on a run this call starts: progress to
    /// report, and a cancel when the client asks or goes away.
    pub control: Option<&'a Arc<RunControl>>,
    /// A 2026-07-28 request whose client declared the tasks extension: its
    /// call may be answered with a task.
    pub tasks_extension: bool,
    /// The client declared MCP Apps (`initialize`'s capabilities, or a
    /// 2026-07-28 request's): `run_js` names its View, and its results
    /// carry what the View reads in `_meta`.
    pub ui_extension: bool,
    /// Whom a run of this call could ask (`elicit()`).
    pub elicitation: crate::elicit::Declared,
    /// The capabilities the client declared (`initialize`'s, or a
    /// 2026-07-28 request's), where the call has them (a task's later
    /// rounds do not).
    pub client_capabilities: Option<&'a serde_json::Map<String, serde_json::Value>>,
    /// A 2026-07-28 request's `Mcp-Param-*` headers, by lowercased name
    /// after the prefix: arguments mirrored for gateways (SEP-2243), which
    /// must agree with the body.
    pub param_headers: Option<&'a std::collections::BTreeMap<String, String>>,
    /// The responses and state of a 2026-07-28 retry of a call that asked.
    pub retry: Option<&'a crate::elicit::Retry>,
}

/// Largest serialized tool result, in bytes: with the JSON-RPC envelope it
/// fits Lambda's 6 MB buffered response (6,291,456 bytes) with room to
/// spare. A result over it becomes a tool error saying so.
pub const MAX_RESULT_JSON_BYTES: usize = 5 * MIB;

/// Largest file `resources/read` answers with, in bytes: its base64, with
/// room for the rest of the answer, fits [`MAX_RESULT_JSON_BYTES`].
pub const MAX_READ_FILE_BYTES: usize = (MAX_RESULT_JSON_BYTES - 64 * 1024) / 4 * 3;

/// A tool's result, with the length of its JSON when the tool measured it
/// while shaping it (run_js's answer with its `display()` blocks): the
/// response limit reads that instead of serializing the result again.
#[derive(Debug)]
pub struct ToolAnswer {
    /// The tool's result.
    pub result: CallToolResult,
    /// The length of `result`'s JSON, when the tool measured it.
    pub json_len: Option<usize>,
    /// What the call answers instead of `result`, when not a result.
    pub instead: Option<Instead>,
}

/// A call's answer that is not a tool result.
#[derive(Debug)]
pub enum Instead {
    /// The run asks the person first (2026-07-28).
    Ask(crate::protocol::mcp::InputRequiredResult),
    /// The call's protocol fields are wrong (a `requestState` this server
    /// did not issue for this call): -32602, not the model's to fix.
    InvalidParams(String),
}

impl From<CallToolResult> for ToolAnswer {
    fn from(result: CallToolResult) -> Self {
        Self {
            result,
            json_len: None,
            instead: None,
        }
    }
}

/// The length of a result's JSON.
pub(super) fn result_json_len(result: &CallToolResult) -> usize {
    serde_json::to_vec(result).map_or(usize::MAX, |json| json.len())
}

/// Whether a result's JSON is at most [`MAX_RESULT_JSON_BYTES`], serialized
/// only when it may not be: escaping makes text at most six times longer,
/// and a structured copy is no longer than the text, so seven times the
/// text bounds the whole, and most results are far below that.
pub(super) fn fits_one_response(result: &CallToolResult) -> bool {
    let text: usize = result.content.iter().map(Content::payload_len).sum();
    text.saturating_mul(7) + 1024 <= MAX_RESULT_JSON_BYTES
        || result_json_len(result) <= MAX_RESULT_JSON_BYTES
}

/// A successful or failed tool result carrying a structured value.
pub(super) fn structured_result<T: serde::Serialize>(
    value: &T,
    is_error: bool,
    structured: bool,
) -> CallToolResult {
    let json = serde_json::to_value(value).expect("tool results serialize");
    json_result(json.to_string(), json, is_error, structured)
}

/// A tool result whose text is `text` and whose structured content, where
/// the protocol has it, is `json`.
pub(super) fn json_result(
    text: String,
    json: serde_json::Value,
    is_error: bool,
    structured: bool,
) -> CallToolResult {
    CallToolResult {
        content: vec![Content::text(text)],
        structured_content: structured.then_some(json),
        is_error,
        meta: None,
    }
}

/// A toolbox over `config`'s in-process engine and a redb metadata store in
/// `dir`, for the tools' unit tests.
#[cfg(test)]
pub(super) fn for_tests(
    config: crate::engine::EngineConfig,
    dir: &tempfile::TempDir,
    stateless: bool,
) -> Toolbox {
    let db = Arc::new(redb::Database::create(dir.path().join("meta.redb")).unwrap());
    Toolbox {
        engine: Arc::new(Engine::new(config, None)),
        meta: Arc::new(crate::meta::RedbMetaStore::new(db).unwrap()),
        packages: None,
        files: None,
        records: None,
        mcp: None,
        clients: Arc::default(),
        stateless,
        execution_ttl_secs: 3600,
        suspended_run_ttl_secs: 3600,
        continue_sessions: false,
        answer_before_save_bytes: None,
        saves: Arc::default(),
        state_key: Arc::default(),
        unsaved: Default::default(),
        answer_budget_bytes: 32 * 1024,
    }
}

/// A call of `tenant` in `protocol_version`, outside any session, for the
/// tools' unit tests.
#[cfg(test)]
pub(super) fn context_for_tests<'a>(
    tenant: &'a Tenant,
    protocol_version: &'a str,
) -> CallContext<'a> {
    CallContext {
        protocol_version,
        tenant,
        logical_session: None,
        deadline: None,
        control: None,
        tasks_extension: false,
        ui_extension: false,
        elicitation: crate::elicit::Declared::default(),
        client_capabilities: None,
        param_headers: None,
        retry: None,
    }
}

/// Why [`Toolbox::record_of_run`] has no record to give.
#[derive(Debug)]
pub(super) enum RunRecordError {
    /// The run's heap was not stored, so it has no record: why.
    NotStored(String),
    /// The execution registry could not be read: why.
    Unreadable(String),
}

/// Where a superseded run's effects are, from its record (saves coalesce).
pub(super) fn superseded_of(
    record: &crate::meta::ExecutionRecord,
) -> Option<crate::engine::Superseded> {
    serde_json::from_value(record.outcome.get("superseded")?.clone()).ok()
}
