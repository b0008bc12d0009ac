//! The shape of an invocation's answer when the function URL streams
//! (`InvokeMode: RESPONSE_STREAM`): a function URL invocation gets a stream
//! (the metadata prelude, then the body as it is written), while an event
//! sent with the Invoke API (`cargo lambda invoke`, `aws lambda invoke`)
//! that says so by [`DIRECT_INVOKE_HEADER`] gets the whole response in the
//! function URL's buffered shape (`statusCode`, `headers`, `body`), which
//! is what those commands print and parse. Lambda tells a function nothing
//! of how it was invoked, so the event says it.

use axum::body::{Body, BodyDataStream};
use axum::http::header::SET_COOKIE;
use axum::response::Response;
use lambda_http::lambda_runtime::{MetadataPrelude, StreamResponse};
use lambda_http::request::LambdaRequest;
use lambda_http::{LambdaEvent, RequestExt};

/// The request header by which an event sent with the Invoke API asks
/// for the buffered shape (`events/*.json` carry it); its value is
/// [`DIRECT_INVOKE`].
pub const DIRECT_INVOKE_HEADER: &str = "x-mcp-v8-lambda-invoke";
/// [`DIRECT_INVOKE_HEADER`]'s value.
pub const DIRECT_INVOKE: &str = "direct";

/// Whether `event` asks for the whole response in the buffered shape.
pub fn is_direct_invoke(event: &LambdaRequest) -> bool {
    let LambdaRequest::ApiGatewayV2(request) = event else {
        return false;
    };
    request
        .headers
        .get(DIRECT_INVOKE_HEADER)
        .is_some_and(|value| {
            value
                .as_bytes()
                .eq_ignore_ascii_case(DIRECT_INVOKE.as_bytes())
        })
}

/// The HTTP request of a function URL event, with its Lambda context and
/// X-Ray trace header, as lambda_http's streaming adapter makes it.
pub fn request_of(event: LambdaEvent<LambdaRequest>) -> lambda_http::Request {
    let LambdaEvent { payload, context } = event;
    let mut request = lambda_http::Request::from(payload);
    if let Some(trace) = context.xray_trace_id.as_deref()
        && let Ok(value) = http::HeaderValue::from_str(trace)
    {
        request.headers_mut().insert("x-amzn-trace-id", value);
    }
    request.with_lambda_context(context)
}

/// `response` as a stream of the function URL's prelude and body, as
/// lambda_http's streaming adapter makes it (its adapter holds the body's
/// type in a way that is not `Send`, which concurrent invocations need).
pub fn streamed(response: Response) -> StreamResponse<BodyDataStream> {
    let (parts, body) = response.into_parts();
    let mut headers = parts.headers;
    let cookies = headers
        .get_all(SET_COOKIE)
        .iter()
        .map(|cookie| String::from_utf8_lossy(cookie.as_bytes()).into_owned())
        .collect();
    headers.remove(SET_COOKIE);
    StreamResponse {
        metadata_prelude: MetadataPrelude {
            status_code: parts.status,
            headers,
            cookies,
        },
        stream: Body::into_data_stream(body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(file: &str) -> LambdaRequest {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("events")
            .join(file);
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn every_event_file_asks_for_the_whole_answer_and_a_function_url_event_does_not() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("events");
        let mut files = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if name.ends_with(".json") {
                files += 1;
                assert!(is_direct_invoke(&event(&name)), "{name}");
            }
        }
        assert!(files >= 7, "the events are where they were: {files}");
        let mut url: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("events/initialize.json"),
            )
            .unwrap(),
        )
        .unwrap();
        url["headers"]
            .as_object_mut()
            .unwrap()
            .remove(DIRECT_INVOKE_HEADER);
        assert!(!is_direct_invoke(&serde_json::from_value(url).unwrap()));
    }
}
