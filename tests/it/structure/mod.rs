//! What the source tree and its docs must keep: layers, rooms, paths.

pub(crate) mod layers;
pub(crate) mod tree;
