//! `console`: the methods a fresh context gets (`log`, `info`, `warn`,
//! `error`, `debug`), the natives of those written in JavaScript (`table`,
//! `count`, `time`, `group`, …), and the run's captured output.

use std::sync::Arc;

use v8::MapFnTo;

use super::bytes::string;
use super::inspect::inspect;
use super::registry::{Natives, define};
use crate::engine::control::RunControl;

/// The console of one run, kept in an isolate slot.
pub(crate) struct Console {
    output: Output,
    /// `console.group` depth: lines are indented two spaces per level.
    group_depth: usize,
    /// Counts console lines for the caller's progress reports.
    control: Option<Arc<RunControl>>,
}

impl Console {
    pub(crate) fn new(max_output_bytes: usize, control: Option<Arc<RunControl>>) -> Self {
        Self {
            output: Output::new(max_output_bytes),
            group_depth: 0,
            control,
        }
    }

    /// What the run printed.
    pub(crate) fn into_output(self) -> String {
        self.output.text
    }
}

/// Captured console output with a hard size cap.
struct Output {
    text: String,
    cap: usize,
    truncated: bool,
}

impl Output {
    fn new(cap: usize) -> Self {
        Self {
            text: String::new(),
            cap,
            truncated: false,
        }
    }

    fn push_line(&mut self, line: &str) {
        if self.truncated {
            return;
        }
        let room = self.cap.saturating_sub(self.text.len());
        if line.len() < room {
            self.text.push_str(line);
            self.text.push('\n');
            return;
        }
        let cut = line.floor_char_boundary(room);
        self.text.push_str(&line[..cut]);
        self.text
            .push_str(&format!("\n[output truncated: over {} bytes]\n", self.cap));
        self.truncated = true;
    }
}

/// The methods every fresh context's `console` has; also the first five
/// entries of the native table.
pub(super) fn globals() -> Natives {
    vec![
        ("log", console_log.map_fn_to()),
        ("info", console_info.map_fn_to()),
        ("warn", console_warn.map_fn_to()),
        ("error", console_error.map_fn_to()),
        ("debug", console_debug.map_fn_to()),
    ]
}

/// Puts `console` on a fresh context's global object.
pub(super) fn install<'s>(scope: &mut v8::PinScope<'s, '_>, global: v8::Local<'s, v8::Object>) {
    let console = v8::Object::new(scope);
    define(scope, console, globals());
    let key = v8::String::new(scope, "console").expect("short name");
    global.set(scope, key.into(), console.into());
}

/// The natives of the console family's JavaScript file.
pub(super) fn natives() -> Natives {
    vec![
        ("print", print_native.map_fn_to()),
        ("indent", indent.map_fn_to()),
        ("inspect", inspect_value.map_fn_to()),
        ("now", now.map_fn_to()),
    ]
}

/// Writes one console line, indented by the run's `console.group` depth.
pub(crate) fn print(scope: &mut v8::PinScope<'_, '_>, line: &str) {
    let Some(console) = scope.get_slot_mut::<Console>() else {
        return;
    };
    if console.group_depth == 0 {
        console.output.push_line(line);
    } else {
        let indent = "  ".repeat(console.group_depth);
        let indented: Vec<String> = line.lines().map(|l| format!("{indent}{l}")).collect();
        console.output.push_line(&indented.join("\n"));
    }
    if let Some(control) = &console.control {
        control.count_console_line();
    }
}

fn write_console<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: &v8::FunctionCallbackArguments<'s>,
    prefix: &str,
) {
    let mut line = String::from(prefix);
    for i in 0..args.length() {
        if i > 0 {
            line.push(' ');
        }
        let arg = args.get(i);
        line.push_str(&inspect(scope, arg));
    }
    print(scope, &line);
}

/// A console method that prints its arguments after `prefix`.
macro_rules! console_method {
    ($name:ident, $prefix:literal) => {
        fn $name<'s>(
            scope: &mut v8::PinScope<'s, '_>,
            args: v8::FunctionCallbackArguments<'s>,
            _rv: v8::ReturnValue<'s, v8::Value>,
        ) {
            write_console(scope, &args, $prefix);
        }
    };
}

console_method!(console_log, "");
console_method!(console_info, "[INFO] ");
console_method!(console_warn, "[WARN] ");
console_method!(console_error, "[ERROR] ");
console_method!(console_debug, "[DEBUG] ");

/// `print(text)`: one console entry (indented, counted, capped like `log`).
fn print_native<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue<'s, v8::Value>,
) {
    // Text past the output's cap would be cut anyway; it is not copied.
    let cap = scope
        .get_slot::<Console>()
        .map_or(0, |console| console.output.cap);
    let (units, _) = super::bytes::utf16_prefix(scope, args.get(0), cap.saturating_add(1));
    print(scope, &String::from_utf16_lossy(&units));
}

/// `indent(delta)`: `console.group` depth, which lasts until the run ends.
fn indent<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue<'s, v8::Value>,
) {
    let delta = args.get(0).int32_value(scope).unwrap_or(0);
    if let Some(console) = scope.get_slot_mut::<Console>() {
        console.group_depth = console
            .group_depth
            .saturating_add_signed(delta as isize)
            .min(64);
    }
}

fn inspect_value<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let text = inspect(scope, args.get(0));
    if let Some(text) = string(scope, &text) {
        rv.set(text.into());
    }
}

/// Wall-clock milliseconds: `console.time` labels live in the heap, so a
/// label started in one run may end in a later one, on another instance.
fn now<'s>(
    _scope: &mut v8::PinScope<'s, '_>,
    _args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    rv.set_double(super::clock::unix_millis(std::time::SystemTime::now()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_cut_at_the_cap_with_a_visible_marker() {
        let mut out = Output::new(10);
        out.push_line("12345");
        out.push_line("abcdefgh");
        out.push_line("never shown");
        let text = out.text;
        assert!(text.starts_with("12345\nabcd"), "{text}");
        assert!(text.contains("[output truncated: over 10 bytes]"), "{text}");
        assert!(!text.contains("never"), "{text}");
    }
}
