//! MCP progress: the token a request carries, and `notifications/progress`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `_meta.progressToken` of a request's params: the client asks for
/// `notifications/progress` about the request, naming it with this token
/// (a string or a number, echoed as sent).
pub fn progress_token(params: Option<&serde_json::value::RawValue>) -> Option<Value> {
    #[derive(Deserialize)]
    struct Params {
        #[serde(rename = "_meta", default)]
        meta: Option<Meta>,
    }
    #[derive(Deserialize)]
    struct Meta {
        #[serde(rename = "progressToken", default)]
        progress_token: Option<Value>,
    }
    let params: Params = serde_json::from_str(params?.get()).ok()?;
    params
        .meta?
        .progress_token
        .filter(|token| token.is_string() || token.is_number())
}

/// `notifications/progress` params.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressParams {
    /// The request's `_meta.progressToken`.
    pub progress_token: Value,
    /// Grows with every notification: seconds the request has run, or the
    /// run's own values once it reports them (`reportProgress()`).
    pub progress: f64,
    /// Of how much, when the run said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// For people.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}
