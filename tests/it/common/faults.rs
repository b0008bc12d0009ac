//! Fault injection at the store seams: a wrapper around any session store,
//! heap store or metadata store that fails chosen calls the way a backend
//! does (an error, a timeout, a throttling error), so tests can show what
//! the server does then; and, one level down, a wrapper around a DynamoDB
//! client that cancels its transactions as DynamoDB does. Test code only:
//! nothing in the library knows it.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsInput;
use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, TransactWriteItem};
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeDeserializationInterceptorContextMut, BeforeSerializationInterceptorContextMut,
};
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::config_bag::{Storable, StoreReplace};
use uuid::Uuid;

use mcp_v8_lambda::heap::{HeapKey, HeapStore, HeapStoreError, Snapshot};
use mcp_v8_lambda::meta::{
    ExecutionRecord, LogEntry, MetaStore, MetaStoreError, NewLogEntry, PendingSave, Tags,
};
use mcp_v8_lambda::session::{
    InitState, LogicalSession, McpSessionId, SessionStore, SessionStoreError,
};
use mcp_v8_lambda::tenant::Tenant;

/// How an injected call fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// At once, with a backend error.
    Fail,
    /// After the given delay, as a call that timed out.
    Timeout(Duration),
    /// With the error a throttled AWS call leaves once the SDK's retries
    /// are spent.
    Throttle,
}

/// Which calls fail: the `nth` call (1-based) of an operation such as
/// `"heap.put"` or `"session.get"`, or every call from the `nth` on.
#[derive(Debug, Default)]
pub struct FaultPlan {
    rules: Mutex<Vec<Rule>>,
    calls: Mutex<HashMap<&'static str, u64>>,
    /// Operations whose calls wait until released (a slow store).
    gates: Mutex<HashMap<&'static str, tokio::sync::watch::Sender<bool>>>,
}

#[derive(Debug, Clone, Copy)]
struct Rule {
    operation: &'static str,
    nth: u64,
    from_then_on: bool,
    fault: Fault,
}

impl FaultPlan {
    /// A plan that injects nothing yet.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The `nth` call of `operation` fails with `fault`.
    pub fn fail_nth(&self, operation: &'static str, nth: u64, fault: Fault) {
        self.push(operation, nth, false, fault);
    }

    /// Every call of `operation`, from the `nth` on, fails with `fault`.
    pub fn fail_from(&self, operation: &'static str, nth: u64, fault: Fault) {
        self.push(operation, nth, true, fault);
    }

    /// Calls of `operation` from now on wait (as on a slow store) until
    /// [`Self::release`].
    pub fn hold(&self, operation: &'static str) {
        let mut gates = self.gates.lock().expect("fault plan lock");
        gates
            .entry(operation)
            .or_insert_with(|| tokio::sync::watch::channel(true).0)
            .send_replace(false);
    }

    /// Lets held calls of `operation` go on.
    pub fn release(&self, operation: &'static str) {
        if let Some(gate) = self.gates.lock().expect("fault plan lock").get(operation) {
            gate.send_replace(true);
        }
    }

    /// Stops injecting.
    pub fn clear(&self) {
        self.rules.lock().expect("fault plan lock").clear();
    }

    /// How often `operation` was called.
    pub fn calls(&self, operation: &str) -> u64 {
        let calls = self.calls.lock().expect("fault plan lock");
        calls.get(operation).copied().unwrap_or(0)
    }

    fn push(&self, operation: &'static str, nth: u64, from_then_on: bool, fault: Fault) {
        self.rules.lock().expect("fault plan lock").push(Rule {
            operation,
            nth,
            from_then_on,
            fault,
        });
    }

    /// Counts a call of `operation` and says whether and how it fails.
    async fn strike(&self, operation: &'static str) -> Option<InjectedError> {
        let gate = self
            .gates
            .lock()
            .expect("fault plan lock")
            .get(operation)
            .map(|gate| gate.subscribe());
        let count = {
            let mut calls = self.calls.lock().expect("fault plan lock");
            let count = calls.entry(operation).or_insert(0);
            *count += 1;
            *count
        };
        if let Some(mut gate) = gate {
            let _ = gate.wait_for(|open| *open).await;
        }
        let fault = self
            .rules
            .lock()
            .expect("fault plan lock")
            .iter()
            .find(|r| {
                r.operation == operation && (r.nth == count || (r.from_then_on && count >= r.nth))
            })
            .map(|r| r.fault)?;
        if let Fault::Timeout(delay) = fault {
            tokio::time::sleep(delay).await;
        }
        Some(InjectedError { operation, fault })
    }
}

/// The error an injected fault produces.
#[derive(Debug, Clone, Copy, thiserror::Error)]
pub struct InjectedError {
    operation: &'static str,
    fault: Fault,
}

impl fmt::Display for InjectedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.fault {
            Fault::Fail => write!(f, "injected failure of {}", self.operation),
            Fault::Timeout(d) => write!(f, "{} timed out after {d:?} (injected)", self.operation),
            Fault::Throttle => write!(
                f,
                "ThrottlingException: rate of requests exceeded for {} (injected)",
                self.operation
            ),
        }
    }
}

/// A store whose calls fail as its [`FaultPlan`] says, and otherwise go to
/// the store it wraps.
#[derive(Debug, Clone)]
pub struct Faulty<S: ?Sized> {
    inner: Arc<S>,
    plan: Arc<FaultPlan>,
}

impl<S: ?Sized> Faulty<S> {
    /// Wraps `inner`, failing calls as `plan` says.
    pub fn new(inner: Arc<S>, plan: Arc<FaultPlan>) -> Self {
        Self { inner, plan }
    }
}

const STORE: &str = "faulty";

#[async_trait]
impl SessionStore for Faulty<dyn SessionStore> {
    async fn get(
        &self,
        id: &McpSessionId,
        now: i64,
    ) -> Result<Option<InitState>, SessionStoreError> {
        fail_session(&self.plan, "session.get").await?;
        self.inner.get(id, now).await
    }
    async fn put(&self, state: &InitState) -> Result<(), SessionStoreError> {
        fail_session(&self.plan, "session.put").await?;
        self.inner.put(state).await
    }
    async fn touch(
        &self,
        id: &McpSessionId,
        now: i64,
        expires_at: i64,
    ) -> Result<bool, SessionStoreError> {
        fail_session(&self.plan, "session.touch").await?;
        self.inner.touch(id, now, expires_at).await
    }
    async fn delete(&self, id: &McpSessionId) -> Result<bool, SessionStoreError> {
        fail_session(&self.plan, "session.delete").await?;
        self.inner.delete(id).await
    }
    async fn cancel_request(
        &self,
        id: &McpSessionId,
        request: &str,
        expires_at: i64,
    ) -> Result<(), SessionStoreError> {
        fail_session(&self.plan, "session.cancel_request").await?;
        self.inner.cancel_request(id, request, expires_at).await
    }
    async fn request_cancelled(
        &self,
        id: &McpSessionId,
        request: &str,
        now: i64,
    ) -> Result<bool, SessionStoreError> {
        fail_session(&self.plan, "session.request_cancelled").await?;
        self.inner.request_cancelled(id, request, now).await
    }
    async fn relay_reply(
        &self,
        id: &McpSessionId,
        request: &str,
        reply: &str,
        expires_at: i64,
    ) -> Result<(), SessionStoreError> {
        fail_session(&self.plan, "session.relay_reply").await?;
        self.inner.relay_reply(id, request, reply, expires_at).await
    }
    async fn relayed_reply(
        &self,
        id: &McpSessionId,
        request: &str,
        now: i64,
    ) -> Result<Option<String>, SessionStoreError> {
        fail_session(&self.plan, "session.relayed_reply").await?;
        self.inner.relayed_reply(id, request, now).await
    }
}

async fn fail_session(plan: &FaultPlan, operation: &'static str) -> Result<(), SessionStoreError> {
    match plan.strike(operation).await {
        Some(e) => Err(SessionStoreError::Backend {
            store: STORE,
            source: Box::new(e),
        }),
        None => Ok(()),
    }
}

#[async_trait]
impl HeapStore for Faulty<dyn HeapStore> {
    async fn put(&self, tenant: &Tenant, snapshot: &Snapshot) -> Result<(), HeapStoreError> {
        fail_heap(&self.plan, "heap.put", snapshot.key()).await?;
        self.inner.put(tenant, snapshot).await
    }
    async fn get(
        &self,
        tenant: &Tenant,
        key: &HeapKey,
    ) -> Result<Option<Snapshot>, HeapStoreError> {
        fail_heap(&self.plan, "heap.get", key).await?;
        self.inner.get(tenant, key).await
    }
}

async fn fail_heap(
    plan: &FaultPlan,
    operation: &'static str,
    key: &HeapKey,
) -> Result<(), HeapStoreError> {
    match plan.strike(operation).await {
        Some(e) => Err(HeapStoreError::Backend {
            store: STORE,
            key: key.clone(),
            source: Box::new(e),
        }),
        None => Ok(()),
    }
}

async fn fail_meta(plan: &FaultPlan, operation: &'static str) -> Result<(), MetaStoreError> {
    match plan.strike(operation).await {
        Some(e) => Err(MetaStoreError::Backend {
            store: STORE,
            source: Box::new(e),
        }),
        None => Ok(()),
    }
}

#[async_trait]
impl MetaStore for Faulty<dyn MetaStore> {
    fn exclusive(&self) -> bool {
        self.inner.exclusive()
    }
    async fn put_pending_save(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
        save: &PendingSave,
    ) -> Result<(), MetaStoreError> {
        fail_meta(&self.plan, "meta.put_pending_save").await?;
        self.inner.put_pending_save(tenant, session, save).await
    }
    async fn pending_save(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
    ) -> Result<Option<PendingSave>, MetaStoreError> {
        fail_meta(&self.plan, "meta.pending_save").await?;
        self.inner.pending_save(tenant, session).await
    }
    async fn clear_pending_save(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
        execution_id: Uuid,
    ) -> Result<(), MetaStoreError> {
        fail_meta(&self.plan, "meta.clear_pending_save").await?;
        self.inner
            .clear_pending_save(tenant, session, execution_id)
            .await
    }
    async fn append_log(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
        entry: NewLogEntry,
    ) -> Result<u64, MetaStoreError> {
        fail_meta(&self.plan, "meta.append_log").await?;
        self.inner.append_log(tenant, session, entry).await
    }
    async fn list_sessions(
        &self,
        tenant: &Tenant,
        after: Option<&LogicalSession>,
        limit: usize,
    ) -> Result<Vec<LogicalSession>, MetaStoreError> {
        fail_meta(&self.plan, "meta.list_sessions").await?;
        self.inner.list_sessions(tenant, after, limit).await
    }
    async fn last_log_entry(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
    ) -> Result<Option<LogEntry>, MetaStoreError> {
        fail_meta(&self.plan, "meta.last_log_entry").await?;
        self.inner.last_log_entry(tenant, session).await
    }
    async fn read_log(
        &self,
        tenant: &Tenant,
        session: &LogicalSession,
        offset: u64,
        limit: usize,
    ) -> Result<Vec<LogEntry>, MetaStoreError> {
        fail_meta(&self.plan, "meta.read_log").await?;
        self.inner.read_log(tenant, session, offset, limit).await
    }
    async fn get_tags(&self, tenant: &Tenant, heap: &HeapKey) -> Result<Tags, MetaStoreError> {
        fail_meta(&self.plan, "meta.get_tags").await?;
        self.inner.get_tags(tenant, heap).await
    }
    async fn set_tags(
        &self,
        tenant: &Tenant,
        heap: &HeapKey,
        tags: &Tags,
    ) -> Result<(), MetaStoreError> {
        fail_meta(&self.plan, "meta.set_tags").await?;
        self.inner.set_tags(tenant, heap, tags).await
    }
    async fn query_by_tags(
        &self,
        tenant: &Tenant,
        filter: &Tags,
    ) -> Result<Vec<(HeapKey, Tags)>, MetaStoreError> {
        fail_meta(&self.plan, "meta.query_by_tags").await?;
        self.inner.query_by_tags(tenant, filter).await
    }
    async fn put_execution(
        &self,
        tenant: &Tenant,
        record: &ExecutionRecord,
    ) -> Result<(), MetaStoreError> {
        fail_meta(&self.plan, "meta.put_execution").await?;
        self.inner.put_execution(tenant, record).await
    }
    async fn get_execution(
        &self,
        tenant: &Tenant,
        id: Uuid,
        now: i64,
    ) -> Result<Option<ExecutionRecord>, MetaStoreError> {
        fail_meta(&self.plan, "meta.get_execution").await?;
        self.inner.get_execution(tenant, id, now).await
    }
    async fn state_key(&self) -> Result<Vec<u8>, MetaStoreError> {
        self.inner.state_key().await
    }
    async fn put_suspension(
        &self,
        tenant: &Tenant,
        suspension: &mcp_v8_lambda::elicit::Suspension,
    ) -> Result<(), MetaStoreError> {
        fail_meta(&self.plan, "meta.put_suspension").await?;
        self.inner.put_suspension(tenant, suspension).await
    }
    async fn get_suspension(
        &self,
        tenant: &Tenant,
        id: Uuid,
        now: i64,
    ) -> Result<Option<mcp_v8_lambda::elicit::Suspension>, MetaStoreError> {
        self.inner.get_suspension(tenant, id, now).await
    }
    async fn claim_suspension(&self, tenant: &Tenant, id: Uuid) -> Result<bool, MetaStoreError> {
        self.inner.claim_suspension(tenant, id).await
    }
    async fn admit_suspension(
        &self,
        tenant: &Tenant,
        window: i64,
        limit: u32,
        expires_at: i64,
    ) -> Result<bool, MetaStoreError> {
        self.inner
            .admit_suspension(tenant, window, limit, expires_at)
            .await
    }
    // The wrapped store's own record_run runs, so a backend that writes a
    // run in one transaction is tested as it is.
    async fn record_run(
        &self,
        tenant: &Tenant,
        log: Option<(&LogicalSession, NewLogEntry)>,
        execution: &ExecutionRecord,
    ) -> Result<Option<u64>, MetaStoreError> {
        fail_meta(&self.plan, "meta.record_run").await?;
        self.inner.record_run(tenant, log, execution).await
    }
}

/// Cancels DynamoDB `TransactWriteItems` calls the way DynamoDB does, with
/// chosen cancellation reasons, for the first `times` calls of a client it
/// is added to: each such call is sent on to a table that does not exist, so
/// it writes nothing, and its answer is replaced by a
/// `TransactionCanceledException` carrying the reasons. Later calls go
/// through untouched. Counts every `TransactWriteItems` call.
#[derive(Debug, Clone)]
pub struct CancelTransactions {
    reasons: &'static [&'static str],
    left: Arc<AtomicU64>,
    calls: Arc<AtomicU64>,
}

/// Marks a call whose answer is to be replaced.
#[derive(Debug, Clone)]
struct Cancelled;

impl Storable for Cancelled {
    type Storer = StoreReplace<Self>;
}

impl CancelTransactions {
    /// Cancels the first `times` transactions with `reasons`, one per item.
    pub fn new(reasons: &'static [&'static str], times: u64) -> Self {
        Self {
            reasons,
            left: Arc::new(AtomicU64::new(times)),
            calls: Arc::new(AtomicU64::new(0)),
        }
    }

    /// How many `TransactWriteItems` calls the client made.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }

    /// `client` with this wrapper around its transactions.
    pub fn around(&self, client: &aws_sdk_dynamodb::Client) -> aws_sdk_dynamodb::Client {
        let config = client
            .config()
            .to_builder()
            .interceptor(self.clone())
            .build();
        aws_sdk_dynamodb::Client::from_conf(config)
    }
}

impl Intercept for CancelTransactions {
    fn name(&self) -> &'static str {
        "CancelTransactions"
    }

    fn modify_before_serialization(
        &self,
        context: &mut BeforeSerializationInterceptorContextMut<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        let Some(input) = context
            .input_mut()
            .downcast_mut::<TransactWriteItemsInput>()
        else {
            return Ok(());
        };
        self.calls.fetch_add(1, Ordering::SeqCst);
        let take = self
            .left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        if take.is_err() {
            return Ok(());
        }
        let nowhere = ConditionCheck::builder()
            .table_name("fault-injected-no-such-table")
            .key("k", AttributeValue::S("k".into()))
            .condition_expression("attribute_exists(k)")
            .build()?;
        *input = TransactWriteItemsInput::builder()
            .transact_items(
                TransactWriteItem::builder()
                    .condition_check(nowhere)
                    .build(),
            )
            .build()?;
        cfg.interceptor_state().store_put(Cancelled);
        Ok(())
    }

    fn modify_before_deserialization(
        &self,
        context: &mut BeforeDeserializationInterceptorContextMut<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        if cfg.load::<Cancelled>().is_none() {
            return Ok(());
        }
        let reasons: Vec<serde_json::Value> = self
            .reasons
            .iter()
            .map(|code| serde_json::json!({ "Code": code }))
            .collect();
        let body = serde_json::json!({
            "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
            "Message": format!("Transaction cancelled, please refer cancellation reasons for specific reasons {:?} (injected)", self.reasons),
            "CancellationReasons": reasons,
        });
        let response = context.response_mut();
        *response.status_mut() = 400u16.try_into()?;
        response
            .headers_mut()
            .insert("x-amzn-errortype", "TransactionCanceledException");
        *response.body_mut() = SdkBody::from(body.to_string());
        Ok(())
    }
}
