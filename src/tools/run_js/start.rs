//! A run_js call planned: the arguments checked into a run request, the
//! `latest` heap resolved when the run starts, and the warning for a fresh
//! start a model did not mean.

use super::arguments::RunJsCall;
use std::time::Duration;

use crate::tools::toolbox::{CallContext, RunRecordError, Toolbox, superseded_of};

use crate::engine::RunRequest;
use crate::heap::HeapKey;
use crate::meta::Tags;
use crate::session::LogicalSession;
use crate::tools::saves;

/// A run as the arguments ask for it, checked.
pub(super) struct CallPlan {
    pub(super) request: RunRequest,
    pub(super) logical_session: Option<LogicalSession>,
    /// `heap: "latest"`, resolved by [`resolve_latest`] when the run starts.
    pub(super) latest: bool,
    /// `latest` because the deployment continues sessions, not because the
    /// call asked: a session's first run then starts fresh without a word.
    pub(super) implied_latest: bool,
    /// No `heap` argument at all (`""` asks for a fresh isolate on purpose).
    pub(super) heap_omitted: bool,
    pub(super) tags: Option<Tags>,
    /// For the outcome: what the plan changed of what was asked.
    pub(super) warnings: Vec<String>,
    /// The save of the heap this run continues live, not yet stored
    /// (`latest` while the session's last heap is being stored).
    pub(super) continued: Option<saves::GoingSave>,
    /// How long the call waited for earlier heaps to be stored, and why.
    pub(super) save_wait: Option<(Duration, String)>,
}

/// The `heap` argument's word for the last heap of the call's logical session.
pub(super) const LATEST: &str = "latest";

/// Checks the arguments; `Err` is the tool error the model reads.
pub(super) fn plan(
    toolbox: &Toolbox,
    context: CallContext<'_>,
    call: RunJsCall,
) -> Result<CallPlan, String> {
    let RunJsCall { args, capabilities } = call;
    let heap_omitted = args.heap.is_none();
    let mut latest = args.heap.as_deref() == Some(LATEST);
    let heap = match args.heap.as_deref() {
        None | Some("") | Some(LATEST) => None,
        Some(text) => Some(HeapKey::parse(text).map_err(|e| e.to_string())?),
    };
    if let Some(tags) = &args.tags {
        crate::tools::args::tags(tags)?;
    }
    if toolbox.stateless
        && (heap.is_some() || latest || args.tags.is_some() || args.session.is_some())
    {
        return Err("this server is stateless: run_js takes no heap, tags or session".into());
    }
    let logical_session = match args.session.as_deref() {
        Some(name) => Some(crate::tools::args::session(name)?),
        None => context.logical_session.cloned(),
    };
    if latest && logical_session.is_none() {
        return Err(
            "heap \"latest\" is the last heap of your logical session, and this call \
             names none: pass the session argument (any name, the same on every call that \
             continues it), or send the X-MCP-Session-Id header with every request"
                .into(),
        );
    }
    // Where the deployment continues sessions, leaving out `heap` in a
    // logical session asks for its last heap.
    let implied_latest = heap_omitted
        && toolbox.continue_sessions
        && !toolbox.stateless
        && logical_session.is_some();
    latest |= implied_latest;
    let timeout = args
        .execution_timeout_secs
        .map(super::arguments::timeout)
        .transpose()?;
    Ok(CallPlan {
        request: RunRequest {
            code: args.code,
            heap,
            continues: None,
            tenant: context.tenant.clone(),
            stateful: !toolbox.stateless,
            language: args.language,
            timeout,
            deadline: context.deadline,
            heap_limit_mb: args.heap_memory_max_mb,
            control: context.control.cloned(),
            arguments: capabilities,
            elicitation: Default::default(),
        },
        logical_session,
        latest,
        implied_latest,
        heap_omitted,
        tags: args.tags,
        warnings: Vec::new(),
        continued: None,
        save_wait: None,
    })
}

/// Resolves `heap: "latest"`: the session's newest heap. While this
/// process is still storing it and an engine worker keeps it live, the run
/// continues it there at once (`live`; its own save is logged after that
/// one). Otherwise the output heap of the session's newest log entry, read
/// as the run starts, once the saves this process has going are over; a
/// session without runs starts fresh, with a warning saying so. A session
/// with too many heaps being stored waits for the oldest first.
pub(super) async fn resolve_latest(
    toolbox: &Toolbox,
    context: CallContext<'_>,
    planned: &mut CallPlan,
    live: bool,
) -> Result<(), String> {
    let Some(session) = &planned.logical_session else {
        return Ok(());
    };
    if toolbox.answer_before_save_bytes.is_some() {
        if planned.save_wait.is_none() {
            planned.save_wait = toolbox
                .saves
                .within(context.tenant, session, toolbox.unsaved)
                .await;
        }
        if let Some(going) = toolbox.saves.newest(context.tenant, session)
            && live
            && going.kept_live().await
            && toolbox.engine.holds_live(context.tenant, going.id)
        {
            planned.request.continues = Some(going.id);
            planned.continued = Some(going);
            return Ok(());
        }
    }
    // A save this process answered for first is waited for.
    let failed = toolbox.saves.wait(context.tenant, session).await;
    let (lost, last, waited) = if toolbox.answer_before_save_bytes.is_some() || !failed.is_empty() {
        saves::lost_save(
            toolbox.meta.as_ref(),
            &toolbox.saves,
            context.tenant,
            session,
        )
        .await?
    } else {
        let last = saves::last_entry(toolbox.meta.as_ref(), context.tenant, session).await?;
        (None, last, None)
    };
    // Another instance was still storing the heap this call continues
    // (standard Lambda: the call landed elsewhere): the wait is said.
    if let Some((waited, owner)) = waited
        && planned.save_wait.is_none()
    {
        tracing::info!(
            session = session.as_str(),
            waited_ms = waited.as_millis() as u64,
            instance = owner,
            "a latest call waited for another instance's save of the heap it continues"
        );
        planned.save_wait = Some((
            waited,
            format!(
                "another instance of this server (process {owner}) was still storing the heap \
                 it continues, and only that save was waited for"
            ),
        ));
    }
    if let Some(lost) = lost {
        let stored = match &last {
            Some(entry) => format!(
                "The last heap stored in this session is {} (log entry {}): pass heap: \"{}\" to \
                 continue from it, or heap: \"\" to start fresh",
                entry.output_heap, entry.index, entry.output_heap
            ),
            None => "This session has no stored heap: pass heap: \"\" to start fresh".to_owned(),
        };
        // Of the runs answered before it, those whose records were written
        // had their effects stored.
        let mut earlier = Vec::new();
        for id in &lost.earlier {
            let recorded = toolbox
                .meta
                .get_execution(context.tenant, *id, crate::clock::unix_now())
                .await;
            if !matches!(recorded, Ok(Some(_))) {
                earlier.push(id.to_string());
            }
        }
        let earlier = match earlier.len() {
            0 => String::new(),
            _ => format!(
                " Also lost, answered before it with their heaps not stored on their own: run(s) {}.",
                earlier.join(", ")
            ),
        };
        return Err(format!(
            "heap \"latest\" of session {:?} is lost: run {} (its code ended at {}) was answered before \
             its heap was stored, and {}.{earlier} Nothing that run, or any run of the session answered \
             after the last heap stored, defined exists. {stored}.",
            session.as_str(),
            lost.execution_id,
            lost.completed_at,
            lost.why
        ));
    }
    match last {
        Some(entry) => planned.request.heap = Some(entry.output_heap),
        None if planned.implied_latest => {}
        None => planned.warnings.push(format!(
            "session {:?} has no runs yet, so heap \"latest\" started a fresh isolate",
            session.as_str()
        )),
    }
    Ok(())
}

/// A warning when a call in a logical session that has runs leaves out
/// `heap`: the run started fresh, and the session's newest entry is now
/// this fresh state, so a model that meant to continue must be told.
/// `logged_at` is the index the run's own log entry got: the count of the
/// runs before it, known without a read. A run that logged nothing (it
/// failed: often the `ReferenceError` of a forgotten `heap`) reads the log.
pub(super) async fn fresh_start_warning(
    toolbox: &Toolbox,
    context: CallContext<'_>,
    planned: &CallPlan,
    logged_at: Option<u64>,
) -> Option<String> {
    if !planned.heap_omitted || planned.implied_latest || toolbox.stateless {
        return None;
    }
    let session = planned.logical_session.as_ref()?;
    let earlier = match logged_at {
        Some(index) => index,
        None => match toolbox.meta.last_log_entry(context.tenant, session).await {
            Ok(last) => last.map_or(0, |entry| entry.index + 1),
            Err(e) => {
                tracing::warn!(error = %e, "could not read the session log to check for a fresh start");
                return None;
            }
        },
    };
    if earlier == 0 {
        return None;
    }
    Some(format!(
        "this run started from a fresh isolate because heap was omitted, although session {:?} has {} \
         earlier run(s): nothing they defined exists here. Pass heap: \"latest\" (or a heap key) to \
         continue the session's state; pass heap: \"\" to start fresh on purpose without this warning",
        session.as_str(),
        earlier
    ))
}

/// The tool error for a `heap` argument that is a run's execution id
/// rather than a heap key (a model reading the session log or a record
/// may pass one): what that run's heap is, or, for a run whose heap was
/// superseded (saves coalesce), the stored heaps nearest it. `None` when
/// it names no run of this caller.
pub(super) async fn heap_given_as_run(
    toolbox: &Toolbox,
    context: CallContext<'_>,
    heap: &str,
) -> Option<String> {
    let id = uuid::Uuid::parse_str(heap.trim()).ok()?;
    let record = match toolbox.record_of_run(context.tenant, id).await {
        Ok(record) => record?,
        Err(RunRecordError::NotStored(why)) => {
            return Some(format!(
                "heap \"{heap}\" is the execution id of a run whose heap was not stored ({why}); \
                 pass a heap key (64 hex characters) from list_session_snapshots, or heap: \"\" to \
                 start fresh"
            ));
        }
        Err(RunRecordError::Unreadable(_)) => return None,
    };
    if let Some(superseded) = superseded_of(&record) {
        let before = match &superseded.heap_before {
            Some(key) => format!("heap: \"{key}\" for the state before it"),
            None => "heap: \"\" for the fresh isolate it began from".to_owned(),
        };
        return Some(format!(
            "heap \"{heap}\" names run {id}, whose heap was never stored: saves coalesce, and run \
             {} continued it and completed before its snapshot began. The nearest stored heaps are \
             {} before it and {} after it, which holds its effects (and that run's). Pass heap: \
             \"{}\" to continue with its effects, or {before}",
            superseded.by_execution_id,
            superseded
                .heap_before
                .as_ref()
                .map_or("none (a fresh isolate)", HeapKey::as_str),
            superseded.heap_after,
            superseded.heap_after,
        ));
    }
    Some(
        match record.outcome.get("heap").and_then(|key| key.as_str()) {
            Some(key) => format!(
                "heap \"{heap}\" is the execution id of a run, not a heap key: that run's heap is \
             {key}; pass heap: \"{key}\""
            ),
            None => format!(
                "heap \"{heap}\" is the execution id of a run that stored no heap (get_execution says \
             why); pass a heap key (64 hex characters) from list_session_snapshots, or heap: \"\" \
             to start fresh"
            ),
        },
    )
}
