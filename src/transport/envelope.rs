//! What both eras answer with: JSON bodies, and the error that ends a
//! request before or instead of a method's result, as an HTTP status with a
//! JSON-RPC error body.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::value::RawValue;

use crate::protocol::jsonrpc::{self, RequestId, code, plain_json_error};
use crate::server::MethodError;

/// A response with a JSON body.
pub(super) fn json<T: Serialize>(status: StatusCode, body: &T) -> Response {
    let mut response = (
        status,
        serde_json::to_vec(body).expect("responses serialize"),
    )
        .into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A response serialized once, so a batch can hold responses of different types.
pub(super) fn raw<T: Serialize>(response: &jsonrpc::Response<T>) -> Box<RawValue> {
    let text = serde_json::to_string(response).expect("responses serialize");
    RawValue::from_string(text).expect("serde_json output is valid JSON")
}

/// Why a request ends without a result: an HTTP status with a JSON-RPC error
/// body. Internal details go to the log, never into `message`.
#[derive(Debug)]
pub(crate) struct HttpError {
    pub(super) status: StatusCode,
    id: Option<RequestId>,
    pub(super) code: i64,
    message: String,
    /// Boxed: a `Value` object is an ordered map (serde_json's
    /// `preserve_order`, which the bundler's crates turn on) and would make
    /// every `Result<_, HttpError>` large.
    data: Option<Box<serde_json::Value>>,
}

impl HttpError {
    pub(crate) fn new(status: StatusCode, code: i64, message: impl Into<String>) -> Self {
        Self {
            status,
            id: None,
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The same error, answering the request `id`.
    pub(super) fn with_id(self, id: Option<RequestId>) -> Self {
        Self { id, ..self }
    }

    /// The same error, with `error.data`.
    pub(super) fn with_data(self, data: serde_json::Value) -> Self {
        Self {
            data: Some(Box::new(data)),
            ..self
        }
    }

    /// A method's error, with the status `status` gives its code.
    pub(super) fn from_method(
        id: RequestId,
        error: MethodError,
        status: impl Fn(i64) -> StatusCode,
    ) -> Self {
        let mut http = Self::new(status(error.code), error.code, error.message).with_id(Some(id));
        http.data = error.data.map(Box::new);
        http
    }

    pub(super) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code::INVALID_REQUEST, message)
    }

    pub(super) fn parse_error(error: &serde_json::Error) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            code::PARSE_ERROR,
            format!("Parse error: {}", plain_json_error(error)),
        )
    }

    pub(super) fn session_not_found() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            code::SESSION_NOT_FOUND,
            "Session not found",
        )
    }

    /// A store failed under a request: `store` names which ("session",
    /// "metadata") in the log line and in the client's message.
    pub(super) fn store_failed(store: &'static str, error: &dyn std::error::Error) -> Self {
        tracing::error!(store, error = %error, "{store} store failed");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            code::INTERNAL_ERROR,
            format!("the {store} store is unavailable; retry later"),
        )
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let mut body = jsonrpc::Response::error(self.id, self.code, self.message);
        if let Some(error) = &mut body.error {
            error.data = self.data.map(|data| *data);
        }
        json(self.status, &body)
    }
}

/// Refuses bodies nested deeper than [`jsonrpc::MAX_NESTING`] before any
/// decoder sees them.
pub(super) fn check_nesting(body: &[u8]) -> Result<(), HttpError> {
    if jsonrpc::nests_deeper_than(body, jsonrpc::MAX_NESTING) {
        return Err(HttpError::bad_request(format!(
            "JSON nested deeper than {} levels",
            jsonrpc::MAX_NESTING
        )));
    }
    Ok(())
}
