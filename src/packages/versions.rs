//! Which version of a dependency an install takes: the range read as npm
//! reads it, the newest matching version picked from the registry, and
//! where Node would find the dependency already installed.

use std::collections::HashMap;

use nodejs_semver::{Range, Version};

use super::InstallError;
use super::registry::{Manifest, Packument, Registry};

/// Where a dependency of the package at `parent` may already be, nearest
/// first, as Node's resolution looks for it.
pub(super) fn candidates(parent: &str, dep: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = parent.to_owned();
    loop {
        out.push(format!("{at}/node_modules/{dep}"));
        match at.rfind("node_modules/") {
            Some(0) | None => break,
            Some(i) => at = at[..i].trim_end_matches('/').to_owned(),
        }
    }
    out.push(format!("node_modules/{dep}"));
    out
}

pub(super) fn parse_version(manifest: &Manifest) -> Result<Version, InstallError> {
    Version::parse(&manifest.version).map_err(|e| {
        InstallError::Registry(format!(
            "{} has version {:?}: {e}",
            manifest.name, manifest.version
        ))
    })
}

pub(super) fn parse_range(name: &str, range: &str) -> Result<Range, InstallError> {
    match range.trim() {
        "" | "*" | "latest" | "x" => Ok(Range::any()),
        range => Range::parse(range).map_err(|_| {
            InstallError::Registry(format!(
                "{name}@{range}: only registry versions and ranges are supported (not git, file or alias specs)"
            ))
        }),
    }
}

/// The manifest of the version of `name` that `range` (a version, a range
/// or a dist-tag; `None`: `latest`) picks.
pub(super) async fn pick(
    registry: &Registry,
    documents: &mut HashMap<String, Packument>,
    name: &str,
    range: Option<&str>,
) -> Result<Manifest, InstallError> {
    if !documents.contains_key(name) {
        let document = registry.packument(name).await?;
        documents.insert(name.to_owned(), document);
    }
    let document = &documents[name];
    let latest = document
        .dist_tags
        .get("latest")
        .cloned()
        .unwrap_or_default();
    let range = range.unwrap_or("latest");
    let chosen = if let Some(tagged) = document.dist_tags.get(range) {
        Some(tagged.clone())
    } else {
        let wanted = parse_range(name, range)?;
        let mut versions: Vec<Version> = document
            .versions
            .keys()
            .filter_map(|v| Version::parse(v).ok())
            .filter(|v| wanted.satisfies(v))
            .collect();
        versions.sort();
        // npm prefers `latest` when it satisfies the range.
        match Version::parse(&latest) {
            Ok(l) if wanted.satisfies(&l) => Some(latest.clone()),
            _ => versions.last().map(ToString::to_string),
        }
    };
    let manifest = chosen.and_then(|v| document.versions.get(&v).cloned());
    let mut manifest = manifest.ok_or_else(|| InstallError::NoVersion {
        name: name.to_owned(),
        range: range.to_owned(),
        latest,
    })?;
    if manifest.name.is_empty() {
        manifest.name = name.to_owned();
    }
    Ok(manifest)
}
