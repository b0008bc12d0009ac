//! The export names a module's source declares, found without running it:
//! an ES module's `export` declarations, and a CommonJS module's names as
//! Node's cjs-module-lexer finds them (`exports.x =`, `module.exports = {
//! x }`, `Object.defineProperty(exports, "x", …)`, and the names of a module
//! it re-exports with `module.exports = require("./y")`). The load check
//! compares them with what a run gets, so a package that loads as `{}`
//! is refused instead of failing later in an agent's code.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use oxc::allocator::Allocator;
use oxc::ast::ast::{
    Argument, AssignmentExpression, AssignmentTarget, CallExpression, Declaration, Expression,
    ModuleDeclaration, ObjectPropertyKind, PropertyKey,
};
use oxc::ast_visit::{Visit, walk};
use oxc::parser::Parser;
use oxc::span::SourceType;

/// Re-exports followed this deep (`module.exports = require("./lib")`).
const MAX_REEXPORTS: usize = 4;

/// Whether the module at `path` is an ES module, by Node's rules: the
/// extension, else the nearest `package.json`'s `type`, else its syntax.
pub(super) fn is_esm(path: &Path) -> bool {
    esm_by_name(path).unwrap_or_else(|| {
        std::fs::read_to_string(path).is_ok_and(|source| {
            let allocator = Allocator::default();
            has_module_syntax(
                &Parser::new(&allocator, &source, SourceType::mjs())
                    .parse()
                    .program,
            )
        })
    })
}

/// What the extension or the nearest `package.json` says, if they do.
fn esm_by_name(path: &Path) -> Option<bool> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("mjs" | "mts") => return Some(true),
        Some("cjs" | "cts") => return Some(false),
        _ => {}
    }
    let mut dir = path.parent();
    while let Some(d) = dir {
        if let Ok(text) = std::fs::read_to_string(d.join("package.json")) {
            let manifest: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
            if manifest.get("type").and_then(|t| t.as_str()) == Some("module") {
                return Some(true);
            }
            if manifest.get("name").is_some() {
                break;
            }
        }
        dir = d.parent();
    }
    None
}

fn has_module_syntax(program: &oxc::ast::ast::Program<'_>) -> bool {
    program.body.iter().any(|s| s.is_module_declaration())
}

/// Whether the module at `path` is an ES module ([`is_esm`]), and the names
/// it declares (`default` and `__esModule` left out); `None` when it cannot
/// be read.
pub(super) fn declared_exports(path: &Path) -> Option<(bool, Vec<String>)> {
    let source = std::fs::read_to_string(path).ok()?;
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, &source, SourceType::mjs()).parse();
    let esm = esm_by_name(path).unwrap_or_else(|| has_module_syntax(&parsed.program));
    let mut names = BTreeSet::new();
    if esm {
        for statement in &parsed.program.body {
            if let Some(declaration) = statement.as_module_declaration() {
                esm_names(declaration, &mut names);
            }
        }
    } else {
        cjs_names(path, &mut names, 0);
    }
    names.remove("default");
    names.remove("__esModule");
    Some((esm, names.into_iter().collect()))
}

fn esm_names(declaration: &ModuleDeclaration<'_>, names: &mut BTreeSet<String>) {
    match declaration {
        ModuleDeclaration::ExportDeclaration(export) => match &export.declaration {
            Declaration::VariableDeclaration(variables) => {
                for declarator in &variables.declarations {
                    for id in declarator.id.get_binding_identifiers() {
                        names.insert(id.name.to_string());
                    }
                }
            }
            other => {
                if let Some(id) = other.id() {
                    names.insert(id.name.to_string());
                }
            }
        },
        ModuleDeclaration::ExportNamedDeclaration(export) => {
            for specifier in &export.specifiers {
                names.insert(specifier.exported.name().to_string());
            }
        }
        ModuleDeclaration::ExportFromDeclaration(export) => {
            for specifier in &export.specifiers {
                names.insert(specifier.exported.name().to_string());
            }
        }
        ModuleDeclaration::ExportAllDeclaration(export) => {
            if let Some(exported) = &export.exported {
                names.insert(exported.name().to_string());
            }
        }
        _ => {}
    }
}

fn cjs_names(path: &Path, names: &mut BTreeSet<String>, depth: usize) {
    let Ok(source) = std::fs::read_to_string(path) else {
        return;
    };
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, &source, SourceType::cjs()).parse();
    let mut lexer = CommonJs::default();
    lexer.visit_program(&parsed.program);
    names.extend(lexer.names);
    if depth < MAX_REEXPORTS {
        for specifier in lexer.reexports {
            if let Some(next) = relative_module(path, &specifier) {
                cjs_names(&next, names, depth + 1);
            }
        }
    }
}

/// The file a relative `require` names, as Node tries it.
fn relative_module(from: &Path, specifier: &str) -> Option<PathBuf> {
    if !specifier.starts_with('.') {
        return None;
    }
    let base = from.parent()?.join(specifier);
    [
        base.clone(),
        base.with_extension("js"),
        PathBuf::from(format!("{}.js", base.display())),
        base.join("index.js"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

#[derive(Default)]
struct CommonJs {
    names: BTreeSet<String>,
    reexports: Vec<String>,
}

/// Whether `expression` is `exports` or `module.exports`.
fn is_exports(expression: &Expression<'_>) -> bool {
    match expression {
        Expression::Identifier(id) => id.name == "exports",
        Expression::StaticMemberExpression(member) => {
            member.property.name == "exports"
                && matches!(&member.object, Expression::Identifier(id) if id.name == "module")
        }
        _ => false,
    }
}

/// The module `require("x")` names, for a call that is one.
fn required(expression: &Expression<'_>) -> Option<String> {
    let Expression::CallExpression(call) = expression else {
        return None;
    };
    let Expression::Identifier(callee) = &call.callee else {
        return None;
    };
    if callee.name != "require" || call.arguments.len() != 1 {
        return None;
    }
    match &call.arguments[0] {
        Argument::StringLiteral(text) => Some(text.value.to_string()),
        _ => None,
    }
}

impl<'a> Visit<'a> for CommonJs {
    fn visit_assignment_expression(&mut self, it: &AssignmentExpression<'a>) {
        match &it.left {
            AssignmentTarget::StaticMemberExpression(member) if is_exports(&member.object) => {
                self.names.insert(member.property.name.to_string());
            }
            AssignmentTarget::ComputedMemberExpression(member) if is_exports(&member.object) => {
                if let Expression::StringLiteral(key) = &member.expression {
                    self.names.insert(key.value.to_string());
                }
            }
            _ => {}
        }
        // `module.exports = …`: an object literal's keys, or the names of
        // the module it requires.
        let whole = matches!(&it.left, AssignmentTarget::StaticMemberExpression(member)
            if member.property.name == "exports"
                && matches!(&member.object, Expression::Identifier(id) if id.name == "module"));
        if whole {
            let mut right = &it.right;
            // `exports = module.exports = …` and `module.exports = exports = …`
            while let Expression::AssignmentExpression(inner) = right {
                right = &inner.right;
            }
            if let Expression::ObjectExpression(object) = right {
                for property in &object.properties {
                    if let ObjectPropertyKind::ObjectProperty(property) = property {
                        match &property.key {
                            PropertyKey::StaticIdentifier(id) => {
                                self.names.insert(id.name.to_string());
                            }
                            PropertyKey::StringLiteral(text) => {
                                self.names.insert(text.value.to_string());
                            }
                            _ => {}
                        }
                    }
                }
            } else if let Some(specifier) = required(right) {
                self.reexports.push(specifier);
            }
        }
        walk::walk_assignment_expression(self, it);
    }

    fn visit_call_expression(&mut self, it: &CallExpression<'a>) {
        // Object.defineProperty(exports, "x", …)
        if let Expression::StaticMemberExpression(callee) = &it.callee
            && callee.property.name == "defineProperty"
            && matches!(&callee.object, Expression::Identifier(id) if id.name == "Object")
            && it.arguments.len() >= 2
            && it.arguments[0]
                .as_expression()
                .is_some_and(|target| is_exports(target))
            && let Argument::StringLiteral(key) = &it.arguments[1]
        {
            self.names.insert(key.value.to_string());
        }
        walk::walk_call_expression(self, it);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_of(files: &[(&str, &str)]) -> (bool, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        for (file, text) in files {
            std::fs::write(dir.path().join(file), text).unwrap();
        }
        declared_exports(&dir.path().join(files[0].0)).unwrap()
    }

    #[test]
    fn commonjs_names_are_found_as_node_finds_them() {
        let (esm, names) = names_of(&[
            (
                "index.js",
                "exports = module.exports = require('./lib');\n\
                 if (x) { exports.Readable = exports; exports['pipe line'] = 1; }\n\
                 Object.defineProperty(exports, 'finished', { value: 1 });\n\
                 Object.defineProperty(exports, '__esModule', { value: true });\n\
                 module.exports.more = 2;",
            ),
            ("lib.js", "module.exports = { a, b: 1, 'c d': 2, e() {} };"),
        ]);
        assert!(!esm);
        assert_eq!(
            names,
            [
                "Readable",
                "a",
                "b",
                "c d",
                "e",
                "finished",
                "more",
                "pipe line"
            ]
        );
    }

    #[test]
    fn es_module_names_are_its_export_declarations() {
        let (esm, names) = names_of(&[(
            "index.mjs",
            "export const a = 1, { b } = {}; export function f() {}\n\
             export { a as c }; export * as ns from './x.js'; export * from './y.js';\n\
             export default 3;",
        )]);
        assert!(esm);
        assert_eq!(names, ["a", "b", "c", "f", "ns"]);
    }
}
