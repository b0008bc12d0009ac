//! What a change to a task means, decided once over any [`TaskStore`]:
//! terminal tasks never change, a run is taken by one runner only, an
//! expired task is gone, and a working task whose runner went silent was
//! interrupted and says so.

use std::sync::Arc;

use uuid::Uuid;

use super::record::{TaskChange, TaskRecord, TaskRequest, TaskStatus};
use super::store::{TaskStore, TaskStoreError, Versioned};
use crate::clock::{rfc3339_millis, unix_now_millis};
use crate::tenant::Tenant;

/// A working task whose runner has missed this many heartbeats was
/// interrupted: its process or invocation ended (30 s at the default 5 s).
pub const SILENT_BEATS: i64 = 6;

/// A task no runner has taken within this many heartbeats of its creation
/// was lost on its way to one, a dropped asynchronous invocation (60 s).
pub const UNCLAIMED_BEATS: i64 = 12;

/// How a change went.
#[derive(Debug, Clone, PartialEq)]
pub enum Changed {
    /// Made; the record as it is now.
    Applied(TaskRecord),
    /// The task had already ended; it is unchanged.
    Ended(TaskRecord),
    /// No such task (or it expired).
    Missing,
}

/// Tasks over a store.
#[derive(Debug, Clone)]
pub struct TaskBook {
    store: Arc<dyn TaskStore>,
    /// How often runners beat, in milliseconds.
    heartbeat_ms: i64,
}

fn now_ms() -> i64 {
    unix_now_millis() as i64
}

impl TaskBook {
    /// Tasks kept in `store`.
    pub fn new(store: Arc<dyn TaskStore>) -> Self {
        Self {
            store,
            heartbeat_ms: super::HEARTBEAT.as_millis() as i64,
        }
    }

    /// The same book, for runners beating every `heartbeat`.
    pub fn with_heartbeat(self, heartbeat: std::time::Duration) -> Self {
        Self {
            heartbeat_ms: heartbeat.as_millis().max(1) as i64,
            ..self
        }
    }

    /// Writes a new working task for `request`, kept `ttl_ms`; `runner`
    /// takes it at once (a run in this process) or leaves it for
    /// [`Self::claim`].
    pub async fn create(
        &self,
        tenant: &Tenant,
        request: TaskRequest,
        ttl_ms: u64,
        runner: Option<&str>,
        message: &str,
    ) -> Result<TaskRecord, TaskStoreError> {
        let now = now_ms();
        let at = rfc3339_millis(i128::from(now));
        let record = TaskRecord {
            task_id: Uuid::new_v4(),
            status: TaskStatus::Working,
            status_message: Some(message.to_owned()),
            created_at: at.clone(),
            last_updated_at: at,
            ttl_ms,
            expires_at: (now + ttl_ms as i64).div_euclid(1000) + 1,
            request,
            outcome: None,
            runner: runner.map(str::to_owned),
            heartbeat_at: Some(now),
            input: None,
        };
        self.store.create(tenant, &record).await?;
        Ok(record)
    }

    /// The task as a client should see it: `None` when absent or expired;
    /// a working task whose runner went silent is first ended `failed`.
    pub async fn get(
        &self,
        tenant: &Tenant,
        id: Uuid,
    ) -> Result<Option<TaskRecord>, TaskStoreError> {
        let Some(read) = self.read_live(tenant, id).await? else {
            return Ok(None);
        };
        match interruption(&read.record, now_ms(), self.heartbeat_ms) {
            None => Ok(Some(read.record)),
            Some(message) => {
                match self
                    .change_from(tenant, read, &TaskChange::failed(message))
                    .await?
                {
                    Changed::Applied(record) | Changed::Ended(record) => Ok(Some(record)),
                    Changed::Missing => Ok(None),
                }
            }
        }
    }

    /// Applies `change` unless the task has ended.
    pub async fn change(
        &self,
        tenant: &Tenant,
        id: Uuid,
        change: &TaskChange,
    ) -> Result<Changed, TaskStoreError> {
        match self.read_live(tenant, id).await? {
            None => Ok(Changed::Missing),
            Some(read) => self.change_from(tenant, read, change).await,
        }
    }

    /// Takes the run of a working task no runner has taken: `Some` (the
    /// task) for exactly one caller however many try, `None` for the rest.
    pub async fn claim(
        &self,
        tenant: &Tenant,
        id: Uuid,
        runner: &str,
    ) -> Result<Option<TaskRecord>, TaskStoreError> {
        loop {
            let Some(mut read) = self.read_live(tenant, id).await? else {
                return Ok(None);
            };
            // A task waiting for the person has no run to take until its
            // answers come.
            if read.record.status != TaskStatus::Working || read.record.runner.is_some() {
                return Ok(None);
            }
            let now = now_ms();
            read.record.runner = Some(runner.to_owned());
            read.record.heartbeat_at = Some(now);
            read.record.last_updated_at = rfc3339_millis(i128::from(now));
            if self
                .store
                .replace(tenant, &read.record, read.version)
                .await?
            {
                return Ok(Some(read.record));
            }
        }
    }

    /// A page of the tenant's live tasks, after `after`.
    pub async fn list(
        &self,
        tenant: &Tenant,
        after: Option<Uuid>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>, TaskStoreError> {
        let now_secs = now_ms().div_euclid(1000);
        let mut page = self.store.list(tenant, after, limit).await?;
        page.retain(|record| record.expires_at > now_secs);
        Ok(page)
    }

    async fn read_live(
        &self,
        tenant: &Tenant,
        id: Uuid,
    ) -> Result<Option<Versioned>, TaskStoreError> {
        let read = self.store.read(tenant, id).await?;
        Ok(read.filter(|read| read.record.expires_at > now_ms().div_euclid(1000)))
    }

    /// Applies `change` to `read`, reading again when another writer moved
    /// the task first.
    async fn change_from(
        &self,
        tenant: &Tenant,
        mut read: Versioned,
        change: &TaskChange,
    ) -> Result<Changed, TaskStoreError> {
        loop {
            if read.record.status.is_terminal() {
                return Ok(Changed::Ended(read.record));
            }
            let next = apply(read.record.clone(), change, now_ms());
            if self.store.replace(tenant, &next, read.version).await? {
                return Ok(Changed::Applied(next));
            }
            match self.store.read(tenant, read.record.task_id).await? {
                Some(again) => read = again,
                None => return Ok(Changed::Missing),
            }
        }
    }
}

/// Why a working task counts as interrupted at `now`, if it does.
fn interruption(record: &TaskRecord, now: i64, heartbeat_ms: i64) -> Option<String> {
    // Only a run can be interrupted; a task waiting for the person has
    // none (its run is a stored heap).
    if record.status != TaskStatus::Working {
        return None;
    }
    let silent_for = now - record.heartbeat_at.unwrap_or(0);
    match &record.runner {
        Some(runner) if silent_for > SILENT_BEATS * heartbeat_ms => {
            // A process runs its own tasks under serve and stdio; a Lambda
            // invocation runs one handed to it.
            let seconds = silent_for / 1000;
            let what = if runner.starts_with(super::record::PROCESS_RUNNER) {
                format!(
                    "the server process running it stopped answering {seconds} s ago (it was \
                     killed or crashed before it could say so)"
                )
            } else {
                format!(
                    "the invocation running it stopped answering {seconds} s ago (it hit the \
                     function's timeout, or its environment ended)"
                )
            };
            Some(format!(
                "the run was interrupted: {what}; {}",
                super::record::NOTHING_KEPT
            ))
        }
        None if silent_for > UNCLAIMED_BEATS * heartbeat_ms => Some(format!(
            "the run never started: no instance took it within {} s; start it again",
            UNCLAIMED_BEATS * heartbeat_ms / 1000
        )),
        _ => None,
    }
}

fn apply(mut record: TaskRecord, change: &TaskChange, now: i64) -> TaskRecord {
    record.last_updated_at = rfc3339_millis(i128::from(now));
    match change {
        TaskChange::Progress { message, at } => {
            record.status_message = Some(message.clone());
            record.heartbeat_at = Some(*at);
        }
        TaskChange::Finish {
            status,
            outcome,
            message,
        } => {
            record.status = *status;
            record.outcome = outcome.clone();
            record.status_message = message.clone();
        }
        TaskChange::Ask { input } => {
            record.status = TaskStatus::InputRequired;
            record.status_message = Some(ASKED.to_owned());
            record.input = Some(input.clone());
            // Nothing runs while the person decides: the run is a stored
            // heap, and whoever continues it claims the task again.
            record.runner = None;
            record.heartbeat_at = None;
        }
        TaskChange::Cancel { message } => {
            record.status = TaskStatus::Cancelled;
            record.status_message = Some(message.clone());
            record.input = None;
        }
    }
    record
}

/// The status message of a task whose run asks the person.
const ASKED: &str = "The run asks the person: answer its inputRequests (tasks/update, or the \
    requests tasks/result carries), and it goes on.";

/// How answering a task's input went.
#[derive(Debug, Clone, PartialEq)]
pub enum InputAnswered {
    /// No such task (or it expired).
    Missing,
    /// The task waits for no input (it runs, or it ended): nothing changed.
    NotWaiting(TaskRecord),
    /// Responses were kept; these keys still wait for theirs.
    Waiting(TaskRecord),
    /// Every request has its response: the task is working again, its
    /// request carrying them, and no runner has it yet. Whoever got this
    /// starts its run.
    Complete(TaskRecord),
}

/// A response this task's requests refuse, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedResponse {
    /// The key.
    pub key: String,
    /// Why, for the client.
    pub why: String,
}

impl TaskBook {
    /// Gives a task in `input_required` the `responses` (by key; keys it
    /// did not ask are ignored), each checked against the request it
    /// answers first. A response its schema refuses takes none of them:
    /// its request is asked again, its message saying why, and past
    /// [`MAX_REFUSALS`](crate::elicit::state::MAX_REFUSALS) the run gets
    /// `{ action: "cancel", reason }` for it instead.
    pub async fn answer(
        &self,
        tenant: &Tenant,
        id: Uuid,
        responses: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Result<InputAnswered, RefusedResponse>, TaskStoreError> {
        'read: loop {
            let Some(read) = self.read_live(tenant, id).await? else {
                return Ok(Ok(InputAnswered::Missing));
            };
            let mut record = read.record.clone();
            let Some(input) = record
                .input
                .as_mut()
                .filter(|_| read.record.status == TaskStatus::InputRequired)
            else {
                return Ok(Ok(InputAnswered::NotWaiting(read.record)));
            };
            for (key, response) in responses {
                let Some(request) = input.requests.get(key) else {
                    continue;
                };
                let params = request.get("params").unwrap_or(&serde_json::Value::Null);
                match crate::elicit::check_response(params, response) {
                    Ok(checked) => {
                        input.responses.insert(key.clone(), checked);
                    }
                    Err(why) if input.refused + 1 >= crate::elicit::state::MAX_REFUSALS => {
                        input.refused += 1;
                        let stand_in = crate::elicit::state::refused_for_good(&why);
                        input.responses.insert(key.clone(), stand_in);
                    }
                    Err(why) => {
                        // None of this update's responses is taken; the
                        // person sees why on the next tasks/get.
                        let mut again = read.record.clone();
                        if let Some(input) = again.input.as_mut() {
                            input.refused += 1;
                            if let Some(request) = input.requests.get_mut(key) {
                                crate::elicit::state::ask_again(request, &why);
                            }
                        }
                        again.last_updated_at = rfc3339_millis(i128::from(now_ms()));
                        if !self.store.replace(tenant, &again, read.version).await? {
                            continue 'read;
                        }
                        return Ok(Err(RefusedResponse {
                            key: key.clone(),
                            why: why.to_string(),
                        }));
                    }
                }
            }
            let complete = input.pending().is_empty();
            let now = now_ms();
            record.last_updated_at = rfc3339_millis(i128::from(now));
            if complete {
                let input = record.input.take().unwrap_or_default();
                record.status = TaskStatus::Working;
                record.status_message = Some(ANSWERED.to_owned());
                record.request.retry = Some(crate::elicit::Retry {
                    input_responses: Some(input.responses),
                    request_state: Some(input.request_state),
                });
                record.runner = None;
                record.heartbeat_at = Some(now);
            }
            if self.store.replace(tenant, &record, read.version).await? {
                return Ok(Ok(if complete {
                    InputAnswered::Complete(record)
                } else {
                    InputAnswered::Waiting(record)
                }));
            }
        }
    }
}

/// The status message of a task whose requests were all answered.
const ANSWERED: &str = "The person answered; the run goes on from its stored heap.";

#[cfg(test)]
mod tests {
    use super::*;

    fn record(runner: Option<&str>, heartbeat: i64) -> TaskRecord {
        TaskRecord {
            task_id: Uuid::nil(),
            status: TaskStatus::Working,
            status_message: None,
            created_at: String::new(),
            last_updated_at: String::new(),
            ttl_ms: 1,
            expires_at: i64::MAX,
            request: TaskRequest {
                tool: "run_js".into(),
                arguments: None,
                logical_session: None,
                protocol_version: "2025-11-25".into(),
                ui_extension: false,
                elicitation: None,
                retry: None,
            },
            outcome: None,
            runner: runner.map(str::to_owned),
            heartbeat_at: Some(heartbeat),
            input: None,
        }
    }

    #[test]
    fn a_silent_runner_or_a_task_nobody_took_is_an_interruption() {
        let (now, beat) = (1_000_000, 5_000);
        let silence = SILENT_BEATS * beat;
        assert_eq!(
            interruption(&record(Some("a"), now - 1000), now, beat),
            None
        );
        let silent = interruption(&record(Some("a"), now - silence - 1), now, beat).unwrap();
        assert!(silent.contains("interrupted"), "{silent}");
        assert!(silent.contains("function's timeout"), "{silent}");
        assert!(silent.contains("nothing of the run was stored"), "{silent}");
        let served = format!("{}1234", super::super::record::PROCESS_RUNNER);
        let stopped = interruption(&record(Some(&served), now - silence - 1), now, beat).unwrap();
        assert!(
            stopped.contains("server process") && !stopped.contains("function's timeout"),
            "a serve process is not a function: {stopped}"
        );
        assert_eq!(
            interruption(&record(None, now - silence - 1), now, beat),
            None
        );
        let lost =
            interruption(&record(None, now - UNCLAIMED_BEATS * beat - 1), now, beat).unwrap();
        assert!(lost.contains("never started"), "{lost}");
        let mut ended = record(Some("a"), 0);
        ended.status = TaskStatus::Completed;
        assert_eq!(interruption(&ended, now, beat), None);
    }
}
