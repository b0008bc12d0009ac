//! The one V8 platform of the process.

use std::sync::Once;

static INIT: Once = Once::new();

/// Initialises V8 on first use; later calls return at once.
pub(crate) fn init() {
    INIT.call_once(|| {
        super::checksum::ensure_linked();
        let platform = v8::new_default_platform(0, false).make_shared();
        v8::V8::initialize_platform(platform);
        v8::V8::initialize();
    });
}
