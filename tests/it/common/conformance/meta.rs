//! The behaviour every [`MetaStore`] must show: redb and DynamoDB run it
//! unchanged.

use std::collections::BTreeSet;
use std::sync::Arc;

use uuid::Uuid;

use mcp_v8_lambda::elicit::Suspension;
use mcp_v8_lambda::engine::{RunOutcome, RunStatus};
use mcp_v8_lambda::heap::HeapKey;
use mcp_v8_lambda::meta::{MetaStore, NewLogEntry, PendingSave, Tags};
use mcp_v8_lambda::session::LogicalSession;
use mcp_v8_lambda::tenant::Tenant;

/// The tenant of the checks that are not about tenants: the original layout.
const ANON: &Tenant = &Tenant::anonymous();

fn heap(n: u64) -> HeapKey {
    HeapKey::parse(&format!("{n:064x}")).unwrap()
}

fn entry(n: u64) -> NewLogEntry {
    NewLogEntry {
        input_heap: (n > 0).then(|| heap(n - 1)),
        output_heap: heap(n),
        code: format!("step({n})"),
        timestamp: "2026-11-22T12:00:00Z".into(),
        superseded_by: None,
    }
}

fn tags(pairs: &[(&str, &str)]) -> Tags {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A unique session name, so suites can share one store.
fn session(name: &str) -> LogicalSession {
    LogicalSession::parse(&format!("{name}-{}", Uuid::new_v4().simple())).expect("a valid name")
}

/// Every session of `tenant`, read in small pages.
pub async fn list_all(store: &dyn MetaStore, tenant: &Tenant) -> Vec<LogicalSession> {
    let mut all: Vec<LogicalSession> = Vec::new();
    loop {
        let page = store
            .list_sessions(tenant, all.last(), 7)
            .await
            .expect("list_sessions");
        let done = page.len() < 7;
        all.extend(page);
        if done {
            return all;
        }
    }
}

/// A tenant of its own, so a check sees exactly what it wrote.
pub fn fresh_tenant(who: &str) -> Tenant {
    Tenant::of_principal(&format!("jwt:https://issuer.test#{who}-{}", Uuid::new_v4()))
}

/// Runs every check below against `store`.
pub async fn run_all(store: Arc<dyn MetaStore>) {
    sessions_are_listed_in_pages_in_name_order(store.as_ref()).await;
    tenants_see_nothing_of_each_other(store.as_ref()).await;
    log_indexes_start_at_zero_and_read_back_in_order(store.as_ref()).await;
    sessions_are_listed_once_they_have_entries(store.as_ref()).await;
    tags_are_replaced_read_and_cleared(store.as_ref()).await;
    tag_queries_need_every_pair(store.as_ref()).await;
    executions_round_trip_and_expire(store.as_ref()).await;
    pending_saves_are_replaced_read_and_cleared_only_by_their_run(store.as_ref()).await;
    suspended_runs_expire_and_are_claimed_once(store.clone()).await;
    suspensions_are_admitted_up_to_the_limit_per_tenant_and_window(store.clone()).await;
    concurrent_appends_get_distinct_gapless_indexes(store, 8, 25).await;
}

/// A window admits `limit` suspensions of a tenant, at once or not, and
/// then none; another tenant and the next window count afresh.
pub async fn suspensions_are_admitted_up_to_the_limit_per_tenant_and_window(
    store: Arc<dyn MetaStore>,
) {
    let (tenant, other) = (fresh_tenant("admitted"), fresh_tenant("other"));
    let admits = (0..5).map(|_| {
        let (store, tenant) = (store.clone(), tenant.clone());
        tokio::spawn(async move {
            store
                .admit_suspension(&tenant, 7, 3, 9_999_999_999)
                .await
                .unwrap()
        })
    });
    let mut admitted = 0;
    for admit in admits {
        admitted += usize::from(admit.await.unwrap());
    }
    assert_eq!(admitted, 3, "exactly the limit, however many at once");
    assert!(
        !store
            .admit_suspension(&tenant, 7, 3, 9_999_999_999)
            .await
            .unwrap()
    );
    assert!(
        store
            .admit_suspension(&other, 7, 3, 9_999_999_999)
            .await
            .unwrap()
    );
    assert!(
        store
            .admit_suspension(&tenant, 8, 3, 9_999_999_999)
            .await
            .unwrap()
    );
}

fn suspension(expires_at: i64, output: String) -> Suspension {
    Suspension {
        id: Uuid::new_v4(),
        execution_id: Uuid::new_v4(),
        heap: heap(7),
        input_heap: None,
        session: Some(session("asks")),
        code: "await elicit(x)".into(),
        requests: serde_json::json!({ "elicit-1": { "mode": "form", "message": "m" } })
            .as_object()
            .unwrap()
            .clone(),
        asked: 1,
        output,
        warnings: Vec::new(),
        started_ms: 1_764_000_000_000,
        expires_at,
    }
}

/// A suspended run reads back whole (a large one too) for its tenant only,
/// until it expires; of many claims at once exactly one wins; the
/// request-state key is one for every caller.
pub async fn suspended_runs_expire_and_are_claimed_once(store: Arc<dyn MetaStore>) {
    let key = store.state_key().await.unwrap();
    assert_eq!(key.len(), 32);
    assert_eq!(
        store.state_key().await.unwrap(),
        key,
        "one key for every caller"
    );

    let tenant = fresh_tenant("asker");
    // Output over what an item holds inline.
    let written = suspension(2_000, "o".repeat(500 * 1024));
    store.put_suspension(&tenant, &written).await.unwrap();
    let read = store
        .get_suspension(&tenant, written.id, 1_000)
        .await
        .unwrap();
    assert_eq!(read.as_ref(), Some(&written));
    assert_eq!(
        store
            .get_suspension(&tenant, written.id, 2_000)
            .await
            .unwrap(),
        None,
        "expired"
    );
    assert_eq!(
        store.get_suspension(ANON, written.id, 1_000).await.unwrap(),
        None,
        "another tenant"
    );
    assert!(
        !store.claim_suspension(ANON, written.id).await.unwrap(),
        "another tenant's"
    );
    assert!(
        !store
            .claim_suspension(&tenant, Uuid::new_v4())
            .await
            .unwrap(),
        "absent"
    );

    let claims = (0..6).map(|_| {
        let (store, tenant, id) = (store.clone(), tenant.clone(), written.id);
        tokio::spawn(async move { store.claim_suspension(&tenant, id).await.unwrap() })
    });
    let mut won = 0;
    for claim in claims {
        won += usize::from(claim.await.unwrap());
    }
    assert_eq!(won, 1, "exactly one claim wins");
    assert!(!store.claim_suspension(&tenant, written.id).await.unwrap());
}

fn pending_save(execution_id: Uuid) -> PendingSave {
    PendingSave {
        execution_id,
        owner: "process-a".into(),
        completed_at: "2026-11-26T12:00:00.000Z".into(),
        expires_at: 1_900_000_000,
        failed: None,
        cleared: false,
        earlier: vec![Uuid::new_v4()],
    }
}

/// One pending save per session, replaced by the next; cleared by its own
/// run only; no other session or tenant sees it.
pub async fn pending_saves_are_replaced_read_and_cleared_only_by_their_run(store: &dyn MetaStore) {
    let s = session("pending");
    assert_eq!(store.pending_save(ANON, &s).await.unwrap(), None);
    let first = pending_save(Uuid::new_v4());
    store.put_pending_save(ANON, &s, &first).await.unwrap();
    assert_eq!(
        store.pending_save(ANON, &s).await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(
        store.pending_save(ANON, &session("other")).await.unwrap(),
        None
    );
    assert_eq!(
        store
            .pending_save(&fresh_tenant("carol"), &s)
            .await
            .unwrap(),
        None,
        "another tenant's session of the same name has none"
    );
    let second = PendingSave {
        failed: Some("storing it failed".into()),
        ..pending_save(Uuid::new_v4())
    };
    store.put_pending_save(ANON, &s, &second).await.unwrap();
    // The first run's clearing leaves the second's.
    store
        .clear_pending_save(ANON, &s, first.execution_id)
        .await
        .unwrap();
    assert_eq!(
        store.pending_save(ANON, &s).await.unwrap(),
        Some(second.clone())
    );
    store
        .clear_pending_save(ANON, &s, second.execution_id)
        .await
        .unwrap();
    // Cleared, the rest of it stays for readers (its time).
    let cleared = PendingSave {
        cleared: true,
        ..second.clone()
    };
    assert_eq!(
        store.pending_save(ANON, &s).await.unwrap(),
        Some(cleared.clone())
    );
    // Clearing again, or what is not there, is no error.
    store
        .clear_pending_save(ANON, &s, second.execution_id)
        .await
        .unwrap();
    store
        .clear_pending_save(ANON, &session("none"), second.execution_id)
        .await
        .unwrap();
    assert_eq!(store.pending_save(ANON, &s).await.unwrap(), Some(cleared));
    // A new pending save replaces the cleared one whole.
    store.put_pending_save(ANON, &s, &first).await.unwrap();
    assert_eq!(store.pending_save(ANON, &s).await.unwrap(), Some(first));
}

/// Indexes 0, 1, 2 …; `read_log` pages in index order.
pub async fn log_indexes_start_at_zero_and_read_back_in_order(store: &dyn MetaStore) {
    let s = session("ordered");
    for n in 0..5 {
        assert_eq!(store.append_log(ANON, &s, entry(n)).await.unwrap(), n);
    }
    let all = store.read_log(ANON, &s, 0, 1000).await.unwrap();
    assert_eq!(
        all.iter().map(|e| e.index).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4]
    );
    assert_eq!(all[0].input_heap, None);
    assert_eq!(all[3].input_heap, Some(heap(2)));
    assert_eq!(all[3].output_heap, heap(3));
    assert_eq!(all[3].code, "step(3)");
    let last = store.last_log_entry(ANON, &s).await.unwrap().unwrap();
    assert_eq!((last.index, last.output_heap.clone()), (4, heap(4)));
    assert!(
        store
            .last_log_entry(ANON, &session("none"))
            .await
            .unwrap()
            .is_none()
    );
    let page = store.read_log(ANON, &s, 2, 2).await.unwrap();
    assert_eq!(page.iter().map(|e| e.index).collect::<Vec<_>>(), [2, 3]);
    assert!(
        store
            .read_log(ANON, &session("empty"), 0, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

/// A session appears in the listing with its first entry, once however
/// many it has; every such session is listed.
pub async fn sessions_are_listed_once_they_have_entries(store: &dyn MetaStore) {
    let names: Vec<LogicalSession> = (0..4).map(|n| session(&format!("listed{n}"))).collect();
    let before = list_all(store, ANON).await;
    assert!(names.iter().all(|s| !before.contains(s)));
    for s in &names {
        store.append_log(ANON, s, entry(0)).await.unwrap();
        store.append_log(ANON, s, entry(1)).await.unwrap();
    }
    let listed = list_all(store, ANON).await;
    for s in &names {
        assert_eq!(
            listed.iter().filter(|n| *n == s).count(),
            1,
            "{s} in {listed:?}"
        );
    }
}

/// `set_tags` replaces; an empty map clears; unknown heaps have none.
pub async fn tags_are_replaced_read_and_cleared(store: &dyn MetaStore) {
    let h = HeapKey::of_payload(Uuid::new_v4().as_bytes());
    assert!(store.get_tags(ANON, &h).await.unwrap().is_empty());
    store
        .set_tags(ANON, &h, &tags(&[("env", "prod"), ("model", "v2")]))
        .await
        .unwrap();
    assert_eq!(
        store.get_tags(ANON, &h).await.unwrap(),
        tags(&[("env", "prod"), ("model", "v2")])
    );
    store
        .set_tags(ANON, &h, &tags(&[("env", "dev")]))
        .await
        .unwrap();
    assert_eq!(
        store.get_tags(ANON, &h).await.unwrap(),
        tags(&[("env", "dev")])
    );
    store.set_tags(ANON, &h, &Tags::new()).await.unwrap();
    assert!(store.get_tags(ANON, &h).await.unwrap().is_empty());
}

/// A heap matches when its tags contain every pair; replaced tags stop matching.
pub async fn tag_queries_need_every_pair(store: &dyn MetaStore) {
    let run = Uuid::new_v4().simple().to_string();
    let a = HeapKey::of_payload(format!("{run}a").as_bytes());
    let b = HeapKey::of_payload(format!("{run}b").as_bytes());
    store
        .set_tags(
            ANON,
            &a,
            &tags(&[("run", &run), ("env", "prod"), ("model", "v2")]),
        )
        .await
        .unwrap();
    store
        .set_tags(
            ANON,
            &b,
            &tags(&[("run", &run), ("env", "prod"), ("model", "v3")]),
        )
        .await
        .unwrap();
    let both = store
        .query_by_tags(ANON, &tags(&[("run", &run), ("env", "prod")]))
        .await
        .unwrap();
    let found: BTreeSet<_> = both.iter().map(|(h, _)| h.clone()).collect();
    assert_eq!(found, BTreeSet::from([a.clone(), b.clone()]));
    let only_b = store
        .query_by_tags(ANON, &tags(&[("run", &run), ("model", "v3")]))
        .await
        .unwrap();
    assert_eq!(only_b.len(), 1);
    assert_eq!(only_b[0].0, b);
    assert_eq!(only_b[0].1.get("model").map(String::as_str), Some("v3"));
    store
        .set_tags(ANON, &b, &tags(&[("run", &run)]))
        .await
        .unwrap();
    assert!(
        store
            .query_by_tags(ANON, &tags(&[("run", &run), ("model", "v3")]))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .query_by_tags(ANON, &tags(&[("run", "nobody")]))
            .await
            .unwrap()
            .is_empty()
    );
}

/// Records come back whole until they expire.
pub async fn executions_round_trip_and_expire(store: &dyn MetaStore) {
    let record = crate::common::execution_record(
        RunOutcome {
            heap_saving: None,
            execution_id: Uuid::new_v4(),
            status: RunStatus::Completed,
            result: Some("42".into()),
            output: "hi\n".into(),
            heap: Some(heap(9)),
            input_heap: None,
            error: None,
            warnings: vec![],
            duration_ms: 7,
            save_wait_ms: None,
            saved_after_ms: None,
            superseded: None,
            fetches: None,
            mcp_calls: None,
            reports: Default::default(),
        },
        "2026-11-22T12:00:00Z",
        "2026-11-22T12:00:01Z",
        2_000_000_000,
    );
    store.put_execution(ANON, &record).await.unwrap();
    let id = record.execution_id;
    assert_eq!(
        store.get_execution(ANON, id, 1_900_000_000).await.unwrap(),
        Some(record)
    );
    assert_eq!(
        store.get_execution(ANON, id, 2_000_000_000).await.unwrap(),
        None
    );
    assert_eq!(
        store.get_execution(ANON, Uuid::new_v4(), 0).await.unwrap(),
        None
    );
}

/// `writers` tasks append `each` entries to one session at once: exactly
/// `writers * each` entries, indexes `0..writers * each`, none repeated.
pub async fn concurrent_appends_get_distinct_gapless_indexes(
    store: Arc<dyn MetaStore>,
    writers: u64,
    each: u64,
) {
    let s = session("concurrent");
    let mut tasks = Vec::new();
    for w in 0..writers {
        let store = store.clone();
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            for n in 0..each {
                store
                    .append_log(ANON, &s, entry(w * 1000 + n))
                    .await
                    .unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let all = store.read_log(ANON, &s, 0, usize::MAX).await.unwrap();
    let indexes: Vec<u64> = all.iter().map(|e| e.index).collect();
    assert_eq!(indexes, (0..writers * each).collect::<Vec<_>>());
    let distinct: BTreeSet<_> = all.iter().map(|e| e.output_heap.clone()).collect();
    assert_eq!(
        distinct.len() as u64,
        writers * each,
        "every append kept its own entry"
    );
}

/// A tenant's listing is its sessions exactly, sorted, in pages that
/// resume after the given name and hold at most `limit` names.
pub async fn sessions_are_listed_in_pages_in_name_order(store: &dyn MetaStore) {
    let tenant = fresh_tenant("pages");
    assert!(
        store
            .list_sessions(&tenant, None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let names: Vec<LogicalSession> = ["delta", "alpha", "echo", "charlie", "bravo"]
        .iter()
        .map(|n| LogicalSession::parse(n).unwrap())
        .collect();
    for s in &names {
        store.append_log(&tenant, s, entry(0)).await.unwrap();
    }
    store
        .append_log(&tenant, &names[0], entry(1))
        .await
        .unwrap();
    let mut sorted = names.clone();
    sorted.sort();
    let first = store.list_sessions(&tenant, None, 2).await.unwrap();
    assert_eq!(first, sorted[..2]);
    let second = store
        .list_sessions(&tenant, Some(&first[1]), 2)
        .await
        .unwrap();
    assert_eq!(second, sorted[2..4]);
    let last = store
        .list_sessions(&tenant, Some(&second[1]), 2)
        .await
        .unwrap();
    assert_eq!(last, sorted[4..]);
    assert_eq!(list_all(store, &tenant).await, sorted);
    // A name between two listed ones resumes after it.
    let between = LogicalSession::parse("b").unwrap();
    assert_eq!(
        store
            .list_sessions(&tenant, Some(&between), 1)
            .await
            .unwrap(),
        sorted[1..2]
    );
}

/// Two tenants using the same session name, heap key and tags: each sees
/// only its own, exactly as if the other's did not exist, and the
/// anonymous tenant sees neither.
pub async fn tenants_see_nothing_of_each_other(store: &dyn MetaStore) {
    let alice = fresh_tenant("alice");
    let bob = fresh_tenant("bob");
    let name = session("shared-name");
    let h = HeapKey::of_payload(Uuid::new_v4().as_bytes());
    let run = Uuid::new_v4().simple().to_string();

    for n in 0..3 {
        store.append_log(&alice, &name, entry(n)).await.unwrap();
    }
    store
        .set_tags(&alice, &h, &tags(&[("run", &run), ("owner", "alice")]))
        .await
        .unwrap();
    let record = crate::common::execution_record(
        RunOutcome {
            heap_saving: None,
            execution_id: Uuid::new_v4(),
            status: RunStatus::Completed,
            result: Some("1".into()),
            output: String::new(),
            heap: Some(h.clone()),
            input_heap: None,
            error: None,
            warnings: vec![],
            duration_ms: 1,
            save_wait_ms: None,
            saved_after_ms: None,
            superseded: None,
            fetches: None,
            mcp_calls: None,
            reports: Default::default(),
        },
        "2026-11-22T12:00:00Z",
        "2026-11-22T12:00:01Z",
        2_000_000_000,
    );
    let id = record.execution_id;
    store.put_execution(&alice, &record).await.unwrap();

    for other in [&bob, ANON] {
        assert!(
            store
                .read_log(other, &name, 0, 10)
                .await
                .unwrap()
                .is_empty()
        );
        assert!(store.last_log_entry(other, &name).await.unwrap().is_none());
        assert!(!list_all(store, other).await.contains(&name));
        assert!(store.get_tags(other, &h).await.unwrap().is_empty());
        assert!(
            store
                .query_by_tags(other, &tags(&[("run", &run)]))
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(store.get_execution(other, id, 0).await.unwrap(), None);
    }

    // Bob writing under the same names starts his own log and tags, and
    // changes nothing of Alice's.
    assert_eq!(store.append_log(&bob, &name, entry(7)).await.unwrap(), 0);
    store
        .set_tags(&bob, &h, &tags(&[("run", &run), ("owner", "bob")]))
        .await
        .unwrap();
    let alices = store.read_log(&alice, &name, 0, 10).await.unwrap();
    assert_eq!(
        alices.iter().map(|e| e.index).collect::<Vec<_>>(),
        [0, 1, 2]
    );
    assert_eq!(
        store
            .last_log_entry(&alice, &name)
            .await
            .unwrap()
            .unwrap()
            .output_heap,
        heap(2)
    );
    assert_eq!(
        store.get_tags(&alice, &h).await.unwrap(),
        tags(&[("run", &run), ("owner", "alice")])
    );
    let found = store
        .query_by_tags(&alice, &tags(&[("run", &run)]))
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].1.get("owner").map(String::as_str), Some("alice"));
    assert_eq!(list_all(store, &alice).await, std::slice::from_ref(&name));
    assert_eq!(list_all(store, &bob).await, std::slice::from_ref(&name));
    assert_eq!(
        store.get_execution(&alice, id, 0).await.unwrap(),
        Some(record)
    );
}
