//! The wire shapes of the Skills extension `io.modelcontextprotocol/skills`
//! (SEP-2640): `skills/list`, `skills/get` and `resources/directory/read`,
//! and the skill entry both skill methods answer with.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::mcp::{CacheHints, Resource};

/// The extension's identifier, in capabilities.
pub const EXTENSION: &str = "io.modelcontextprotocol/skills";

/// The URI scheme skills are served under.
pub const SCHEME: &str = "skill://";

/// The media type of a directory resource.
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";

/// The extension's methods.
pub mod method {
    /// A page of the skills served.
    pub const LIST: &str = "skills/list";
    /// One skill's entry, by the URI of its `SKILL.md`.
    pub const GET: &str = "skills/get";
    /// The direct children of a directory resource (`directoryRead`).
    pub const READ_DIRECTORY: &str = "resources/directory/read";
}

/// Whether `rpc_method` is one of the extension's.
pub fn is_skills_method(rpc_method: &str) -> bool {
    matches!(
        rpc_method,
        method::LIST | method::GET | method::READ_DIRECTORY
    )
}

/// A file of a skill, with the digest and size of the bytes served.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillResource {
    /// Its resource URI, readable with `resources/read`.
    pub uri: String,
    /// `sha256:` and 64 lowercase hex digits of its raw bytes.
    pub digest: String,
    /// Its length in bytes.
    pub size: u64,
}

/// One skill: its `SKILL.md`, frontmatter and every file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillEntry {
    /// The URI of its `SKILL.md`.
    pub uri: String,
    /// `SKILL.md`'s YAML frontmatter as JSON, every field the author wrote.
    pub frontmatter: Map<String, Value>,
    /// Every file, `SKILL.md` first.
    pub resources: Vec<SkillResource>,
}

/// Hints and `resultType` the extension requires on its results, given in
/// the session era by the result itself (2026-07-28's envelope adds them
/// there).
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEraHints {
    /// Always `complete`.
    pub result_type: &'static str,
    /// How long the answer may be reused.
    #[serde(flatten)]
    pub cache: CacheHints,
}

/// `skills/list` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSkillsResult {
    /// One page of entries, none split.
    pub skills: Vec<SkillEntry>,
    /// Present when more follow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// In the session era only.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub hints: Option<SessionEraHints>,
}

/// `skills/get` params.
#[derive(Debug, Clone, Deserialize)]
pub struct GetSkillParams {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
}

/// `skills/get` result.
#[derive(Debug, Clone, Serialize)]
pub struct GetSkillResult {
    /// The entry, as `skills/list` gives it.
    pub skill: SkillEntry,
    /// In the session era only.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub hints: Option<SessionEraHints>,
}

/// `resources/directory/read` params.
#[derive(Debug, Clone, Deserialize)]
pub struct ReadDirectoryParams {
    /// The directory resource.
    pub uri: String,
    /// Where the previous page's `nextCursor` said to go on.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// `resources/directory/read` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadDirectoryResult {
    /// The direct children: files, and directories as `inode/directory`.
    pub resources: Vec<Resource>,
    /// Present when more follow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}
