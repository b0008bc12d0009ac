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
    BindingPattern, Class, ForStatementInit, ForStatementLeft, Function, Program, Statement,
    VariableDeclaration, VariableDeclarationKind,
};
use oxc::parser::Parser;
use oxc::span::{GetSpan, SourceType};

use super::positions::{Positions, RunsBuilder};

/// The local that holds the completion value inside the wrapper.
const COMPLETION: &str = "$__mcpv8_completion";

/// Code rewritten for top-level `await`, and where its positions came from.
pub(crate) struct Wrapped {
    pub js: String,
    pub positions: Positions,
}

/// `js` rewritten to run as a classic script with top-level `await`. Code
/// that does not parse as a module body (sloppy-mode only syntax, or no
/// JavaScript at all) is only wrapped: if V8 refuses that too, the caller
/// shows V8's error for the code as sent.
pub(crate) fn wrap(js: &str) -> Wrapped {
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, js, SourceType::mjs()).parse();
    if parsed.panicked || !parsed.diagnostics.is_empty() {
        let mut out = String::with_capacity(js.len() + 32);
        let mut runs = RunsBuilder::new(js);
        runs.unmapped(&mut out, "(async () => {");
        runs.copied(&mut out, 0, js.len());
        runs.unmapped(&mut out, "\n})()");
        return Wrapped {
            js: out,
            positions: runs.finish(),
        };
    }
    let mut rewrite = Rewrite::default();
    rewrite.program(&parsed.program);
    rewrite.finish(js)
}

/// The edits to make, in source order, and the names to declare.
#[derive(Default)]
struct Rewrite {
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

    fn program(&mut self, program: &Program<'_>) {
        for statement in &program.body {
            self.statement(statement, true);
        }
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
        }
    }

    fn finish(mut self, js: &str) -> Wrapped {
        let mut head = String::new();
        for (keyword, names) in [("var", &mut self.vars), ("let", &mut self.lets)] {
            names.dedup();
            if !names.is_empty() {
                head.push_str(&format!("{keyword} {};", names.join(",")));
            }
        }
        head.push_str(&format!("(async () => {{let {COMPLETION};"));
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
        runs.unmapped(&mut out, &format!("\nreturn {COMPLETION};\n}})()"));
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
        let out =
            wrap("var v = 1; let l = 2; const c = 3; function f(){} class K{} await null;").js;
        assert_eq!(
            out,
            "var v,f;let l,c,K;(async () => {let $__mcpv8_completion;\
             void (v = 1); void (l = 2); void (c = 3); this.f=f;function f(){} K=class K{} \
             $__mcpv8_completion=(await null);\nreturn $__mcpv8_completion;\n})()"
        );
    }

    #[test]
    fn destructuring_loops_and_uninitialised_names_keep_their_meaning() {
        let out = wrap("const {a, b: [c]} = o; var x; let y; for (var k of ks) {} await 0").js;
        assert!(out.starts_with("var x,k;let a,c,y;"), "{out}");
        assert!(out.contains("void ({a, b: [c]} = o)"), "{out}");
        assert!(out.contains("void (x);"), "{out}");
        assert!(out.contains("void (y=undefined);"), "{out}");
        assert!(out.contains("for ( k of ks)"), "{out}");
    }

    #[test]
    fn the_completion_value_is_the_last_expression_evaluated_anywhere() {
        let out = wrap("try { await f() } catch (e) { 'caught' }").js;
        assert!(
            out.contains("catch (e) { $__mcpv8_completion=('caught') }"),
            "{out}"
        );
        // Inside functions nothing changes.
        let out = wrap("const g = () => { 1; let z = 2 }; await g()").js;
        assert!(out.contains("() => { 1; let z = 2 }"), "{out}");
    }

    #[test]
    fn lines_stay_where_they_were() {
        let code = "let a = 1,\n  b = 2;\nawait a;\nthrow new Error('line 4')";
        let out = wrap(code).js;
        let line = out.lines().position(|l| l.contains("line 4")).unwrap();
        assert_eq!(line, 3, "{out}");
    }

    #[test]
    fn positions_map_back_to_the_code_as_sent() {
        let code = "const a = await 1;\nlet b = 2; throw new Error('x')";
        let wrapped = wrap(code);
        let first = wrapped.js.find("await 1").unwrap() as u32 + 1;
        assert_eq!(wrapped.positions.original(1, first), Some((1, 11)));
        let line = wrapped.js.lines().nth(1).unwrap();
        let column = line.find("new Error").unwrap() as u32 + 1;
        assert_eq!(wrapped.positions.original(2, column), Some((2, 18)));
    }

    #[test]
    fn code_that_does_not_parse_is_only_wrapped() {
        assert_eq!(wrap("await (").js, "(async () => {await (\n})()");
    }
}
