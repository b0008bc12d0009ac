//! Moving bytes and strings between V8 values and Rust, for the natives.

use crate::engine::services::memory::Held;

/// The bytes of an `ArrayBuffer` or any view of one (copied).
pub(crate) fn bytes_of(value: v8::Local<'_, v8::Value>) -> Option<Vec<u8>> {
    if let Ok(view) = v8::Local::<v8::ArrayBufferView>::try_from(value) {
        let mut out = vec![0; view.byte_length()];
        let copied = view.copy_contents(&mut out);
        out.truncate(copied);
        return Some(out);
    }
    if let Ok(buffer) = v8::Local::<v8::ArrayBuffer>::try_from(value) {
        let length = buffer.byte_length();
        let Some(data) = buffer.data() else {
            return Some(Vec::new());
        };
        // SAFETY: V8 keeps the buffer alive (it is a local in this scope) and
        // `length` is its current byte length; JavaScript cannot run meanwhile.
        let slice = unsafe { std::slice::from_raw_parts(data.as_ptr() as *const u8, length) };
        return Some(slice.to_vec());
    }
    None
}

/// A new `ArrayBuffer` holding `bytes`, in V8's own memory so snapshots
/// copy it like any other buffer; `None`, with a `RangeError` thrown, when
/// the run's budget has no room for it (V8's `ArrayBuffer::New` would end
/// the process instead).
pub(crate) fn array_buffer<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    bytes: &[u8],
) -> Option<v8::Local<'s, v8::ArrayBuffer>> {
    if !crate::engine::services::memory::room_for(scope, bytes.len()) {
        return None;
    }
    let buffer = v8::ArrayBuffer::new(scope, bytes.len());
    if let Some(data) = buffer.data() {
        // SAFETY: the buffer was just made with exactly `bytes.len()` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), data.as_ptr() as *mut u8, bytes.len())
        };
    }
    Some(buffer)
}

/// Copies `bytes` into the memory `view` looks at, from its start; at most
/// the view's length.
pub(crate) fn write_into_view(
    scope: &mut v8::PinScope<'_, '_>,
    view: v8::Local<'_, v8::ArrayBufferView>,
    bytes: &[u8],
) {
    let length = bytes.len().min(view.byte_length());
    if let Some(data) = view.buffer(scope).and_then(|b| b.data()) {
        // SAFETY: at most the view's length from its offset, which lie within
        // its buffer; the local keeps the buffer alive and no JavaScript runs
        // during the copy.
        unsafe {
            let start = (data.as_ptr() as *mut u8).add(view.byte_offset());
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), start, length);
        }
    }
}

/// The `[name, value, name, value, …]` arrays the JavaScript side passes,
/// as pairs; `None` when an element cannot be read.
pub(crate) fn flat_pairs<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    flat: v8::Local<'s, v8::Array>,
) -> Option<Vec<(v8::Local<'s, v8::Value>, v8::Local<'s, v8::Value>)>> {
    (0..flat.length() / 2)
        .map(|i| {
            Some((
                flat.get_index(scope, 2 * i)?,
                flat.get_index(scope, 2 * i + 1)?,
            ))
        })
        .collect()
}

pub(crate) fn uint8_array<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    bytes: &[u8],
) -> Option<v8::Local<'s, v8::Uint8Array>> {
    let buffer = array_buffer(scope, bytes)?;
    v8::Uint8Array::new(scope, buffer, 0, bytes.len())
}

/// Bytes the host may use per UTF-16 unit of a string it copies out of V8
/// for a native: the units themselves and a UTF-8 or decoded copy.
const HELD_PER_UNIT: usize = 4;

/// The UTF-16 code units of a string value, the host's copies of it held
/// against the run's budget while the native works: a string may be far
/// larger than the heap that holds it (a rope of repeats). `None`, with a
/// `RangeError` thrown that says `what`, when they do not fit.
pub(crate) fn utf16_held(
    scope: &mut v8::PinScope<'_, '_>,
    value: v8::Local<'_, v8::Value>,
    what: &str,
) -> Option<(Vec<u16>, Option<Held>)> {
    let string = value.to_string(scope)?;
    let held = crate::engine::services::memory::hold(
        scope,
        string.length().saturating_mul(HELD_PER_UNIT),
        what,
    )?;
    Some((utf16(scope, string.into()), held))
}

/// The UTF-16 code units of a string value (lone surrogates included).
pub(crate) fn utf16(scope: &mut v8::PinScope<'_, '_>, value: v8::Local<'_, v8::Value>) -> Vec<u16> {
    utf16_prefix(scope, value, usize::MAX).0
}

/// The first `max` UTF-16 code units of a string value, and whether there
/// were more: a native that needs only a prefix copies only that much of a
/// string that may be far larger than the heap (a rope of repeats).
pub(crate) fn utf16_prefix(
    scope: &mut v8::PinScope<'_, '_>,
    value: v8::Local<'_, v8::Value>,
    max: usize,
) -> (Vec<u16>, bool) {
    let Some(string) = value.to_string(scope) else {
        return (Vec::new(), false);
    };
    let length = string.length();
    let mut units = vec![0; length.min(max)];
    string.write_v2(scope, 0, &mut units, v8::WriteFlags::empty());
    (units, length > max)
}

pub(crate) fn string<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    text: &str,
) -> Option<v8::Local<'s, v8::String>> {
    v8::String::new_from_utf8(scope, text.as_bytes(), v8::NewStringType::Normal)
}

/// `texts` as a JavaScript array of strings.
pub(crate) fn string_array<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    texts: &[String],
) -> v8::Local<'s, v8::Array> {
    let values: Vec<v8::Local<v8::Value>> = texts
        .iter()
        .filter_map(|text| string(scope, text).map(Into::into))
        .collect();
    v8::Array::new_with_elements(scope, &values)
}
