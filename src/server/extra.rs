//! Prompts and resources a build adds beside the server's own, listed and
//! read through the same methods (`prompts/list`, `prompts/get`,
//! `resources/list`, `resources/templates/list`, `resources/read`) as
//! `resume_session` and the session logs. The composition root gives a
//! server its added content (`compose::Additions`); only the MCP
//! conformance suite's fixture server (`examples/conformance_fixtures/`)
//! adds any, as it adds tools to the router.

use crate::protocol::mcp::{
    GetPromptParams, GetPromptResult, Prompt, ReadResourceResult, Resource, ResourceTemplate,
};

/// Prompts and resources added to a server.
///
/// # Contract
/// - Their names and URIs are not the server's own, which win.
/// - [`ExtraContent::get_prompt`] answers `Some` exactly for the prompts
///   [`ExtraContent::prompts`] lists; [`ExtraContent::read`] answers `Some`
///   for the URIs of [`ExtraContent::resources`] and of
///   [`ExtraContent::templates`], and `None` for any other URI.
/// - What they answer is the same for every caller: they are not scoped
///   by tenant.
pub trait ExtraContent: Send + Sync + std::fmt::Debug + 'static {
    /// Their `prompts/list` entries, after the server's own.
    fn prompts(&self) -> Vec<Prompt>;
    /// `prompts/get` of one of them: `Err` is an invalid-params message.
    fn get_prompt(&self, params: &GetPromptParams) -> Option<Result<GetPromptResult, String>>;
    /// Their resources, listed on the first page of `resources/list`.
    fn resources(&self) -> Vec<Resource>;
    /// Their `resources/templates/list` entries, after the server's own.
    fn templates(&self) -> Vec<ResourceTemplate>;
    /// `resources/read` of `uri`, when it is one of theirs.
    fn read(&self, uri: &str) -> Option<ReadResourceResult>;
}
