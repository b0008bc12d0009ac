//! The behaviour every [`TaskStore`] must show (its `# Contract`), and what
//! [`TaskBook`] makes of it: redb and DynamoDB run it unchanged.

use std::sync::Arc;

use serde_json::json;
use uuid::Uuid;

use mcp_v8_lambda::tasks::{
    Changed, TaskBook, TaskChange, TaskOutcome, TaskRecord, TaskRequest, TaskStatus, TaskStore,
    TaskStoreError,
};
use mcp_v8_lambda::tenant::Tenant;

fn request() -> TaskRequest {
    TaskRequest {
        tool: "run_js".into(),
        arguments: Some(json!({"code": "1 + 1"})),
        logical_session: Some("conformance".into()),
        protocol_version: "2025-11-25".into(),
        // Kept and read back like every other field.
        ui_extension: true,
        elicitation: Some(json!({ "form": {} })),
        retry: Some(mcp_v8_lambda::elicit::Retry {
            input_responses: Some(
                json!({ "elicit-1": { "action": "decline" } })
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
            request_state: Some("v1.state.mac".into()),
        }),
    }
}

/// When every record of the suite expires: one instant for the whole run,
/// so that two records built for the same id are equal even when a second
/// turns between them.
static EXPIRES_AT: std::sync::LazyLock<i64> =
    std::sync::LazyLock::new(|| mcp_v8_lambda::clock::unix_now() + 3600);

fn record(id: Uuid) -> TaskRecord {
    TaskRecord {
        task_id: id,
        status: TaskStatus::Working,
        status_message: Some("started".into()),
        created_at: "2026-11-26T12:00:00.000Z".into(),
        last_updated_at: "2026-11-26T12:00:00.000Z".into(),
        ttl_ms: 60_000,
        expires_at: *EXPIRES_AT,
        request: request(),
        outcome: None,
        runner: None,
        heartbeat_at: Some(0),
        input: None,
    }
}

/// Every check, on `store`.
pub async fn run_all(store: Arc<dyn TaskStore>) {
    create_read_and_compare_and_swap(store.as_ref()).await;
    tenants_do_not_see_each_other(store.as_ref()).await;
    listing_is_per_tenant_ordered_and_paged(store.as_ref()).await;
    large_results_come_back_whole(store.as_ref()).await;
    the_book_ends_a_task_once_and_claims_it_once(store).await;
}

async fn create_read_and_compare_and_swap(store: &dyn TaskStore) {
    let tenant = Tenant::anonymous();
    let id = Uuid::new_v4();
    assert!(store.read(&tenant, id).await.unwrap().is_none());
    assert!(
        !store.replace(&tenant, &record(id), 1).await.unwrap(),
        "absent: no swap"
    );
    store.create(&tenant, &record(id)).await.unwrap();
    assert!(matches!(
        store.create(&tenant, &record(id)).await,
        Err(TaskStoreError::Exists(taken)) if taken == id
    ));
    let read = store.read(&tenant, id).await.unwrap().unwrap();
    assert_eq!((read.version, &read.record), (1, &record(id)));
    let mut next = read.record.clone();
    next.status_message = Some("moved".into());
    assert!(store.replace(&tenant, &next, 1).await.unwrap());
    // The version moved: a writer holding the old one writes nothing.
    let mut stale = read.record.clone();
    stale.status_message = Some("stale".into());
    assert!(!store.replace(&tenant, &stale, 1).await.unwrap());
    let read = store.read(&tenant, id).await.unwrap().unwrap();
    assert_eq!(read.version, 2);
    assert_eq!(read.record.status_message.as_deref(), Some("moved"));
}

async fn tenants_do_not_see_each_other(store: &dyn TaskStore) {
    let (alice, bob) = (
        Tenant::of_principal(&format!("alice-{}", Uuid::new_v4())),
        Tenant::of_principal(&format!("bob-{}", Uuid::new_v4())),
    );
    let id = Uuid::new_v4();
    store.create(&alice, &record(id)).await.unwrap();
    assert!(store.read(&bob, id).await.unwrap().is_none());
    assert!(!store.replace(&bob, &record(id), 1).await.unwrap());
    assert!(store.list(&bob, None, 10).await.unwrap().is_empty());
    // The same id is free in another namespace.
    store.create(&bob, &record(id)).await.unwrap();
    assert_eq!(store.list(&alice, None, 10).await.unwrap().len(), 1);
}

async fn listing_is_per_tenant_ordered_and_paged(store: &dyn TaskStore) {
    let tenant = Tenant::of_principal(&format!("lister-{}", Uuid::new_v4()));
    let mut ids: Vec<Uuid> = (0..5).map(|_| Uuid::new_v4()).collect();
    for id in &ids {
        store.create(&tenant, &record(*id)).await.unwrap();
    }
    ids.sort_by_key(|id| id.to_string());
    let first = store.list(&tenant, None, 2).await.unwrap();
    assert_eq!(
        first.iter().map(|r| r.task_id).collect::<Vec<_>>(),
        ids[..2]
    );
    let rest = store.list(&tenant, Some(ids[1]), 10).await.unwrap();
    assert_eq!(rest.iter().map(|r| r.task_id).collect::<Vec<_>>(), ids[2..]);
}

async fn large_results_come_back_whole(store: &dyn TaskStore) {
    let tenant = Tenant::anonymous();
    let id = Uuid::new_v4();
    store.create(&tenant, &record(id)).await.unwrap();
    let mut done = record(id);
    done.status = TaskStatus::Completed;
    let text = "r".repeat(1024 * 1024);
    done.outcome = Some(TaskOutcome::Result(
        json!({"content": [{"type": "text", "text": text}], "isError": false}),
    ));
    assert!(store.replace(&tenant, &done, 1).await.unwrap());
    assert_eq!(store.read(&tenant, id).await.unwrap().unwrap().record, done);
}

async fn the_book_ends_a_task_once_and_claims_it_once(store: Arc<dyn TaskStore>) {
    let book = TaskBook::new(store);
    let tenant = Tenant::of_principal(&format!("book-{}", Uuid::new_v4()));
    let task = book
        .create(&tenant, request(), 60_000, None, "waiting")
        .await
        .unwrap();
    let id = task.task_id;
    // Eight runners race for a handed-off task: one takes it.
    let claims = futures_util::future::join_all((0..8).map(|i| {
        let (book, tenant) = (book.clone(), tenant.clone());
        async move {
            book.claim(&tenant, id, &format!("runner-{i}"))
                .await
                .unwrap()
        }
    }))
    .await;
    assert_eq!(
        claims.iter().filter(|c| c.is_some()).count(),
        1,
        "{claims:?}"
    );
    let cancel = TaskChange::Cancel {
        message: "cancelled".into(),
    };
    let finish = TaskChange::Finish {
        status: TaskStatus::Completed,
        outcome: Some(TaskOutcome::Result(
            json!({"content": [], "isError": false}),
        )),
        message: None,
    };
    // A cancel and a finish race: exactly one of them ends it.
    let (a, b) = tokio::join!(
        book.change(&tenant, id, &cancel),
        book.change(&tenant, id, &finish)
    );
    let applied = [a.unwrap(), b.unwrap()]
        .into_iter()
        .filter(|c| matches!(c, Changed::Applied(_)))
        .count();
    assert_eq!(applied, 1);
    let ended = book.get(&tenant, id).await.unwrap().unwrap();
    assert!(ended.status.is_terminal());
    assert!(matches!(
        book.change(&tenant, id, &cancel).await.unwrap(),
        Changed::Ended(_)
    ));
    assert!(book.claim(&tenant, id, "late").await.unwrap().is_none());
    assert!(matches!(
        book.change(&Tenant::of_principal("someone else"), id, &cancel)
            .await
            .unwrap(),
        Changed::Missing
    ));
}
