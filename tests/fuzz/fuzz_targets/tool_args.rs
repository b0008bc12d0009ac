//! Arguments of any bytes to every tool that runs no code (tags, the session
//! log, executions) on a real redb store: each call is a tool result, with
//! `isError` when the arguments are bad, never a panic or a protocol error.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use mcp_v8_lambda::backends::embedded::open_database;
use mcp_v8_lambda::engine::{Engine, EngineConfig};
use mcp_v8_lambda::meta::RedbMetaStore;
use mcp_v8_lambda::protocol::mcp::CallToolParams;
use mcp_v8_lambda::session::LogicalSession;
use mcp_v8_lambda::tools::{CallContext, ToolRouter, Toolbox};
use serde_json::value::RawValue;

const TOOLS: [&str; 7] = [
    "get_heap_tags",
    "set_heap_tags",
    "delete_heap_tags",
    "query_heaps_by_tags",
    "list_session_snapshots",
    "list_sessions",
    "get_execution",
];

type Harness = (tokio::runtime::Runtime, Toolbox, tempfile::TempDir);

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let db = open_database(&dir.path().join("meta.redb")).unwrap();
        let toolbox = Toolbox {
            // Never runs: no tool here executes code.
            engine: Arc::new(Engine::new(EngineConfig::in_process(), None)),
            meta: Arc::new(RedbMetaStore::new(db).unwrap()),
            packages: None,
            files: None,
            records: None,
            mcp: None,
            clients: Default::default(),
            stateless: false,
            execution_ttl_secs: 3600,
            suspended_run_ttl_secs: 3600,
            continue_sessions: false,
            answer_before_save_bytes: None,
            saves: Default::default(),
            state_key: Default::default(),
            unsaved: Default::default(),
            answer_budget_bytes: 32 * 1024,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        (runtime, toolbox, dir)
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    // Only JSON reaches a tool: the transport refuses anything else first.
    let Ok(arguments) = RawValue::from_string(text.to_owned()) else {
        return;
    };
    let (runtime, toolbox, _) = harness();
    let params = CallToolParams {
        name: TOOLS[selector as usize % TOOLS.len()].to_owned(),
        arguments: Some(arguments),
        task: None,
        input_responses: None,
        request_state: None,
    };
    let session = LogicalSession::parse("fuzz").unwrap();
    let tenant = mcp_v8_lambda::tenant::Tenant::anonymous();
    let context = CallContext {
        protocol_version: "2025-11-25",
        tenant: &tenant,
        logical_session: Some(&session),
        deadline: None,
        control: None,
        tasks_extension: false,
        ui_extension: false,
    };
    let result = runtime
        .block_on(ToolRouter::builtin().call(toolbox, context, params))
        .expect("known tools are never a protocol error");
    assert!(!result.content.is_empty());
});
