//! A package prepared for the engine: CommonJS files made by the bundler
//! (dependencies inlined, shared code in chunk files), and the entry file
//! of each subpath the package can be imported by.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Format version of a stored bundle.
const FORMAT: u32 = 1;

/// One package, ready to load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bundle {
    /// Always [`FORMAT`] for bundles this build writes.
    pub format: u32,
    /// Package name.
    pub name: String,
    /// Exact version.
    pub version: String,
    /// By subpath (`.`, `./fp`).
    pub entries: BTreeMap<String, Entry>,
    /// The subpaths Node's `require` resolves to another module than
    /// `import` does (a dual package's CommonJS build, by its `exports`
    /// conditions): `require` takes these, `import` the entries above.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub require: BTreeMap<String, Entry>,
    /// CommonJS source by file name; entries and chunks `require` each
    /// other as `./file`.
    pub files: BTreeMap<String, String>,
}

/// Where a subpath starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The file in [`Bundle::files`].
    pub file: String,
    /// Whether the source was an ES module: its exports are its namespace.
    /// A CommonJS module's namespace is `{ default: module.exports, ...named }`,
    /// as Node gives it.
    pub esm: bool,
    /// Whether the file exposes a CommonJS module's `module.exports` as its
    /// `default` export (the bundler does so for a module other entries
    /// also load); else the file's own `module.exports` is the module's.
    #[serde(default)]
    pub wrapped: bool,
}

/// Stored bytes that are not a bundle this build can load.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// Not JSON of the expected shape.
    #[error("package bundle cannot be read: {0}")]
    Parse(#[from] serde_json::Error),
    /// Written by a later format.
    #[error(
        "package bundle has format {0}; this build reads format {FORMAT}; reinstall the package"
    )]
    Format(u32),
}

impl Bundle {
    /// A new bundle of `name@version`.
    pub fn new(name: &str, version: &str) -> Self {
        Self {
            format: FORMAT,
            name: name.to_owned(),
            version: version.to_owned(),
            entries: BTreeMap::new(),
            require: BTreeMap::new(),
            files: BTreeMap::new(),
        }
    }

    /// Reads stored bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, BundleError> {
        let bundle: Self = serde_json::from_slice(bytes)?;
        if bundle.format != FORMAT {
            return Err(BundleError::Format(bundle.format));
        }
        Ok(bundle)
    }

    /// The bytes to store.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a bundle serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_round_trips_and_a_later_format_is_named() {
        let mut bundle = Bundle::new("x", "1.0.0");
        bundle.entries.insert(
            ".".into(),
            Entry {
                file: "e0.js".into(),
                esm: true,
                wrapped: false,
            },
        );
        bundle.files.insert("e0.js".into(), "exports.a = 1".into());
        assert_eq!(Bundle::from_bytes(&bundle.to_bytes()).unwrap(), bundle);
        bundle.format = 9;
        let err = Bundle::from_bytes(&bundle.to_bytes()).unwrap_err();
        assert!(err.to_string().contains("format 9"), "{err}");
    }
}
