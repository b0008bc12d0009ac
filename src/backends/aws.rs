//! AWS wiring: the DynamoDB table definitions (the one source of truth that
//! `setup`, the stores and the SAM template test all read), client
//! construction from the standard AWS configuration, and `setup`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use aws_sdk_dynamodb::client::Waiters;
use aws_sdk_dynamodb::error::DisplayErrorContext;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, PointInTimeRecoverySpecification,
    ScalarAttributeType, TimeToLiveSpecification,
};
use aws_sdk_s3::config::{ConfigBag, RuntimeComponents};
use aws_sdk_s3::types::{BucketLocationConstraint, CreateBucketConfiguration};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::BeforeSerializationInterceptorContextRef;
use aws_smithy_runtime_api::client::orchestrator::Metadata;

/// Table name prefix when `MCP_V8_TABLE_PREFIX` is not set.
pub const DEFAULT_TABLE_PREFIX: &str = "mcp-v8-";

/// Attribute type of a key attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// String.
    S,
    /// Number.
    N,
}

/// One DynamoDB table as this server needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableDef {
    /// Appended to the prefix to form the table name.
    pub suffix: &'static str,
    /// Partition key.
    pub partition_key: (&'static str, KeyKind),
    /// Sort key, if any.
    pub sort_key: Option<(&'static str, KeyKind)>,
    /// Attribute DynamoDB's TTL deletes items by (epoch seconds).
    pub ttl_attribute: Option<&'static str>,
    /// The same, for a table whose items expire only when the operator
    /// asks (the session log's retention): TTL is on, and items carry the
    /// attribute only then.
    pub retention_attribute: Option<&'static str>,
    /// Whether point-in-time recovery is on (the durable history: log and tags).
    pub point_in_time_recovery: bool,
}

/// Init states, one item per transport session.
pub const SESSIONS: TableDef = TableDef {
    suffix: "sessions",
    partition_key: ("session_id", KeyKind::S),
    sort_key: None,
    ttl_attribute: Some("expires_at"),
    retention_attribute: None,
    point_in_time_recovery: false,
};
/// Session-log entries: one item per (logical session, index).
pub const SESSION_LOG: TableDef = TableDef {
    suffix: "session-log",
    partition_key: ("session_name", KeyKind::S),
    sort_key: Some(("idx", KeyKind::N)),
    ttl_attribute: None,
    retention_attribute: Some("expires_at"),
    point_in_time_recovery: true,
};
/// One item per logical session: the next index.
pub const SESSION_HEADS: TableDef = TableDef {
    suffix: "session-heads",
    partition_key: ("session_name", KeyKind::S),
    sort_key: None,
    ttl_attribute: None,
    retention_attribute: Some("expires_at"),
    point_in_time_recovery: true,
};
/// Each tenant's session names in one partition: what `list_sessions`
/// queries, so a listing reads only the caller's own sessions.
pub const SESSION_INDEX: TableDef = TableDef {
    suffix: "session-index",
    partition_key: ("tenant", KeyKind::S),
    sort_key: Some(("session_name", KeyKind::S)),
    ttl_attribute: None,
    retention_attribute: Some("expires_at"),
    point_in_time_recovery: true,
};
/// A heap's tags.
pub const HEAP_TAGS: TableDef = TableDef {
    suffix: "heap-tags",
    partition_key: ("heap_key", KeyKind::S),
    sort_key: None,
    ttl_attribute: None,
    retention_attribute: None,
    point_in_time_recovery: true,
};
/// The inverted tag index: one item per (tag pair, heap).
pub const HEAP_TAG_INDEX: TableDef = TableDef {
    suffix: "heap-tag-index",
    partition_key: ("tag_pair", KeyKind::S),
    sort_key: Some(("heap_key", KeyKind::S)),
    ttl_attribute: None,
    retention_attribute: None,
    point_in_time_recovery: true,
};
/// The execution registry.
pub const EXECUTIONS: TableDef = TableDef {
    suffix: "executions",
    partition_key: ("execution_id", KeyKind::S),
    sort_key: None,
    ttl_attribute: Some("expires_at"),
    retention_attribute: None,
    point_in_time_recovery: false,
};
/// MCP tasks: each tenant's in one partition, so `tasks/list` reads only
/// the caller's own; gone `expires_at` (the task's TTL) later.
pub const TASKS: TableDef = TableDef {
    suffix: "tasks",
    partition_key: ("tenant", KeyKind::S),
    sort_key: Some(("task_id", KeyKind::S)),
    ttl_attribute: Some("expires_at"),
    retention_attribute: None,
    point_in_time_recovery: false,
};

/// Every table, in creation order.
pub const TABLES: [TableDef; 8] = [
    SESSIONS,
    SESSION_LOG,
    SESSION_HEADS,
    SESSION_INDEX,
    HEAP_TAGS,
    HEAP_TAG_INDEX,
    EXECUTIONS,
    TASKS,
];

impl TableDef {
    /// The table's name under `prefix`.
    pub fn name(&self, prefix: &str) -> String {
        format!("{prefix}{}", self.suffix)
    }
}

fn scalar(kind: KeyKind) -> ScalarAttributeType {
    match kind {
        KeyKind::S => ScalarAttributeType::S,
        KeyKind::N => ScalarAttributeType::N,
    }
}

/// What `setup` did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SetupReport {
    /// Tables created now.
    pub created_tables: Vec<String>,
    /// Tables that were there already.
    pub existing_tables: Vec<String>,
    /// Whether the bucket was created now.
    pub created_bucket: bool,
}

/// A setup step that failed.
#[derive(Debug, thiserror::Error)]
#[error("setup failed at {step}: {message}")]
pub struct SetupError {
    step: String,
    message: String,
}

fn setup_error(step: impl Into<String>, error: impl std::fmt::Display) -> SetupError {
    SetupError {
        step: step.into(),
        message: error.to_string(),
    }
}

/// Creates the tables (pay per request, TTL and point-in-time recovery as
/// defined) and the bucket when missing. Idempotent.
pub async fn setup(
    dynamodb: &aws_sdk_dynamodb::Client,
    s3: &aws_sdk_s3::Client,
    table_prefix: &str,
    bucket: &str,
) -> Result<SetupReport, SetupError> {
    let mut report = SetupReport::default();
    for table in TABLES {
        let name = table.name(table_prefix);
        if create_table(dynamodb, &table, &name).await? {
            configure_table(dynamodb, &table, &name).await?;
            report.created_tables.push(name);
        } else {
            report.existing_tables.push(name);
        }
    }
    report.created_bucket = create_bucket(s3, bucket).await?;
    Ok(report)
}

/// Creates `table` as `name` and waits until it exists; false when it was
/// there already.
async fn create_table(
    dynamodb: &aws_sdk_dynamodb::Client,
    table: &TableDef,
    name: &str,
) -> Result<bool, SetupError> {
    let mut keys = vec![(table.partition_key, KeyType::Hash)];
    if let Some(sort) = table.sort_key {
        keys.push((sort, KeyType::Range));
    }
    let mut request = dynamodb
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest);
    for ((attribute, kind), key_type) in keys {
        request = request
            .attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name(attribute)
                    .attribute_type(scalar(kind))
                    .build()
                    .map_err(|e| setup_error(name, e))?,
            )
            .key_schema(
                KeySchemaElement::builder()
                    .attribute_name(attribute)
                    .key_type(key_type)
                    .build()
                    .map_err(|e| setup_error(name, e))?,
            );
    }
    match request.send().await {
        Ok(_) => {}
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_resource_in_use_exception()) =>
        {
            return Ok(false);
        }
        Err(e) => {
            return Err(setup_error(
                format!("creating table {name}"),
                DisplayErrorContext(e),
            ));
        }
    }
    dynamodb
        .wait_until_table_exists()
        .table_name(name)
        .wait(Duration::from_secs(120))
        .await
        .map_err(|e| setup_error(format!("waiting for table {name}"), DisplayErrorContext(e)))?;
    Ok(true)
}

/// Turns on what `table` defines beyond its keys: TTL, point-in-time recovery.
async fn configure_table(
    dynamodb: &aws_sdk_dynamodb::Client,
    table: &TableDef,
    name: &str,
) -> Result<(), SetupError> {
    if let Some(attribute) = table.ttl_attribute.or(table.retention_attribute) {
        let spec = TimeToLiveSpecification::builder()
            .attribute_name(attribute)
            .enabled(true)
            .build()
            .map_err(|e| setup_error(name, e))?;
        dynamodb
            .update_time_to_live()
            .table_name(name)
            .time_to_live_specification(spec)
            .send()
            .await
            .map_err(|e| setup_error(format!("enabling TTL on {name}"), DisplayErrorContext(e)))?;
    }
    if table.point_in_time_recovery {
        let spec = PointInTimeRecoverySpecification::builder()
            .point_in_time_recovery_enabled(true)
            .build()
            .map_err(|e| setup_error(name, e))?;
        dynamodb
            .update_continuous_backups()
            .table_name(name)
            .point_in_time_recovery_specification(spec)
            .send()
            .await
            .map_err(|e| {
                setup_error(
                    format!("enabling point-in-time recovery on {name}"),
                    DisplayErrorContext(e),
                )
            })?;
    }
    Ok(())
}

/// Creates the bucket in the client's region; false when this account has
/// it already. Outside us-east-1, S3 needs the region named as the bucket's
/// location constraint, and refuses the request without it.
async fn create_bucket(s3: &aws_sdk_s3::Client, bucket: &str) -> Result<bool, SetupError> {
    let mut request = s3.create_bucket().bucket(bucket);
    if let Some(region) = s3.config().region().map(|r| r.as_ref().to_owned())
        && region != "us-east-1"
    {
        request = request.create_bucket_configuration(
            CreateBucketConfiguration::builder()
                .location_constraint(BucketLocationConstraint::from(region.as_str()))
                .build(),
        );
    }
    match request.send().await {
        Ok(_) => Ok(true),
        Err(e)
            if e.as_service_error().is_some_and(|s| {
                s.is_bucket_already_owned_by_you() || s.is_bucket_already_exists()
            }) =>
        {
            Ok(false)
        }
        Err(e) => Err(setup_error(
            format!("creating bucket {bucket}"),
            aws_sdk_s3::error::DisplayErrorContext(e),
        )),
    }
}

/// The two AWS clients the stores use, built once per process.
#[derive(Debug, Clone)]
pub struct Clients {
    /// Heaps and oversized metadata.
    pub s3: aws_sdk_s3::Client,
    /// Sessions and metadata.
    pub dynamodb: aws_sdk_dynamodb::Client,
    /// The configuration they were made from (region, credentials,
    /// endpoint), for the one call made without an SDK client: the
    /// function invoking itself (`tasks::handoff`).
    pub sdk: aws_config::SdkConfig,
}

impl Clients {
    /// Clients from shared configuration, optionally counting every call.
    pub fn new(
        config: &aws_config::SdkConfig,
        force_path_style: bool,
        counter: Option<&CallCounter>,
    ) -> Self {
        let mut s3 = aws_sdk_s3::config::Builder::from(config)
            .force_path_style(force_path_style)
            .retry_config(retry_config())
            .timeout_config(timeout_config());
        let mut dynamodb = aws_sdk_dynamodb::config::Builder::from(config)
            .retry_config(retry_config())
            .timeout_config(timeout_config());
        if let Some(counter) = counter {
            s3 = s3.interceptor(counter.clone());
            dynamodb = dynamodb.interceptor(counter.clone());
        }
        Self {
            s3: aws_sdk_s3::Client::from_conf(s3.build()),
            dynamodb: aws_sdk_dynamodb::Client::from_conf(dynamodb.build()),
            sdk: config.clone(),
        }
    }
}

/// The SDK's retries, set here rather than left to defaults that change
/// between SDK versions: standard mode (throttling, 5xx and transient
/// network errors; a token bucket stops retry storms), 3 attempts in all,
/// exponential backoff with jitter from 50 ms up to 2 s. Conflicts of the
/// session log's conditional writes are not SDK retries: the log retries
/// those itself (`meta::dynamodb`).
pub fn retry_config() -> aws_config::retry::RetryConfig {
    aws_config::retry::RetryConfig::standard()
        .with_max_attempts(3)
        .with_initial_backoff(Duration::from_millis(50))
        .with_max_backoff(Duration::from_secs(2))
}

/// Bounds on one AWS call: a stuck connection fails within seconds, and a
/// call with all its retries ends well inside the default 60 s Lambda
/// timeout, so the client gets a 500 it can retry instead of a dead function.
pub fn timeout_config() -> aws_config::timeout::TimeoutConfig {
    aws_config::timeout::TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(3))
        .operation_attempt_timeout(Duration::from_secs(10))
        .operation_timeout(Duration::from_secs(25))
        .build()
}

/// Counts AWS operations (`service.Operation`), once per call whatever its
/// retries: the figures in docs/performance.md come from it.
#[derive(Debug, Clone, Default)]
pub struct CallCounter(Arc<Mutex<BTreeMap<String, u64>>>);

impl CallCounter {
    /// The counts so far, resetting them.
    pub fn take(&self) -> BTreeMap<String, u64> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Intercept for CallCounter {
    fn name(&self) -> &'static str {
        "CallCounter"
    }

    fn read_before_serialization(
        &self,
        _context: &BeforeSerializationInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        config: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(operation) = config.load::<Metadata>() {
            let name = format!("{}.{}", operation.service(), operation.name());
            *self
                .0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(name)
                .or_default() += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_are_prefixed_and_distinct() {
        let names: std::collections::BTreeSet<String> =
            TABLES.iter().map(|t| t.name("p-")).collect();
        assert_eq!(names.len(), TABLES.len());
        assert!(names.contains("p-sessions"));
        assert!(names.contains("p-session-log"));
    }

    #[test]
    fn both_clients_carry_the_explicit_retry_and_timeout_policy() {
        let sdk = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new("us-east-1"))
            .build();
        let clients = Clients::new(&sdk, false, None);
        let retry = clients.dynamodb.config().retry_config().unwrap();
        assert_eq!(retry.max_attempts(), 3);
        assert_eq!(retry.max_backoff(), Duration::from_secs(2));
        let retry = clients.s3.config().retry_config().unwrap();
        assert_eq!(retry.max_attempts(), 3);
        let timeouts = clients.s3.config().timeout_config().unwrap();
        assert_eq!(timeouts.connect_timeout(), Some(Duration::from_secs(3)));
        assert_eq!(
            clients
                .dynamodb
                .config()
                .timeout_config()
                .unwrap()
                .operation_timeout(),
            Some(Duration::from_secs(25))
        );
    }
}
