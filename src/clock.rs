//! The one wall clock: what stores and tools read expiry and record times
//! from ([`unix_now`], [`unix_millis`]), and the injectable [`Clock`] a
//! store takes so that tests can move time.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// What a store reads the time from; tests move it to simulate expiry.
pub type Clock = Arc<dyn Fn() -> SystemTime + Send + Sync>;

/// The system clock.
pub fn system_clock() -> Clock {
    Arc::new(SystemTime::now)
}

/// The UTC day number of `time`: the unit S3's lifecycle rules expire by.
pub fn utc_day(time: SystemTime) -> u32 {
    let secs = time
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    (secs / 86_400) as u32
}

/// Current Unix time in seconds.
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// `time` as Unix milliseconds, to the microsecond.
pub fn unix_millis(time: SystemTime) -> f64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as f64 / 1000.0)
        .unwrap_or(0.0)
}

/// Current Unix time in whole milliseconds.
pub fn unix_now_millis() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i128)
}

/// RFC 3339 in UTC with exactly three fractional digits, so that
/// timestamps sort as strings (the well-known format drops trailing zeros,
/// and `…05.5Z` sorts after `…05.51Z`).
pub fn rfc3339_millis(unix_millis: i128) -> String {
    const MILLIS: &[time::format_description::BorrowedFormatItem<'_>] = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    time::OffsetDateTime::from_unix_timestamp_nanos(unix_millis * 1_000_000)
        .ok()
        .and_then(|t| t.format(MILLIS).ok())
        .unwrap_or_default()
}
