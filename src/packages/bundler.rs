//! The one rolldown setup runs' modules are bundled with, for installed
//! packages ([`super::install`]) and modules by URL ([`super::url`]): one
//! CommonJS file set, named exports, `process.env.NODE_ENV` as in
//! production, built for Node or for the browser ([`Build`]).

use std::path::PathBuf;

use rolldown::{BundlerOptions, InputItem, OutputExports, OutputFormat, Platform};
use rolldown_common::{Output, OutputChunk};

use super::bundle::Bundle;

/// Which of a package's builds a bundle takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Build {
    /// As Node 22 loads it: the `node` condition of `exports`, `main`, no
    /// `browser` field. What installed packages take first: code agents
    /// write is Node's, and runs have Node's everyday modules.
    Node,
    /// As a bundler for the browser takes it: the `browser` condition and
    /// field. Modules by URL, and a package whose Node build needs what a
    /// run does not have (`node:http`, `node:zlib`).
    Browser,
}

impl Build {
    fn platform(self) -> Platform {
        match self {
            Self::Node => Platform::Node,
            Self::Browser => Platform::Browser,
        }
    }
}

/// The options every bundle starts from: `input` resolved from `cwd`.
pub(super) fn options(input: Vec<InputItem>, cwd: PathBuf, build: Build) -> BundlerOptions {
    BundlerOptions {
        input: Some(input),
        cwd: Some(cwd),
        format: Some(OutputFormat::Cjs),
        platform: Some(build.platform()),
        exports: Some(OutputExports::Named),
        define: Some(
            [(
                "process.env.NODE_ENV".to_owned(),
                "\"production\"".to_owned(),
            )]
            .into_iter()
            .collect(),
        ),
        ..BundlerOptions::default()
    }
}

/// Puts every chunk of `assets` into `bundle` as a file; the entry chunks,
/// for the caller to make entries of.
pub(super) fn add_chunks<'a>(bundle: &mut Bundle, assets: &'a [Output]) -> Vec<&'a OutputChunk> {
    let mut entries = Vec::new();
    for asset in assets {
        let Output::Chunk(chunk) = asset else {
            continue;
        };
        bundle
            .files
            .insert(chunk.filename.to_string(), chunk.code.clone());
        if chunk.is_entry {
            entries.push(&**chunk);
        }
    }
    entries
}
