//! What `packages add` is given: a name with an optional version or range
//! (`zod`, `lodash@4`, `@scope/pkg@^1.2`), or a path to an npm tarball.

use std::path::PathBuf;

/// One argument of `packages add`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PackageSpec {
    /// From the registry: `range` is a version, a range or a dist-tag
    /// (`None`: the `latest` tag).
    Registry {
        /// The package name.
        name: String,
        /// What to resolve.
        range: Option<String>,
    },
    /// A local `.tgz`, as `npm pack` writes it.
    Tarball(PathBuf),
}

/// A spec that names nothing installable.
#[derive(Debug, thiserror::Error)]
#[error("{spec:?} is not a package: {why}")]
pub struct SpecError {
    spec: String,
    why: &'static str,
}

impl PackageSpec {
    /// Reads `spec`.
    pub fn parse(spec: &str) -> Result<Self, SpecError> {
        let err = |why| SpecError {
            spec: spec.to_owned(),
            why,
        };
        if spec.ends_with(".tgz") || spec.ends_with(".tar.gz") {
            return Ok(Self::Tarball(PathBuf::from(spec)));
        }
        // The version separator is the first `@` after a scope's own.
        let split = if let Some(rest) = spec.strip_prefix('@') {
            rest.find('@').map(|i| i + 1)
        } else {
            spec.find('@')
        };
        let (name, range) = match split {
            Some(at) => (&spec[..at], Some(spec[at + 1..].to_owned())),
            None => (spec, None),
        };
        if !valid_name(name) {
            return Err(err(
                "expected a package name (`zod`, `@scope/name`), optionally with @version, or a path to a .tgz",
            ));
        }
        if range.as_deref() == Some("") {
            return Err(err("nothing after @; give a version, a range or a tag"));
        }
        Ok(Self::Registry {
            name: name.to_owned(),
            range,
        })
    }
}

/// npm's rules for a package name, as far as they keep paths and URLs safe:
/// lowercase URL-safe characters, one optional `@scope/`, no `.`/`_` start.
pub(crate) fn valid_name(name: &str) -> bool {
    let bare = match name.strip_prefix('@') {
        Some(scoped) => match scoped.split_once('/') {
            Some((scope, bare)) if part_ok(scope) => bare,
            _ => return false,
        },
        None => name,
    };
    name.len() <= 214 && part_ok(bare)
}

fn part_ok(part: &str) -> bool {
    !part.is_empty()
        && !part.starts_with(['.', '_'])
        && part
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-._~".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_ranges_scopes_and_tarballs() {
        assert_eq!(
            PackageSpec::parse("lodash").unwrap(),
            PackageSpec::Registry {
                name: "lodash".into(),
                range: None
            }
        );
        assert_eq!(
            PackageSpec::parse("@scope/pkg@^1.2").unwrap(),
            PackageSpec::Registry {
                name: "@scope/pkg".into(),
                range: Some("^1.2".into())
            }
        );
        assert_eq!(
            PackageSpec::parse("./x/lodash-4.17.21.tgz").unwrap(),
            PackageSpec::Tarball("./x/lodash-4.17.21.tgz".into())
        );
    }

    #[test]
    fn names_that_could_escape_a_path_are_refused() {
        for bad in [
            "../x", "a/b", "@scope", "Upper", "", "x@", ".hidden", "@s/../x",
        ] {
            assert!(PackageSpec::parse(bad).is_err(), "{bad}");
        }
    }
}
