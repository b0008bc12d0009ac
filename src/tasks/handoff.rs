//! On Lambda a run cannot outlive its invocation's response: the function
//! hands a task to itself, as an asynchronous invocation of the same
//! function (`InvocationType: Event`) whose event names the task. The event
//! has the shape of a function URL request, so the runtime's usual decoding
//! takes it, with a route key no function URL ever sends ([`ROUTE_KEY`]):
//! only a caller allowed to invoke the function (the function itself,
//! granted `lambda:InvokeFunction` on its own ARN) can send one.
//!
//! The Invoke call is made here, signed with SigV4 by `aws-sigv4`: the one
//! operation does not justify compiling the whole Lambda SDK crate into
//! every build (docs/deployment.md, "Tasks on Lambda").

use std::time::SystemTime;

use async_trait::async_trait;
use aws_credential_types::provider::ProvideCredentials;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::runner::Handoff;
use crate::BoxError;
use crate::tenant::Tenant;

/// The `routeKey` of a handed task's event; function URLs send `$default`.
pub const ROUTE_KEY: &str = "mcp-v8-lambda/task";

/// The body of a handed task's event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandedTask {
    /// The task.
    pub task_id: Uuid,
    /// Its tenant's id (`None`: the anonymous tenant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

impl HandedTask {
    /// The tenant the task belongs to; `None` when the event names one
    /// that no tenant id can be (no event this function sends).
    pub fn tenant(&self) -> Option<Tenant> {
        match self.tenant.as_deref() {
            None => Some(Tenant::anonymous()),
            Some(id) => Tenant::from_id(id),
        }
    }
}

/// The invocation event for `task`: a function URL request in shape.
pub fn event(task: &HandedTask) -> serde_json::Value {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    serde_json::json!({
        "version": "2.0",
        "routeKey": ROUTE_KEY,
        "rawPath": "/mcp-v8-lambda/task",
        "rawQueryString": "",
        "headers": { "content-type": "application/json" },
        "requestContext": {
            "accountId": "self",
            "apiId": "self",
            "domainName": "self",
            "domainPrefix": "self",
            "http": {
                "method": "POST",
                "path": "/mcp-v8-lambda/task",
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": "mcp-v8-lambda"
            },
            "requestId": task.task_id.to_string(),
            "routeKey": ROUTE_KEY,
            "stage": "$default",
            "time": "",
            "timeEpoch": now
        },
        "isBase64Encoded": false,
        "body": serde_json::to_string(task).expect("a handed task serializes")
    })
}

/// The Invoke API of the local emulator whose Runtime API is `runtime_api`:
/// `cargo lambda watch` serves its Runtime API under `/.rt/FUNCTION` of the
/// address that also takes Invoke calls
/// (`http://127.0.0.1:9000/.rt/mcp-v8-lambda`); Lambda's own Runtime API is
/// a bare `host:port`. Without it a function under the emulator would send
/// its tasks to `AWS_ENDPOINT_URL` (moto, in docs/deployment.md's local
/// stack), which has no such function.
pub fn emulator_endpoint(runtime_api: &str) -> Option<String> {
    let (address, _) = runtime_api.trim().split_once("/.rt")?;
    let address = address.strip_prefix("http://").unwrap_or(address);
    Some(format!("http://{address}"))
}

/// How long a hand-off to the emulator waits for its answer before it
/// takes the invocation as started ([`emulator_endpoint`]).
const EMULATED_ANSWER: std::time::Duration = std::time::Duration::from_secs(1);

/// Hands tasks to asynchronous invocations of the function `function`.
#[derive(Debug)]
pub struct LambdaHandoff {
    http: reqwest::Client,
    endpoint: String,
    /// The Invoke API is the local emulator's, which answers an `Event`
    /// invocation only once it has run.
    emulated: bool,
    region: String,
    function: String,
    /// The version to invoke, when not `$LATEST`: on Managed Instances only
    /// published versions run.
    qualifier: Option<String>,
    credentials: aws_credential_types::provider::SharedCredentialsProvider,
}

impl LambdaHandoff {
    /// Invokes `function` (its name or ARN: `AWS_LAMBDA_FUNCTION_NAME`)
    /// through `AWS_ENDPOINT_URL_LAMBDA`, else the local emulator the
    /// function runs under ([`emulator_endpoint`]), else the Lambda
    /// endpoint of `sdk` (`AWS_ENDPOINT_URL`, else the region's), with its
    /// credentials.
    pub fn new(sdk: &aws_config::SdkConfig, function: String) -> Result<Self, BoxError> {
        let region = sdk
            .region()
            .ok_or("handing tasks off needs an AWS region (AWS_REGION)")?
            .to_string();
        let credentials = sdk
            .credentials_provider()
            .ok_or("handing tasks off needs AWS credentials")?;
        let emulator =
            emulator_endpoint(&std::env::var("AWS_LAMBDA_RUNTIME_API").unwrap_or_default());
        let (endpoint, emulated) = match (std::env::var("AWS_ENDPOINT_URL_LAMBDA").ok(), emulator) {
            (Some(set), emulator) => {
                let emulated = emulator.as_deref() == Some(set.trim_end_matches('/'));
                (set, emulated)
            }
            (None, Some(emulator)) => (emulator, true),
            (None, None) => (
                sdk.endpoint_url()
                    .map(str::to_owned)
                    .unwrap_or_else(|| format!("https://lambda.{region}.amazonaws.com")),
                false,
            ),
        };
        Ok(Self {
            http: reqwest::Client::new(),
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            emulated,
            region,
            function,
            qualifier: None,
            credentials,
        })
    }

    /// Hands tasks to `version` of the function (`AWS_LAMBDA_FUNCTION_VERSION`,
    /// the one that runs), so a task runs the code that accepted it, on
    /// Managed Instances the only invocable kind; `$LATEST` or none invokes
    /// the function unqualified.
    pub fn qualified(mut self, version: Option<String>) -> Self {
        self.qualifier = version.filter(|v| !v.is_empty() && v != "$LATEST");
        self
    }

    fn invocation_url(&self) -> String {
        let mut url = format!(
            "{}/2015-03-31/functions/{}/invocations",
            self.endpoint,
            crate::protocol::uri::segment(&self.function)
        );
        if let Some(version) = &self.qualifier {
            url.push_str("?Qualifier=");
            url.push_str(&crate::protocol::uri::segment(version));
        }
        url
    }
}

#[async_trait]
impl Handoff for LambdaHandoff {
    async fn hand_off(&self, tenant: &Tenant, id: Uuid) -> Result<(), BoxError> {
        use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
        use aws_sigv4::sign::v4;

        let task = HandedTask {
            task_id: id,
            tenant: tenant.id().map(str::to_owned),
        };
        let body = serde_json::to_vec(&event(&task))?;
        let url = self.invocation_url();
        let mut request = http::Request::builder()
            .method("POST")
            .uri(&url)
            .header("content-type", "application/json")
            .header("x-amz-invocation-type", "Event")
            .body(body.clone())?;
        let identity = self.credentials.provide_credentials().await?.into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name("lambda")
            .time(SystemTime::now())
            .settings(SigningSettings::default())
            .build()?
            .into();
        let headers: Vec<(String, String)> = request
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    v.to_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        let signable = SignableRequest::new(
            "POST",
            &url,
            headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            SignableBody::Bytes(&body),
        )?;
        let (instructions, _) = sign(signable, &params)?.into_parts();
        instructions.apply_to_request_http1x(&mut request);
        let (parts, body) = request.into_parts();
        let mut outgoing = self.http.post(&url).body(body);
        for (name, value) in &parts.headers {
            outgoing = outgoing.header(name.as_str(), value.as_bytes());
        }
        let emulated = self.emulated;
        let sent = async move {
            let response = outgoing.send().await?;
            let status = response.status();
            // An accepted asynchronous invocation is 202; the emulator runs
            // the invocation and answers 200 with its response.
            if status.as_u16() == 202 || (emulated && status.is_success()) {
                return Ok::<(), BoxError>(());
            }
            let text = response.text().await.unwrap_or_default();
            Err(format!("Lambda Invoke answered {status}: {text}").into())
        };
        if !emulated {
            return sent.await;
        }
        // The emulator answers an invocation of type Event only once it has
        // run: the call goes on by itself, and what it says within a second
        // (an unknown function, nothing listening) is the answer.
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let _ = tx.send(sent.await);
        });
        match tokio::time::timeout(EMULATED_ANSWER, rx).await {
            Ok(Ok(answered)) => answered,
            Ok(Err(_)) => Err("the invocation's request ended without an answer".into()),
            Err(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn under_the_emulator_tasks_go_to_its_invoke_api() {
        // What cargo lambda watch 1.9 sets.
        assert_eq!(
            emulator_endpoint("http://127.0.0.1:9000/.rt/mcp-v8-lambda").as_deref(),
            Some("http://127.0.0.1:9000")
        );
        assert_eq!(
            emulator_endpoint("127.0.0.1:9000/.rt").as_deref(),
            Some("http://127.0.0.1:9000")
        );
        assert_eq!(emulator_endpoint("127.0.0.1:9001"), None, "Lambda's own");
        assert_eq!(emulator_endpoint(""), None);
    }

    #[test]
    fn a_task_goes_to_the_version_that_runs_unless_latest() {
        let sdk = aws_config::SdkConfig::builder()
            .region(aws_config::Region::new("eu-west-1"))
            .credentials_provider(
                aws_credential_types::provider::SharedCredentialsProvider::new(
                    aws_credential_types::Credentials::new("AKID", "SECRET", None, None, "test"),
                ),
            )
            .endpoint_url("http://127.0.0.1:1")
            .build();
        let handoff = || LambdaHandoff::new(&sdk, "fn".into()).unwrap();
        let unqualified = "http://127.0.0.1:1/2015-03-31/functions/fn/invocations";
        assert_eq!(handoff().invocation_url(), unqualified);
        assert_eq!(
            handoff().qualified(Some("$LATEST".into())).invocation_url(),
            unqualified
        );
        assert_eq!(handoff().qualified(None).invocation_url(), unqualified);
        assert_eq!(
            handoff().qualified(Some("7".into())).invocation_url(),
            format!("{unqualified}?Qualifier=7")
        );
    }

    #[test]
    fn a_handed_task_round_trips_through_its_event() {
        let task = HandedTask {
            task_id: Uuid::new_v4(),
            tenant: Some("t1".into()),
        };
        let event = event(&task);
        assert_eq!(event["routeKey"], ROUTE_KEY);
        assert_eq!(event["requestContext"]["routeKey"], ROUTE_KEY);
        let body: HandedTask = serde_json::from_str(event["body"].as_str().unwrap()).unwrap();
        assert_eq!(body, task);
        // A malformed tenant is no tenant, never the anonymous one.
        assert_eq!(body.tenant(), None);
        let id = Tenant::of_principal("someone");
        let named = HandedTask {
            task_id: task.task_id,
            tenant: id.id().map(str::to_owned),
        };
        assert_eq!(named.tenant(), Some(id));
        let anonymous = HandedTask {
            task_id: task.task_id,
            tenant: None,
        };
        assert_eq!(anonymous.tenant(), Some(Tenant::anonymous()));
        // The function's name or ARN is one path segment of the Invoke URL.
        assert_eq!(
            crate::protocol::uri::segment("arn:aws:lambda:x:1:function:f"),
            "arn%3Aaws%3Alambda%3Ax%3A1%3Afunction%3Af"
        );
    }
}
