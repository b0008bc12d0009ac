//! A suspended run as the metadata store keeps it: the heap that holds its
//! continuation and what the call needs to go on from it. Written when a
//! run suspends; claimed once by the retry that answers it, so the same
//! retry sent twice never runs the continuation twice.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::heap::HeapKey;
use crate::session::LogicalSession;

/// A run waiting for the person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Suspension {
    /// This suspension (one round of a call's elicitations).
    pub id: Uuid,
    /// The call's run: the same over every round, the id its answer and
    /// its record get.
    pub execution_id: Uuid,
    /// The heap holding the run's continuation.
    pub heap: HeapKey,
    /// The heap the call started from (none: fresh): where its session
    /// stands until the run completes.
    pub input_heap: Option<HeapKey>,
    /// The logical session the call runs in, if any.
    pub session: Option<LogicalSession>,
    /// The code as sent.
    pub code: String,
    /// The elicitations the run waits for, by key: the params sent.
    pub requests: Map<String, Value>,
    /// Elicitations the call made over all its rounds.
    pub asked: usize,
    /// What the run printed before it suspended.
    pub output: String,
    /// Warnings of its rounds so far.
    pub warnings: Vec<String>,
    /// Unix milliseconds: when the call's first round began.
    pub started_ms: i64,
    /// Unix seconds after which the run is dropped.
    pub expires_at: i64,
}
