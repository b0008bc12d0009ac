//! The Skills extension's methods (`skills/list`, `skills/get`,
//! `resources/directory/read`) over the server's skill catalog. Skill
//! files themselves are read through `resources/read`.

use serde_json::value::RawValue;

use super::answer::{MethodError, MethodResult, PUBLIC_CACHE, list_params, params_of};
use crate::protocol::jsonrpc::code;
use crate::protocol::skills::{
    GetSkillParams, GetSkillResult, ListSkillsResult, ReadDirectoryParams, ReadDirectoryResult,
    SessionEraHints, method,
};
use crate::skills::Skills;

/// Entries per `skills/list` page.
const SKILLS_PAGE: usize = 50;

/// Children per `resources/directory/read` page.
const CHILDREN_PAGE: usize = 100;

/// The answer to one of the extension's methods; `session_era` results
/// carry the hints that 2026-07-28's envelope adds to the others.
pub(super) fn handle(
    skills: &Skills,
    rpc_method: &str,
    params: Option<&RawValue>,
    session_era: bool,
) -> Result<MethodResult, MethodError> {
    let hints = session_era.then_some(SessionEraHints {
        result_type: "complete",
        cache: PUBLIC_CACHE,
    });
    match rpc_method {
        method::LIST => {
            let cursor = list_params(params)?.cursor;
            let (from, next) = page(cursor.as_deref(), skills.all().len(), SKILLS_PAGE)?;
            let end = next.unwrap_or(skills.all().len());
            Ok(MethodResult::Skills(ListSkillsResult {
                skills: skills.all()[from..end].iter().map(|s| s.entry()).collect(),
                next_cursor: next.map(|n| n.to_string()),
                hints,
            }))
        }
        method::GET => {
            let GetSkillParams { uri } = params_of(params)?;
            let skill = skills.get(&uri).ok_or_else(|| {
                MethodError::new(
                    code::INVALID_PARAMS,
                    format!(
                        "No skill is served at {uri}: a skill is named by the URI of its SKILL.md, \
                         and skills/list lists the skills here"
                    ),
                )
            })?;
            Ok(MethodResult::Skill(GetSkillResult {
                skill: skill.entry(),
                hints,
            }))
        }
        _ => {
            let ReadDirectoryParams { uri, cursor } = params_of(params)?;
            let Some(children) = skills.directory(&uri) else {
                let why = if skills.read(&uri).is_some() {
                    format!(
                        "{uri} is not a directory resource but a file: read it with resources/read"
                    )
                } else {
                    format!("No directory resource is served at {uri}")
                };
                return Err(MethodError::new(code::INVALID_PARAMS, why));
            };
            let (from, next) = page(cursor.as_deref(), children.len(), CHILDREN_PAGE)?;
            let end = next.unwrap_or(children.len());
            Ok(MethodResult::Directory(ReadDirectoryResult {
                resources: children[from..end].to_vec(),
                next_cursor: next.map(|n| n.to_string()),
            }))
        }
    }
}

/// Where a page of `len` items starting at `cursor` (an index this server
/// gave as `nextCursor`) begins, and the next page's start, if any.
fn page(
    cursor: Option<&str>,
    len: usize,
    size: usize,
) -> Result<(usize, Option<usize>), MethodError> {
    let from = match cursor {
        None => 0,
        Some(cursor) => cursor
            .parse::<usize>()
            .ok()
            .filter(|from| *from <= len)
            .ok_or_else(|| {
                MethodError::new(
                    code::INVALID_PARAMS,
                    format!("invalid cursor {cursor:?}: pass the nextCursor of the previous page"),
                )
            })?,
    };
    let next = from + size;
    Ok((from, (next < len).then_some(next)))
}
