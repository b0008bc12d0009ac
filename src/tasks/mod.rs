//! Runs that outlive their request: MCP tasks. A task is a record in a
//! [`TaskStore`] (DynamoDB on AWS, redb locally), scoped by tenant like
//! every other record, that any instance can read, cancel and finish. Its
//! run goes on in this process ([`Tasks::start`]) or, on Lambda, in an
//! asynchronous invocation of the same function that claims it
//! ([`Tasks::run_handed`]). docs/protocol.md, "Tasks", gives both wire
//! forms; `server` maps them onto this module.

mod book;
pub mod handoff;
pub mod policy;
mod record;
mod runner;
mod store;

pub use book::{Changed, InputAnswered, RefusedResponse, SILENT_BEATS, TaskBook, UNCLAIMED_BEATS};
pub use handoff::LambdaHandoff;
pub use policy::TaskSupport;
pub use record::{TaskChange, TaskInput, TaskOutcome, TaskRecord, TaskRequest, TaskStatus};
pub use runner::{
    CANCEL_POLL, Execute, Executed, HEARTBEAT, Handoff, Started, TaskError, TaskSettings, Tasks,
};
pub use store::{TaskStore, TaskStoreError, Versioned};
