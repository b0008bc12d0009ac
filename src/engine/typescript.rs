//! Turning the `code` argument into JavaScript V8 can run: language
//! detection and TypeScript type stripping with oxc (no type checking).

use std::path::Path;

use oxc::allocator::Allocator;
use oxc::codegen::{Codegen, CodegenOptions};
use oxc::diagnostics::OxcDiagnostic;
use oxc::parser::Parser;
use oxc::semantic::SemanticBuilder;
use oxc::span::SourceType;
use oxc::transformer::{TransformOptions, Transformer};
use serde::{Deserialize, Serialize};

use super::positions::Positions;

/// The language of the `code` argument.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// JavaScript when the code parses as JavaScript, else TypeScript.
    #[default]
    Auto,
    /// Run as is.
    Javascript,
    /// Strip types first.
    Typescript,
}

/// JavaScript ready for V8.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub js: String,
    /// Where the stripped JavaScript's positions are in the TypeScript
    /// sent; `None` when the code runs as sent.
    pub positions: Option<Positions>,
}

/// TypeScript that does not parse, located in the caller's code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SourceError {
    pub message: String,
    /// 1-based.
    pub line: usize,
    /// 1-based.
    pub column: usize,
}

impl std::fmt::Display for SourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (line {}, column {})",
            self.message, self.line, self.column
        )
    }
}

pub(crate) fn prepare(code: &str, language: Language) -> Result<Prepared, SourceError> {
    let as_is = || Prepared {
        js: code.to_owned(),
        positions: None,
    };
    match language {
        Language::Javascript => Ok(as_is()),
        Language::Typescript => strip_types(code),
        Language::Auto => {
            if parses_as_javascript(code) {
                return Ok(as_is());
            }
            // Neither JavaScript nor TypeScript: hand the original to V8 so the
            // error is the engine's own SyntaxError, with its position.
            strip_types(code).or_else(|_| Ok(as_is()))
        }
    }
}

/// Whether `code` is JavaScript: a classic script, or a module body (runs
/// with `import` declarations, which the engine rewrites).
fn parses_as_javascript(code: &str) -> bool {
    [SourceType::script(), SourceType::mjs()]
        .into_iter()
        .any(|source_type| {
            let allocator = Allocator::default();
            let ret = Parser::new(&allocator, code, source_type).parse();
            !ret.panicked && ret.diagnostics.is_empty()
        })
}

fn strip_types(code: &str) -> Result<Prepared, SourceError> {
    let allocator = Allocator::default();
    // Module goal: it accepts top-level `await` and type-only imports; the
    // output is still run as a classic script.
    let source_type = SourceType::ts();
    let parsed = Parser::new(&allocator, code, source_type).parse();
    if let Some(first) = parsed.diagnostics.first() {
        return Err(locate(code, first));
    }
    let mut program = parsed.program;
    let semantic = SemanticBuilder::new().build(&program);
    let scoping = semantic.semantic.into_scoping();
    let mut options = TransformOptions::default();
    // An import whose bindings this run does not use is still a binding
    // later runs use: only `import type` and type-only names go.
    options.typescript.only_remove_type_imports = true;
    let transformed = Transformer::new(&allocator, Path::new("run_js.ts"), &options)
        .build_with_scoping(scoping, &mut program);
    if let Some(first) = transformed.diagnostics.first() {
        return Err(locate(code, first));
    }
    let generated = Codegen::new()
        .with_options(CodegenOptions {
            source_map_path: Some("run_js.ts".into()),
            ..CodegenOptions::default()
        })
        .build(&program);
    Ok(Prepared {
        js: generated.code,
        positions: generated.map.map(Positions::of_codegen),
    })
}

fn locate(code: &str, diagnostic: &OxcDiagnostic) -> SourceError {
    let offset = diagnostic
        .labels
        .first()
        .map(|label| label.offset() as usize)
        .unwrap_or(0)
        .min(code.len());
    let before = &code[..code.floor_char_boundary(offset)];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    SourceError {
        message: diagnostic.message.to_string(),
        line,
        column,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_javascript_is_left_untouched() {
        let code = "var a = 1; // note\na + 1";
        let out = prepare(code, Language::Auto).unwrap();
        assert_eq!(out.js, code);
        assert!(out.positions.is_none());
    }

    #[test]
    fn auto_detects_and_strips_type_annotations() {
        let out = prepare("const x: number = 41; x + 1", Language::Auto).unwrap();
        assert!(out.positions.is_some());
        assert!(!out.js.contains("number"), "{}", out.js);
        assert!(out.js.contains("x + 1"), "{}", out.js);
    }

    #[test]
    fn interfaces_and_generics_disappear() {
        let code = "interface P { x: number }\nfunction id<T>(v: T): T { return v }\nconst p: P = { x: 2 };\nid<number>(p.x)";
        let out = prepare(code, Language::Typescript).unwrap();
        assert!(!out.js.contains("interface"), "{}", out.js);
        assert!(!out.js.contains("export"), "{}", out.js);
        assert!(out.js.contains("id(p.x)"), "{}", out.js);
    }

    #[test]
    fn a_typescript_syntax_error_names_line_and_column() {
        let err = prepare("const a: number = 1;\nconst b: = 2;", Language::Typescript).unwrap_err();
        assert_eq!(err.line, 2, "{err}");
        assert!(err.column > 1, "{err}");
        assert!(err.to_string().contains("line 2"), "{err}");
    }

    #[test]
    fn positions_of_the_stripped_code_are_those_of_the_typescript() {
        let code =
            "interface P {\n  x: number\n}\n\nconst p: P = { x: 1 };\n\nthrow new Error('line 7')";
        let out = prepare(code, Language::Typescript).unwrap();
        let (line, text) = out
            .js
            .lines()
            .enumerate()
            .find(|(_, l)| l.contains("new Error"))
            .unwrap();
        let column = text.find("new Error").unwrap() as u32 + 1;
        let positions = out.positions.expect("a source map");
        assert_eq!(positions.original(line as u32 + 1, column), Some((7, 7)));
    }

    #[test]
    fn auto_leaves_unparseable_code_to_v8() {
        let out = prepare("let = = 1", Language::Auto).unwrap();
        assert_eq!(out.js, "let = = 1");
    }
}
