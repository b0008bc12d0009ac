//! Store faults at every seam (an error, a timeout, a throttling error),
//! injected by `faults::Faulty` around the real redb and directory stores:
//! what the client sees, and that nothing half-written is left behind.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use common::Server;
use common::faults::{Fault, FaultPlan, Faulty};
use mcp_v8_lambda::heap::{HeapKey, HeapStore};
use mcp_v8_lambda::meta::MetaStore;
use mcp_v8_lambda::session::SessionStore;
use mcp_v8_lambda::tenant::Tenant;
use serde_json::{Value, json};

const FAULTS: [Fault; 3] = [
    Fault::Fail,
    Fault::Timeout(Duration::from_millis(50)),
    Fault::Throttle,
];

/// A server whose three stores all go through `plan`; the unwrapped heap
/// and metadata stores, to look behind the faults.
fn faulty_server(plan: &Arc<FaultPlan>) -> (Server, Arc<dyn HeapStore>, Arc<dyn MetaStore>) {
    faulty_server_within(plan, common::test_config(3600, false))
}

/// [`faulty_server`] built from `config`.
fn faulty_server_within(
    plan: &Arc<FaultPlan>,
    config: mcp_v8_lambda::config::Config,
) -> (Server, Arc<dyn HeapStore>, Arc<dyn MetaStore>) {
    let mut inner = None;
    let server = common::server_configured(config, |stores| {
        let heaps = stores.heaps.expect("a stateful server has heaps");
        inner = Some((heaps.clone(), stores.meta.clone()));
        common::Stores {
            sessions: Arc::new(Faulty::<dyn SessionStore>::new(
                stores.sessions,
                plan.clone(),
            )),
            heaps: Some(Arc::new(Faulty::<dyn HeapStore>::new(heaps, plan.clone()))),
            meta: Arc::new(Faulty::<dyn MetaStore>::new(stores.meta, plan.clone())),
            packages: stores.packages,
            prelude: stores.prelude,
            files: stores.files,
            scratch: stores.scratch,
            records: stores.records,
            tasks: stores.tasks,
            handoff: stores.handoff,
            offers_tasks: stores.offers_tasks,
        }
    });
    let (heaps, meta) = inner.unwrap();
    (server, heaps, meta)
}

async fn tools_list(s: &Server, sid: &str) -> (StatusCode, Value) {
    let reply = s
        .rpc(
            Some(sid),
            json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
        )
        .await;
    (reply.status, reply.body)
}

#[tokio::test]
async fn a_session_store_fault_during_replay_is_500_and_the_session_works_afterwards() {
    let plan = FaultPlan::new();
    let (s, _, _) = faulty_server(&plan);
    let sid = s.initialize().await;
    for fault in FAULTS {
        plan.fail_nth("session.get", plan.calls("session.get") + 1, fault);
        let (status, body) = tools_list(&s, &sid).await;
        assert_eq!(
            status,
            StatusCode::INTERNAL_SERVER_ERROR,
            "{fault:?}: {body}"
        );
        assert_eq!(body["error"]["code"], -32603);
        assert!(
            !body.to_string().contains("injected"),
            "internals stay in the logs: {body}"
        );
        let (status, body) = tools_list(&s, &sid).await;
        assert_eq!(
            status,
            StatusCode::OK,
            "{fault:?}: the session survives: {body}"
        );
    }
}

#[tokio::test]
async fn a_failed_heap_put_fails_the_run_and_no_log_entry_points_at_it() {
    for fault in FAULTS {
        let plan = FaultPlan::new();
        let (s, _, meta) = faulty_server(&plan);
        let sid = s
            .initialize_as("2025-11-25", &[("x-mcp-session-id", "faulty")])
            .await;
        plan.fail_nth("heap.put", 1, fault);
        let result = s.call(&sid, json!({"code": "globalThis.x = 1; x"})).await;
        let outcome = &result["structuredContent"];
        assert_eq!(result["isError"], true, "{fault:?}: {result}");
        assert_eq!(outcome["status"], "failed", "{outcome}");
        assert!(outcome["heap"].is_null(), "no heap is reported: {outcome}");
        assert!(
            meta.last_log_entry(&Tenant::anonymous(), &common::logical("faulty"))
                .await
                .unwrap()
                .is_none(),
            "{fault:?}: nothing was logged"
        );

        // The next run stores and logs as usual, at index 0.
        let result = s.call(&sid, json!({"code": "1"})).await;
        assert_eq!(result["isError"], false, "{result}");
        let last = meta
            .last_log_entry(&Tenant::anonymous(), &common::logical("faulty"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(last.index, 0);
    }
}

#[tokio::test]
async fn a_failed_metadata_write_is_reported_the_heap_stays_and_nothing_is_half_written() {
    for fault in FAULTS {
        let plan = FaultPlan::new();
        let (s, heaps, meta) = faulty_server(&plan);
        let sid = s
            .initialize_as("2025-11-25", &[("x-mcp-session-id", "faulty")])
            .await;
        plan.fail_nth("meta.record_run", 1, fault);
        let result = s
            .call(&sid, json!({"code": "globalThis.x = 41; x + 1"}))
            .await;
        let outcome = &result["structuredContent"];
        assert_eq!(result["isError"], true, "{fault:?}: {result}");
        assert!(
            outcome["warnings"].to_string().contains("not written"),
            "{outcome}"
        );
        let key = HeapKey::parse(outcome["heap"].as_str().unwrap()).unwrap();
        assert!(
            heaps
                .get(&Tenant::anonymous(), &key)
                .await
                .unwrap()
                .is_some(),
            "{fault:?}: the heap is stored and verifies"
        );
        assert!(
            meta.last_log_entry(&Tenant::anonymous(), &common::logical("faulty"))
                .await
                .unwrap()
                .is_none()
        );
        let id = outcome["execution_id"].as_str().unwrap().parse().unwrap();
        assert!(
            meta.get_execution(&Tenant::anonymous(), id, 0)
                .await
                .unwrap()
                .is_none(),
            "{fault:?}: no execution record without its log entry"
        );

        // The heap continues by its key once the store is back.
        let result = s
            .call(&sid, json!({"code": "x + 1", "heap": key.as_str()}))
            .await;
        assert_eq!(result["structuredContent"]["result"], "42", "{result}");

        // An answer over its budget links no record that was not written.
        // The third record of this plan: the first failed, the second
        // recorded the run above.
        plan.fail_nth("meta.record_run", 3, fault);
        let code = "for (let i = 0; i < 100000; i++) console.log(`line ${i}`)";
        let result = s.call(&sid, json!({ "code": code })).await;
        let warnings = result["structuredContent"]["warnings"].to_string();
        assert!(
            warnings.contains("the rest is not kept (the run's record was not written)")
                && warnings.contains("execution record were not written")
                && !warnings.contains("mcp-v8://executions/"),
            "{fault:?}: {warnings} {}",
            result["content"][0]["text"].as_str().unwrap().len()
        );
    }
}

#[tokio::test]
async fn a_failed_heap_read_fails_the_run_instead_of_starting_fresh() {
    let plan = FaultPlan::new();
    // No engine worker keeps the heap ready, so every call reads it.
    let mut config = common::test_config(3600, false);
    config.engine.ready_heaps_mb_set = Some(0);
    let (s, _, meta) = faulty_server_within(&plan, config);
    let sid = s
        .initialize_as("2025-11-25", &[("x-mcp-session-id", "faulty")])
        .await;
    let first = s.call(&sid, json!({"code": "globalThis.x = 1; x"})).await;
    let heap = first["structuredContent"]["heap"]
        .as_str()
        .unwrap()
        .to_owned();
    for fault in FAULTS {
        plan.fail_nth("heap.get", plan.calls("heap.get") + 1, fault);
        let result = s.call(&sid, json!({"code": "x", "heap": heap})).await;
        assert_eq!(result["isError"], true, "{fault:?}: {result}");
        assert_eq!(result["structuredContent"]["status"], "failed");
    }
    assert_eq!(
        meta.last_log_entry(&Tenant::anonymous(), &common::logical("faulty"))
            .await
            .unwrap()
            .unwrap()
            .index,
        0,
        "failed runs add nothing to the log"
    );
    let result = s.call(&sid, json!({"code": "x", "heap": heap})).await;
    assert_eq!(result["structuredContent"]["result"], "1", "{result}");
}
