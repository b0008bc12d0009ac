//! Readable rendering of JavaScript values (console arguments and results
//! that are not JSON), in the style of Node's `util.inspect`.

use std::fmt::Write as _;

/// Nested objects deeper than this print as `[Object]`.
const MAX_DEPTH: usize = 2;
/// Array items and object properties shown before `... N more`.
const MAX_ITEMS: usize = 100;
/// Stop rendering one value past this many bytes.
const MAX_LEN: usize = 64 * 1024;

/// Renders `value` for a human; strings at the top level print bare.
pub(crate) fn inspect<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    value: v8::Local<'s, v8::Value>,
) -> String {
    render(scope, value, true)
}

/// `value` rendered, its top-level string bare when `bare_string`. A run
/// being terminated (its deadline) stops the rendering where it is.
fn render<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    value: v8::Local<'s, v8::Value>,
    bare_string: bool,
) -> String {
    let mut w = Writer {
        out: String::new(),
        seen: Vec::new(),
        cut_string: None,
    };
    w.value(scope, value, 0, bare_string);
    if w.out.len() > MAX_LEN {
        let cut = w.out.floor_char_boundary(MAX_LEN);
        w.out.truncate(cut);
        match w.cut_string {
            Some(length) => {
                let _ = write!(w.out, "…[cut: a string of {length} characters; {CUT_RULE}]");
            }
            None => {
                let _ = write!(w.out, "…[cut: {CUT_RULE}]");
            }
        }
    }
    w.out
}

/// Bytes kept free under the result cap for a truncation marker.
const MARKER_ROOM: usize = 128;

/// Why a rendering stopped at [`MAX_LEN`], in its marker: the model must
/// know the text is not whole, and what to do.
const CUT_RULE: &str =
    "one value is shown up to its first 64 KiB; write larger text to a /work file to keep it whole";

/// A run's completion value, rendered twice.
pub(crate) struct Rendered {
    /// JSON when the value has a JSON form, the readable form otherwise,
    /// `None` for `undefined` (the original server's `result`).
    pub result: Option<String>,
    /// As Node's REPL displays it: `[ NaN, -0 ]`, `10n`, `'text'`,
    /// `Map(1) { 'a' => 1 }`, `undefined`; what the model reads.
    pub repl: String,
}

/// Renders the completion value of a run, for programs and for the model,
/// copying no more than `max` bytes of it out of V8 (the result cap): a
/// string may be far larger than the heap that holds it (a rope), and its
/// JSON text would be larger still.
pub(crate) fn render_result<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    value: v8::Local<'s, v8::Value>,
    max: usize,
) -> Rendered {
    let repl = repl_text(scope, value);
    let result = if scope.is_execution_terminating() {
        None
    } else {
        json_or_readable(scope, value, max)
    };
    Rendered { result, repl }
}

/// `value` as a REPL displays it: strings quoted, so `'2'` and `2` differ.
fn repl_text<'s>(scope: &mut v8::PinScope<'s, '_>, value: v8::Local<'s, v8::Value>) -> String {
    render(scope, value, false)
}

fn json_or_readable<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    value: v8::Local<'s, v8::Value>,
    max: usize,
) -> Option<String> {
    if value.is_undefined() {
        return None;
    }
    // Room for the marker within the cap, so that it is what the reader
    // sees at the end rather than the cap's own.
    let max = max.saturating_sub(MARKER_ROOM);
    if value.is_string() {
        return Some(string_json(scope, value, max));
    }
    let json_faithful = value.is_null()
        || value.is_boolean()
        || value.is_string()
        || (value.is_number() && value.number_value(scope).is_some_and(f64::is_finite))
        || value.is_array()
        || (value.is_object()
            && !value.is_function()
            && !value.is_map()
            && !value.is_set()
            && !value.is_promise()
            && !value.is_native_error()
            && !value.is_proxy()
            && !value.is_weak_map()
            && !value.is_weak_set()
            && !value.is_symbol_object()
            && !value.is_big_int_object());
    if json_faithful {
        v8::tc_scope!(let tc, scope);
        if let Some(json) = v8::json::stringify(tc, value) {
            let (units, more) = crate::engine::layer::bytes::utf16_prefix(tc, json.into(), max + 1);
            let mut text = String::from_utf16_lossy(&units);
            if more {
                text.push_str(&format!(
                    "\n[result truncated: JSON of {} characters, the first {} shown]",
                    json.length(),
                    units.len()
                ));
            }
            return Some(text);
        }
        if tc.is_execution_terminating() {
            return None;
        }
        // Cycles, BigInt members or a throwing toJSON: fall back to the readable form.
    }
    Some(inspect(scope, value))
}

/// A string value as JSON, from at most `max` of its characters, cut with a
/// marker naming its length.
fn string_json<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    value: v8::Local<'s, v8::Value>,
    max: usize,
) -> String {
    let (units, more) = crate::engine::layer::bytes::utf16_prefix(scope, value, max);
    let mut json = json_quote(&units);
    if more {
        let length = value.to_string(scope).map_or(0, |s| s.length());
        json.push_str(&format!(
            "\n[result truncated: a string of {length} characters, the first {} shown]",
            units.len()
        ));
    }
    json
}

struct Writer<'s> {
    out: String,
    seen: Vec<v8::Local<'s, v8::Object>>,
    /// The length of a string shown only in part, for the marker.
    cut_string: Option<usize>,
}

impl<'s> Writer<'s> {
    fn full(&self) -> bool {
        self.out.len() > MAX_LEN
    }

    fn value(
        &mut self,
        scope: &mut v8::PinScope<'s, '_>,
        value: v8::Local<'s, v8::Value>,
        depth: usize,
        top: bool,
    ) {
        if self.full() || scope.is_execution_terminating() {
            return;
        }
        if value.is_undefined() {
            self.out.push_str("undefined");
        } else if value.is_null() {
            self.out.push_str("null");
        } else if value.is_string() {
            // No more of a string than can be shown is copied out of V8.
            let (units, more) =
                crate::engine::layer::bytes::utf16_prefix(scope, value, MAX_LEN + 1);
            let mut s = String::from_utf16_lossy(&units);
            if more {
                self.cut_string = value.to_string(scope).map(|s| s.length());
                s.push('…');
            }
            if top {
                self.out.push_str(&s);
            } else {
                quote(&mut self.out, &s);
            }
        } else if value.is_symbol() {
            let symbol: v8::Local<v8::Symbol> = value.try_into().expect("checked is_symbol");
            let description = symbol.description(scope);
            let description = if description.is_undefined() {
                String::new()
            } else {
                description.to_rust_string_lossy(scope)
            };
            let _ = write!(self.out, "Symbol({description})");
        } else if value.is_big_int() {
            let _ = write!(self.out, "{}n", value.to_rust_string_lossy(scope));
        } else if value.is_number() || value.is_boolean() {
            // JavaScript's own ToString says "0" for -0; inspectors do not.
            let negative_zero = value
                .number_value(scope)
                .is_some_and(|n| n == 0.0 && n.is_sign_negative());
            if negative_zero {
                self.out.push_str("-0");
            } else {
                self.out.push_str(&value.to_rust_string_lossy(scope));
            }
        } else if value.is_function() {
            self.function(scope, value);
        } else if let Ok(object) = v8::Local::<v8::Object>::try_from(value) {
            self.object(scope, object, depth);
        } else {
            self.out.push_str(&value.to_rust_string_lossy(scope));
        }
    }

    fn function(&mut self, scope: &mut v8::PinScope<'s, '_>, value: v8::Local<'s, v8::Value>) {
        let function: v8::Local<v8::Function> = value.try_into().expect("checked is_function");
        let name = function.get_name(scope).to_rust_string_lossy(scope);
        let source_start = function
            .to_string(scope)
            .map(|s| s.to_rust_string_lossy(scope))
            .unwrap_or_default();
        let kind = if source_start.starts_with("class") {
            "class"
        } else {
            "Function"
        };
        if name.is_empty() {
            let _ = write!(self.out, "[{kind} (anonymous)]");
        } else if kind == "class" {
            let _ = write!(self.out, "[class {name}]");
        } else {
            let _ = write!(self.out, "[Function: {name}]");
        }
    }

    fn object(
        &mut self,
        scope: &mut v8::PinScope<'s, '_>,
        object: v8::Local<'s, v8::Object>,
        depth: usize,
    ) {
        if self
            .seen
            .iter()
            .any(|seen| seen.strict_equals(object.into()))
        {
            self.out.push_str("[Circular]");
            return;
        }
        let value: v8::Local<v8::Value> = object.into();
        if value.is_native_error() {
            self.error(scope, object);
            return;
        }
        if value.is_date() {
            let date: v8::Local<v8::Date> = value.try_into().expect("checked is_date");
            self.out.push_str(&iso_date(date.value_of()));
            return;
        }
        if value.is_proxy() {
            // As Node's util.inspect shows a proxy: its target, and the
            // target's custom inspect, without running any trap.
            let proxy: v8::Local<v8::Proxy> = value.try_into().expect("checked is_proxy");
            if proxy.is_revoked() {
                self.out.push_str("<Revoked Proxy>");
                return;
            }
            let target = proxy.get_target(scope);
            match v8::Local::<v8::Object>::try_from(target) {
                Ok(target) => {
                    if !self.custom(scope, target, value, depth) {
                        self.object(scope, target, depth);
                    }
                }
                Err(_) => self.out.push_str("[Proxy]"),
            }
            return;
        }
        if self.custom(scope, object, value, depth) {
            return;
        }
        if value.is_reg_exp() {
            self.out.push_str(&value.to_rust_string_lossy(scope));
            return;
        }
        if value.is_promise() {
            let promise: v8::Local<v8::Promise> = value.try_into().expect("checked is_promise");
            match promise.state() {
                v8::PromiseState::Pending => self.out.push_str("Promise { <pending> }"),
                v8::PromiseState::Fulfilled => {
                    self.out.push_str("Promise { ");
                    let result = promise.result(scope);
                    self.nested(scope, object, result, depth);
                    self.out.push_str(" }");
                }
                v8::PromiseState::Rejected => {
                    self.out.push_str("Promise { <rejected> ");
                    let result = promise.result(scope);
                    self.nested(scope, object, result, depth);
                    self.out.push_str(" }");
                }
            }
            return;
        }
        let constructor = object.get_constructor_name().to_rust_string_lossy(scope);
        if depth > MAX_DEPTH {
            let label = if value.is_array() {
                "Array"
            } else if constructor.is_empty() {
                "Object"
            } else {
                &constructor
            };
            let _ = write!(self.out, "[{label}]");
            return;
        }
        if value.is_map() || value.is_set() {
            self.collection(scope, object, depth);
        } else if value.is_array() || value.is_typed_array() {
            self.array(scope, object, &constructor, depth);
        } else {
            self.plain(scope, object, &constructor, depth);
        }
    }

    /// Node's `util.inspect.custom` protocol: when `object` has a function
    /// at `Symbol.for('nodejs.util.inspect.custom')`, what it returns is
    /// shown (a string as it is), called on `receiver` with the depth left
    /// and an options object. `false`: no such function, or it threw or
    /// returned the object itself, and the object is shown as usual.
    fn custom(
        &mut self,
        scope: &mut v8::PinScope<'s, '_>,
        object: v8::Local<'s, v8::Object>,
        receiver: v8::Local<'s, v8::Value>,
        depth: usize,
    ) -> bool {
        let Some(name) = v8::String::new(scope, "nodejs.util.inspect.custom") else {
            return false;
        };
        let key = v8::Symbol::for_key(scope, name);
        v8::tc_scope!(let tc, scope);
        let Some(function) = object
            .get(tc, key.into())
            .and_then(|f| v8::Local::<v8::Function>::try_from(f).ok())
        else {
            return false;
        };
        let left = v8::Number::new(tc, MAX_DEPTH.saturating_sub(depth) as f64);
        let options = v8::Object::new(tc);
        let Some(shown) = function.call(tc, receiver, &[left.into(), options.into()]) else {
            return false;
        };
        if shown.strict_equals(receiver) || shown.strict_equals(object.into()) {
            return false;
        }
        if shown.is_string() {
            self.out.push_str(&shown.to_rust_string_lossy(tc));
        } else {
            self.nested(tc, object, shown, depth);
        }
        true
    }

    fn nested(
        &mut self,
        scope: &mut v8::PinScope<'s, '_>,
        parent: v8::Local<'s, v8::Object>,
        child: v8::Local<'s, v8::Value>,
        depth: usize,
    ) {
        self.seen.push(parent);
        self.value(scope, child, depth + 1, false);
        self.seen.pop();
    }

    fn error(&mut self, scope: &mut v8::PinScope<'s, '_>, object: v8::Local<'s, v8::Object>) {
        let stack = get(scope, object, "stack").filter(|v| v.is_string());
        let text = match stack {
            Some(stack) => stack.to_rust_string_lossy(scope),
            None => object
                .to_string(scope)
                .map(|s| s.to_rust_string_lossy(scope))
                .unwrap_or_else(|| "Error".to_owned()),
        };
        self.out.push_str(&text);
    }

    fn collection(
        &mut self,
        scope: &mut v8::PinScope<'s, '_>,
        object: v8::Local<'s, v8::Object>,
        depth: usize,
    ) {
        let value: v8::Local<v8::Value> = object.into();
        let (name, size, flat, pairs) = if value.is_map() {
            let map: v8::Local<v8::Map> = value.try_into().expect("checked is_map");
            ("Map", map.size(), map.as_array(scope), true)
        } else {
            let set: v8::Local<v8::Set> = value.try_into().expect("checked is_set");
            ("Set", set.size(), set.as_array(scope), false)
        };
        let _ = write!(self.out, "{name}({size}) {{");
        let step = if pairs { 2 } else { 1 };
        let shown = size.min(MAX_ITEMS);
        for i in 0..shown {
            self.out.push_str(if i == 0 { " " } else { ", " });
            let Some(item) = flat.get_index(scope, (i * step) as u32) else {
                break;
            };
            self.nested(scope, object, item, depth);
            if pairs {
                self.out.push_str(" => ");
                let Some(item) = flat.get_index(scope, (i * step + 1) as u32) else {
                    break;
                };
                self.nested(scope, object, item, depth);
            }
        }
        if size > shown {
            let _ = write!(self.out, ", ... {} more items", size - shown);
        }
        self.out.push_str(if size == 0 { "}" } else { " }" });
    }

    fn array(
        &mut self,
        scope: &mut v8::PinScope<'s, '_>,
        object: v8::Local<'s, v8::Object>,
        constructor: &str,
        depth: usize,
    ) {
        let length = get(scope, object, "length")
            .and_then(|v| v.uint32_value(scope))
            .unwrap_or(0) as usize;
        let value: v8::Local<v8::Value> = object.into();
        if value.is_typed_array() {
            let _ = write!(self.out, "{constructor}({length}) ");
        }
        if length == 0 {
            self.out.push_str("[]");
            return;
        }
        self.out.push('[');
        let shown = length.min(MAX_ITEMS);
        for i in 0..shown {
            self.out.push_str(if i == 0 { " " } else { ", " });
            match object.get_index(scope, i as u32) {
                Some(item) => self.nested(scope, object, item, depth),
                None => break,
            }
            if self.full() {
                return;
            }
        }
        if length > shown {
            let _ = write!(self.out, ", ... {} more items", length - shown);
        }
        self.out.push_str(" ]");
    }

    fn plain(
        &mut self,
        scope: &mut v8::PinScope<'s, '_>,
        object: v8::Local<'s, v8::Object>,
        constructor: &str,
        depth: usize,
    ) {
        if !constructor.is_empty() && constructor != "Object" {
            let _ = write!(self.out, "{constructor} ");
        }
        let Some(keys) = object.get_own_property_names(scope, v8::GetPropertyNamesArgs::default())
        else {
            self.out.push_str("{}");
            return;
        };
        let count = keys.length() as usize;
        if count == 0 {
            self.out.push_str("{}");
            return;
        }
        self.out.push('{');
        let shown = count.min(MAX_ITEMS);
        for i in 0..shown {
            self.out.push_str(if i == 0 { " " } else { ", " });
            let Some(key) = keys.get_index(scope, i as u32) else {
                break;
            };
            let name = key.to_rust_string_lossy(scope);
            if is_identifier(&name) {
                self.out.push_str(&name);
            } else {
                quote(&mut self.out, &name);
            }
            self.out.push_str(": ");
            match object.get(scope, key) {
                Some(item) => self.nested(scope, object, item, depth),
                None => break,
            }
            if self.full() {
                return;
            }
        }
        if count > shown {
            let _ = write!(self.out, ", ... {} more properties", count - shown);
        }
        self.out.push_str(" }");
    }
}

fn get<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    object: v8::Local<'s, v8::Object>,
    name: &str,
) -> Option<v8::Local<'s, v8::Value>> {
    let key = v8::String::new(scope, name)?;
    object.get(scope, key.into())
}

/// UTF-16 text as a JSON string, escaped as `JSON.stringify` escapes it
/// (well-formed: a lone surrogate becomes `\udXXX`).
fn json_quote(units: &[u16]) -> String {
    let mut out = String::with_capacity(units.len() + 2);
    out.push('"');
    for decoded in char::decode_utf16(units.iter().copied()) {
        match decoded {
            Ok('"') => out.push_str("\\\""),
            Ok('\\') => out.push_str("\\\\"),
            Ok('\n') => out.push_str("\\n"),
            Ok('\r') => out.push_str("\\r"),
            Ok('\t') => out.push_str("\\t"),
            Ok('\u{8}') => out.push_str("\\b"),
            Ok('\u{c}') => out.push_str("\\f"),
            Ok(c) if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            Ok(c) => out.push(c),
            Err(lone) => {
                let _ = write!(out, "\\u{:04x}", lone.unpaired_surrogate());
            }
        }
    }
    out.push('"');
    out
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '$')
}

fn quote(out: &mut String, s: &str) {
    out.push('\'');
    for c in s.chars() {
        match c {
            '\'' => out.push_str("\\'"),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('\'');
}

fn iso_date(millis: f64) -> String {
    if !millis.is_finite() {
        return "Invalid Date".to_owned();
    }
    let nanos = (millis as i128) * 1_000_000;
    time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| {
            t.format(time::macros::format_description!(
                "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
            ))
            .ok()
        })
        .unwrap_or_else(|| "Invalid Date".to_owned())
}
