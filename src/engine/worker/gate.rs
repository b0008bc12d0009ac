//! Coalesced saves inside an engine worker: of the forked copies holding
//! heaps to snapshot, one makes its blob at a time, the others wait, and a
//! waiting copy whose heap a newer completed run of the same line has
//! replaced is dropped unwritten (docs/protocol.md, "Coalesced saves").
//!
//! A line is the chain of runs that continued one live isolate: each run
//! continues the one before it in place, so the newest completed run's
//! heap holds the effects of every run of the line before it.

use std::collections::VecDeque;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::sync::{Mutex, PoisonError};

/// What a waiting copy reads on its go pipe: make the blob, or leave
/// without one. The end of the pipe (the worker is gone) means go: the
/// copy may hold the only state of a run that was answered.
pub(super) const GO: u8 = b'g';
pub(super) const DROP: u8 = b'd';

/// A copy that waits for its turn.
#[derive(Debug)]
struct Waiting {
    seq: u64,
    line: u64,
    go: OwnedFd,
}

#[derive(Debug, Default)]
struct State {
    /// The job whose copy makes its blob now.
    writing: Option<u64>,
    waiting: VecDeque<Waiting>,
}

/// The worker's forked copies, in turn.
#[derive(Debug, Default)]
pub(super) struct Gate {
    state: Mutex<State>,
}

/// Tells a copy what to do; a copy that is already gone has nothing to
/// be told.
fn say(go: OwnedFd, word: u8) {
    let _ = std::fs::File::from(go).write_all(&[word]);
}

impl Gate {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A run of `line` completed and its heap is kept: the copies of that
    /// line still waiting hold older heaps it replaced, and are dropped.
    /// Returns their jobs, whose snapshots will never come.
    pub(super) fn replaced(&self, line: u64) -> Vec<u64> {
        let mut state = self.state();
        let (old, rest): (VecDeque<Waiting>, VecDeque<Waiting>) =
            std::mem::take(&mut state.waiting)
                .into_iter()
                .partition(|w| w.line == line);
        state.waiting = rest;
        old.into_iter()
            .map(|waiting| {
                say(waiting.go, DROP);
                waiting.seq
            })
            .collect()
    }

    /// Job `seq`'s copy, of `line`, waits on `go`: it makes its blob now
    /// when no other copy does, else in turn.
    pub(super) fn add(&self, seq: u64, line: u64, go: OwnedFd) {
        let mut state = self.state();
        if state.writing.is_none() {
            state.writing = Some(seq);
            say(go, GO);
        } else {
            state.waiting.push_back(Waiting { seq, line, go });
        }
    }

    /// Job `seq`'s copy has ended (written, dropped or died): the next
    /// waiting copy makes its blob.
    pub(super) fn ended(&self, seq: u64) {
        let mut state = self.state();
        state.waiting.retain(|w| w.seq != seq);
        if state.writing != Some(seq) {
            return;
        }
        state.writing = None;
        if let Some(next) = state.waiting.pop_front() {
            state.writing = Some(next.seq);
            say(next.go, GO);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn pipe() -> (std::fs::File, OwnedFd) {
        let (read, write) = std::io::pipe().unwrap();
        (
            std::fs::File::from(OwnedFd::from(read)),
            OwnedFd::from(write),
        )
    }

    fn heard(read: &mut std::fs::File) -> Vec<u8> {
        let mut said = Vec::new();
        read.read_to_end(&mut said).unwrap();
        said
    }

    /// One copy writes at a time; of a line's waiting copies only the
    /// newest survives a newer completed run; another line's copy waits
    /// its turn and is never dropped by this one.
    #[test]
    fn one_copy_writes_and_a_replaced_one_is_dropped() {
        let gate = Gate::default();
        let (mut first, go) = pipe();
        gate.add(1, 7, go);
        assert_eq!(heard(&mut first), [GO]);
        let (mut second, go) = pipe();
        gate.add(2, 7, go);
        let (mut other, go) = pipe();
        gate.add(3, 9, go);
        assert_eq!(gate.replaced(7), [2]);
        assert_eq!(heard(&mut second), [DROP]);
        let (mut third, go) = pipe();
        gate.add(4, 7, go);
        gate.ended(1);
        assert_eq!(heard(&mut other), [GO]);
        gate.ended(3);
        assert_eq!(heard(&mut third), [GO]);
    }
}
