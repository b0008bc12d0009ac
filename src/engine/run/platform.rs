//! The one V8 platform of the process.

use std::sync::Once;

static INIT: Once = Once::new();

/// Initialises V8 on first use; later calls return at once.
pub(crate) fn init() {
    INIT.call_once(|| {
        crate::engine::run::checksum::ensure_linked();
        // A snapshot creator's read-only space stays open by default, and
        // every CreateBlob then moves immutable objects into it ("read-only
        // promotion"), for sharing that matters to embedders who start many
        // isolates from one blob, not to a blob restored once per run. Off,
        // blobs keep V8's own read-only space, and blobs made with it on
        // still restore (docs/engine.md, "Read-only promotion, off", has the
        // cost it saves).
        v8::V8::set_flags_from_string("--no-extensible-ro-snapshot");
        let platform = v8::new_default_platform(0, false).make_shared();
        v8::V8::initialize_platform(platform);
        v8::V8::initialize();
    });
}
