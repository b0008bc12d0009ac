//! Positions as sent: the code V8 runs is not always the code the caller
//! sent (TypeScript is stripped and reprinted by oxc's code generator, and
//! top-level `await` is rewritten by [`crate::engine::run::repl`]), so every `run_js.js:L:C`
//! that reaches the caller (error stacks and messages, warnings,
//! `console.trace`) is mapped back through the source map of each step.
//! Both steps produce an oxc source map; this module only reads them.

use std::borrow::Cow;

use oxc_sourcemap::{SourceMap, SourceMapBuilder, Token};

/// The script name V8 reports positions under.
pub(crate) const SCRIPT_NAME: &str = "run_js.js";

/// Where positions of a transformed text came from. Lines and columns are
/// 0-based in the map, columns in UTF-16 units as V8 counts them.
pub(crate) struct Positions {
    map: SourceMap<'static>,
    /// Frames whose position maps nowhere (the rewrite's own wrapper) are
    /// left out of stack traces rather than shown at a made-up place.
    drop_unmapped_frames: bool,
}

impl std::fmt::Debug for Positions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Positions({} tokens)", self.map.get_tokens().len())
    }
}

impl Positions {
    /// The positions of oxc's code generator (TypeScript stripping).
    pub(crate) fn of_codegen(map: SourceMap<'_>) -> Self {
        Self {
            map: map.into_owned(),
            drop_unmapped_frames: false,
        }
    }

    /// Positions built from copied runs (see [`RunsBuilder`]).
    fn of_runs(map: SourceMap<'static>) -> Self {
        Self {
            map,
            drop_unmapped_frames: true,
        }
    }

    /// The 1-based position in the original text of 1-based `(line,
    /// column)` in the generated one, if the map knows it (the tests' way
    /// in; [`Self::remap`] makes the lookup table once per text).
    #[cfg(test)]
    pub(crate) fn original(&self, line: u32, column: u32) -> Option<(u32, u32)> {
        self.original_in(&self.map.generate_lookup_table(), line, column)
    }

    /// [`Self::original`] with the map's lookup table made already.
    fn original_in(&self, table: &[&[Token]], line: u32, column: u32) -> Option<(u32, u32)> {
        let (line, column) = (line.checked_sub(1)?, column.checked_sub(1)?);
        let token = self.map.lookup_token(table, line, column)?;
        let offset = column - token.get_dst_col();
        Some((token.get_src_line() + 1, token.get_src_col() + offset + 1))
    }

    /// `text` with every `run_js.js:L:C` mapped to the original text, and
    /// with `message` a SyntaxError's `(line L, column C)` too (which only
    /// an error's message has; in console output it is the code's own text).
    pub(crate) fn remap<'t>(&self, text: &'t str, message: bool) -> Cow<'t, str> {
        let positioned = text.contains(SCRIPT_NAME) || (message && text.contains("(line "));
        if !positioned {
            return Cow::Borrowed(text);
        }
        let table = self.map.generate_lookup_table();
        let mut out = String::with_capacity(text.len());
        for line in text.split_inclusive('\n') {
            if let Some(mapped) = self.remap_line(&table, line, message) {
                out.push_str(&mapped);
            }
        }
        Cow::Owned(out)
    }

    /// `text` remapped where it holds positions ([`Self::remap`]).
    pub(crate) fn remap_in_place(&self, text: &mut String, message: bool) {
        if let Cow::Owned(mapped) = self.remap(text, message) {
            *text = mapped;
        }
    }

    /// One line of text remapped; `None` drops it (a frame of the wrapper).
    fn remap_line(&self, table: &[&[Token]], line: &str, message: bool) -> Option<String> {
        let mut out = String::with_capacity(line.len());
        let mut rest = line;
        let mut unmapped_frame = false;
        loop {
            let script = rest.find(SCRIPT_NAME).map(|at| (at, Form::Script));
            let syntax = message
                .then(|| rest.find("(line ").map(|at| (at, Form::Syntax)))
                .flatten();
            let next = match (script, syntax) {
                (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
                (a, b) => a.or(b),
            };
            let Some((at, form)) = next else {
                out.push_str(rest);
                break;
            };
            let (head, tail) = rest.split_at(at);
            out.push_str(head);
            match form.parse(tail) {
                Some((line_no, column, len)) => {
                    match self.original_in(table, line_no, column) {
                        Some((l, c)) => out.push_str(&form.print(l, c)),
                        None => {
                            unmapped_frame = true;
                            out.push_str(&tail[..len]);
                        }
                    }
                    rest = &tail[len..];
                }
                None => {
                    let skip = form.prefix().len();
                    out.push_str(&tail[..skip]);
                    rest = &tail[skip..];
                }
            }
        }
        let is_frame = line.trim_start().starts_with("at ");
        if unmapped_frame && is_frame && self.drop_unmapped_frames {
            return None;
        }
        Some(out)
    }
}

/// The two ways a position is written.
#[derive(Clone, Copy)]
enum Form {
    /// `run_js.js:12:5`, as in stack frames.
    Script,
    /// `(line 12, column 5)`, as in a SyntaxError's message.
    Syntax,
}

impl Form {
    fn prefix(self) -> &'static str {
        match self {
            Form::Script => "run_js.js:",
            Form::Syntax => "(line ",
        }
    }

    /// `(line, column, bytes taken)` of the position at the start of `text`.
    fn parse(self, text: &str) -> Option<(u32, u32, usize)> {
        let rest = text.strip_prefix(self.prefix())?;
        let (line, rest) = number(rest)?;
        let separator = match self {
            Form::Script => ":",
            Form::Syntax => ", column ",
        };
        let rest = rest.strip_prefix(separator)?;
        let (column, rest) = number(rest)?;
        let rest = match self {
            Form::Script => rest,
            Form::Syntax => rest.strip_prefix(')')?,
        };
        Some((line, column, text.len() - rest.len()))
    }

    fn print(self, line: u32, column: u32) -> String {
        match self {
            Form::Script => format!("{SCRIPT_NAME}:{line}:{column}"),
            Form::Syntax => format!("(line {line}, column {column})"),
        }
    }
}

fn number(text: &str) -> Option<(u32, &str)> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let value = text[..digits].parse().ok()?;
    Some((value, &text[digits..]))
}

/// Builds the map of a text assembled from copied runs of an original and
/// inserted text: a copied run maps to where it came from, line by line;
/// inserted text maps to the place it was inserted at; text before the
/// first copied byte maps nowhere.
pub(crate) struct RunsBuilder<'a> {
    original: &'a str,
    builder: SourceMapBuilder<'static>,
    /// The generated text's line and UTF-16 column so far.
    out_line: u32,
    out_column: u32,
}

impl<'a> RunsBuilder<'a> {
    pub(crate) fn new(original: &'a str) -> Self {
        Self {
            original,
            builder: SourceMapBuilder::default(),
            out_line: 0,
            out_column: 0,
        }
    }

    /// Generated text that maps nowhere (a wrapper's head or tail).
    pub(crate) fn unmapped(&mut self, out: &mut String, text: &str) {
        out.push_str(text);
        self.advance(text);
    }

    /// Generated text that stands for the original at byte `at`.
    pub(crate) fn inserted(&mut self, out: &mut String, text: &str, at: usize) {
        if text.is_empty() {
            return;
        }
        let (line, column) = self.original_position(at);
        self.builder
            .add_token(self.out_line, self.out_column, line, column, None, None);
        out.push_str(text);
        self.advance(text);
    }

    /// The original's bytes `from..to`, copied.
    pub(crate) fn copied(&mut self, out: &mut String, from: usize, to: usize) {
        if from >= to {
            return;
        }
        let (mut line, mut column) = self.original_position(from);
        for piece in self.original[from..to].split_inclusive('\n') {
            self.builder
                .add_token(self.out_line, self.out_column, line, column, None, None);
            out.push_str(piece);
            self.advance(piece);
            line += 1;
            column = 0;
        }
    }

    pub(crate) fn finish(self) -> Positions {
        Positions::of_runs(self.builder.into_sourcemap())
    }

    fn advance(&mut self, text: &str) {
        match text.rfind('\n') {
            Some(newline) => {
                self.out_line += text.matches('\n').count() as u32;
                self.out_column = utf16_len(&text[newline + 1..]);
            }
            None => self.out_column += utf16_len(text),
        }
    }

    fn original_position(&self, at: usize) -> (u32, u32) {
        let before = &self.original[..at];
        let line = before.matches('\n').count() as u32;
        let line_start = before.rfind('\n').map_or(0, |n| n + 1);
        (line, utf16_len(&before[line_start..]))
    }
}

fn utf16_len(text: &str) -> u32 {
    text.encode_utf16().count() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wrapped(original: &str) -> (String, Positions) {
        // `var x;(async () => {` + the original with `R=(` before its
        // last expression + `\n})()`.
        let mut out = String::new();
        let mut runs = RunsBuilder::new(original);
        runs.unmapped(&mut out, "var x;(async () => {");
        let last = original.rfind("boom").unwrap();
        runs.copied(&mut out, 0, last);
        runs.inserted(&mut out, "R=(", last);
        runs.copied(&mut out, last, original.len());
        runs.unmapped(&mut out, "\n})()");
        (out, runs.finish())
    }

    #[test]
    fn copied_runs_map_back_line_by_line_and_insertions_to_their_place() {
        let original = "let a = 1;\n  é; boom()";
        let (out, positions) = wrapped(original);
        // `boom` is on line 2 of both; in the output after `R=(`, at
        // UTF-16 column 9 (`é` is one unit, two bytes).
        assert_eq!(out.lines().nth(1), Some("  é; R=(boom()"));
        assert_eq!(positions.original(2, 9), Some((2, 6)));
        // The inserted `R=(` stands for where it was inserted.
        assert_eq!(positions.original(2, 6), Some((2, 6)));
        // Line 1 after the head.
        let head = "var x;(async () => {".len() as u32;
        assert_eq!(positions.original(1, head + 5), Some((1, 5)));
        // The head maps nowhere.
        assert_eq!(positions.original(1, 3), None);
    }

    #[test]
    fn stack_texts_are_remapped_and_wrapper_frames_dropped() {
        let original = "let a = 1;\nboom()";
        let (_, positions) = wrapped(original);
        let stack =
            "ReferenceError: boom is not defined\n    at run_js.js:2:4\n    at run_js.js:1:3\n";
        assert_eq!(
            positions.remap(stack, true),
            "ReferenceError: boom is not defined\n    at run_js.js:2:1\n"
        );
        assert_eq!(
            positions.remap("Unexpected token (line 2, column 5)", true),
            "Unexpected token (line 2, column 2)"
        );
        // Console output keeps a `(line …)` of its own.
        assert_eq!(
            positions.remap("read (line 2, column 5)", false),
            "read (line 2, column 5)"
        );
        // Text without positions is borrowed as it is; a half position too.
        assert!(matches!(
            positions.remap("no position", true),
            Cow::Borrowed(_)
        ));
        assert_eq!(positions.remap("run_js.js:x", true), "run_js.js:x");
    }
}
