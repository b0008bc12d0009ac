//! Prompts: listed and got.

use std::collections::BTreeMap;

use super::tools::Content;
use serde::{Deserialize, Serialize};

/// A prompt argument.
#[derive(Debug, Clone, Serialize)]
pub struct PromptArgument {
    /// As passed in `prompts/get`.
    pub name: &'static str,
    /// For people and models.
    pub description: &'static str,
    /// Whether `prompts/get` needs it.
    pub required: bool,
}

/// A prompt in `prompts/list`.
#[derive(Debug, Clone, Serialize)]
pub struct Prompt {
    /// For `prompts/get`.
    pub name: &'static str,
    /// For people.
    pub title: &'static str,
    /// What it does.
    pub description: &'static str,
    /// What it takes.
    pub arguments: Vec<PromptArgument>,
}

/// `prompts/list` result.
#[derive(Debug, Clone, Serialize)]
pub struct ListPromptsResult {
    /// All of them.
    pub prompts: Vec<Prompt>,
}

/// `prompts/get` params.
#[derive(Debug, Clone, Deserialize)]
pub struct GetPromptParams {
    /// Which prompt.
    pub name: String,
    /// Its arguments.
    #[serde(default)]
    pub arguments: BTreeMap<String, String>,
}

/// A message of a prompt.
#[derive(Debug, Clone, Serialize)]
pub struct PromptMessage {
    /// `user`.
    pub role: &'static str,
    /// What it says: text, an image, audio or an embedded resource.
    pub content: Content,
}

/// `prompts/get` result.
#[derive(Debug, Clone, Serialize)]
pub struct GetPromptResult {
    /// What the prompt is for.
    pub description: String,
    /// The messages to send.
    pub messages: Vec<PromptMessage>,
}
