//! The Lambda host: the same router as `serve`, behind `lambda_http`, with
//! the function URL's IAM caller identity as the session principal. It
//! fails closed: a request that no one authenticated is refused unless the
//! operator said otherwise.

use crate::observe::emf::Emf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::Response;
use lambda_http::RequestExt;
use lambda_http::request::RequestContext;
use tower::ServiceExt;
use tracing::Instrument;

use crate::transport::{App, Invocation, Principal, refusal, router};

pub mod post_response;
pub mod shape;

/// What a caller that nobody authenticated is told: how to configure auth.
pub const UNAUTHENTICATED: &str = "this function authenticates no one: its function URL has no \
IAM auth (AuthType AWS_IAM) and no bearer token (MCP_V8_AUTH_TOKEN_SHA256) or JWT issuer \
(MCP_V8_JWKS_URL) is configured; configure one (docs/deployment.md), or set \
MCP_V8_ALLOW_UNAUTHENTICATED=true to serve anyone who can reach the URL";

/// The caller a function URL with `AuthType: AWS_IAM` authenticated: its
/// IAM ARN (or caller id), an assumed-role session reduced to its role
/// ([`stable_identity`]). `None` without IAM auth.
pub fn principal_of(extensions: &http::Extensions) -> Option<Principal> {
    let Some(RequestContext::ApiGatewayV2(context)) = extensions.request_context_ref() else {
        return None;
    };
    let iam = context.authorizer.as_ref()?.iam.as_ref()?;
    iam.user_arn
        .as_deref()
        .map(stable_identity)
        .or_else(|| iam.caller_id.clone())
        .map(Principal)
}

/// The identity an IAM caller keeps across credentials: an assumed-role
/// session (`arn:aws:sts::123456789012:assumed-role/Role/session`) is its
/// role (`arn:aws:sts::123456789012:assumed-role/Role`). A session name
/// changes with every assumption (a Lambda's invocation, a CI job, an SSO
/// sign-in), so keying a tenant by it would lose the state with each new
/// set of credentials; whoever may assume the role may act as any of its
/// sessions anyway. Users and other ARNs are kept whole.
pub fn stable_identity(arn: &str) -> String {
    let mut parts = arn.splitn(6, ':');
    let (Some("arn"), Some(_partition), Some("sts"), Some(_region), Some(_account), Some(resource)) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return arn.to_owned();
    };
    match resource
        .strip_prefix("assumed-role/")
        .and_then(|rest| rest.split_once('/'))
    {
        Some((role, _session)) => {
            let cut = arn.len() - resource.len() + "assumed-role/".len() + role.len();
            arn[..cut].to_owned()
        }
        None => arn.to_owned(),
    }
}

/// What Lambda's context says of the invocation: its deadline and id. A
/// deadline already past when the invocation arrives is no deadline Lambda
/// gives (it ends an invocation at its deadline); `cargo lambda watch` sends
/// a duration (600000) where an epoch time belongs, so such a value is
/// ignored rather than refusing every run.
pub fn invocation_of(extensions: &http::Extensions) -> Option<Invocation> {
    let context = extensions.lambda_context_ref()?;
    let deadline = UNIX_EPOCH + Duration::from_millis(context.deadline);
    Some(Invocation {
        deadline: (deadline > SystemTime::now()).then_some(deadline),
        request_id: Some(context.request_id.clone()).filter(|id| !id.is_empty()),
    })
}

/// Puts what Lambda says of the invocation where the router reads it: the
/// IAM caller, the invocation's deadline and id.
async fn attach_principal(mut request: Request, next: Next) -> Response {
    if let Some(principal) = principal_of(request.extensions()) {
        request.extensions_mut().insert(principal);
    }
    if let Some(invocation) = invocation_of(request.extensions()) {
        request.extensions_mut().insert(invocation);
    }
    next.run(request).await
}

/// An event the function sent itself for a task (`tasks::handoff`): a
/// function URL event never carries this route key.
fn is_handed_task(extensions: &http::Extensions) -> bool {
    matches!(
        extensions.request_context_ref(),
        Some(RequestContext::ApiGatewayV2(context))
            if context.route_key.as_deref() == Some(crate::tasks::handoff::ROUTE_KEY)
    )
}

/// Runs a task handed to this invocation (claimed once, however often
/// Lambda delivers the event) to its end before the invocation returns;
/// every other request goes on to the router.
async fn run_handed_task(
    axum::extract::State(app): axum::extract::State<App>,
    request: Request,
    next: Next,
) -> Response {
    if !is_handed_task(request.extensions()) {
        return next.run(request).await;
    }
    let invocation = request.extensions().get::<Invocation>().cloned();
    let Some(tasks) = app.server().tasks() else {
        return refusal(StatusCode::NOT_FOUND, "this deployment keeps no tasks");
    };
    let body = match axum::body::to_bytes(request.into_body(), 64 * 1024).await {
        Ok(body) => body,
        Err(_) => return refusal(StatusCode::BAD_REQUEST, "unreadable task event"),
    };
    let Ok(handed) = serde_json::from_slice::<crate::tasks::handoff::HandedTask>(&body) else {
        return refusal(StatusCode::BAD_REQUEST, "a task event names task_id");
    };
    let Some(tenant) = handed.tenant() else {
        return refusal(
            StatusCode::BAD_REQUEST,
            "a task event names no valid tenant",
        );
    };
    let runner = invocation
        .as_ref()
        .and_then(|i| i.request_id.clone())
        .unwrap_or_else(|| format!("invocation-{}", uuid::Uuid::new_v4().simple()));
    let deadline = invocation.and_then(|i| i.deadline);
    let span = tracing::info_span!("task", task = %handed.task_id, runner = %runner);
    let ran = tasks
        .run_handed(&tenant, handed.task_id, &runner, deadline)
        .instrument(span)
        .await;
    match ran {
        Ok(()) => refusal(StatusCode::OK, "the task ran"),
        Err(error) => {
            tracing::error!(task = %handed.task_id, %error, "a handed task could not be run");
            refusal(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the task could not be run",
            )
        }
    }
}

/// Refuses a request without an IAM caller; in front of the router only
/// where the app checks no bearer token itself.
async fn refuse_unauthenticated(request: Request, next: Next) -> Response {
    if request.extensions().get::<Principal>().is_some() {
        return next.run(request).await;
    }
    tracing::warn!("refused a request that no one authenticated");
    refusal(StatusCode::UNAUTHORIZED, UNAUTHENTICATED)
}

/// The service Lambda runs: the router plus the principal of each request.
/// Where the app authenticates no bearer token or JWT, only requests with
/// an IAM caller pass, unless `allow_unauthenticated`
/// (`MCP_V8_ALLOW_UNAUTHENTICATED`).
pub fn service(app: App, allow_unauthenticated: bool) -> Router {
    let mut service = router(app.clone());
    if !app.authenticates_callers() && !allow_unauthenticated {
        service = service.layer(middleware::from_fn(refuse_unauthenticated));
    }
    // Outside the check above: a handed task has no caller, only the
    // function's own permission to invoke itself.
    service = service.layer(middleware::from_fn_with_state(app, run_handed_task));
    // Outermost, so the check above sees the principal.
    service.layer(middleware::from_fn(attach_principal))
}

/// Serves Lambda invocations until the runtime stops the process: as many
/// at once as `AWS_LAMBDA_MAX_CONCURRENCY` allows (Lambda Managed
/// Instances), one at a time where it is unset (standard Lambda). Nothing is
/// shared between invocations but the engine and the store clients, which
/// take concurrent requests under `serve` already.
///
/// With `post_response`, runs answered before their heaps are stored are
/// stored in each invocation's post-response phase, by an internal
/// extension registered here, before the runtime's first `next`
/// ([`post_response`]), from `lifecycle`.
pub async fn run(
    app: App,
    lifecycle: crate::tools::Lifecycle,
    allow_unauthenticated: bool,
    streaming: bool,
    post_response: bool,
    metrics: Option<Emf>,
) -> Result<(), lambda_http::Error> {
    let finished = std::sync::Arc::new(post_response::Finished::default());
    let extension = if post_response {
        let post = post_response::PostResponse {
            finished: finished.clone(),
            lifecycle,
        };
        Some(post_response::register(post).await.map_err(|e| {
            format!(
                "registering the internal extension {} with the Extensions API failed ({e}); it stores \
                 heaps after their answers: set MCP_V8_ANSWER_BEFORE_SAVE_MB=off to answer after saves \
                 without it",
                post_response::EXTENSION_NAME
            )
        })?)
    } else {
        None
    };
    let mark = post_response::MarkFinishedLayer(extension.is_some().then_some(finished));
    let tracing = lambda_http::lambda_runtime::layers::TracingLayer::new();
    let runtime = async move {
        let mut served = service(app, allow_unauthenticated);
        if let Some(emf) = metrics {
            // Written when each invocation's handler returns: a streamed
            // answer's run ends later, and its metrics go with the next.
            served = served.layer(middleware::from_fn(
                move |request: axum::extract::Request, next: middleware::Next| async move {
                    let response = next.run(request).await;
                    emf.flush();
                    response
                },
            ));
        }
        // Concurrent invocations need a `Sync` answer, which axum's streaming
        // body is not: buffer it here, as lambda_http buffers it for a
        // sequential run anyway (function URLs answer with the whole body).
        let buffered = ServiceExt::<lambda_http::Request>::and_then(
            served.clone(),
            |response: Response| async move {
                Ok::<_, std::convert::Infallible>(
                    lambda_http::IntoResponse::into_response(response).await,
                )
            },
        );
        if streaming {
            // A function URL with `InvokeMode: RESPONSE_STREAM`: bodies go out
            // as they are written, so progress events arrive before the
            // result; an event sent with the Invoke API that asks for it is
            // answered whole, in the shape `cargo lambda invoke` reads
            // ([`shape`]).
            let either = tower::service_fn(
                move |event: lambda_http::LambdaEvent<lambda_http::request::LambdaRequest>| {
                    let direct = shape::is_direct_invoke(&event.payload);
                    let served = served.clone();
                    let whole = lambda_http::Adapter::from(buffered.clone());
                    async move {
                        use lambda_http::lambda_runtime::FunctionResponse;
                        Ok::<_, std::convert::Infallible>(if direct {
                            FunctionResponse::BufferedResponse(whole.oneshot(event).await?)
                        } else {
                            let response = served.oneshot(shape::request_of(event)).await?;
                            FunctionResponse::StreamingResponse(shape::streamed(response))
                        })
                    }
                },
            );
            return lambda_http::lambda_runtime::Runtime::new(either)
                .layer(tracing)
                .layer(mark)
                .run_concurrent()
                .await;
        }
        lambda_http::runtime_concurrent(buffered)
            .layer(tracing)
            .layer(mark)
            .run_concurrent()
            .await
    };
    match extension {
        // Either ending ends the function: Lambda restarts an environment
        // whose extension stopped asking for events.
        Some(extension) => tokio::select! {
            biased;
            ran = runtime => ran,
            ran = extension => ran,
        },
        None => runtime.await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_assumed_role_session_is_reduced_to_its_role() {
        assert_eq!(
            stable_identity("arn:aws:sts::123456789012:assumed-role/Agents/i-0abc"),
            "arn:aws:sts::123456789012:assumed-role/Agents"
        );
        assert_eq!(
            stable_identity("arn:aws-cn:sts::123456789012:assumed-role/Agents/alice@example.com"),
            "arn:aws-cn:sts::123456789012:assumed-role/Agents"
        );
        for kept in [
            "arn:aws:iam::123456789012:user/alice",
            "arn:aws:iam::123456789012:root",
            "arn:aws:sts::123456789012:federated-user/bob",
            "arn:aws:sts::123456789012:assumed-role/NoSession",
            "not an arn",
        ] {
            assert_eq!(stable_identity(kept), kept);
        }
    }
}
