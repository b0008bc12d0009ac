//! Timers and `queueMicrotask`: the globals a fresh context gets, the
//! unref'd timer of the events family (`AbortSignal.timeout`), and the
//! queue the run's event loop drains.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use v8::MapFnTo;

use crate::engine::capability::{family_capability, slot_capability};
use crate::engine::layer::registry::{Family, Natives, define, throw_type_error};
use crate::engine::services::memory::Held;

/// A callback waiting in the timer queue.
pub(crate) struct Timer {
    id: u32,
    pub(crate) callback: v8::Global<v8::Function>,
    pub(crate) args: Vec<v8::Global<v8::Value>>,
    repeat: Option<Duration>,
    /// Does not keep the run going (`AbortSignal.timeout`'s timer, like
    /// Node's unref'd ones): it fires only while something else is pending.
    unref: bool,
    /// The period of the Node interval this one-shot timer is a turn of
    /// (timers.js re-arms it), for what a timed-out run says was pending.
    interval: Option<Duration>,
    /// What the timer holds of the run's budget, given back when it goes.
    _held: Option<Held>,
}

/// Host memory a pending timer holds (its entry, the queue's and the
/// handles' nodes), measured at about 310 bytes with no arguments.
const TIMER_BYTES: usize = 320;
/// And per argument it keeps for its callback.
const TIMER_ARGUMENT_BYTES: usize = 32;

/// The run's timers, ordered by due time, then by creation, as in browsers
/// and Node; kept in an isolate slot. Dropping them (when the run ends)
/// drops their handles, which a snapshot must not hold.
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

// Timer callbacks are handles: they go with the run.
slot_capability!(Timers);

family_capability!(
    /// `EventTarget`, `AbortController` and their kin (`events.js`).
    Events,
    Family {
        name: "events",
        source: include_str!("events.js"),
        deps: &[],
        natives: events_natives,
        globals: &["DOMException", "Event", "EventTarget", "CustomEvent", "AbortController", "AbortSignal"],
        version: 1,
    }
);

impl Default for Timers {
    /// Ids start at random, so an id a heap kept from an earlier run (a
    /// `Timeout`'s, or the number the first release's `setTimeout` gave)
    /// names no timer of this one: clearing it clears nothing.
    fn default() -> Self {
        Self {
            next_id: rand::random::<u32>() >> 1,
            seq: 0,
            queue: BTreeMap::new(),
            slots: HashMap::new(),
            refd: 0,
            running: None,
            running_cleared: false,
        }
    }
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
        (repeat, unref, interval): (bool, bool, Option<Duration>),
        held: Option<Held>,
    ) -> u32 {
        self.next_id = self.next_id.wrapping_add(1).max(1);
        let id = self.next_id;
        let timer = Timer {
            id,
            callback,
            args,
            repeat: repeat.then_some(delay),
            unref,
            interval,
            _held: held,
        };
        self.schedule(timer, Instant::now() + delay);
        id
    }

    /// Whether a queued timer keeps the run going (Node's `ref`/`unref`).
    fn set_ref(&mut self, id: u32, refed: bool) {
        if let Some(slot) = self.slots.get(&id)
            && let Some(timer) = self.queue.get_mut(slot)
            && timer.unref == refed
        {
            timer.unref = !refed;
            if refed {
                self.refd += 1;
            } else {
                self.refd -= 1;
            }
        }
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

    /// The timers that kept a run going past its deadline, for its error:
    /// an agent that left an interval running learns which, and how to stop
    /// it. `None` when none was pending.
    pub(crate) fn pending_description(&self) -> Option<String> {
        let mut intervals = Vec::new();
        let mut timeouts = 0;
        for timer in self.queue.values().filter(|timer| !timer.unref) {
            match (timer.repeat, timer.interval) {
                (Some(every), _) => intervals.push(format!(
                    "setInterval id {} (every {} ms)",
                    timer.id,
                    every.as_millis()
                )),
                (None, Some(every)) => {
                    intervals.push(format!("setInterval (every {} ms)", every.as_millis()))
                }
                (None, None) => timeouts += 1,
            }
        }
        if intervals.is_empty() && timeouts == 0 {
            return None;
        }
        let mut what = intervals;
        if timeouts > 0 {
            what.push(format!("{timeouts} setTimeout"));
        }
        Some(format!(
            "pending when the time ran out: {}. A run lasts until its timers end: stop an interval \
             with clearInterval(what setInterval returned) once it has done its work (or await a \
             promise that settles)",
            what.join(", ")
        ))
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
}

/// The timer globals' entries of the native table, in their first order
/// (`clearInterval` is `clearTimeout`'s function under another name).
pub(crate) fn globals() -> Natives {
    vec![
        ("setTimeout", set_timeout.map_fn_to()),
        ("setInterval", set_interval.map_fn_to()),
        ("clearTimeout", clear_timer.map_fn_to()),
        ("queueMicrotask", queue_microtask.map_fn_to()),
    ]
}

/// Puts `queueMicrotask` on a fresh context's global object. The timers
/// themselves are Node's (the "node_timers" family, `node/timers.js`);
/// heaps made before it keep these natives as their `setTimeout` and kin.
pub(crate) fn install<'s>(scope: &mut v8::PinScope<'s, '_>, global: v8::Local<'s, v8::Object>) {
    let natives: Natives = vec![("queueMicrotask", queue_microtask.map_fn_to())];
    define(scope, global, natives);
}

/// The natives of the events family's file: a timer that does not hold the
/// run, and its clear.
pub(crate) fn events_natives() -> Natives {
    vec![
        ("setTimeout", set_timeout_unref.map_fn_to()),
        ("clearTimeout", clear_timer.map_fn_to()),
    ]
}

/// The natives of Node's timer model (`node/timers.js`): a one-shot timer
/// that may keep the run going or not and may be due at once (an
/// immediate), its `ref`/`unref`, and its clear.
pub(crate) fn node_natives() -> Natives {
    vec![
        ("schedule", schedule_node.map_fn_to()),
        ("ref", set_ref.map_fn_to()),
        ("clear", clear_timer.map_fn_to()),
    ]
}

/// How a timer is asked for: by the first globals (`setTimeout(callback,
/// ms, ...args)`, at least 1 ms), or by Node's model (`schedule(callback,
/// ms, refed, timer, interval)`, at least 0 ms, the callback given the
/// timer; `interval`, the period when it is a turn of one).
#[derive(Clone, Copy)]
enum Asked {
    Web { repeat: bool, unref: bool },
    Node,
}

fn schedule<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: &v8::FunctionCallbackArguments<'s>,
    rv: &mut v8::ReturnValue<'s, v8::Value>,
    asked: Asked,
) {
    let name = match asked {
        Asked::Web { repeat: true, .. } => "setInterval",
        Asked::Web { .. } => "setTimeout",
        Asked::Node => "timers",
    };
    let Ok(callback) = v8::Local::<v8::Function>::try_from(args.get(0)) else {
        throw_type_error(scope, &format!("{name}: the callback must be a function"));
        return;
    };
    let least = if matches!(asked, Asked::Node) {
        0.0
    } else {
        1.0
    };
    let millis = args
        .get(1)
        .number_value(scope)
        .filter(|ms| ms.is_finite())
        .unwrap_or(0.0)
        // Node's bounds: at least 1 ms, at most a signed 32-bit count.
        .clamp(least, 2_147_483_647.0);
    let Some(pending) = scope.get_slot::<Timers>().map(|t| t.slots.len()) else {
        throw_type_error(scope, "timers are not available here");
        return;
    };
    let (extra, kind): (Vec<_>, _) = match asked {
        Asked::Web { repeat, unref } => (
            (2..args.length()).map(|i| args.get(i)).collect(),
            (repeat, unref, None),
        ),
        Asked::Node => {
            let interval = args
                .get(4)
                .number_value(scope)
                .filter(|ms| ms.is_finite() && *ms > 0.0)
                .map(|ms| Duration::from_millis(ms as u64));
            let unref = !args.get(2).boolean_value(scope);
            (vec![args.get(3)], (false, unref, interval))
        }
    };
    let bytes = TIMER_BYTES + TIMER_ARGUMENT_BYTES * extra.len();
    let what = format!("{name}: the run already has {pending} timers pending");
    let Some(held) = crate::engine::services::memory::hold(scope, bytes, &what) else {
        return;
    };
    let callback = v8::Global::new(scope, callback);
    let extra = extra
        .into_iter()
        .map(|a| v8::Global::new(scope, a))
        .collect();
    let Some(timers) = scope.get_slot_mut::<Timers>() else {
        return;
    };
    let id = timers.add(
        callback,
        extra,
        Duration::from_millis(millis as u64),
        kind,
        held,
    );
    rv.set_uint32(id);
}

fn schedule_node<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    schedule(scope, &args, &mut rv, Asked::Node);
}

fn set_ref<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue<'s, v8::Value>,
) {
    let Some(id) = args.get(0).uint32_value(scope) else {
        return;
    };
    let refed = args.get(1).boolean_value(scope);
    if let Some(timers) = scope.get_slot_mut::<Timers>() {
        timers.set_ref(id, refed);
    }
}

fn set_timeout<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    schedule(
        scope,
        &args,
        &mut rv,
        Asked::Web {
            repeat: false,
            unref: false,
        },
    );
}

fn set_interval<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    schedule(
        scope,
        &args,
        &mut rv,
        Asked::Web {
            repeat: true,
            unref: false,
        },
    );
}

fn set_timeout_unref<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    schedule(
        scope,
        &args,
        &mut rv,
        Asked::Web {
            repeat: false,
            unref: true,
        },
    );
}

fn clear_timer<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue<'s, v8::Value>,
) {
    let Some(id) = args.get(0).uint32_value(scope) else {
        return;
    };
    if let Some(timers) = scope.get_slot_mut::<Timers>() {
        timers.clear(id);
    }
}

fn queue_microtask<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue<'s, v8::Value>,
) {
    match v8::Local::<v8::Function>::try_from(args.get(0)) {
        Ok(callback) => super::microtasks::enqueue(scope, callback),
        Err(_) => throw_type_error(scope, "queueMicrotask: the callback must be a function"),
    }
}
