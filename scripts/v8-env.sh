# Sourced by the project's scripts (from the project root). These machines
# cannot download V8's prebuilt library; the workplace keeps the exact build
# for v8 152.2.0 beside the project. Elsewhere the crate downloads its own and
# this does nothing.
archive="../shared/rusty_v8/librusty_v8_release_x86_64-unknown-linux-gnu.a.gz"
if [ -z "${RUSTY_V8_ARCHIVE:-}" ] && [ -f "$archive" ]; then
    export RUSTY_V8_ARCHIVE="$PWD/$archive"
fi
