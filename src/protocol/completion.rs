//! `completion/complete` on the wire (both eras): what a host asks values
//! for, a prompt's argument or a resource template's variable, and the
//! values.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `completion/complete` params.
#[derive(Debug, Clone, Deserialize)]
pub struct CompleteParams {
    /// What the argument belongs to.
    #[serde(rename = "ref")]
    pub reference: CompleteReference,
    /// The argument and what has been typed of it.
    pub argument: CompleteArgument,
    /// Arguments already chosen.
    #[serde(default)]
    pub context: Option<CompleteContext>,
}

/// What a completed argument belongs to.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type")]
pub enum CompleteReference {
    /// An argument of a prompt.
    #[serde(rename = "ref/prompt")]
    Prompt {
        /// The prompt's name.
        name: String,
    },
    /// A variable of a resource template.
    #[serde(rename = "ref/resource")]
    Resource {
        /// The template (or a resource's URI).
        uri: String,
    },
}

/// The argument being completed.
#[derive(Debug, Clone, Deserialize)]
pub struct CompleteArgument {
    /// Its name.
    pub name: String,
    /// What has been typed of it.
    pub value: String,
}

/// The other arguments of a completion.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct CompleteContext {
    /// Those already chosen, by name.
    #[serde(default)]
    pub arguments: BTreeMap<String, String>,
}

/// `completion/complete` result.
#[derive(Debug, Clone, Serialize)]
pub struct CompleteResult {
    /// The values.
    pub completion: Completion,
}

/// Values for an argument, at most 100.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// The values, best first.
    pub values: Vec<String>,
    /// How many values there are in all.
    pub total: usize,
    /// More values exist than `values` holds.
    pub has_more: bool,
}
