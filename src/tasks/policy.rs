//! When a `tools/call` becomes a task: one pure decision from the call's
//! protocol era, the tool's task support, whether the host lets a run go
//! on after its answer, and the tool's own estimate of how long the call
//! may take. `server/task_methods.rs` turns the decision into the wire's answer
//! and the tool reads its own arguments (docs/protocol.md, "Tasks").

use std::time::Duration;

pub use crate::protocol::tasks::TaskSupport;

/// What the call's protocol version says about tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2025-11-25: the client asks for a task (`params.task`).
    ClientAsks {
        /// The call carries `params.task`.
        asked: bool,
    },
    /// 2026-07-28: the server decides, for a request that declares the
    /// tasks extension.
    ServerDecides {
        /// The request declares the extension.
        declared: bool,
    },
    /// Any other version: no tasks.
    Without,
}

/// Everything the decision depends on.
#[derive(Debug, Clone, Copy)]
pub struct CallFacts {
    /// The protocol era and what the client said in it.
    pub era: Era,
    /// The tool's task support.
    pub support: TaskSupport,
    /// Runs cannot go on past their answer here (Lambda hands them to
    /// another invocation), so the choice is made before a run starts.
    pub hands_off: bool,
    /// How long the tool says the call may take (run_js: the timeout it
    /// asks for), when it says.
    pub estimate: Option<Duration>,
    /// Where runs are handed off, one estimated longer than this becomes a
    /// task before it starts.
    pub handoff_above: Duration,
}

/// What becomes of the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Run and answer it as without tasks.
    Direct,
    /// Make it a task at once; its run starts apart from the request.
    TaskNow,
    /// Start it, answer directly if it ends soon, else make it a task.
    StartThenTask,
    /// Refuse the call: the client cannot take what the tool needs.
    Refuse(Refusal),
}

/// Why a call is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The tool runs only as a task and the request did not declare the
    /// tasks extension.
    ExtensionNeeded,
    /// The tool runs only as a task and the call did not ask for one.
    TaskParamNeeded,
    /// The call asked for a task and the tool answers at once.
    CannotBeTask,
}

/// The decision for `call`.
pub fn decide(call: &CallFacts) -> Decision {
    let always = matches!(call.support, TaskSupport::Always | TaskSupport::Required);
    match (call.era, call.support) {
        (Era::Without, _) => Decision::Direct,
        (Era::ClientAsks { asked: false }, TaskSupport::Required) => {
            Decision::Refuse(Refusal::TaskParamNeeded)
        }
        (Era::ClientAsks { asked: false }, _) => Decision::Direct,
        (Era::ClientAsks { asked: true }, TaskSupport::Forbidden) => {
            Decision::Refuse(Refusal::CannotBeTask)
        }
        (Era::ClientAsks { asked: true }, _) => Decision::TaskNow,
        (Era::ServerDecides { declared: false }, TaskSupport::Required) => {
            Decision::Refuse(Refusal::ExtensionNeeded)
        }
        (Era::ServerDecides { declared: false }, _) => Decision::Direct,
        (Era::ServerDecides { declared: true }, TaskSupport::Forbidden) => Decision::Direct,
        // Where a run cannot outlive its answer, the choice is made before
        // it starts: by the tool's support or its own estimate.
        (Era::ServerDecides { declared: true }, _) if call.hands_off => {
            let long = call.estimate.is_some_and(|e| e > call.handoff_above);
            if always || long {
                Decision::TaskNow
            } else {
                Decision::Direct
            }
        }
        (Era::ServerDecides { declared: true }, _) if always => Decision::TaskNow,
        (Era::ServerDecides { declared: true }, _) => Decision::StartThenTask,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ABOVE: Duration = Duration::from_secs(60);

    fn call(era: Era, support: TaskSupport, hands_off: bool, estimate: Option<u64>) -> CallFacts {
        CallFacts {
            era,
            support,
            hands_off,
            estimate: estimate.map(Duration::from_secs),
            handoff_above: ABOVE,
        }
    }

    /// Every era, support and host, with a short and a long estimate.
    #[test]
    fn the_decision_table() {
        use Decision::*;
        use TaskSupport::*;
        let asks = Era::ClientAsks { asked: true };
        let asks_not = Era::ClientAsks { asked: false };
        let declared = Era::ServerDecides { declared: true };
        let undeclared = Era::ServerDecides { declared: false };
        #[rustfmt::skip]
        let table: &[(Era, TaskSupport, bool, Option<u64>, Decision)] = &[
            // era,        support,   hands off, estimate,  decision
            (Era::Without, Required,  false, None,      Direct),
            (Era::Without, Optional,  true,  Some(600), Direct),
            (asks_not,     Required,  false, None,      Refuse(Refusal::TaskParamNeeded)),
            (asks_not,     Optional,  false, Some(600), Direct),
            (asks_not,     Forbidden, false, None,      Direct),
            (asks,         Forbidden, false, None,      Refuse(Refusal::CannotBeTask)),
            (asks,         Optional,  false, Some(1),   TaskNow),
            (asks,         Always,    true,  None,      TaskNow),
            (asks,         Required,  false, None,      TaskNow),
            (undeclared,   Required,  false, None,      Refuse(Refusal::ExtensionNeeded)),
            (undeclared,   Always,    false, None,      Direct),
            (undeclared,   Optional,  true,  Some(600), Direct),
            (declared,     Forbidden, false, None,      Direct),
            (declared,     Forbidden, true,  Some(600), Direct),
            (declared,     Optional,  false, None,      StartThenTask),
            (declared,     Optional,  false, Some(600), StartThenTask),
            (declared,     Always,    false, None,      TaskNow),
            (declared,     Required,  false, None,      TaskNow),
            (declared,     Optional,  true,  None,      Direct),
            (declared,     Optional,  true,  Some(60),  Direct),
            (declared,     Optional,  true,  Some(61),  TaskNow),
            (declared,     Always,    true,  None,      TaskNow),
            (declared,     Required,  true,  Some(1),   TaskNow),
        ];
        for &(era, support, hands_off, estimate, expected) in table {
            assert_eq!(
                decide(&call(era, support, hands_off, estimate)),
                expected,
                "{era:?}, {support:?}, hands off {hands_off}, estimate {estimate:?}"
            );
        }
    }
}
