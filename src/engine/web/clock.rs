//! The run's clock: `performance.now()` counts from the run's start and
//! `performance.timeOrigin` is its wall-clock time.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// When the run started, kept in an isolate slot.
pub(crate) struct Clock {
    pub(super) started: Instant,
    pub(super) started_wall: SystemTime,
}

impl Clock {
    pub(crate) fn start() -> Self {
        Self {
            started: Instant::now(),
            started_wall: SystemTime::now(),
        }
    }
}

/// Unix time in milliseconds, to the microsecond.
pub(super) fn unix_millis(time: SystemTime) -> f64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as f64 / 1000.0)
        .unwrap_or(0.0)
}
