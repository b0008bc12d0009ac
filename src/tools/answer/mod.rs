//! What shapes a tool's answer: its schemas (`schema`), its byte budget
//! and what is kept apart from it (`budget`, `pages`, `run_texts`), a
//! run's `display()` blocks (`display`) and the advice a run's answer
//! carries (`advice`).

pub(super) mod advice;
pub(super) mod budget;
pub(super) mod display;
pub(super) mod pages;
pub(super) mod run_texts;
pub(super) mod schema;
