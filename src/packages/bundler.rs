//! The one rolldown setup runs' modules are bundled with, for installed
//! packages ([`super::install`]) and modules by URL ([`super::url`]): one
//! CommonJS file set for the Web platform runs have (packages' browser
//! builds), named exports, `process.env.NODE_ENV` as in production.

use std::path::PathBuf;

use rolldown::{BundlerOptions, InputItem, OutputExports, OutputFormat, Platform};
use rolldown_common::{Output, OutputChunk};

use super::bundle::Bundle;

/// The options every bundle starts from: `input` resolved from `cwd`.
pub(super) fn options(input: Vec<InputItem>, cwd: PathBuf) -> BundlerOptions {
    BundlerOptions {
        input: Some(input),
        cwd: Some(cwd),
        format: Some(OutputFormat::Cjs),
        // Runs have the Web platform, not Node's: packages' browser
        // builds are the ones that work there.
        platform: Some(Platform::Browser),
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
