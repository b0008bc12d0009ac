//! The host functions a run sees: `console`, timers and `queueMicrotask`.
//!
//! They are V8 function callbacks. Each is listed in [`external_references`]
//! so that functions created in one run survive the snapshot and, after a
//! restore, point at the same Rust code again.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use v8::MapFnTo;

use super::inspect::inspect;

/// Per-run host state, kept in an isolate slot so callbacks can reach it.
pub(crate) struct RunState {
    pub output: Output,
    pub timers: Timers,
    /// Counts console lines for the caller's progress reports.
    pub control: Option<std::sync::Arc<super::RunControl>>,
    /// `performance.now()` counts from here, `performance.timeOrigin` is it.
    pub started: Instant,
    pub started_wall: std::time::SystemTime,
    /// `console.group` depth: lines are indented two spaces per level.
    pub group_depth: usize,
    /// The run's requests; `None` when fetch is off.
    pub fetch: Option<super::web::FetchRun>,
    /// Whether this isolate may make code caches for the Web layer: V8
    /// aborts the process if a snapshot creator tries.
    pub makes_code_caches: bool,
}

impl RunState {
    pub(crate) fn new(
        max_output_bytes: usize,
        control: Option<std::sync::Arc<super::RunControl>>,
        fetch: Option<&crate::egress::FetchConfig>,
        deadline: Instant,
    ) -> Self {
        Self {
            output: Output::new(max_output_bytes),
            timers: Timers::default(),
            control,
            started: Instant::now(),
            started_wall: std::time::SystemTime::now(),
            group_depth: 0,
            fetch: super::web::FetchRun::new(fetch, deadline),
            makes_code_caches: false,
        }
    }
}

/// Captured console output with a hard size cap.
pub(crate) struct Output {
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

    pub(crate) fn push_line(&mut self, line: &str) {
        if self.truncated {
            return;
        }
        let room = self.cap.saturating_sub(self.text.len());
        if line.len() < room {
            self.text.push_str(line);
            self.text.push('\n');
            return;
        }
        let mut cut = room.min(line.len());
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        self.text.push_str(&line[..cut]);
        self.text
            .push_str(&format!("\n[output truncated: over {} bytes]\n", self.cap));
        self.truncated = true;
    }

    pub(crate) fn into_string(self) -> String {
        self.text
    }
}

/// A callback waiting in the timer queue.
pub(crate) struct Timer {
    pub id: u32,
    pub callback: v8::Global<v8::Function>,
    pub args: Vec<v8::Global<v8::Value>>,
    pub repeat: Option<Duration>,
    /// Does not keep the run going (`AbortSignal.timeout`'s timer, like
    /// Node's unref'd ones): it fires only while something else is pending.
    pub unref: bool,
}

/// Timers ordered by due time, then by creation, as in browsers and Node.
#[derive(Default)]
pub(crate) struct Timers {
    next_id: u32,
    seq: u64,
    queue: BTreeMap<(Instant, u64), Timer>,
    slots: HashMap<u32, (Instant, u64)>,
    /// Queued timers that keep the run going.
    refd: usize,
    /// The timer whose callback is running: it is out of the queue, so a
    /// `clearInterval` from inside its own callback is remembered here.
    running: Option<u32>,
    running_cleared: bool,
}

impl Timers {
    fn schedule(&mut self, timer: Timer, due: Instant) {
        self.seq += 1;
        self.refd += usize::from(!timer.unref);
        self.slots.insert(timer.id, (due, self.seq));
        self.queue.insert((due, self.seq), timer);
    }

    fn add(
        &mut self,
        callback: v8::Global<v8::Function>,
        args: Vec<v8::Global<v8::Value>>,
        delay: Duration,
        repeat: bool,
        unref: bool,
    ) -> u32 {
        self.next_id += 1;
        let id = self.next_id;
        let timer = Timer {
            id,
            callback,
            args,
            repeat: repeat.then_some(delay),
            unref,
        };
        self.schedule(timer, Instant::now() + delay);
        id
    }

    fn clear(&mut self, id: u32) {
        if let Some(slot) = self.slots.remove(&id)
            && let Some(timer) = self.queue.remove(&slot)
        {
            self.refd -= usize::from(!timer.unref);
        }
        if self.running == Some(id) {
            self.running_cleared = true;
        }
    }

    /// When the earliest timer is due, while any timer keeps the run going.
    pub(crate) fn next_due(&self) -> Option<Instant> {
        if self.refd == 0 {
            return None;
        }
        self.next_due_any()
    }

    /// When the earliest timer is due, unref'd ones included: while other
    /// work (a request) keeps the run going, they fire too.
    pub(crate) fn next_due_any(&self) -> Option<Instant> {
        self.queue.keys().next().map(|(due, _)| *due)
    }

    /// Takes the earliest timer out of the queue to run its callback.
    pub(crate) fn pop(&mut self) -> Option<Timer> {
        let (_, timer) = self.queue.pop_first()?;
        self.slots.remove(&timer.id);
        self.refd -= usize::from(!timer.unref);
        self.running = Some(timer.id);
        self.running_cleared = false;
        Some(timer)
    }

    /// After its callback: an interval not cleared meanwhile goes back in the
    /// queue under the same id, so `clearInterval` keeps working.
    pub(crate) fn finish(&mut self, timer: Timer) {
        let cleared = self.running.take() == Some(timer.id) && self.running_cleared;
        if let (Some(period), false) = (timer.repeat, cleared) {
            self.schedule(timer, Instant::now() + period);
        }
    }

    /// Drops every pending timer (their handles must go before a snapshot).
    pub(crate) fn clear_all(&mut self) {
        self.queue.clear();
        self.slots.clear();
        self.refd = 0;
    }
}

/// Every native callback, in a fixed order shared by snapshot creation and
/// restore. V8 matches functions in a snapshot to this table by index.
pub(crate) fn external_references() -> Cow<'static, [v8::ExternalReference]> {
    Cow::Owned(
        vec![
            v8::ExternalReference {
                function: console_log.map_fn_to(),
            },
            v8::ExternalReference {
                function: console_info.map_fn_to(),
            },
            v8::ExternalReference {
                function: console_warn.map_fn_to(),
            },
            v8::ExternalReference {
                function: console_error.map_fn_to(),
            },
            v8::ExternalReference {
                function: console_debug.map_fn_to(),
            },
            v8::ExternalReference {
                function: set_timeout.map_fn_to(),
            },
            v8::ExternalReference {
                function: set_interval.map_fn_to(),
            },
            v8::ExternalReference {
                function: clear_timer.map_fn_to(),
            },
            v8::ExternalReference {
                function: queue_microtask.map_fn_to(),
            },
        ]
        .into_iter()
        .chain(super::web::external_references())
        .collect(),
    )
}

macro_rules! define {
    ($scope:expr, $target:expr, $name:literal, $callback:expr) => {{
        let function = v8::Function::new($scope, $callback).expect("creating a host function");
        let key = v8::String::new($scope, $name).expect("short name");
        function.set_name(key);
        $target.set($scope, key.into(), function.into());
    }};
}

/// Puts the host functions on a fresh context's global object. A restored
/// context already has them (they are part of the heap).
pub(crate) fn install<'s>(scope: &mut v8::PinScope<'s, '_>, global: v8::Local<'s, v8::Object>) {
    let console = v8::Object::new(scope);
    define!(scope, console, "log", console_log);
    define!(scope, console, "info", console_info);
    define!(scope, console, "warn", console_warn);
    define!(scope, console, "error", console_error);
    define!(scope, console, "debug", console_debug);
    let key = v8::String::new(scope, "console").expect("short name");
    global.set(scope, key.into(), console.into());
    define!(scope, global, "setTimeout", set_timeout);
    define!(scope, global, "setInterval", set_interval);
    define!(scope, global, "clearTimeout", clear_timer);
    define!(scope, global, "clearInterval", clear_timer);
    define!(scope, global, "queueMicrotask", queue_microtask);
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

/// Writes one console line, indented by the run's `console.group` depth.
pub(crate) fn print(scope: &mut v8::PinScope<'_, '_>, line: &str) {
    let Some(state) = scope.get_slot_mut::<RunState>() else {
        return;
    };
    if state.group_depth == 0 {
        state.output.push_line(line);
    } else {
        let indent = "  ".repeat(state.group_depth);
        let indented: Vec<String> = line.lines().map(|l| format!("{indent}{l}")).collect();
        state.output.push_line(&indented.join("\n"));
    }
    if let Some(control) = &state.control {
        control.count_console_line();
    }
}

fn console_log<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue<'s, v8::Value>,
) {
    write_console(scope, &args, "");
}

fn console_info<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue<'s, v8::Value>,
) {
    write_console(scope, &args, "[INFO] ");
}

fn console_warn<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue<'s, v8::Value>,
) {
    write_console(scope, &args, "[WARN] ");
}

fn console_error<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue<'s, v8::Value>,
) {
    write_console(scope, &args, "[ERROR] ");
}

fn console_debug<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue<'s, v8::Value>,
) {
    write_console(scope, &args, "[DEBUG] ");
}

pub(crate) fn throw_type_error(scope: &mut v8::PinScope, message: &str) {
    let message = v8::String::new(scope, message).expect("short message");
    let exception = v8::Exception::type_error(scope, message);
    scope.throw_exception(exception);
}

fn schedule<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: &v8::FunctionCallbackArguments<'s>,
    rv: &mut v8::ReturnValue<'s, v8::Value>,
    repeat: bool,
    unref: bool,
) {
    let Ok(callback) = v8::Local::<v8::Function>::try_from(args.get(0)) else {
        let name = if repeat { "setInterval" } else { "setTimeout" };
        throw_type_error(scope, &format!("{name}: the callback must be a function"));
        return;
    };
    let millis = args
        .get(1)
        .number_value(scope)
        .filter(|ms| ms.is_finite())
        .unwrap_or(0.0)
        // Node's bounds: at least 1 ms, at most a signed 32-bit count.
        .clamp(1.0, 2_147_483_647.0);
    let callback = v8::Global::new(scope, callback);
    let extra = (2..args.length())
        .map(|i| v8::Global::new(scope, args.get(i)))
        .collect();
    let Some(state) = scope.get_slot_mut::<RunState>() else {
        throw_type_error(scope, "timers are not available here");
        return;
    };
    let id = state.timers.add(
        callback,
        extra,
        Duration::from_millis(millis as u64),
        repeat,
        unref,
    );
    rv.set_uint32(id);
}

fn set_timeout<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    schedule(scope, &args, &mut rv, false, false);
}

fn set_interval<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    schedule(scope, &args, &mut rv, true, false);
}

/// A one-shot timer that does not keep the run going; the Web layer's.
pub(crate) fn set_timeout_unref<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    schedule(scope, &args, &mut rv, false, true);
}

pub(crate) fn clear_timer<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue<'s, v8::Value>,
) {
    let Some(id) = args.get(0).uint32_value(scope) else {
        return;
    };
    if let Some(state) = scope.get_slot_mut::<RunState>() {
        state.timers.clear(id);
    }
}

fn queue_microtask<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue<'s, v8::Value>,
) {
    match v8::Local::<v8::Function>::try_from(args.get(0)) {
        Ok(callback) => scope.enqueue_microtask(callback),
        Err(_) => throw_type_error(scope, "queueMicrotask: the callback must be a function"),
    }
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
        let text = out.into_string();
        assert!(text.starts_with("12345\nabcd"), "{text}");
        assert!(text.contains("[output truncated: over 10 bytes]"), "{text}");
        assert!(!text.contains("never"), "{text}");
    }
}
