//! Natives of `TextEncoder`, `TextDecoder` (encoding_rs), `atob` and `btoa`.

use base64::Engine as _;
use v8::MapFnTo;

use crate::engine::capability::family_capability;
use crate::engine::layer::bytes::{
    bytes_of, string, uint8_array, utf16_held, utf16_prefix, write_into_view,
};
use crate::engine::layer::registry::throw_type_error;
use crate::engine::layer::registry::{Family, Natives};

family_capability!(
    /// `TextEncoder`, `TextDecoder`, `atob` and `btoa` (`encoding.js`).
    Encoding,
    Family {
        name: "encoding",
        source: include_str!("encoding.js"),
        deps: &["events"],
        natives,
        globals: &["TextEncoder", "TextDecoder", "atob", "btoa"],
        version: 1,
    }
);

pub(crate) fn natives() -> Natives {
    vec![
        ("encode", encode.map_fn_to()),
        ("encodeInto", encode_into.map_fn_to()),
        ("label", label.map_fn_to()),
        ("decode", decode.map_fn_to()),
        ("atob", atob.map_fn_to()),
        ("btoa", btoa.map_fn_to()),
    ]
}

/// UTF-8 of the string, lone surrogates as U+FFFD (the Encoding Standard's
/// "scalar value string").
fn encode<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    // The output, at least a byte per unit, must fit the run's buffer
    // budget: a string that may be far larger than the heap (a rope of
    // repeats) is refused before any copy of it is made. Its length needs
    // no flattening; its UTF-8 length would, which for such a rope is a
    // fatal out-of-memory inside V8.
    if let Ok(string) = v8::Local::<v8::String>::try_from(args.get(0))
        && !crate::engine::services::memory::room_for(scope, string.length())
    {
        return;
    }
    let Some((units, held)) = utf16_held(scope, args.get(0), "TextEncoder.encode") else {
        return;
    };
    let text = String::from_utf16_lossy(&units);
    drop(units);
    drop(held);
    if let Some(array) = uint8_array(scope, text.as_bytes()) {
        rv.set(array.into());
    }
}

/// `[read, written]`: whole characters only, read counted in UTF-16 units.
fn encode_into<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let Ok(target) = v8::Local::<v8::Uint8Array>::try_from(args.get(1)) else {
        throw_type_error(scope, "encodeInto: the destination must be a Uint8Array");
        return;
    };
    let room = target.byte_length();
    // Each character takes a byte at least and two units at most: no more
    // of the source than this can be read.
    let (units, _) = utf16_prefix(scope, args.get(0), room.saturating_mul(2).saturating_add(1));
    let mut out = Vec::with_capacity(room.min(units.len() * 3));
    let mut read = 0;
    for c in char::decode_utf16(units.iter().copied()) {
        let c = c.unwrap_or(char::REPLACEMENT_CHARACTER);
        let mut buf = [0; 4];
        let encoded = c.encode_utf8(&mut buf);
        if out.len() + encoded.len() > room {
            break;
        }
        out.extend_from_slice(encoded.as_bytes());
        read += if (c as u32) > 0xFFFF { 2 } else { 1 };
    }
    write_into_view(scope, target.into(), &out);
    let pair = [
        v8::Number::new(scope, read as f64).into(),
        v8::Number::new(scope, out.len() as f64).into(),
    ];
    rv.set(v8::Array::new_with_elements(scope, &pair).into());
}

/// The encoding's name for a label (lowercase, as `TextDecoder.encoding`
/// reports it), or `undefined` for a label the Encoding Standard lacks.
fn label<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let label = args.get(0).to_rust_string_lossy(scope);
    if let Some(encoding) = encoding_rs::Encoding::for_label(label.as_bytes())
        && let Some(name) = string(scope, &encoding.name().to_ascii_lowercase())
    {
        rv.set(name.into());
    }
}

/// `decode(name, bytes, fatal, stream)` → `[text, pending]`: `pending`
/// trailing bytes are an unfinished character the caller keeps for the
/// next call, in the heap, so a streaming decoder survives a snapshot.
/// Throws a `TypeError` on malformed input when `fatal`.
fn decode<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let name = args.get(0).to_rust_string_lossy(scope);
    let Some(encoding) = encoding_rs::Encoding::for_label(name.as_bytes()) else {
        throw_type_error(scope, "decode: unknown encoding");
        return;
    };
    let Some(bytes) = bytes_of(args.get(1)) else {
        throw_type_error(
            scope,
            "decode: the input must be an ArrayBuffer or a view of one",
        );
        return;
    };
    let fatal = args.get(2).boolean_value(scope);
    let stream = args.get(3).boolean_value(scope);
    let pending = if stream {
        unfinished(encoding, &bytes)
    } else {
        0
    };
    let complete = &bytes[..bytes.len() - pending];
    let text = if fatal {
        match encoding.decode_without_bom_handling_and_without_replacement(complete) {
            Some(text) => text,
            None => {
                throw_type_error(
                    scope,
                    &format!(
                        "The encoded data was not valid {}.",
                        name.to_ascii_lowercase()
                    ),
                );
                return;
            }
        }
    } else {
        encoding.decode_without_bom_handling(complete).0
    };
    let Some(text) = string(scope, &text) else {
        throw_type_error(scope, "decode: the text is too long for a string");
        return;
    };
    let pair = [text.into(), v8::Number::new(scope, pending as f64).into()];
    rv.set(v8::Array::new_with_elements(scope, &pair).into());
}

/// How many trailing bytes begin a character the input does not finish.
/// The multi-byte legacy encodings (Shift_JIS, GB18030, ISO-2022-JP, …)
/// keep state a byte count cannot describe: their streamed input is held
/// whole until the call that ends the stream (docs/engine.md).
fn unfinished(encoding: &'static encoding_rs::Encoding, bytes: &[u8]) -> usize {
    if encoding == encoding_rs::UTF_8 {
        for k in 1..=bytes.len().min(3) {
            if let Err(error) = std::str::from_utf8(&bytes[bytes.len() - k..])
                && error.valid_up_to() == 0
                && error.error_len().is_none()
            {
                return k;
            }
        }
        0
    } else if encoding == encoding_rs::UTF_16LE || encoding == encoding_rs::UTF_16BE {
        let odd = bytes.len() % 2;
        let whole = &bytes[..bytes.len() - odd];
        let last = whole.len().checked_sub(2).map(|i| {
            let pair = [whole[i], whole[i + 1]];
            if encoding == encoding_rs::UTF_16LE {
                u16::from_le_bytes(pair)
            } else {
                u16::from_be_bytes(pair)
            }
        });
        match last {
            Some(0xD800..=0xDBFF) => odd + 2,
            _ => odd,
        }
    } else if encoding.is_single_byte() {
        0
    } else {
        bytes.len()
    }
}

/// Forgiving-base64 decode (HTML): the decoded bytes as a Latin-1 string,
/// or `undefined` when the input is not base64 (the caller throws the
/// `InvalidCharacterError`).
fn atob<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let Some((units, _held)) = utf16_held(scope, args.get(0), "atob") else {
        return;
    };
    let Some(bytes) = forgiving_base64(&units) else {
        return;
    };
    if let Some(text) = v8::String::new_from_one_byte(scope, &bytes, v8::NewStringType::Normal) {
        rv.set(text.into());
    }
}

fn forgiving_base64(units: &[u16]) -> Option<Vec<u8>> {
    let mut data: Vec<u8> = Vec::with_capacity(units.len());
    for &unit in units {
        match unit {
            0x09 | 0x0A | 0x0C | 0x0D | 0x20 => {}
            u if u < 0x80 => data.push(u as u8),
            _ => return None,
        }
    }
    if data.len().is_multiple_of(4) {
        for _ in 0..2 {
            if data.last() == Some(&b'=') {
                data.pop();
            }
        }
    }
    if data.len() % 4 == 1
        || !data
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/')
    {
        return None;
    }
    // The standard discards the bits past the last whole byte.
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireNone),
    );
    engine.decode(&data).ok()
}

/// Base64 of a string of code units up to U+00FF, or `undefined` when one
/// is above it.
fn btoa<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    mut rv: v8::ReturnValue<'s, v8::Value>,
) {
    let Some((units, _held)) = utf16_held(scope, args.get(0), "btoa") else {
        return;
    };
    let Some(bytes) = units
        .iter()
        .map(|&u| u8::try_from(u).ok())
        .collect::<Option<Vec<u8>>>()
    else {
        return;
    };
    let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
    if let Some(text) = string(scope, &encoded) {
        rv.set(text.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(s: &str) -> Vec<u16> {
        s.encode_utf16().collect()
    }

    #[test]
    fn forgiving_base64_follows_the_html_rules() {
        assert_eq!(forgiving_base64(&units("YQ==")), Some(b"a".to_vec()));
        assert_eq!(forgiving_base64(&units("YQ")), Some(b"a".to_vec()));
        assert_eq!(forgiving_base64(&units(" Y Q = = ")), Some(b"a".to_vec()));
        assert_eq!(
            forgiving_base64(&units("YR")),
            Some(b"a".to_vec()),
            "trailing bits are dropped"
        );
        assert_eq!(forgiving_base64(&units("Y")), None);
        assert_eq!(
            forgiving_base64(&units("YQ=")),
            None,
            "padding only on a multiple of four"
        );
        assert_eq!(forgiving_base64(&units("YQ===")), None);
        assert_eq!(forgiving_base64(&units("%")), None);
        assert_eq!(forgiving_base64(&units("")), Some(Vec::new()));
    }

    #[test]
    fn unfinished_characters_are_counted_per_encoding() {
        let utf8 = encoding_rs::UTF_8;
        assert_eq!(unfinished(utf8, b"ab"), 0);
        assert_eq!(unfinished(utf8, &[0x61, 0xF0, 0x9F, 0x98]), 3);
        assert_eq!(unfinished(utf8, &[0xE2, 0x82]), 2);
        assert_eq!(
            unfinished(utf8, &[0x61, 0x80]),
            0,
            "a stray continuation byte is an error now"
        );
        assert_eq!(unfinished(encoding_rs::UTF_16LE, &[0x61, 0x00, 0x3D]), 1);
        assert_eq!(unfinished(encoding_rs::UTF_16LE, &[0x3D, 0xD8]), 2);
        assert_eq!(unfinished(encoding_rs::UTF_16BE, &[0xD8, 0x3D, 0xDE]), 3);
        assert_eq!(unfinished(encoding_rs::WINDOWS_1252, &[0x80]), 0);
        assert_eq!(unfinished(encoding_rs::SHIFT_JIS, &[0x82, 0xA0]), 2);
    }
}
