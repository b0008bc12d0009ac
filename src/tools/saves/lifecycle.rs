//! What a host process does around the calls it answers: wait for the
//! saves of heaps answered for first before it exits or is frozen, and let
//! the engine workers finish restoring the heaps they keep ready. The
//! composition root hands it to `serve`, `stdio` and the Lambda entry
//! beside the app, so none of them reaches through the app for it.

use std::sync::Arc;
use std::time::Instant;

use super::Saves;
use crate::engine::Engine;

/// The saves going in this process and the engine whose workers keep
/// heaps ready; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Lifecycle {
    saves: Arc<Saves>,
    engine: Option<Arc<Engine>>,
}

impl Lifecycle {
    /// The lifecycle of a process whose tools share `saves` and `engine`.
    pub fn new(saves: Arc<Saves>, engine: Arc<Engine>) -> Self {
        Self {
            saves,
            engine: Some(engine),
        }
    }

    /// The saves of heaps answered for first that are still going.
    pub fn saves(&self) -> &Arc<Saves> {
        &self.saves
    }

    /// Waits, until `by`, for the heaps engine workers are restoring for
    /// the next call ([`Engine::settle_ready`]); how many finished.
    pub async fn settle_ready_heaps(&self, by: Instant) -> usize {
        match &self.engine {
            Some(engine) => engine.settle_ready(by).await,
            None => 0,
        }
    }
}
