//! The npm registry's read API: a package's document (its versions, their
//! dependencies and tarballs) and the tarballs, verified against the
//! integrity the registry published.

use std::collections::BTreeMap;

use base64::Engine as _;
use bytes::Bytes;
use serde::Deserialize;
use sha2::Digest;

use super::InstallError;

/// The abbreviated package document (`application/vnd.npm.install-v1+json`).
#[derive(Debug, Deserialize)]
pub(crate) struct Packument {
    #[serde(rename = "dist-tags", default)]
    pub dist_tags: BTreeMap<String, String>,
    #[serde(default)]
    pub versions: BTreeMap<String, Manifest>,
}

/// One version's `package.json`, as far as installing reads it.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Manifest {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub dependencies: BTreeMap<String, String>,
    #[serde(default, rename = "peerDependencies")]
    pub peer_dependencies: BTreeMap<String, String>,
    #[serde(default, rename = "peerDependenciesMeta")]
    pub peer_dependencies_meta: BTreeMap<String, PeerMeta>,
    #[serde(default)]
    pub dist: Dist,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct PeerMeta {
    #[serde(default)]
    pub optional: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Dist {
    #[serde(default)]
    pub tarball: String,
    pub integrity: Option<String>,
    pub shasum: Option<String>,
}

impl Manifest {
    /// Dependencies an install needs: `dependencies`, and peers that are
    /// not optional (npm 7 and later install those too).
    pub(crate) fn needed(&self) -> Vec<(String, String)> {
        let mut needed: Vec<(String, String)> = self
            .dependencies
            .iter()
            .map(|(n, r)| (n.clone(), r.clone()))
            .collect();
        for (name, range) in &self.peer_dependencies {
            let optional = self
                .peer_dependencies_meta
                .get(name)
                .is_some_and(|m| m.optional);
            if !optional && !self.dependencies.contains_key(name) {
                needed.push((name.clone(), range.clone()));
            }
        }
        needed
    }
}

/// A registry at `base` (`https://registry.npmjs.org/` by default).
#[derive(Debug, Clone)]
pub(crate) struct Registry {
    pub base: url::Url,
    pub client: reqwest::Client,
    pub max_tarball_bytes: usize,
}

impl Registry {
    /// The document of package `name`.
    pub(crate) async fn packument(&self, name: &str) -> Result<Packument, InstallError> {
        // A scoped name's slash is encoded, as npm's own client sends it.
        let path = name.replace('/', "%2f");
        let url = self
            .base
            .join(&path)
            .map_err(|e| InstallError::Registry(format!("{name}: {e}")))?;
        let response = self
            .client
            .get(url.clone())
            .header(
                "accept",
                "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8",
            )
            .send()
            .await
            .map_err(|e| InstallError::Registry(format!("{url}: {e}")))?;
        if response.status() == reqwest::StatusCode::NOT_FOUND {
            return Err(InstallError::NotFound(name.to_owned()));
        }
        if !response.status().is_success() {
            return Err(InstallError::Registry(format!(
                "{url} answered {}",
                response.status()
            )));
        }
        response
            .json()
            .await
            .map_err(|e| InstallError::Registry(format!("{url}: {e}")))
    }

    /// The tarball of `manifest`, verified.
    pub(crate) async fn tarball(&self, manifest: &Manifest) -> Result<Bytes, InstallError> {
        let what = format!("{}@{}", manifest.name, manifest.version);
        let response = self
            .client
            .get(&manifest.dist.tarball)
            .send()
            .await
            .map_err(|e| InstallError::Registry(format!("{what}: {e}")))?;
        if !response.status().is_success() {
            return Err(InstallError::Registry(format!(
                "{what}: {} answered {}",
                manifest.dist.tarball,
                response.status()
            )));
        }
        if response
            .content_length()
            .is_some_and(|n| n as usize > self.max_tarball_bytes)
        {
            return Err(InstallError::TooLarge {
                what,
                max: self.max_tarball_bytes,
            });
        }
        let bytes = response
            .bytes()
            .await
            .map_err(|e| InstallError::Registry(format!("{what}: {e}")))?;
        if bytes.len() > self.max_tarball_bytes {
            return Err(InstallError::TooLarge {
                what,
                max: self.max_tarball_bytes,
            });
        }
        verify(&what, &manifest.dist, &bytes)?;
        Ok(bytes)
    }
}

/// Checks `bytes` against the strongest hash the registry published: an
/// SRI `integrity` (sha512, else sha256), else the legacy sha1 `shasum`.
/// A tarball with neither is refused.
pub(crate) fn verify(what: &str, dist: &Dist, bytes: &[u8]) -> Result<(), InstallError> {
    let mismatch = |algorithm: &str| InstallError::Integrity {
        what: what.to_owned(),
        algorithm: algorithm.to_owned(),
    };
    if let Some(integrity) = &dist.integrity {
        let entries: Vec<(&str, &str)> = integrity
            .split_whitespace()
            .filter_map(|e| e.split_once('-'))
            .collect();
        for wanted in ["sha512", "sha256"] {
            if let Some((_, expected)) = entries.iter().find(|(a, _)| *a == wanted) {
                let actual = match wanted {
                    "sha512" => sha2::Sha512::digest(bytes).to_vec(),
                    _ => sha2::Sha256::digest(bytes).to_vec(),
                };
                let actual = base64::engine::general_purpose::STANDARD.encode(actual);
                return if actual == *expected {
                    Ok(())
                } else {
                    Err(mismatch(wanted))
                };
            }
        }
    }
    if let Some(shasum) = &dist.shasum {
        let actual = hex::encode(sha1::Sha1::digest(bytes));
        return if actual.eq_ignore_ascii_case(shasum) {
            Ok(())
        } else {
            Err(mismatch("sha1"))
        };
    }
    Err(InstallError::Integrity {
        what: what.to_owned(),
        algorithm: "none published".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tarballs_are_checked_against_the_published_integrity() {
        let bytes = b"tarball";
        let sri = format!(
            "sha512-{}",
            base64::engine::general_purpose::STANDARD.encode(sha2::Sha512::digest(bytes))
        );
        let dist = Dist {
            integrity: Some(sri),
            ..Dist::default()
        };
        verify("x", &dist, bytes).unwrap();
        let err = verify("x", &dist, b"tampered").unwrap_err();
        assert!(err.to_string().contains("sha512"), "{err}");
        let legacy = Dist {
            shasum: Some(hex::encode(sha1::Sha1::digest(bytes))),
            ..Dist::default()
        };
        verify("x", &legacy, bytes).unwrap();
        assert!(verify("x", &legacy, b"tampered").is_err());
        assert!(verify("x", &Dist::default(), bytes).is_err());
    }
}
