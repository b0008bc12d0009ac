//! Running a task's call apart from the request that started it: in this
//! process (`serve`, `stdio`), or handed to another invocation of the same
//! Lambda function, which claims it. While it runs, the runner beats (the
//! status message says how far it got) and watches the record for a
//! cancel, which any instance may write.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use uuid::Uuid;

use super::book::{Changed, TaskBook};
use super::record::{
    NOTHING_KEPT, PROCESS_RUNNER, TaskChange, TaskOutcome, TaskRecord, TaskRequest, TaskStatus,
};
use super::store::TaskStoreError;
use crate::BoxError;
use crate::clock::unix_now_millis;
use crate::engine::RunControl;
use crate::tenant::Tenant;

/// How often a runner writes that it is alive (with its progress), unless
/// configured otherwise.
pub const HEARTBEAT: Duration = Duration::from_secs(5);

/// How often a runner reads its task for a cancel written elsewhere.
pub const CANCEL_POLL: Duration = Duration::from_millis(500);

/// How a task's run went: it ended, or it asks the person first.
#[derive(Debug, Clone, PartialEq)]
pub enum Executed {
    /// What a direct `tools/call` would have answered.
    Ended(TaskOutcome),
    /// The run asked the person and is suspended as a heap.
    Asked(crate::protocol::mcp::InputRequiredResult),
}

/// Runs the call a task holds and says what a direct `tools/call` would
/// have answered.
#[async_trait]
pub trait Execute: Send + Sync + std::fmt::Debug + 'static {
    /// Runs `request` for `tenant`; `control` cancels it, `deadline` is
    /// when the host stops the process running it (a Lambda invocation's).
    async fn execute(
        &self,
        tenant: &Tenant,
        request: &TaskRequest,
        control: Arc<RunControl>,
        deadline: Option<SystemTime>,
    ) -> Executed;
}

/// Hands a created task to another invocation of this function, which
/// claims and runs it (`InvocationType: Event` on Lambda).
#[async_trait]
pub trait Handoff: Send + Sync + std::fmt::Debug + 'static {
    /// Starts the invocation that will run task `id` of `tenant`; returns
    /// once the platform has accepted it.
    async fn hand_off(&self, tenant: &Tenant, id: Uuid) -> Result<(), BoxError>;
}

/// Lifetimes, polling and when to make a task.
#[derive(Debug, Clone)]
pub struct TaskSettings {
    /// A run the server may answer with a task (the extension) is answered
    /// directly if it ends within this; otherwise it becomes a task.
    pub answer_within: Duration,
    /// Lifetime of a task whose client asked for none, in milliseconds.
    pub default_ttl_ms: u64,
    /// Longest lifetime a client may ask for, in milliseconds.
    pub max_ttl_ms: u64,
    /// What clients are asked to poll at, in milliseconds.
    pub poll_interval_ms: u64,
    /// With a handoff (Lambda), a run asking for longer than this is made
    /// a task before it starts; shorter ones are answered directly.
    pub handoff_above: Duration,
    /// How often a runner writes that it is alive; six missed beats end
    /// its task `failed` ([`super::SILENT_BEATS`]).
    pub heartbeat: Duration,
    /// How often a runner reads its task for a cancel written by another
    /// instance; one made in this process reaches the run at once.
    pub cancel_poll: Duration,
}

impl Default for TaskSettings {
    fn default() -> Self {
        Self {
            answer_within: Duration::from_secs(3),
            default_ttl_ms: 3_600_000,
            max_ttl_ms: 86_400_000,
            poll_interval_ms: 1_000,
            handoff_above: Duration::from_secs(60),
            heartbeat: HEARTBEAT,
            cancel_poll: CANCEL_POLL,
        }
    }
}

/// How a server-directed call went.
#[derive(Debug)]
pub enum Started {
    /// It ended, or asked the person, within
    /// [`TaskSettings::answer_within`]: answer directly.
    Answered(Executed),
    /// It goes on as this task.
    Task(Box<TaskRecord>),
}

/// What can go wrong starting or reading a task.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] TaskStoreError),
    /// The platform refused the invocation that was to run it.
    #[error("the task could not be handed to a new invocation: {0}")]
    Handoff(BoxError),
}

/// Tasks of this process: the book, how to run a call, and where a run
/// goes when it cannot stay here.
#[derive(Debug, Clone)]
pub struct Tasks {
    /// The records.
    pub book: TaskBook,
    executor: Arc<dyn Execute>,
    handoff: Option<Arc<dyn Handoff>>,
    /// This process, as a runner: an id drawn at start.
    owner: String,
    /// Lifetimes, polling and when to make a task.
    pub settings: TaskSettings,
    /// The runs of tasks going in this process, by task id: a cancel made
    /// here stops its run directly instead of through the store.
    running: Arc<Running>,
}

/// Task ids to their tenants and the controls of their runs in this process.
#[derive(Debug, Default)]
struct Running(std::sync::Mutex<std::collections::HashMap<Uuid, (Tenant, Arc<RunControl>)>>);

impl Running {
    fn map(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<Uuid, (Tenant, Arc<RunControl>)>> {
        // Every use leaves the map whole.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A run's entry in [`Running`], removed when the run's driver ends.
struct Registered<'a>(&'a Running, Uuid);

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.0.map().remove(&self.1);
    }
}

impl Tasks {
    /// Tasks kept in `book`, run by `executor` in this process, or handed
    /// off by `handoff` when there is one.
    pub fn new(
        book: TaskBook,
        executor: Arc<dyn Execute>,
        handoff: Option<Arc<dyn Handoff>>,
        settings: TaskSettings,
    ) -> Self {
        Self {
            book: book.with_heartbeat(settings.heartbeat),
            executor,
            handoff,
            owner: format!("{PROCESS_RUNNER}{}", Uuid::new_v4().simple()),
            settings,
            running: Arc::default(),
        }
    }

    /// Whether runs leave this process (Lambda).
    pub fn hands_off(&self) -> bool {
        self.handoff.is_some()
    }

    /// The lifetime a task gets when its client asked for `requested`.
    pub fn ttl_ms(&self, requested: Option<u64>) -> u64 {
        requested
            .unwrap_or(self.settings.default_ttl_ms)
            .clamp(1_000, self.settings.max_ttl_ms)
    }

    /// Makes a task of `request` now (durable before this returns) and
    /// starts its run: here, or by handing it off.
    pub async fn start(
        &self,
        tenant: &Tenant,
        request: TaskRequest,
        ttl_ms: u64,
    ) -> Result<TaskRecord, TaskError> {
        let Some(handoff) = &self.handoff else {
            let record = self
                .book
                .create(tenant, request, ttl_ms, Some(&self.owner), STARTED)
                .await?;
            self.run_here(tenant, &record);
            return Ok(record);
        };
        let record = self
            .book
            .create(
                tenant,
                request,
                ttl_ms,
                None,
                "The run is waiting for an instance to take it.",
            )
            .await?;
        if let Err(error) = handoff.hand_off(tenant, record.task_id).await {
            let message = format!("the run could not be started: {error}");
            self.finish_failed(tenant, record.task_id, message).await;
            return Err(TaskError::Handoff(error));
        }
        Ok(record)
    }

    /// Runs `task`, which this process has taken, here.
    fn run_here(&self, tenant: &Tenant, task: &TaskRecord) {
        let (this, tenant, task) = (self.clone(), tenant.clone(), task.clone());
        tokio::spawn(async move {
            let control = Arc::new(RunControl::default());
            let run = {
                let (executor, tenant, request) =
                    (this.executor.clone(), tenant.clone(), task.request.clone());
                let control = control.clone();
                async move { executor.execute(&tenant, &request, control, None).await }
            };
            this.drive(&tenant, task.task_id, control, run, None).await;
        });
    }

    /// Continues `task`, whose requests were all answered
    /// ([`super::InputAnswered::Complete`]): its run resumes from its stored
    /// heap here, or in the invocation it is handed to.
    pub async fn resume(&self, tenant: &Tenant, task: &TaskRecord) -> Result<(), TaskError> {
        let id = task.task_id;
        let Some(handoff) = &self.handoff else {
            if let Some(task) = self.book.claim(tenant, id, &self.owner).await? {
                self.run_here(tenant, &task);
            }
            return Ok(());
        };
        if let Err(error) = handoff.hand_off(tenant, id).await {
            let message = format!("the answered run could not be continued: {error}");
            self.finish_failed(tenant, id, message).await;
            return Err(TaskError::Handoff(error));
        }
        Ok(())
    }

    /// Starts `request` here and answers directly if it ends within
    /// [`TaskSettings::answer_within`]; otherwise makes it a task (durable
    /// before this returns) whose record gets the run's outcome.
    pub async fn start_or_answer(
        &self,
        tenant: &Tenant,
        request: TaskRequest,
        ttl_ms: u64,
    ) -> Result<Started, TaskError> {
        let control = Arc::new(RunControl::default());
        let mut run = {
            let (executor, tenant, request) =
                (self.executor.clone(), tenant.clone(), request.clone());
            let control = control.clone();
            tokio::spawn(async move { executor.execute(&tenant, &request, control, None).await })
        };
        // A client that goes away before the run is answered or made a
        // task cancels it, as without tasks: nobody could ever read it.
        let mut unclaimed = CancelOnDrop(Some(control.clone()));
        if let Ok(done) = tokio::time::timeout(self.settings.answer_within, &mut run).await {
            unclaimed.0 = None;
            return Ok(Started::Answered(ran_of(done)));
        }
        let record = match self
            .book
            .create(tenant, request, ttl_ms, Some(&self.owner), STARTED)
            .await
        {
            Ok(record) => record,
            // Dropping the guard cancels the run: no task will hold it.
            Err(error) => return Err(error.into()),
        };
        unclaimed.0 = None;
        let (this, tenant, id) = (self.clone(), tenant.clone(), record.task_id);
        tokio::spawn(async move {
            this.drive(&tenant, id, control, async move { ran_of(run.await) }, None)
                .await;
        });
        Ok(Started::Task(Box::new(record)))
    }

    /// Claims and runs task `id` handed to this invocation, until it ends
    /// or `deadline` (the invocation's) comes; a task another invocation
    /// took (a duplicated event) is left alone.
    pub async fn run_handed(
        &self,
        tenant: &Tenant,
        id: Uuid,
        runner: &str,
        deadline: Option<SystemTime>,
    ) -> Result<(), TaskStoreError> {
        let Some(task) = self.book.claim(tenant, id, runner).await? else {
            tracing::info!(task = %id, "the task was taken already or has ended; nothing to run");
            return Ok(());
        };
        let control = Arc::new(RunControl::default());
        let run = {
            let (executor, tenant) = (self.executor.clone(), tenant.clone());
            let control = control.clone();
            async move {
                executor
                    .execute(&tenant, &task.request, control, deadline)
                    .await
            }
        };
        self.drive(tenant, id, control, run, deadline).await;
        Ok(())
    }

    /// Runs `run` to its end, beating and watching for a cancel, then
    /// writes its outcome, unless the task ended first (cancelled).
    async fn drive(
        &self,
        tenant: &Tenant,
        id: Uuid,
        control: Arc<RunControl>,
        run: impl std::future::Future<Output = Executed> + Send + 'static,
        deadline: Option<SystemTime>,
    ) {
        let started = Instant::now();
        // A task of its own: the run must go on while this loop waits for
        // the store (a run stalled mid-request could hold up the very store
        // the loop is reading).
        let mut run = tokio::spawn(run);
        self.running
            .map()
            .insert(id, (tenant.clone(), control.clone()));
        let _registered = Registered(&self.running, id);
        let mut poll = tokio::time::interval(self.settings.cancel_poll);
        let mut last_beat = Instant::now();
        // Progress the status message has said (a new report is written at
        // the next poll, not the next beat).
        let mut said = 0;
        // The host ends the process at its deadline; a run still going a
        // moment before then is ended here, so the task says why.
        let cutoff = deadline.map(|deadline| {
            let left = deadline
                .duration_since(SystemTime::now())
                .unwrap_or_default()
                .saturating_sub(Duration::from_secs(2));
            tokio::time::Instant::now() + left
        });
        let outcome = loop {
            tokio::select! {
                outcome = &mut run => break Some(ran_of(outcome)),
                () = sleep_until(cutoff) => {
                    control.cancel();
                    break None;
                }
                _ = poll.tick() => {
                    let reported = control.latest_progress().map_or(0, |(count, _)| count);
                    let beat = last_beat.elapsed() >= self.settings.heartbeat || reported != said;
                    said = reported;
                    if self.watch(tenant, id, beat.then(|| progress(started, &control))).await {
                        // Cancelled: stop the run, let it unwind, keep nothing.
                        control.cancel();
                        let _ = run.await;
                        return;
                    }
                    if beat {
                        last_beat = Instant::now();
                    }
                }
            }
        };
        let change = match outcome {
            Some(Executed::Asked(asked)) => TaskChange::Ask {
                input: super::record::TaskInput {
                    requests: asked.input_requests,
                    responses: serde_json::Map::new(),
                    request_state: asked.request_state,
                    refused: 0,
                },
            },
            Some(Executed::Ended(TaskOutcome::Result(result))) => TaskChange::Finish {
                status: TaskStatus::Completed,
                message: Some(completed_message(&result)),
                outcome: Some(TaskOutcome::Result(result)),
            },
            Some(Executed::Ended(TaskOutcome::Error(error))) => TaskChange::Finish {
                status: TaskStatus::Failed,
                message: Some(error.message.clone()),
                outcome: Some(TaskOutcome::Error(error)),
            },
            None => TaskChange::failed(format!(
                "the run was ended after {} s: the function's invocation timeout was about to \
                 end it; ask for a shorter execution_timeout_secs or raise the function's timeout",
                started.elapsed().as_secs()
            )),
        };
        match self.book.change(tenant, id, &change).await {
            Ok(Changed::Applied(_)) => {}
            Ok(Changed::Ended(record)) => {
                tracing::info!(task = %id, status = record.status.as_str(), "the task ended before its run; its outcome is dropped");
            }
            Ok(Changed::Missing) => {
                tracing::warn!(task = %id, "the task expired before its run ended")
            }
            Err(error) => {
                tracing::error!(task = %id, %error, "the task's outcome could not be written");
            }
        }
    }

    /// Reads the task (writing `beat` first, when due); `true` when it has
    /// ended (a cancel, or it expired) and the run must stop.
    async fn watch(&self, tenant: &Tenant, id: Uuid, beat: Option<String>) -> bool {
        let result = match beat {
            Some(message) => {
                let at = unix_now_millis() as i64;
                self.book
                    .change(tenant, id, &TaskChange::Progress { message, at })
                    .await
                    .map(|changed| !matches!(changed, Changed::Applied(_)))
            }
            None => self
                .book
                .get(tenant, id)
                .await
                .map(|record| record.is_none_or(|r| r.status.is_terminal())),
        };
        result.unwrap_or_else(|error| {
            // A store that fails for a moment must not end the run.
            tracing::warn!(task = %id, %error, "reading the task failed; the run goes on");
            false
        })
    }

    async fn finish_failed(&self, tenant: &Tenant, id: Uuid, message: String) {
        if let Err(error) = self
            .book
            .change(tenant, id, &TaskChange::failed(message))
            .await
        {
            tracing::error!(task = %id, %error, "a failed task could not be marked so");
        }
    }

    /// Cancels task `id`: `Ended` when it had already ended. A run going
    /// in this process stops at once; one elsewhere reads the cancel from
    /// the store within [`TaskSettings::cancel_poll`].
    pub async fn cancel(&self, tenant: &Tenant, id: Uuid) -> Result<Changed, TaskStoreError> {
        let message = "The task was cancelled by request.".to_owned();
        let changed = self
            .book
            .change(tenant, id, &TaskChange::Cancel { message })
            .await?;
        if matches!(changed, Changed::Applied(_)) {
            let here = self
                .running
                .map()
                .get(&id)
                .map(|(_, control)| control.clone());
            if let Some(control) = here {
                control.cancel();
            }
        }
        Ok(changed)
    }

    /// Ends every task running in this process `failed`, saying that the
    /// server stopped, and stops their runs; returns how many. For a
    /// process about to exit (`serve` on SIGTERM), whose tasks would
    /// otherwise read `working` until their runner's silence showed.
    pub async fn stop_running(&self) -> usize {
        let running: Vec<_> = self
            .running
            .map()
            .iter()
            .map(|(id, (tenant, control))| (*id, tenant.clone(), control.clone()))
            .collect();
        for (id, tenant, control) in &running {
            // Failed first, so the run's own end (cancelled) is dropped.
            let message = format!("{SERVER_STOPPED}; {NOTHING_KEPT}");
            self.finish_failed(tenant, *id, message).await;
            control.cancel();
        }
        running.len()
    }

    /// Task `id` once it has ended or waits for the person, polled until
    /// then or until `until` (when the request must be answered):
    /// `Ok(None)` when it is absent, the record as it stands when time ran
    /// out.
    pub async fn wait(
        &self,
        tenant: &Tenant,
        id: Uuid,
        until: Option<SystemTime>,
    ) -> Result<Option<TaskRecord>, TaskStoreError> {
        loop {
            let Some(record) = self.book.get(tenant, id).await? else {
                return Ok(None);
            };
            let out_of_time = until.is_some_and(|until| {
                until.duration_since(SystemTime::now()).unwrap_or_default() < Duration::from_secs(1)
            });
            let waits = record.status == TaskStatus::InputRequired;
            if record.status.is_terminal() || waits || out_of_time {
                return Ok(Some(record));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Cancels a run unless disarmed (its `Option` taken) first.
struct CancelOnDrop(Option<Arc<RunControl>>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(control) = self.0.take() {
            control.cancel();
        }
    }
}

/// The first status message of a task that runs here.
const STARTED: &str = "The run is in progress.";

/// Why a task running in a server that was told to stop failed.
const SERVER_STOPPED: &str = "the server stopped (it was told to end, by SIGTERM or Ctrl-C) \
    while the run was going, and the run was ended with it";

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A running task's status message: its time, the run's latest
/// `reportProgress()`, its console lines.
fn progress(started: Instant, control: &RunControl) -> String {
    let reported = control
        .latest_progress()
        .map(|(_, report)| {
            let number = |n: f64| {
                if n.fract() == 0.0 && n.abs() < 1e15 {
                    format!("{}", n as i64)
                } else {
                    format!("{n}")
                }
            };
            let how_far = match report.total {
                Some(total) => format!("{} of {}", number(report.progress), number(total)),
                None => number(report.progress),
            };
            match report.message {
                Some(message) => format!(" {message} ({how_far})."),
                None => format!(" Progress: {how_far}."),
            }
        })
        .unwrap_or_default();
    format!(
        "Running for {} s.{reported} {} console lines written so far.",
        started.elapsed().as_secs(),
        control.console_lines()
    )
}

fn completed_message(result: &serde_json::Value) -> String {
    if result.get("isError").and_then(serde_json::Value::as_bool) == Some(true) {
        "The run ended with a tool error; the result says why.".into()
    } else {
        "The run completed.".into()
    }
}

/// A spawned run's outcome; a run that panicked is an internal error.
fn ran_of(joined: Result<Executed, tokio::task::JoinError>) -> Executed {
    joined.unwrap_or_else(|error| {
        Executed::Ended(TaskOutcome::internal(format!(
            "the run failed inside the server: {error}"
        )))
    })
}
