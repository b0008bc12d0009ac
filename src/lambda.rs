//! The Lambda host: the same router as `serve`, behind `lambda_http`, with
//! the function URL's IAM caller identity as the session principal.

use axum::Router;
use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use lambda_http::RequestExt;
use lambda_http::request::RequestContext;
use tower::ServiceExt;

use crate::transport::{App, Principal, router};

/// The caller a function URL with `AuthType: AWS_IAM` authenticated: its
/// IAM ARN (or caller id). `None` without IAM auth.
pub fn principal_of(extensions: &http::Extensions) -> Option<Principal> {
    let Some(RequestContext::ApiGatewayV2(context)) = extensions.request_context_ref() else {
        return None;
    };
    let iam = context.authorizer.as_ref()?.iam.as_ref()?;
    iam.user_arn
        .clone()
        .or_else(|| iam.caller_id.clone())
        .map(Principal)
}

async fn attach_principal(mut request: Request, next: Next) -> Response {
    if let Some(principal) = principal_of(request.extensions()) {
        request.extensions_mut().insert(principal);
    }
    next.run(request).await
}

/// The service Lambda runs: the router plus the principal of each request.
pub fn service(app: App) -> Router {
    router(app).layer(middleware::from_fn(attach_principal))
}

/// Serves Lambda invocations until the runtime stops the process: as many
/// at once as `AWS_LAMBDA_MAX_CONCURRENCY` allows (Lambda Managed
/// Instances), one at a time where it is unset (standard Lambda). Nothing is
/// shared between invocations but the engine and the store clients, which
/// take concurrent requests under `serve` already.
pub async fn run(app: App) -> Result<(), lambda_http::Error> {
    // Concurrent invocations need a `Sync` answer, which axum's streaming
    // body is not: buffer it here, as lambda_http buffers it for a
    // sequential run anyway (function URLs answer with the whole body).
    let buffered = ServiceExt::<lambda_http::Request>::and_then(
        service(app),
        |response: Response| async move {
            Ok::<_, std::convert::Infallible>(
                lambda_http::IntoResponse::into_response(response).await,
            )
        },
    );
    lambda_http::run_concurrent(buffered).await
}
