//! Turning the `code` argument into JavaScript V8 can run: Markdown fences
//! cleared, language detection, syntax errors found in the code as sent,
//! and TypeScript type stripping with oxc (no type checking).

use std::path::Path;

use oxc::allocator::Allocator;
use oxc::ast::ast::{Decorator, Program, Statement};
use oxc::ast_visit::Visit;
use oxc::codegen::{Codegen, CodegenOptions};
use oxc::diagnostics::OxcDiagnostic;
use oxc::parser::Parser;
use oxc::semantic::SemanticBuilder;
use oxc::span::SourceType;
use oxc::transformer::{TransformOptions, Transformer};
use serde::{Deserialize, Serialize};

use crate::engine::capability::positions::Positions;

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
    /// What the caller should know of what was done to the code (a
    /// Markdown fence cleared).
    pub warnings: Vec<String>,
}

/// Code that does not parse, located in the caller's code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SourceError {
    pub message: String,
    /// 1-based.
    pub line: usize,
    /// 1-based.
    pub column: usize,
    /// Byte offset: how far the parse got.
    offset: usize,
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

/// `code` as V8 should run it, or the first syntax error in it as sent
/// (before any rewrite: top-level `await` and `import` are rewritten
/// later, and an error found there would blame them).
pub(crate) fn prepare(code: &str, language: Language) -> Result<Prepared, SourceError> {
    let (code, fenced) = clear_fences(code);
    let as_is = || Prepared {
        js: code.clone().into_owned(),
        positions: None,
        warnings: Vec::new(),
    };
    let mut prepared = match language {
        Language::Javascript => match javascript_error(&code) {
            None => as_is(),
            // TypeScript sent as JavaScript fails on its first type; the
            // model learns what to send instead.
            Some(mut error) if strip_types(&code).is_ok() => {
                error.message.push_str(
                    ": the code is TypeScript (it parses as TypeScript, not as JavaScript); \
                     send language: \"typescript\", or leave language out to have it detected",
                );
                return Err(error);
            }
            Some(error) => return Err(error),
        },
        Language::Typescript => strip_types(&code)?,
        Language::Auto => match javascript_error(&code) {
            None => as_is(),
            // Neither parses: the parse that got further read the code as
            // what it is (TypeScript with a typo, or JavaScript with one).
            Some(javascript) => match strip_types(&code) {
                Ok(stripped) => stripped,
                Err(typescript) if typescript.offset > javascript.offset => return Err(typescript),
                Err(_) => return Err(javascript),
            },
        },
    };
    if prepared.positions.is_none()
        && code.contains('@')
        && let Some(error) = javascript_decorators(&code)
    {
        return Err(error);
    }
    if fenced {
        prepared.warnings.push(
            "the code was wrapped in a Markdown fence (```); the fence lines were ignored: send the code alone"
                .to_owned(),
        );
    }
    Ok(prepared)
}

/// `code` without a Markdown fence around it (a line "```js" first and
/// "```" last, as models paste code): the fence lines become empty lines,
/// so line numbers stay those of the code as sent.
fn clear_fences(code: &str) -> (std::borrow::Cow<'_, str>, bool) {
    let body = code.trim_start_matches(['\n', '\r', ' ', '\t']);
    let Some(opening) = body.strip_prefix("```") else {
        return (code.into(), false);
    };
    let Some((info, rest)) = opening.split_once('\n') else {
        return (code.into(), false);
    };
    let known = [
        "",
        "js",
        "javascript",
        "ts",
        "typescript",
        "mjs",
        "jsx",
        "tsx",
        "node",
    ];
    if !known.contains(&info.trim().to_ascii_lowercase().as_str()) {
        return (code.into(), false);
    }
    let rest = rest.trim_end();
    let Some(inner) = rest.strip_suffix("```") else {
        return (code.into(), false);
    };
    if inner.contains("```") {
        return (code.into(), false);
    }
    let leading = &code[..code.len() - body.len()];
    let cleared = format!("{leading}\n{inner}");
    (cleared.into(), true)
}

/// The furthest-reaching syntax error of `code` as JavaScript, `None` when
/// it is JavaScript: a classic script, or a module body (runs with `import`
/// declarations or top-level `await`, which the engine rewrites).
fn javascript_error(code: &str) -> Option<SourceError> {
    let mut furthest: Option<SourceError> = None;
    for source_type in [SourceType::script(), SourceType::mjs()] {
        let allocator = Allocator::default();
        let ret = Parser::new(&allocator, code, source_type).parse();
        let Some(first) = ret.diagnostics.first() else {
            if !ret.panicked {
                return None;
            }
            continue;
        };
        let error = locate(code, first);
        if furthest.as_ref().is_none_or(|f| error.offset > f.offset) {
            furthest = Some(error);
        }
    }
    // Sloppy-mode code with top-level `await` runs inside an async function
    // (engine/run/repl.rs), which accepts both.
    let wrapped = format!("(async () => {{\n{code}\n}})()");
    let allocator = Allocator::default();
    let ret = Parser::new(&allocator, &wrapped, SourceType::script()).parse();
    if !ret.panicked && ret.diagnostics.is_empty() {
        return None;
    }
    furthest
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
    if let Some(error) = decorators(code, &program) {
        return Err(error);
    }
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
    // A module whose imports were all type-only keeps an `export {}` to
    // stay a module; run_js code is a script, and would refuse it.
    program.body.retain(|statement| {
        !matches!(statement, Statement::ExportNamedDeclaration(export)
            if export.specifiers.is_empty())
    });
    let generated = Codegen::new()
        .with_options(CodegenOptions {
            source_map_path: Some("run_js.ts".into()),
            ..CodegenOptions::default()
        })
        .build(&program);
    Ok(Prepared {
        js: generated.code,
        positions: generated.map.map(Positions::of_codegen),
        warnings: Vec::new(),
    })
}

/// The first decorator of `program`, refused in words: V8 does not run
/// decorators yet, and the TypeScript transform here keeps them as written.
fn decorators(code: &str, program: &Program<'_>) -> Option<SourceError> {
    #[derive(Default)]
    struct First(Option<u32>);
    impl<'a> Visit<'a> for First {
        fn visit_decorator(&mut self, it: &Decorator<'a>) {
            self.0.get_or_insert(it.span.start);
        }
    }
    let mut first = First::default();
    first.visit_program(program);
    let offset = first.0? as usize;
    Some(at(
        code,
        offset,
        "decorators (@name on a class or its members) are not supported: V8 does not run them \
         and they are not compiled away here; call the function yourself (m = logged(m)) or wrap \
         the class"
            .to_owned(),
    ))
}

/// [`decorators`] of `code` read as JavaScript.
fn javascript_decorators(code: &str) -> Option<SourceError> {
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, code, SourceType::mjs()).parse();
    decorators(code, &parsed.program)
}

fn at(code: &str, offset: usize, message: String) -> SourceError {
    let offset = offset.min(code.len());
    let before = &code[..code.floor_char_boundary(offset)];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    SourceError {
        message,
        line,
        column,
        offset,
    }
}

fn locate(code: &str, diagnostic: &OxcDiagnostic) -> SourceError {
    let offset = diagnostic
        .labels
        .first()
        .map(|label| label.offset() as usize)
        .unwrap_or(0);
    at(code, offset, diagnostic.message.to_string())
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
    fn type_only_imports_and_exports_leave_nothing_behind() {
        for code in [
            "import type { Stats } from 'node:fs';\nconst s: Stats | null = null; s",
            "import type { Stats } from 'node:fs'\nimport type * as L from 'lodash';\nlet n: number = 1; n",
            "import { type Stats } from 'node:fs';\nconst s: Stats | null = null; s",
            "export type Row = { a: number };\nexport interface P { x: number }\nconst r: Row = { a: 1 }; r.a",
            "import fs, { type Stats } from 'node:fs';\nconst s: Stats = fs.statSync('.'); s.size",
        ] {
            for language in [Language::Auto, Language::Typescript] {
                let out = prepare(code, language).unwrap();
                assert!(!out.js.contains("export"), "{code}: {}", out.js);
                assert!(!out.js.contains("import type"), "{code}: {}", out.js);
                assert!(!out.js.contains("Stats }"), "{code}: {}", out.js);
            }
        }
        // A value import stays, for this run and later ones.
        let out = prepare(
            "import fs, { type Stats } from 'node:fs';\nlet n: number = 1",
            Language::Auto,
        )
        .unwrap();
        assert!(out.js.contains("import fs from"), "{}", out.js);
    }

    #[test]
    fn decorators_are_refused_in_words() {
        let code = "function logged(v: any, c: any) { return v }\nclass A {\n  @logged\n  m() { return 1 }\n}\nnew A().m()";
        for language in [Language::Auto, Language::Typescript] {
            let err = prepare(code, language).unwrap_err();
            assert!(err.message.contains("decorators"), "{err}");
            assert_eq!(err.line, 3, "{err}");
        }
    }

    #[test]
    fn typescript_sent_as_javascript_is_told_to_say_so() {
        let err = prepare("const a: number = 1;\na", Language::Javascript).unwrap_err();
        assert!(err.message.contains("language: \"typescript\""), "{err}");
        assert_eq!(err.line, 1, "{err}");
        // Plain JavaScript errors say nothing of TypeScript.
        let err = prepare("const a = ;", Language::Javascript).unwrap_err();
        assert!(!err.message.contains("typescript"), "{err}");
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
    fn code_that_parses_as_nothing_is_a_syntax_error_where_it_is() {
        let err = prepare("let a = 1;\nlet = = 1", Language::Auto).unwrap_err();
        // `let = 1` is sloppy JavaScript: the second `=` is the error.
        assert_eq!((err.line, err.column), (2, 7), "{err}");
        let err = prepare("let a = 1;\nlet = = 1", Language::Javascript).unwrap_err();
        assert_eq!(err.line, 2, "{err}");
    }

    #[test]
    fn typescript_with_a_typo_is_blamed_for_the_typo_not_its_types() {
        let code = "type A = { x: number };\nconst a: A = { x: 1 };\nconst b = a.x +;";
        let err = prepare(code, Language::Auto).unwrap_err();
        assert_eq!(err.line, 3, "{err}");
    }

    #[test]
    fn a_typo_in_code_with_top_level_await_is_not_an_await_error() {
        let code = "const a = await Promise.resolve(1);\nif (a > 0 {\n}";
        for language in [Language::Auto, Language::Javascript] {
            let err = prepare(code, language).unwrap_err();
            assert_eq!(err.line, 2, "{err}");
            assert!(!err.message.contains("await"), "{err}");
        }
    }

    #[test]
    fn sloppy_code_with_top_level_await_still_runs() {
        let code = "var o = {a: 1}; with (o) { a } await 0; 010";
        assert_eq!(prepare(code, Language::Javascript).unwrap().js, code);
    }

    #[test]
    fn a_markdown_fence_is_cleared_keeping_lines_and_said() {
        let out = prepare("```js\nconst a = 1;\na + 1\n```", Language::Auto).unwrap();
        assert_eq!(out.js, "\nconst a = 1;\na + 1\n");
        assert_eq!(out.warnings.len(), 1, "{:?}", out.warnings);
        let out = prepare("```typescript\nconst a: number = 1\n```\n", Language::Auto).unwrap();
        assert!(
            !out.js.contains("```") && !out.js.contains("number"),
            "{}",
            out.js
        );
        // A fence inside the code, or an unclosed one, is the code's own.
        let inner = "const s = '```js';\ns + '\\n```'";
        assert!(prepare(inner, Language::Auto).unwrap().warnings.is_empty());
        assert!(prepare("```js\n1", Language::Auto).is_err());
    }
}
