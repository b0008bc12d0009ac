//! Top-level `await` with REPL semantics. A classic script cannot `await`,
//! so code that does runs inside an async function; this rewrite keeps
//! what the same code without `await` would give (Node's REPL,
//! `lib/internal/repl/await.js`, is the model, extended to completion
//! values as V8's REPL mode gives them in DevTools):
//!
//! - every top-level declaration lands in the global scope: `var` (at any
//!   depth outside functions) and function names as `var`, `let`, `const`
//!   and classes as `let`, all declared before the wrapper and assigned in
//!   place, destructuring included;
//! - the result is the value of the last expression statement evaluated,
//!   wherever it is (blocks, `if`, `try`/`catch`, loops), not only a
//!   trailing one.
//!
//! Lines stay where they were: the declarations and the wrapper's head sit
//! on line 1 before the code, and every other edit is within a line; the
//! rewrite's [`Positions`] map columns (and the wrapper's own frames) back
//! to the code as sent. `rusty_v8` does not expose V8's own REPL mode
//! (`debug::EvaluateGlobal`), hence a source rewrite on oxc's syntax tree.

use oxc::allocator::Allocator;
use oxc::ast::ast::{
    ArrowFunctionExpression, AwaitExpression, BindingPattern, Class, ForOfStatement,
    ForStatementInit, ForStatementLeft, Function, ImportDeclaration, ImportDeclarationSpecifier,
    Program, Statement, VariableDeclaration, VariableDeclarationKind,
};
use oxc::parser::Parser;
use oxc::span::{GetSpan, SourceType};

use crate::engine::capability::positions::{Positions, RunsBuilder};

/// The local that holds the completion value inside the wrapper.
const COMPLETION: &str = "$__mcpv8_completion";

/// Code rewritten for top-level `await`, and where its positions came from.
#[derive(Debug)]
pub(crate) struct Wrapped {
    pub js: String,
    pub positions: Positions,
}

/// The function static `import` declarations call (the modules family's).
const IMPORT: &str = "$__mcpv8_import";

/// An `export` in a run: runs are not modules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NotARun {
    pub message: String,
    /// 1-based, in the code rewritten.
    pub line: usize,
    /// 1-based.
    pub column: usize,
}

/// `js` rewritten to run as a classic script: its static `import`
/// declarations become global `var` bindings of the modules' namespaces
/// (so importing again in a later run rebinds them), and, when
/// `asynchronous`, it runs inside an async function for top-level `await`.
/// Code that does not parse as a module body (sloppy-mode only syntax, or
/// no JavaScript at all) is only wrapped (or left alone): if V8 refuses
/// that too, the caller shows V8's error for the code as sent.
pub(crate) fn wrap(js: &str, asynchronous: bool) -> Result<Wrapped, NotARun> {
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, js, SourceType::mjs()).parse();
    if parsed.panicked || !parsed.diagnostics.is_empty() {
        let mut out = String::with_capacity(js.len() + 32);
        let mut runs = RunsBuilder::new(js);
        if asynchronous {
            runs.unmapped(&mut out, "(async () => {");
        }
        runs.copied(&mut out, 0, js.len());
        if asynchronous {
            runs.unmapped(&mut out, "\n})()");
        }
        return Ok(Wrapped {
            js: out,
            positions: runs.finish(),
        });
    }
    let mut rewrite = Rewrite {
        asynchronous,
        ..Rewrite::default()
    };
    for statement in &parsed.program.body {
        if statement.is_module_declaration()
            && !matches!(statement, Statement::ImportDeclaration(_))
        {
            let start = statement.span().start as usize;
            let before = &js[..start];
            let line = before.matches('\n').count() + 1;
            let column = start - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            return Err(NotARun {
                message: format!(
                    "export is not allowed in run_js (line {line}, column {column}): a run is not a \
                     module. Its top-level declarations already persist for later runs; drop the \
                     `export` keyword"
                ),
                line,
                column,
            });
        }
    }
    rewrite.program(&parsed.program, js);
    Ok(rewrite.finish(js))
}

/// Whether `js`, read as a module body (where `await` is the operator at
/// top level, as in Node's REPL), awaits outside any function. A classic
/// script reads `String(await (p))` as a call of a function named `await`
/// and fails at run time with "await is not defined"; such code is run
/// as top-level `await` instead. Code that is no module body (a function
/// or variable named `await`, sloppy-mode syntax) stays a script.
pub(crate) fn awaits_at_top_level(js: &str) -> bool {
    use oxc::ast_visit::{Visit, walk};
    use oxc::syntax::scope::ScopeFlags;

    #[derive(Default)]
    struct TopLevelAwait(bool);

    impl<'a> Visit<'a> for TopLevelAwait {
        fn visit_await_expression(&mut self, _: &AwaitExpression<'a>) {
            self.0 = true;
        }
        fn visit_for_of_statement(&mut self, it: &ForOfStatement<'a>) {
            self.0 |= it.r#await;
            walk::walk_for_of_statement(self, it);
        }
        // What a function awaits is its own.
        fn visit_function(&mut self, _: &Function<'a>, _: ScopeFlags) {}
        fn visit_arrow_function_expression(&mut self, _: &ArrowFunctionExpression<'a>) {}
    }

    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, js, SourceType::mjs()).parse();
    if parsed.panicked || !parsed.diagnostics.is_empty() {
        return false;
    }
    let mut found = TopLevelAwait::default();
    found.visit_program(&parsed.program);
    found.0
}

/// The edits to make, in source order, and the names to declare.
#[derive(Default)]
struct Rewrite {
    /// Wrap in an async function (else only imports are rewritten).
    asynchronous: bool,
    /// `(at, removed bytes, inserted text)`; edits at one offset apply in
    /// the order they were made.
    edits: Vec<(usize, usize, String)>,
    vars: Vec<String>,
    lets: Vec<String>,
}

impl Rewrite {
    fn insert(&mut self, at: u32, text: impl Into<String>) {
        self.edits.push((at as usize, 0, text.into()));
    }

    fn program(&mut self, program: &Program<'_>, js: &str) {
        for statement in &program.body {
            match statement {
                Statement::ImportDeclaration(d) => self.import(d, js),
                _ if self.asynchronous => self.statement(statement, true),
                _ => {}
            }
        }
    }

    /// `import d, { a as b } from "x"` becomes `var { "default": d, "a": b }
    /// = $__mcpv8_import("x", ["default", "a"]);` (assignments to names
    /// declared before the wrapper when asynchronous), on as many lines as
    /// the declaration had.
    fn import(&mut self, d: &ImportDeclaration<'_>, js: &str) {
        let span = d.span;
        let newlines = js[span.start as usize..span.end as usize]
            .matches('\n')
            .count();
        let quote = |text: &str| serde_json::to_string(text).expect("a string serializes");
        let mut names = Vec::new();
        let mut namespace = None;
        let mut properties = Vec::new();
        if d.import_kind.is_type() {
            self.edits.push((
                span.start as usize,
                span.size() as usize,
                "\n".repeat(newlines),
            ));
            return;
        }
        for specifier in d.specifiers.iter().flatten() {
            match specifier {
                ImportDeclarationSpecifier::ImportDefaultSpecifier(s) => {
                    names.push("default".to_owned());
                    properties.push(("default".to_owned(), s.local.name.to_string()));
                }
                ImportDeclarationSpecifier::ImportNamespaceSpecifier(s) => {
                    namespace = Some(s.local.name.to_string());
                }
                ImportDeclarationSpecifier::ImportSpecifier(s) => {
                    if s.import_kind.is_type() {
                        continue;
                    }
                    let imported = s.imported.name().to_string();
                    names.push(imported.clone());
                    properties.push((imported, s.local.name.to_string()));
                }
            }
        }
        let call = format!(
            "{IMPORT}({}, {})",
            quote(&d.source.value),
            serde_json::to_string(&names).expect("names serialize")
        );
        let mut bindings = Vec::new();
        let target = match &namespace {
            Some(ns) => {
                bindings.push(format!("{ns} = {call}"));
                ns.clone()
            }
            None => call.clone(),
        };
        if namespace.is_some() {
            for (imported, local) in &properties {
                bindings.push(format!("{local} = {ns}[{}]", quote(imported), ns = target));
            }
        } else if !properties.is_empty() {
            let pattern: Vec<String> = properties
                .iter()
                .map(|(imported, local)| format!("{}: {local}", quote(imported)))
                .collect();
            let assignment = format!("{{ {} }} = {call}", pattern.join(", "));
            bindings.push(if self.asynchronous {
                format!("({assignment})")
            } else {
                assignment
            });
        }
        let locals = namespace
            .iter()
            .cloned()
            .chain(properties.iter().map(|(_, local)| local.clone()));
        let text = if bindings.is_empty() {
            format!("{call};")
        } else if self.asynchronous {
            self.vars.extend(locals);
            format!("void ({});", bindings.join(", "))
        } else {
            format!("var {};", bindings.join(", "))
        };
        self.edits.push((
            span.start as usize,
            span.size() as usize,
            text + &"\n".repeat(newlines),
        ));
    }

    /// `top`: directly in the program's body, where `let`, `const`,
    /// classes and functions are global declarations.
    fn statement(&mut self, statement: &Statement<'_>, top: bool) {
        match statement {
            Statement::ExpressionStatement(s) => {
                let span = s.expression.span();
                self.insert(span.start, format!("{COMPLETION}=("));
                self.insert(span.end, ")");
            }
            Statement::VariableDeclaration(d) => self.declaration(d, top, false),
            Statement::FunctionDeclaration(f) if top => self.function(f),
            Statement::ClassDeclaration(c) if top => self.class(c),
            Statement::BlockStatement(b) => self.block(&b.body),
            Statement::IfStatement(s) => {
                self.statement(&s.consequent, false);
                if let Some(alternate) = &s.alternate {
                    self.statement(alternate, false);
                }
            }
            Statement::TryStatement(s) => {
                self.block(&s.block.body);
                if let Some(handler) = &s.handler {
                    self.block(&handler.body.body);
                }
                if let Some(finalizer) = &s.finalizer {
                    self.block(&finalizer.body);
                }
            }
            Statement::ForStatement(s) => {
                if let Some(ForStatementInit::VariableDeclaration(d)) = &s.init {
                    self.declaration(d, false, false);
                }
                self.statement(&s.body, false);
            }
            Statement::ForInStatement(s) => {
                if let ForStatementLeft::VariableDeclaration(d) = &s.left {
                    self.declaration(d, false, true);
                }
                self.statement(&s.body, false);
            }
            Statement::ForOfStatement(s) => {
                if let ForStatementLeft::VariableDeclaration(d) = &s.left {
                    self.declaration(d, false, true);
                }
                self.statement(&s.body, false);
            }
            Statement::WhileStatement(s) => self.statement(&s.body, false),
            Statement::DoWhileStatement(s) => self.statement(&s.body, false),
            Statement::LabeledStatement(s) => self.statement(&s.body, false),
            Statement::SwitchStatement(s) => {
                for case in &s.cases {
                    self.block(&case.consequent);
                }
            }
            // Function bodies, nested declarations of block scope and the
            // rest keep their own semantics.
            _ => {}
        }
    }

    fn block(&mut self, body: &[Statement<'_>]) {
        for statement in body {
            self.statement(statement, false);
        }
    }

    /// `var` anywhere and top-level `let`/`const` become assignments to
    /// names declared before the wrapper (`const` as `let`, as Node's REPL
    /// does: a binding can only be declared with its value). `in_loop_head`:
    /// the left side of `for…in`/`for…of`, which takes a bare pattern.
    fn declaration(&mut self, d: &VariableDeclaration<'_>, top: bool, in_loop_head: bool) {
        let hoisted = match d.kind {
            VariableDeclarationKind::Var => true,
            VariableDeclarationKind::Let | VariableDeclarationKind::Const => top,
            VariableDeclarationKind::Using | VariableDeclarationKind::AwaitUsing => false,
        };
        if !hoisted {
            return;
        }
        let is_var = d.kind == VariableDeclarationKind::Var;
        let keyword = if is_var { 3 } else { d.kind.as_str().len() };
        let mut names = Vec::new();
        for declarator in &d.declarations {
            bound_names(&declarator.id, &mut names);
        }
        if is_var {
            self.vars.extend(names);
        } else {
            self.lets.extend(names);
        }
        if in_loop_head {
            self.edits
                .push((d.span.start as usize, keyword, String::new()));
            return;
        }
        let several = d.declarations.len() > 1;
        self.edits.push((
            d.span.start as usize,
            keyword,
            if several { "void (" } else { "void" }.to_owned(),
        ));
        for declarator in &d.declarations {
            self.insert(declarator.span.start, "(");
            // `var x;` keeps the value x has; `let x;` is a new binding.
            let close = if declarator.init.is_some() || is_var {
                ")"
            } else {
                "=undefined)"
            };
            self.insert(declarator.span.end, close);
        }
        if several {
            let last = d.declarations.last().expect("several declarators");
            self.insert(last.span.end, ")");
        }
    }

    /// Function declarations stay where they are, hoisted inside the
    /// wrapper, and are copied to the global of the same name.
    fn function(&mut self, f: &Function<'_>) {
        if let Some(id) = &f.id {
            self.vars.push(id.name.to_string());
            self.insert(f.span.start, format!("this.{0}={0};", id.name));
        }
    }

    fn class(&mut self, c: &Class<'_>) {
        if let Some(id) = &c.id {
            self.lets.push(id.name.to_string());
            self.insert(c.span.start, format!("{}=", id.name));
            // A declaration needs no `;`, the assignment it becomes does
            // (`class K {} await null` on one line).
            self.insert(c.span.end, ";".to_owned());
        }
    }

    fn finish(mut self, js: &str) -> Wrapped {
        let mut head = String::new();
        if self.asynchronous {
            for (keyword, names) in [("var", &mut self.vars), ("let", &mut self.lets)] {
                names.dedup();
                if !names.is_empty() {
                    head.push_str(&format!("{keyword} {};", names.join(",")));
                }
            }
            head.push_str(&format!("(async () => {{let {COMPLETION};"));
        }
        let mut out = String::with_capacity(js.len() + head.len() + 64);
        let mut runs = RunsBuilder::new(js);
        runs.unmapped(&mut out, &head);
        // Stable: edits at one offset keep the order they were made in.
        self.edits.sort_by_key(|&(at, _, _)| at);
        let mut cursor = 0;
        for (at, removed, text) in &self.edits {
            if *at >= cursor {
                runs.copied(&mut out, cursor, *at);
                cursor = *at;
            }
            runs.inserted(&mut out, text, *at);
            cursor = cursor.max(at + removed);
        }
        runs.copied(&mut out, cursor, js.len());
        if self.asynchronous {
            runs.unmapped(&mut out, &format!("\nreturn {COMPLETION};\n}})()"));
        }
        Wrapped {
            js: out,
            positions: runs.finish(),
        }
    }
}

fn bound_names(pattern: &BindingPattern<'_>, names: &mut Vec<String>) {
    for id in pattern.get_binding_identifiers() {
        names.push(id.name.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_are_declared_before_the_wrapper_and_assigned_in_place() {
        let out = wrap(
            "var v = 1; let l = 2; const c = 3; function f(){} class K{} await null;",
            true,
        )
        .unwrap()
        .js;
        assert_eq!(
            out,
            "var v,f;let l,c,K;(async () => {let $__mcpv8_completion;\
             void (v = 1); void (l = 2); void (c = 3); this.f=f;function f(){} K=class K{}; \
             $__mcpv8_completion=(await null);\nreturn $__mcpv8_completion;\n})()"
        );
    }

    #[test]
    fn destructuring_loops_and_uninitialised_names_keep_their_meaning() {
        let out = wrap(
            "const {a, b: [c]} = o; var x; let y; for (var k of ks) {} await 0",
            true,
        )
        .unwrap()
        .js;
        assert!(out.starts_with("var x,k;let a,c,y;"), "{out}");
        assert!(out.contains("void ({a, b: [c]} = o)"), "{out}");
        assert!(out.contains("void (x);"), "{out}");
        assert!(out.contains("void (y=undefined);"), "{out}");
        assert!(out.contains("for ( k of ks)"), "{out}");
    }

    #[test]
    fn the_completion_value_is_the_last_expression_evaluated_anywhere() {
        let out = wrap("try { await f() } catch (e) { 'caught' }", true)
            .unwrap()
            .js;
        assert!(
            out.contains("catch (e) { $__mcpv8_completion=('caught') }"),
            "{out}"
        );
        // Inside functions nothing changes.
        let out = wrap("const g = () => { 1; let z = 2 }; await g()", true)
            .unwrap()
            .js;
        assert!(out.contains("() => { 1; let z = 2 }"), "{out}");
    }

    #[test]
    fn lines_stay_where_they_were() {
        let code = "let a = 1,\n  b = 2;\nawait a;\nthrow new Error('line 4')";
        let out = wrap(code, true).unwrap().js;
        let line = out.lines().position(|l| l.contains("line 4")).unwrap();
        assert_eq!(line, 3, "{out}");
    }

    #[test]
    fn positions_map_back_to_the_code_as_sent() {
        let code = "const a = await 1;\nlet b = 2; throw new Error('x')";
        let wrapped = wrap(code, true).unwrap();
        let first = wrapped.js.find("await 1").unwrap() as u32 + 1;
        assert_eq!(wrapped.positions.original(1, first), Some((1, 11)));
        let line = wrapped.js.lines().nth(1).unwrap();
        let column = line.find("new Error").unwrap() as u32 + 1;
        assert_eq!(wrapped.positions.original(2, column), Some((2, 18)));
    }

    #[test]
    fn imports_become_global_bindings_of_the_namespace() {
        let out = wrap("import _, { chunk as c } from 'lodash';\n_", false)
            .unwrap()
            .js;
        assert_eq!(
            out,
            "var { \"default\": _, \"chunk\": c } = $__mcpv8_import(\"lodash\", [\"default\",\"chunk\"]);\n_"
        );
        let out = wrap("import * as ns from 'x'; import 'y'", false)
            .unwrap()
            .js;
        assert_eq!(
            out,
            "var ns = $__mcpv8_import(\"x\", []); $__mcpv8_import(\"y\", []);"
        );
        // With top-level await the names are declared before the wrapper.
        let out = wrap("import d from 'x'\nawait d", true).unwrap().js;
        assert!(out.starts_with("var d;(async"), "{out}");
        assert!(
            out.contains("void (({ \"default\": d } = $__mcpv8_import"),
            "{out}"
        );
    }

    #[test]
    fn an_import_keeps_the_lines_after_it_where_they_were() {
        let out = wrap("import {\n  a,\n  b\n} from 'x';\nthrow 1", false)
            .unwrap()
            .js;
        assert_eq!(out.lines().position(|l| l == "throw 1"), Some(4), "{out}");
    }

    #[test]
    fn export_is_refused_with_its_position() {
        let err = wrap("const a = 1;\n  export const b = 2;", false).unwrap_err();
        assert_eq!((err.line, err.column), (2, 3));
        assert!(err.message.contains("not a module"), "{}", err.message);
    }

    #[test]
    fn an_await_before_a_parenthesis_at_top_level_is_the_operator() {
        assert!(super::awaits_at_top_level("String(await (p))"));
        assert!(super::awaits_at_top_level(
            "JSON.stringify({ v: await (f()) })"
        ));
        assert!(super::awaits_at_top_level("for await (const x of xs) {}"));
        assert!(super::awaits_at_top_level("await 1"));
        // Awaits inside functions are theirs; a function named `await` is
        // no module body.
        assert!(!super::awaits_at_top_level(
            "async function f() { await (g()) }"
        ));
        assert!(!super::awaits_at_top_level(
            "const f = async () => await (g())"
        ));
        assert!(!super::awaits_at_top_level(
            "function await(x) { return x } await(1)"
        ));
        assert!(!super::awaits_at_top_level("1 + 1"));
    }

    #[test]
    fn code_that_does_not_parse_is_only_wrapped() {
        assert_eq!(
            wrap("await (", true).unwrap().js,
            "(async () => {await (\n})()"
        );
    }
}
