//! The engine's part of the configuration, and the limits derived from
//! it (the heap limit's maximum, the ready heaps' bound).

use super::ConfigError;
use super::vars::{Least, Vars};
use crate::units::MIB;

/// The engine's part of the configuration.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    /// Engine worker processes, the runners every run executes in (`serve
    /// --engine-workers`, which reads `MCP_V8_ENGINE_WORKERS`; under Lambda
    /// the variable itself): one for each invocation Lambda may hand the
    /// instance at once (`AWS_LAMBDA_MAX_CONCURRENCY`, 1 on standard
    /// Lambda), two per core (at least four) under `serve`. 0 until the
    /// command line decides outside Lambda; an engine built from it then
    /// gets `serve`'s count (`compose::engine_config`), never V8 in process.
    pub workers: usize,
    /// `MCP_V8_ENGINE_WORKERS` as the operator set it, read here and nowhere
    /// else: `serve --engine-workers` wins over it.
    pub workers_set: Option<usize>,
    /// `MCP_V8_TENANT_RUNS`: runs of one authenticated tenant at once;
    /// `None`: half the workers, rounded up.
    pub tenant_runs: Option<usize>,
    /// `MCP_V8_QUEUE_WAIT_MS`: how long a run waits for a free worker (or
    /// its tenant's share) before it is refused as busy.
    pub queue_wait_ms: u64,
    /// `AWS_LAMBDA_FUNCTION_MEMORY_SIZE` under Lambda: the function's memory
    /// in MB, which bounds the heap limit a run may ask for.
    pub function_memory_mb: Option<usize>,
    /// `AWS_LAMBDA_MAX_CONCURRENCY`: invocations Lambda hands this instance
    /// at once (Lambda Managed Instances); 1 on standard Lambda and outside.
    pub lambda_max_concurrency: usize,
    /// `MCP_V8_RECORD_MAX_MB`: most MiB of a run's console output, and
    /// again of its result, that its record keeps (the answer shows what
    /// fits its budget and links the rest); past it, the ends of the output
    /// and the start of the result, with a marker naming the whole size.
    pub record_max_mb: usize,
    /// `MCP_V8_MAX_RESULT_BYTES`: longest `result` a run returns (by
    /// default `MCP_V8_RECORD_MAX_MB`); longer ones are cut with a marker.
    pub max_result_bytes: usize,
    /// `MCP_V8_ANSWER_BUDGET_KB`: most KiB of JSON a run's answer gives its
    /// text, and again its `structuredContent`; the rest is kept with the
    /// run and linked.
    pub answer_budget_kb: usize,
    /// `MCP_V8_READY_HEAPS_MB` as set: most memory of heaps engine workers
    /// keep restored for the next call ([`Self::ready_heaps_mb`]).
    pub ready_heaps_mb_set: Option<usize>,
    /// `MCP_V8_ANSWER_BEFORE_SAVE_MB`: a `latest` run in a logical session
    /// whose heap holds at least this much is answered before its heap is
    /// stored (4 under `serve`, 0 under Lambda, where the function's
    /// post-response phase stores it); `None` (`off`): every answer waits
    /// for its save (docs/protocol.md, "Answer first, save after").
    pub answer_before_save_mb: Option<usize>,
    /// `MCP_V8_UNSAVED_HEAPS`: most heaps of one logical session answered
    /// for and still being stored; a `latest` call past it waits for the
    /// oldest (4).
    pub unsaved_heaps: usize,
    /// `MCP_V8_UNSAVED_HEAPS_MB`: most MiB of V8 heap of every heap this
    /// process is still storing; a `latest` call past it waits (1024).
    pub unsaved_heaps_mb: usize,
    /// `MCP_V8_MAX_HEAP_SNAPSHOT_MB`: largest snapshot stored or restored.
    pub max_heap_snapshot_mb: usize,
    /// `MCP_V8_PROCESS_ENV`: `process.env` of runs, a JSON object of
    /// strings; empty by default. Code can read and print every value, so
    /// it is no place for secrets.
    pub process_env: std::collections::BTreeMap<String, String>,
}

impl EngineSettings {
    pub(super) fn from_vars<F: Fn(&str) -> Option<String>>(
        vars: &Vars<F>,
        under_lambda: bool,
    ) -> Result<Self, ConfigError> {
        let workers_set = vars
            .get("MCP_V8_ENGINE_WORKERS")
            .is_some()
            .then(|| vars.number("MCP_V8_ENGINE_WORKERS", 1, Least::One))
            .transpose()
            .map_err(|e| ConfigError {
                reason: format!(
                    "{}: every run executes in an engine worker process, so that code that ends \
                     V8's process ends only its worker",
                    e.reason
                )
                .into(),
                ..e
            })?;
        let (lambda_max_concurrency, workers) =
            vars.lambda_concurrency(under_lambda, workers_set)?;
        Ok(Self {
            workers,
            workers_set,
            tenant_runs: vars
                .get("MCP_V8_TENANT_RUNS")
                .is_some()
                .then(|| vars.number("MCP_V8_TENANT_RUNS", 1, Least::One))
                .transpose()?,
            queue_wait_ms: vars.number("MCP_V8_QUEUE_WAIT_MS", 10_000, Least::One)?,
            function_memory_mb: if under_lambda {
                Some(vars.number("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", 0, Least::Zero)?)
                    .filter(|&mb| mb > 0)
            } else {
                None
            },
            lambda_max_concurrency,
            record_max_mb: vars.number("MCP_V8_RECORD_MAX_MB", 32, Least::One)?,
            max_result_bytes: vars.number(
                "MCP_V8_MAX_RESULT_BYTES",
                vars.number("MCP_V8_RECORD_MAX_MB", 32, Least::One)? * MIB,
                Least::One,
            )?,
            answer_budget_kb: vars.answer_budget_kb()?,
            ready_heaps_mb_set: vars
                .get("MCP_V8_READY_HEAPS_MB")
                .is_some()
                .then(|| vars.number("MCP_V8_READY_HEAPS_MB", 0, Least::Zero))
                .transpose()?,
            answer_before_save_mb: match vars.non_empty("MCP_V8_ANSWER_BEFORE_SAVE_MB") {
                Some(off) if off.eq_ignore_ascii_case("off") => None,
                // Under Lambda the save is as costly as anywhere but the
                // answer waits for S3 and DynamoDB, so every `latest` run
                // answers first (docs/protocol.md, "Answer first, save after").
                _ => Some(vars.number(
                    "MCP_V8_ANSWER_BEFORE_SAVE_MB",
                    if under_lambda { 0 } else { 4 },
                    Least::Zero,
                )?),
            },
            unsaved_heaps: vars.number("MCP_V8_UNSAVED_HEAPS", 4, Least::One)?,
            unsaved_heaps_mb: vars.number("MCP_V8_UNSAVED_HEAPS_MB", 1024, Least::One)?,
            max_heap_snapshot_mb: vars.number("MCP_V8_MAX_HEAP_SNAPSHOT_MB", 256, Least::One)?,
            process_env: match vars.non_empty("MCP_V8_PROCESS_ENV") {
                None => Default::default(),
                Some(json) => serde_json::from_str(&json).map_err(|e| ConfigError {
                    name: "MCP_V8_PROCESS_ENV",
                    value: "(not shown)".into(),
                    // serde's message may quote a value: only where it failed.
                    reason: format!(
                        "not a JSON object of strings (line {}, column {}), like {{\"STAGE\": \"dev\"}}",
                        e.line(),
                        e.column()
                    )
                    .into(),
                })?,
            },
        })
    }

    /// Most memory of heaps engine workers keep restored for the call that
    /// continues them, in MiB: `MCP_V8_READY_HEAPS_MB`, else 512 under
    /// `serve` and, under Lambda, the function's memory less the process's
    /// own (200 MB, as in [`Self::max_heap_limit_mb`]) and what the runs it
    /// serves at once may take besides (a full heap and as much in
    /// `ArrayBuffer`s each): 550 MiB in a 1024 MB function. A worker drops
    /// its ready heap before it runs another session's code, so a ready heap
    /// and a run of another session never hold memory at once in a worker.
    pub fn ready_heaps_mb(&self) -> usize {
        match (self.ready_heaps_mb_set, self.function_memory_mb) {
            (Some(mb), _) => mb,
            (None, Some(memory)) => memory.saturating_sub(
                200 + 2 * self.max_heap_limit_mb() * self.lambda_max_concurrency.max(1),
            ),
            (None, None) => 512,
        }
    }

    /// The largest heap limit a run may ask for, in MiB: the engine's
    /// [`MAX_HEAP_LIMIT_MB`](crate::engine::MAX_HEAP_LIMIT_MB),
    /// or less where the function's memory must also hold the rest of the
    /// process (about 200 MB: V8, the allocator's caches, the runtime) and,
    /// for each run the instance serves at once, a full heap and as much in
    /// `ArrayBuffer`s (the run's budget outside the heap), the snapshot V8
    /// serialises from both and the copy that is framed, hashed and stored:
    /// (memory − 200) / (6 × concurrent runs), at least 16.
    pub fn max_heap_limit_mb(&self) -> usize {
        const ENGINE_MAX_MB: usize = crate::engine::MAX_HEAP_LIMIT_MB;
        const PER_HEAP_MB: usize = 6;
        match self.function_memory_mb {
            Some(memory) => (memory.saturating_sub(200)
                / (PER_HEAP_MB * self.lambda_max_concurrency.max(1)))
            .clamp(16, ENGINE_MAX_MB),
            None => ENGINE_MAX_MB,
        }
    }
}

/// The engine's reads that are more than a number or a flag.
impl<F: Fn(&str) -> Option<String>> Vars<F> {
    /// `MCP_V8_ANSWER_BUDGET_KB`: 32 by default; at least 4 (the outcome's
    /// own fields and the notes of what was cut need that), at most 1024
    /// (text and `structuredContent`, escaped, must fit one response).
    pub(super) fn answer_budget_kb(&self) -> Result<usize, ConfigError> {
        let kb = self.number("MCP_V8_ANSWER_BUDGET_KB", 32usize, Least::One)?;
        if (4..=1024).contains(&kb) {
            return Ok(kb);
        }
        Err(ConfigError {
            name: "MCP_V8_ANSWER_BUDGET_KB",
            value: kb.to_string(),
            reason: "expected KiB from 4 to 1024".into(),
        })
    }

    /// `(AWS_LAMBDA_MAX_CONCURRENCY, engine workers)` under Lambda, where
    /// several invocations at once get workers unless `workers_set` (the
    /// variable, as the operator set it) says otherwise; `(1, 0)` elsewhere.
    pub(super) fn lambda_concurrency(
        &self,
        under_lambda: bool,
        workers_set: Option<usize>,
    ) -> Result<(usize, usize), ConfigError> {
        if !under_lambda {
            return Ok((1, 0));
        }
        let concurrency = self.number("AWS_LAMBDA_MAX_CONCURRENCY", 1, Least::One)?;
        // A runner for each invocation Lambda may hand the instance at once,
        // which the heap bound already budgets memory for (max_heap_limit_mb).
        Ok((concurrency, workers_set.unwrap_or(concurrency)))
    }
}
