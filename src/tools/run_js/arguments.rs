//! run_js's arguments: its own and its capabilities', decoded with the
//! argument a mistake is in, and the time a run may take.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::engine::Language;
use crate::meta::Tags;
use crate::session::LogicalSession;

/// The timeout a call's `arguments` ask for, when they name a valid one
/// (for the task policy, before the call is decoded).
pub(crate) fn asked_duration(arguments: &serde_json::value::RawValue) -> Option<Duration> {
    #[derive(serde::Deserialize)]
    struct Asked {
        #[serde(default)]
        execution_timeout_secs: Option<f64>,
    }
    let secs = serde_json::from_str::<Asked>(arguments.get())
        .ok()?
        .execution_timeout_secs?;
    timeout(secs).ok()
}

/// `execution_timeout_secs` as a duration, or the message saying what it
/// must be. Whether it is within the deployment's limits, and what the
/// host's deadline leaves of it, the engine decides (`engine/plan.rs`).
pub(super) fn timeout(secs: f64) -> Result<Duration, String> {
    if secs.is_finite() && secs > 0.0 {
        // Past what a duration holds is past every maximum.
        Ok(Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX))
    } else {
        Err(format!(
            "execution_timeout_secs must be a positive number of seconds, got {secs}"
        ))
    }
}

/// The arguments of `run_js`; its input schema is derived from them, and
/// `describe` fills in the limits in force and drops what a stateless
/// server does not offer.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    /// JavaScript or TypeScript source. The value of the last expression is the result; a promise is awaited. Top-level await works, and top-level declarations (var, let, const, function, class) persist as they do without it.
    pub(super) code: String,
    /// Heap to start from: a `heap` returned by one of your earlier runs (another caller's heap is not found), or "latest" for the last heap of the logical session (the session argument, else the X-MCP-Session-Id header), or "" for a fresh isolate.
    #[serde(default)]
    #[schemars(regex(pattern = "^([0-9a-f]{64}|latest|)$"))]
    pub(super) heap: Option<String>,
    /// Tags to set on the heap this run produces (replaces its tags).
    #[serde(default)]
    pub(super) tags: Option<Tags>,
    /// Logical session whose log records this run. Overrides the X-MCP-Session-Id header; the way to keep a session log without headers (protocol 2026-07-28).
    #[serde(default)]
    #[schemars(length(min = 1, max = LogicalSession::MAX_LEN))]
    pub(super) session: Option<String>,
    /// Timeout in seconds.
    #[serde(default)]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub(super) execution_timeout_secs: Option<f64>,
    /// Heap limit in MiB.
    #[serde(default)]
    #[schemars(range(min = crate::engine::MIN_HEAP_LIMIT_MB))]
    pub(super) heap_memory_max_mb: Option<usize>,
    /// Default auto: TypeScript syntax is detected and its types stripped (no type checking).
    #[serde(default)]
    pub(super) language: Language,
}

/// The arguments of a `run_js` call: its own, and those its run's
/// capabilities take (`files`), which the engine checks.
#[derive(Debug, Clone)]
pub(crate) struct RunJsCall {
    pub(super) args: Args,
    pub(super) capabilities: serde_json::Map<String, serde_json::Value>,
}

impl<'de> Deserialize<'de> for RunJsCall {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let mut all = serde_json::Map::<String, serde_json::Value>::deserialize(deserializer)?;
        let capabilities = crate::engine::call_arguments()
            .filter_map(|argument| all.remove_entry(argument.name))
            .collect();
        // The argument a mistake is in, for the message (a Value loses it).
        let args = serde_path_to_error::deserialize(serde_json::Value::Object(all))
            .map_err(|e| D::Error::custom(crate::tools::args::at_argument(e.path(), e.inner())))?;
        Ok(Self { args, capabilities })
    }
}
