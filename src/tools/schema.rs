//! JSON Schemas of the tools' arguments and results, kept beside each other
//! so `tools/list` and the wire types cannot drift apart unnoticed (the
//! end-to-end clients validate results against these).

use serde_json::{Value, json};

/// The schema of a `RunOutcome`.
pub(super) fn run_outcome() -> Value {
    json!({
        "type": "object",
        "properties": {
            "execution_id": { "type": "string", "description": "UUID of this run" },
            "status": { "type": "string", "enum": ["completed", "failed", "timed_out", "out_of_memory", "cancelled"] },
            "result": { "type": ["string", "null"], "description": "Completion value: JSON when it has a JSON form, readable text otherwise, null for undefined" },
            "output": { "type": "string", "description": "Console output" },
            "heap": { "type": ["string", "null"], "description": "Key of the heap this run produced; pass it as `heap` to continue from this state" },
            "input_heap": { "type": ["string", "null"] },
            "error": {
                "type": ["object", "null"],
                "properties": {
                    "name": { "type": "string" },
                    "message": { "type": "string" },
                    "stack": { "type": ["string", "null"] }
                },
                "required": ["name", "message"]
            },
            "warnings": { "type": "array", "items": { "type": "string" } },
            "duration_ms": { "type": "integer", "minimum": 0 },
            "fetches": {
                "type": "object",
                "description": "Present when the run called fetch: requests made and response body bytes read",
                "properties": {
                    "count": { "type": "integer", "minimum": 0 },
                    "bytes": { "type": "integer", "minimum": 0 }
                },
                "required": ["count", "bytes"]
            }
        },
        "required": ["execution_id", "status", "result", "output", "heap", "input_heap", "error", "warnings", "duration_ms"]
    })
}

/// The schema of a heap key argument.
pub(super) fn heap_key(description: &str) -> Value {
    json!({ "type": "string", "pattern": "^[0-9a-f]{64}$", "description": description })
}

/// The optional `session` argument: a logical session named per call.
pub(super) fn session(description: &str) -> Value {
    json!({
        "type": "string",
        "minLength": 1,
        "maxLength": crate::session::LogicalSession::MAX_LEN,
        "description": description
    })
}

/// The schema of a tag map.
pub(super) fn tags(description: &str) -> Value {
    json!({ "type": "object", "additionalProperties": { "type": "string" }, "description": description })
}
