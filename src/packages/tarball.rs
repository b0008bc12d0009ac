//! A package's tarball: its `package.json` read, and its files unpacked
//! within a bound.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use super::InstallError;
use super::registry::Manifest;
use super::spec::valid_name;
use crate::units::MIB_U64;

/// The `package.json` inside a tarball given by path.
pub(super) fn manifest_in(what: &str, tarball: &[u8]) -> Result<Manifest, InstallError> {
    let bad = |reason: String| InstallError::Tarball {
        what: what.to_owned(),
        reason,
    };
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(tarball));
    for entry in archive.entries().map_err(|e| bad(e.to_string()))? {
        let mut entry = entry.map_err(|e| bad(e.to_string()))?;
        let path = entry.path().map_err(|e| bad(e.to_string()))?.into_owned();
        if path.components().count() == 2 && path.ends_with("package.json") {
            let mut text = String::new();
            entry
                .read_to_string(&mut text)
                .map_err(|e| bad(e.to_string()))?;
            let manifest: Manifest =
                serde_json::from_str(&text).map_err(|e| bad(format!("package.json: {e}")))?;
            if !valid_name(&manifest.name) {
                return Err(bad(format!(
                    "package.json names {:?}, not a package name",
                    manifest.name
                )));
            }
            return Ok(manifest);
        }
    }
    Err(bad("no package.json at its top".into()))
}

/// Largest unpacked size of one package.
pub(super) const MAX_UNPACKED_BYTES: u64 = 256 * MIB_U64;

/// Unpacks an npm tarball into `into`, dropping its top directory
/// (`package/`). Only regular files are written, and only inside `into`:
/// absolute paths, `..`, links and devices are refused or skipped.
pub(super) fn unpack(what: &str, tarball: &[u8], into: &Path) -> Result<(), InstallError> {
    let bad = |reason: String| InstallError::Tarball {
        what: what.to_owned(),
        reason,
    };
    std::fs::create_dir_all(into)?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(tarball));
    let mut total = 0u64;
    for entry in archive.entries().map_err(|e| bad(e.to_string()))? {
        let mut entry = entry.map_err(|e| bad(e.to_string()))?;
        if !matches!(
            entry.header().entry_type(),
            tar::EntryType::Regular | tar::EntryType::Continuous
        ) {
            continue;
        }
        let path = entry.path().map_err(|e| bad(e.to_string()))?.into_owned();
        let mut parts = Vec::new();
        for component in path.components() {
            match component {
                Component::Normal(part) => parts.push(part.to_owned()),
                Component::CurDir => {}
                _ => return Err(bad(format!("refused path {}", path.display()))),
            }
        }
        if parts.len() < 2 {
            continue;
        }
        let relative: PathBuf = parts[1..].iter().collect();
        total += entry.header().size().unwrap_or(0);
        if total > MAX_UNPACKED_BYTES {
            return Err(InstallError::TooLarge {
                what: format!("{what} unpacked"),
                max: MAX_UNPACKED_BYTES as usize,
            });
        }
        let target = into.join(&relative);
        if let Some(dir) = target.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut bytes = Vec::new();
        entry
            .read_to_end(&mut bytes)
            .map_err(|e| bad(e.to_string()))?;
        std::fs::write(&target, bytes)?;
    }
    Ok(())
}
