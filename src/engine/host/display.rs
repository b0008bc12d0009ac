//! Natives of `display()` (`display.js`): the blocks a run adds to its tool
//! result, kept outside the heap until the run ends.

use ::bytes::Bytes;
use v8::MapFnTo;

use super::fs::KeptFiles;
use crate::backends::content::ContentKey;
use crate::engine::capability::outcome::{Displayed, RunReport};
use crate::engine::capability::{Capability, RunScope};
use crate::engine::layer::bytes::bytes_of;
use crate::engine::layer::registry::Family;
use crate::engine::layer::registry::{Natives, throw_error_with_code};
use crate::units::MIB;

pub(crate) fn natives() -> Natives {
    vec![("show", show.map_fn_to())]
}

/// Blocks one run may add.
pub const MAX_DISPLAYS: usize = 100;

/// Bytes of blocks one run keeps: what one answer could carry at most
/// (`tools::MAX_RESULT_JSON_BYTES`). A block past it is kept without its
/// bytes, which can still become a link to a file holding them.
pub const MAX_DISPLAY_BYTES: usize = 5 * MIB;

/// A run's blocks (an isolate slot).
#[derive(Default)]
pub(crate) struct Displays {
    shown: Vec<Displayed>,
    kept_bytes: usize,
}

impl Capability for Displays {
    const FAMILY: Option<&'static Family> = Some(&Family {
        name: "display",
        source: include_str!("display.js"),
        deps: &[],
        natives,
        globals: &["display"],
        version: 4,
    });
    type Settings = ();
    type Ask = ();
    /// The run's blocks, in call order; those whose bytes a file of the
    /// output heap's `/work` holds link to it.
    type Report = Vec<Displayed>;

    fn show(shown_blocks: &mut Vec<Displayed>, shown: &mut RunReport) {
        shown.displays = std::mem::take(shown_blocks);
    }

    fn begin(isolate: &mut v8::Isolate, _: &(), _: &RunScope<'_>) {
        isolate.set_slot(Self::default());
    }

    fn end(isolate: &mut v8::Isolate) -> Vec<Displayed> {
        let mut shown = isolate
            .remove_slot::<Self>()
            .map(|displays| displays.shown)
            .unwrap_or_default();
        if let Some(kept) = isolate.get_slot::<KeptFiles>() {
            for displayed in &mut shown {
                displayed.path = kept.paths.get(&displayed.key).cloned();
            }
        }
        shown
    }

    fn cancelled(shown: &mut Vec<Displayed>) {
        shown.clear();
    }
}

/// What bytes given without a media type are, by their first bytes.
fn sniff(bytes: &[u8]) -> &'static str {
    match bytes {
        [0x89, b'P', b'N', b'G', ..] => "image/png",
        [0xff, 0xd8, 0xff, ..] => "image/jpeg",
        [b'G', b'I', b'F', b'8', ..] => "image/gif",
        [
            b'R',
            b'I',
            b'F',
            b'F',
            _,
            _,
            _,
            _,
            b'W',
            b'E',
            b'B',
            b'P',
            ..,
        ] => "image/webp",
        _ if std::str::from_utf8(bytes).is_ok_and(|t| t.trim_start().starts_with("<svg")) => {
            "image/svg+xml"
        }
        _ => "application/octet-stream",
    }
}

/// `show(body, mimeType, name)`: `body` is a string (UTF-8) or bytes;
/// an empty `mimeType` means "recognise it".
fn show<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue<'s, v8::Value>,
) {
    let body = args.get(0);
    let bytes = if body.is_string() {
        body.to_rust_string_lossy(scope).into_bytes()
    } else {
        bytes_of(body).unwrap_or_default()
    };
    let mime_type = args.get(1).to_rust_string_lossy(scope);
    let name = args.get(2).to_rust_string_lossy(scope);
    let Some(displays) = scope.get_slot_mut::<Displays>() else {
        throw_error_with_code(
            scope,
            "display() works only while a run executes",
            "ERR_INVALID_STATE",
        );
        return;
    };
    if displays.shown.len() >= MAX_DISPLAYS {
        throw_error_with_code(
            scope,
            &format!(
                "display: a run may add at most {MAX_DISPLAYS} blocks; combine them (one image of several charts, one table)"
            ),
            "ERR_OUT_OF_RANGE",
        );
        return;
    }
    let mime_type = if mime_type.is_empty() {
        sniff(&bytes).to_owned()
    } else {
        mime_type
    };
    let size = bytes.len();
    let key = ContentKey::of(&bytes);
    let bytes = (displays.kept_bytes + size <= MAX_DISPLAY_BYTES).then(|| {
        displays.kept_bytes += size;
        Bytes::from(bytes)
    });
    displays.shown.push(Displayed {
        mime_type,
        name: (!name.is_empty()).then_some(name),
        key,
        size,
        bytes,
        path: None,
    });
}

#[cfg(test)]
mod tests {
    use super::sniff;

    #[test]
    fn bytes_without_a_type_are_recognised_by_their_signature() {
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n...."), "image/png");
        assert_eq!(sniff(b"\xff\xd8\xff\xe0"), "image/jpeg");
        assert_eq!(sniff(b"GIF89a"), "image/gif");
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), "image/webp");
        assert_eq!(
            sniff(b"  <svg xmlns='http://www.w3.org/2000/svg'/>"),
            "image/svg+xml"
        );
        assert_eq!(sniff(b"\0\x01"), "application/octet-stream");
        assert_eq!(sniff(b"RIFF\0\0\0\0WAVE"), "application/octet-stream");
    }
}
