//! Running code on an [`Engine`] directly, for the engine-level tests.

use mcp_v8_lambda::engine::{Engine, RunOutcome, RunRequest, RunStatus};

/// The outcome of `request`, which the engine must accept.
pub async fn run(engine: &Engine, request: RunRequest) -> RunOutcome {
    engine.run(request).await.expect("request accepted").outcome
}

/// A stateless run of `code` with the defaults.
pub async fn stateless(engine: &Engine, code: &str) -> RunOutcome {
    run(
        engine,
        RunRequest {
            code: code.into(),
            ..Default::default()
        },
    )
    .await
}

/// The rendered result of a run that must have completed.
pub fn completed(outcome: &RunOutcome) -> &str {
    assert_eq!(outcome.status, RunStatus::Completed, "{outcome:#?}");
    outcome.result.as_deref().unwrap_or("<undefined>")
}
