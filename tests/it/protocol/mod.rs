//! MCP on the wire: both eras over HTTP and stdio, auth, resources, progress, logging, tasks, skills, MCP Apps and the tools' answers.

pub(crate) mod answers;
pub(crate) mod apps;
pub(crate) mod auth;
pub(crate) mod configuration;
pub(crate) mod connections;
pub(crate) mod elicitation;
pub(crate) mod http;
pub(crate) mod jwt;
pub(crate) mod logging;
pub(crate) mod progress;
pub(crate) mod resources;
pub(crate) mod sessionless;
pub(crate) mod skills;
pub(crate) mod stdio;
pub(crate) mod task_input;
pub(crate) mod tasks;
pub(crate) mod tools;
