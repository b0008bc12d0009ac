//! What an agent meets: a newcomer's first calls, mistakes and their messages, calls at an agent's pace, parity with the reference.

pub(crate) mod coalesced;
pub(crate) mod mistakes;
pub(crate) mod newcomer;
pub(crate) mod parity;
pub(crate) mod think_time;
