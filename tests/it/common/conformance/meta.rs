//! The behaviour every [`MetaStore`] must show: redb and DynamoDB run it
//! unchanged.

use std::collections::BTreeSet;
use std::sync::Arc;

use uuid::Uuid;

use mcp_v8_lambda::engine::{RunOutcome, RunStatus};
use mcp_v8_lambda::heap::HeapKey;
use mcp_v8_lambda::meta::{ExecutionRecord, MetaStore, NewLogEntry, Tags};
use mcp_v8_lambda::session::LogicalSession;

fn heap(n: u64) -> HeapKey {
    HeapKey::parse(&format!("{n:064x}")).unwrap()
}

fn entry(n: u64) -> NewLogEntry {
    NewLogEntry {
        input_heap: (n > 0).then(|| heap(n - 1)),
        output_heap: heap(n),
        code: format!("step({n})"),
        timestamp: "2026-11-22T12:00:00Z".into(),
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

/// Runs every check below against `store`.
pub async fn run_all(store: Arc<dyn MetaStore>) {
    log_indexes_start_at_zero_and_read_back_in_order(store.as_ref()).await;
    sessions_are_listed_once_they_have_entries(store.as_ref()).await;
    tags_are_replaced_read_and_cleared(store.as_ref()).await;
    tag_queries_need_every_pair(store.as_ref()).await;
    executions_round_trip_and_expire(store.as_ref()).await;
    concurrent_appends_get_distinct_gapless_indexes(store, 8, 25).await;
}

/// Indexes 0, 1, 2 …; `read_log` pages in index order.
pub async fn log_indexes_start_at_zero_and_read_back_in_order(store: &dyn MetaStore) {
    let s = session("ordered");
    for n in 0..5 {
        assert_eq!(store.append_log(&s, entry(n)).await.unwrap(), n);
    }
    let all = store.read_log(&s, 0, 1000).await.unwrap();
    assert_eq!(
        all.iter().map(|e| e.index).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4]
    );
    assert_eq!(all[0].input_heap, None);
    assert_eq!(all[3].input_heap, Some(heap(2)));
    assert_eq!(all[3].output_heap, heap(3));
    assert_eq!(all[3].code, "step(3)");
    let last = store.last_log_entry(&s).await.unwrap().unwrap();
    assert_eq!((last.index, last.output_heap.clone()), (4, heap(4)));
    assert!(
        store
            .last_log_entry(&session("none"))
            .await
            .unwrap()
            .is_none()
    );
    let page = store.read_log(&s, 2, 2).await.unwrap();
    assert_eq!(page.iter().map(|e| e.index).collect::<Vec<_>>(), [2, 3]);
    assert!(
        store
            .read_log(&session("empty"), 0, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

/// A session appears in the listing with its first entry, once however
/// many it has; every such session is listed.
pub async fn sessions_are_listed_once_they_have_entries(store: &dyn MetaStore) {
    let names: Vec<LogicalSession> = (0..4).map(|n| session(&format!("listed{n}"))).collect();
    let before = store.list_sessions().await.unwrap();
    assert!(names.iter().all(|s| !before.contains(s)));
    for s in &names {
        store.append_log(s, entry(0)).await.unwrap();
        store.append_log(s, entry(1)).await.unwrap();
    }
    let listed = store.list_sessions().await.unwrap();
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
    assert!(store.get_tags(&h).await.unwrap().is_empty());
    store
        .set_tags(&h, &tags(&[("env", "prod"), ("model", "v2")]))
        .await
        .unwrap();
    assert_eq!(
        store.get_tags(&h).await.unwrap(),
        tags(&[("env", "prod"), ("model", "v2")])
    );
    store.set_tags(&h, &tags(&[("env", "dev")])).await.unwrap();
    assert_eq!(store.get_tags(&h).await.unwrap(), tags(&[("env", "dev")]));
    store.set_tags(&h, &Tags::new()).await.unwrap();
    assert!(store.get_tags(&h).await.unwrap().is_empty());
}

/// A heap matches when its tags contain every pair; replaced tags stop matching.
pub async fn tag_queries_need_every_pair(store: &dyn MetaStore) {
    let run = Uuid::new_v4().simple().to_string();
    let a = HeapKey::of_payload(format!("{run}a").as_bytes());
    let b = HeapKey::of_payload(format!("{run}b").as_bytes());
    store
        .set_tags(
            &a,
            &tags(&[("run", &run), ("env", "prod"), ("model", "v2")]),
        )
        .await
        .unwrap();
    store
        .set_tags(
            &b,
            &tags(&[("run", &run), ("env", "prod"), ("model", "v3")]),
        )
        .await
        .unwrap();
    let both = store
        .query_by_tags(&tags(&[("run", &run), ("env", "prod")]))
        .await
        .unwrap();
    let found: BTreeSet<_> = both.iter().map(|(h, _)| h.clone()).collect();
    assert_eq!(found, BTreeSet::from([a.clone(), b.clone()]));
    let only_b = store
        .query_by_tags(&tags(&[("run", &run), ("model", "v3")]))
        .await
        .unwrap();
    assert_eq!(only_b.len(), 1);
    assert_eq!(only_b[0].0, b);
    assert_eq!(only_b[0].1.get("model").map(String::as_str), Some("v3"));
    store.set_tags(&b, &tags(&[("run", &run)])).await.unwrap();
    assert!(
        store
            .query_by_tags(&tags(&[("run", &run), ("model", "v3")]))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .query_by_tags(&tags(&[("run", "nobody")]))
            .await
            .unwrap()
            .is_empty()
    );
}

/// Records come back whole until they expire.
pub async fn executions_round_trip_and_expire(store: &dyn MetaStore) {
    let record = ExecutionRecord {
        outcome: RunOutcome {
            execution_id: Uuid::new_v4(),
            status: RunStatus::Completed,
            result: Some("42".into()),
            output: "hi\n".into(),
            heap: Some(heap(9)),
            input_heap: None,
            error: None,
            warnings: vec![],
            duration_ms: 7,
        },
        started_at: "2026-11-22T12:00:00Z".into(),
        completed_at: "2026-11-22T12:00:01Z".into(),
        expires_at: 2_000_000_000,
    };
    store.put_execution(&record).await.unwrap();
    let id = record.outcome.execution_id;
    assert_eq!(
        store.get_execution(id, 1_900_000_000).await.unwrap(),
        Some(record)
    );
    assert_eq!(store.get_execution(id, 2_000_000_000).await.unwrap(), None);
    assert_eq!(store.get_execution(Uuid::new_v4(), 0).await.unwrap(), None);
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
                store.append_log(&s, entry(w * 1000 + n)).await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let all = store.read_log(&s, 0, usize::MAX).await.unwrap();
    let indexes: Vec<u64> = all.iter().map(|e| e.index).collect();
    assert_eq!(indexes, (0..writers * each).collect::<Vec<_>>());
    let distinct: BTreeSet<_> = all.iter().map(|e| e.output_heap.clone()).collect();
    assert_eq!(
        distinct.len() as u64,
        writers * each,
        "every append kept its own entry"
    );
}
