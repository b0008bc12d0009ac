//! Resources: listed, templated and read.

use serde::{Deserialize, Serialize};

use super::tools::ResourceContents;

/// A resource in `resources/list`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// Its address, for `resources/read`.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// For people.
    pub title: String,
    /// What it holds.
    pub description: String,
    /// Of its contents.
    pub mime_type: &'static str,
}

/// `resources/list` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourcesResult {
    /// One page.
    pub resources: Vec<Resource>,
    /// Present when more follow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// A resource template in `resources/templates/list`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// RFC 6570 level 1 template.
    pub uri_template: &'static str,
    /// Programmatic name.
    pub name: &'static str,
    /// For people.
    pub title: &'static str,
    /// What its resources hold.
    pub description: &'static str,
    /// Of their contents.
    pub mime_type: &'static str,
}

/// `resources/templates/list` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourceTemplatesResult {
    /// All of them: there are few.
    pub resource_templates: Vec<ResourceTemplate>,
}

/// `resources/read` params.
#[derive(Debug, Clone, Deserialize)]
pub struct ReadResourceParams {
    /// The resource.
    pub uri: String,
}

/// `resources/read` result.
#[derive(Debug, Clone, Serialize)]
pub struct ReadResourceResult {
    /// Never empty.
    pub contents: Vec<ResourceContents>,
}
