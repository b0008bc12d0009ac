//! A run's heap limit, as one value: MiB, and whether the caller asked for
//! it (`heap_memory_max_mb`). The ask is checked when the request is
//! planned ([`HeapLimitRule::ask`]); the limit is decided once, where the
//! run's start is known (`heap_keeping::Heaps::start`: a ready heap's limit, or
//! [`HeapLimit::to_restore`] for a stored one), by the same rule that
//! makes a worker's ready heap ([`HeapLimit::for_ready`]); the run's
//! report carries it to every message. Bytes are computed at the one edge
//! that needs them, V8's heap bounds ([`HeapLimit::bytes`]).

use serde::{Deserialize, Serialize};

use crate::units::MIB;

/// A heap limit in MiB, and whether the caller asked for it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeapLimit {
    mb: usize,
    asked: bool,
}

/// What a heap limit is decided within: the deployment's default and
/// maximum, in MiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct HeapLimitRule {
    pub default_mb: usize,
    pub max_mb: usize,
}

/// A heap limit asked for outside `min_mb..=max_mb`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OutOfRange {
    pub asked: usize,
    pub min_mb: usize,
    pub max_mb: usize,
}

impl HeapLimit {
    /// A limit of `mb` MiB the caller did not ask for (the engine's own
    /// isolates: warm pools, listing a heap's files).
    pub(crate) fn of_mb(mb: usize) -> Self {
        Self { mb, asked: false }
    }

    /// The same limit, as if the caller had asked for it: a heap that needs
    /// more is refused rather than given more.
    pub(crate) fn asked_for(self) -> Self {
        Self {
            asked: true,
            ..self
        }
    }

    /// In MiB.
    pub fn mb(self) -> usize {
        self.mb
    }

    /// Whether the caller asked for it: a heap that needs more is then
    /// refused rather than given more.
    pub fn asked(self) -> bool {
        self.asked
    }

    /// In bytes, for V8's heap bounds.
    pub(crate) fn bytes(self) -> usize {
        self.mb * MIB
    }

    /// The limit a stored heap of `payload_len` bytes is restored with: an
    /// asked limit stands, and any other is what the heap needs with the
    /// default's room to grow, so a heap grown under a larger limit is not
    /// refused on every call that forgets it (docs/tools.md,
    /// `heap_memory_max_mb`). `Err` is the MiB the heap needs, over the
    /// limit.
    pub(crate) fn to_restore(self, payload_len: usize, rule: HeapLimitRule) -> Result<Self, usize> {
        let limit = if self.asked {
            self
        } else {
            Self::of_mb(rule.room_for(payload_len))
        };
        let needed = restore_needs_mb(payload_len);
        if needed > limit.mb {
            return Err(needed);
        }
        Ok(limit)
    }

    /// The limit a worker restores a payload of `payload_len` bytes with
    /// ahead of the next call: the limit last `asked` where the payload
    /// fits it (agents that name a limit name it on every call), else what
    /// a call that names none gets ([`Self::to_restore`]).
    pub(crate) fn for_ready(asked: Option<Self>, payload_len: usize, rule: HeapLimitRule) -> Self {
        let needed = restore_needs_mb(payload_len);
        match asked {
            Some(asked) if asked.mb >= needed => asked,
            _ => Self::of_mb(rule.room_for(payload_len)),
        }
    }
}

impl HeapLimitRule {
    /// The limit a request that asks for `asked` MiB (or none) gets.
    pub(crate) fn ask(self, asked: Option<usize>, min_mb: usize) -> Result<HeapLimit, OutOfRange> {
        let mb = asked.unwrap_or(self.default_mb);
        if !(min_mb..=self.max_mb).contains(&mb) {
            return Err(OutOfRange {
                asked: mb,
                min_mb,
                max_mb: self.max_mb,
            });
        }
        Ok(HeapLimit {
            mb,
            asked: asked.is_some(),
        })
    }

    /// The default, or what a payload of `payload_len` bytes needs plus
    /// the default's room to grow, within the maximum.
    fn room_for(self, payload_len: usize) -> usize {
        let needed = restore_needs_mb(payload_len);
        if needed > self.default_mb {
            (needed + self.default_mb).min(self.max_mb)
        } else {
            self.default_mb
        }
    }
}

/// Heap an isolate needs to restore a snapshot of `payload_len` bytes, in MiB.
///
/// V8 deserialises inside the isolate constructor, before a near-heap-limit
/// callback can be installed, so a snapshot that does not fit is a fatal
/// out-of-memory for the whole process. The heap limit is split between the
/// young and old generations and deserialisation allocates in the old one;
/// twice the payload plus a fixed reserve keeps it clear of the limit.
pub fn restore_needs_mb(payload_len: usize) -> usize {
    const RESERVE_MB: usize = 8;
    (payload_len * 2).div_ceil(MIB) + RESERVE_MB
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: HeapLimitRule = HeapLimitRule {
        default_mb: 64,
        max_mb: 1024,
    };

    #[test]
    fn an_ask_is_checked_and_remembered() {
        let asked = RULE.ask(Some(512), 8).unwrap();
        assert_eq!((asked.mb(), asked.asked()), (512, true));
        let default = RULE.ask(None, 8).unwrap();
        assert_eq!((default.mb(), default.asked()), (64, false));
        assert_eq!(
            RULE.ask(Some(2048), 8),
            Err(OutOfRange {
                asked: 2048,
                min_mb: 8,
                max_mb: 1024
            })
        );
        assert_eq!(asked.bytes(), 512 * MIB);
    }

    #[test]
    fn a_limit_not_asked_grows_to_what_a_stored_heap_needs() {
        let default = RULE.ask(None, 8).unwrap();
        assert_eq!(default.to_restore(400 * 1024, RULE).unwrap().mb(), 64);
        assert_eq!(default.to_restore(50 * MIB, RULE).unwrap().mb(), 108 + 64);
        let asked = RULE.ask(Some(64), 8).unwrap();
        assert_eq!(asked.to_restore(50 * MIB, RULE), Err(108));
    }

    #[test]
    fn a_ready_heap_keeps_the_limit_last_asked_where_it_fits() {
        assert_eq!(HeapLimit::for_ready(None, 400 * 1024, RULE).mb(), 64);
        assert_eq!(HeapLimit::for_ready(None, 50 * MIB, RULE).mb(), 108 + 64);
        assert_eq!(HeapLimit::for_ready(None, 600 * MIB, RULE).mb(), 1024);
        let asked = RULE.ask(Some(512), 8).ok();
        assert_eq!(HeapLimit::for_ready(asked, 50 * MIB, RULE).mb(), 512);
        // Grown past what was asked: sized for the payload instead.
        assert_eq!(HeapLimit::for_ready(asked, 300 * MIB, RULE).mb(), 608 + 64);
    }
}
