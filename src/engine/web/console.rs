//! `console`: the methods a fresh context gets (`log`, `info`, `warn`,
//! `error`, `debug`), the natives of those written in JavaScript (`table`,
//! `count`, `time`, `group`, …), and the run's captured output.

use std::collections::VecDeque;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use v8::MapFnTo;

use super::inspect::inspect;
use crate::engine::capability::control::RunControl;
use crate::engine::capability::outcome::RunReport;
use crate::engine::capability::positions::Positions;
use crate::engine::capability::section::Text;
use crate::engine::capability::{Call, Capability, RunScope};
use crate::engine::layer::bytes::string;
use crate::engine::layer::registry::{Family, LoaderSlot, Natives, define};
use crate::units::MIB;

/// The console of one run, kept in an isolate slot.
pub(crate) struct Console {
    output: Output,
    /// `console.group` depth: lines are indented two spaces per level.
    group_depth: usize,
    /// Counts console lines for the caller's progress reports.
    control: Option<Arc<RunControl>>,
}

/// What a run asks of its console: the operator's settings of it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct ConsoleSettings {
    /// Output kept, in bytes (both ends past it).
    pub max_output_bytes: usize,
}

impl Default for ConsoleSettings {
    fn default() -> Self {
        Self {
            max_output_bytes: MIB,
        }
    }
}

/// Methods `console` gets from the console family, lazily.
pub(crate) const METHODS: &[&str] = &[
    "table",
    "dir",
    "trace",
    "assert",
    "count",
    "countReset",
    "time",
    "timeLog",
    "timeEnd",
    "group",
    "groupCollapsed",
    "groupEnd",
];

impl Capability for Console {
    const FAMILY: Option<&'static Family> = Some(&Family {
        name: "console",
        source: include_str!("console.js"),
        deps: &["node_inspect"],
        natives,
        globals: &[],
        version: 1,
    });
    type Settings = ConsoleSettings;
    type Ask = ConsoleSettings;
    /// What the run printed: a section of its worker's frame when long.
    type Report = Text;

    fn ask(settings: &ConsoleSettings, _: &mut Call<'_>) -> Result<ConsoleSettings, String> {
        Ok(*settings)
    }

    fn show(output: &mut Text, shown: &mut RunReport) {
        shown.outcome.output = std::mem::take(&mut output.0);
    }

    fn begin(isolate: &mut v8::Isolate, ask: &ConsoleSettings, run: &RunScope<'_>) {
        isolate.set_slot(Console {
            output: Output::new(ask.max_output_bytes),
            group_depth: 0,
            control: run.control.cloned(),
        });
    }

    fn end(isolate: &mut v8::Isolate) -> Text {
        Text(
            isolate
                .remove_slot::<Console>()
                .map(|console| console.output.into_text())
                .unwrap_or_default(),
        )
    }

    fn remap(output: &mut Text, positions: &Positions) {
        positions.remap_in_place(&mut output.0, false);
    }
}

/// Captured console output within a hard size cap. Past the cap it keeps
/// both ends, the first half and the newest lines, since what a model
/// needs most is often last (the error that ended a long log); the middle
/// is dropped and a marker says how much.
struct Output {
    head: String,
    tail: VecDeque<String>,
    tail_bytes: usize,
    cap: usize,
    /// Bytes printed in all, and dropped from the middle.
    total: usize,
    dropped: usize,
}

impl Output {
    fn new(cap: usize) -> Self {
        Self {
            head: String::new(),
            tail: VecDeque::new(),
            tail_bytes: 0,
            cap,
            total: 0,
            dropped: 0,
        }
    }

    fn push_line(&mut self, line: &str) {
        self.total += line.len() + 1;
        let mut rest = line;
        let half = self.cap / 2;
        if self.tail.is_empty() && self.head.len() < half {
            let room = half - self.head.len();
            if line.len() < room {
                self.head.push_str(line);
                self.head.push('\n');
                return;
            }
            let cut = line.floor_char_boundary(room);
            self.head.push_str(&line[..cut]);
            rest = &line[cut..];
        }
        let mut kept = String::with_capacity(rest.len() + 1);
        kept.push_str(rest);
        kept.push('\n');
        self.tail_bytes += kept.len();
        self.tail.push_back(kept);
        let room = self.cap - self.head.len();
        while self.tail_bytes > room {
            let excess = self.tail_bytes - room;
            let front = self
                .tail
                .front_mut()
                .expect("bytes over room are in the tail");
            if front.len() <= excess {
                self.tail_bytes -= front.len();
                self.dropped += front.len();
                self.tail.pop_front();
            } else {
                let cut = front.ceil_char_boundary(excess);
                front.drain(..cut);
                self.tail_bytes -= cut;
                self.dropped += cut;
            }
        }
    }

    /// The text, with the marker where the middle was dropped.
    fn into_text(self) -> String {
        let mut text = self.head;
        if self.dropped > 0 {
            text.push_str(&format!(
                "\n[output truncated: {} of {} bytes dropped from the middle; the first {} and the last {} bytes are shown]\n",
                self.dropped,
                self.total,
                text.len(),
                self.tail_bytes
            ));
        }
        text.extend(self.tail);
        text
    }
}

/// The methods every fresh context's `console` has; also the first five
/// entries of the native table.
pub(crate) fn globals() -> Natives {
    vec![
        ("log", console_log.map_fn_to()),
        ("info", console_info.map_fn_to()),
        ("warn", console_warn.map_fn_to()),
        ("error", console_error.map_fn_to()),
        ("debug", console_debug.map_fn_to()),
    ]
}

/// Puts `console` on a fresh context's global object.
pub(crate) fn install<'s>(scope: &mut v8::PinScope<'s, '_>, global: v8::Local<'s, v8::Object>) {
    let console = v8::Object::new(scope);
    define(scope, console, globals());
    let key = v8::String::new(scope, "console").expect("short name");
    global.set(scope, key.into(), console.into());
}

/// The natives of the console family's JavaScript file.
pub(crate) fn natives() -> Natives {
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
    if let Some(control) = &console.control {
        control.count_console_line();
        control.log_console_line(line);
    }
    if console.group_depth == 0 {
        console.output.push_line(line);
    } else {
        let indent = "  ".repeat(console.group_depth);
        let indented: Vec<String> = line.lines().map(|l| format!("{indent}{l}")).collect();
        console.output.push_line(&indented.join("\n"));
    }
}

/// Prints `args` after `prefix` as Node's `console.log` does: through
/// `util.formatWithOptions` (node_inspect.js, the inspector `util.inspect`
/// is), so `%s` and `%o` format and a value prints as `util.inspect` shows
/// it. Primitives with no format to apply (the lines a loop prints) are
/// joined here, as Node's formatter joins them, without entering it. Each
/// piece is copied out of V8 up to its first 64 KiB, with a marker past it.
fn write_console<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: &v8::FunctionCallbackArguments<'s>,
    prefix: &str,
) {
    let mut line = String::from(prefix);
    if plain(scope, args) {
        for i in 0..args.length() {
            if i > 0 {
                line.push(' ');
            }
            line.push_str(&inspect(scope, args.get(i)));
        }
    } else {
        // `None`: the run is ending (its deadline), or the inspector threw,
        // its exception pending for the code that called `console.log`.
        let Some(text) = node_format(scope, args) else {
            return;
        };
        line.push_str(&inspect(scope, text));
    }
    print(scope, &line);
}

/// Whether Node's formatter would only join `args`: every one a primitive
/// it prints as `inspect` does (a string bare), and no `%` in a first
/// string that others follow.
fn plain<'s>(scope: &mut v8::PinScope<'s, '_>, args: &v8::FunctionCallbackArguments<'s>) -> bool {
    /// A longer first string goes to the formatter rather than be read here.
    const SCANNED: usize = 4096;
    let count = args.length();
    let primitives = (0..count).all(|i| {
        let arg = args.get(i);
        arg.is_string()
            || arg.is_number()
            || arg.is_boolean()
            || arg.is_null_or_undefined()
            || arg.is_big_int()
    });
    if !primitives || count < 2 || !args.get(0).is_string() {
        return primitives;
    }
    let first = args.get(0);
    let (units, more) = crate::engine::layer::bytes::utf16_prefix(scope, first, SCANNED);
    !more && !units.contains(&u16::from(b'%'))
}

/// `formatWithOptions({}, ...args)` of Node's inspector.
fn node_format<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: &v8::FunctionCallbackArguments<'s>,
) -> Option<v8::Local<'s, v8::Value>> {
    let load = scope.get_slot::<LoaderSlot>()?.0;
    let inspector = load(scope, "node_inspect")?;
    let name = v8::String::new(scope, "formatWithOptions")?;
    let format = v8::Local::<v8::Function>::try_from(inspector.get(scope, name.into())?).ok()?;
    let mut call = Vec::with_capacity(args.length() as usize + 1);
    call.push(v8::Object::new(scope).into());
    call.extend((0..args.length()).map(|i| args.get(i)));
    let receiver = v8::undefined(scope).into();
    format.call(scope, receiver, &call)
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
    let (units, _) =
        crate::engine::layer::bytes::utf16_prefix(scope, args.get(0), cap.saturating_add(1));
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
    rv.set_double(crate::clock::unix_millis(std::time::SystemTime::now()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_within_the_cap_is_kept_whole() {
        let mut out = Output::new(20);
        out.push_line("12345");
        out.push_line("abcdefgh");
        assert_eq!(out.into_text(), "12345\nabcdefgh\n");
    }

    #[test]
    fn output_past_the_cap_keeps_both_ends_with_a_marker_in_the_middle() {
        let mut out = Output::new(40);
        out.push_line("first line");
        for i in 0..100 {
            out.push_line(&format!("middle {i}"));
        }
        out.push_line("Error: the end");
        let text = out.into_text();
        assert!(text.starts_with("first line"), "{text}");
        assert!(text.ends_with("Error: the end\n"), "{text}");
        assert!(!text.contains("middle 50"), "{text}");
        assert!(
            text.contains("[output truncated: ") && text.contains("bytes dropped from the middle"),
            "{text}"
        );
    }

    #[test]
    fn one_huge_line_keeps_its_start_and_its_end() {
        let mut out = Output::new(10);
        out.push_line(&format!("start{}éend", "x".repeat(1000)));
        let text = out.into_text();
        assert!(text.starts_with("start"), "{text}");
        assert!(text.ends_with("end\n"), "{text}");
        assert!(text.contains("the first 5 and the last 4 bytes"), "{text}");
    }
}
