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
