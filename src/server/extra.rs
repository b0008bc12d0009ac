//! Prompts and resources a build adds beside the server's own, listed and
//! read through the same methods (`prompts/list`, `prompts/get`,
//! `resources/list`, `resources/templates/list`, `resources/read`) as
//! `resume_session` and the session logs. Only the MCP conformance suite's
//! fixture server (`examples/conformance_fixtures/`) installs any, as it
//! installs its tools through `tools::extra`.

use std::sync::OnceLock;

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
pub trait ExtraContent: Send + Sync + 'static {
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

static INSTALLED: OnceLock<Box<dyn ExtraContent>> = OnceLock::new();

/// Adds `content` to every server of this process, once, before it
/// serves. A second installation is refused (`Err` gives it back).
pub fn install(content: Box<dyn ExtraContent>) -> Result<(), Box<dyn ExtraContent>> {
    INSTALLED.set(content)
}

/// The installed prompts and resources, if any.
pub(super) fn installed() -> Option<&'static dyn ExtraContent> {
    INSTALLED.get().map(|content| &**content)
}
