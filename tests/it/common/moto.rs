//! A moto server (a real S3 and DynamoDB protocol endpoint) on a free
//! loopback port, one per test binary, gone when the test process exits.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_dynamodb::config::Credentials;

pub struct Moto {
    pub endpoint: String,
    _wrapper: Child,
}

static MOTO: OnceLock<Moto> = OnceLock::new();

/// The shared server, started on first use.
pub fn moto() -> &'static Moto {
    MOTO.get_or_init(Moto::start)
}

impl Moto {
    /// A server of its own, stopped when the `Moto` is dropped (its pipe
    /// closes): for a test that changes what the server enforces.
    pub fn start() -> Moto {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let python = root.join(".venv/bin/python");
        let launcher = root.join("tests/moto_serial.py");
        assert!(
            root.join(".venv/bin/moto_server").exists(),
            "moto is not installed: run scripts/test.sh (it installs moto[server] into .venv)"
        );
        let port = super::net::free_port();
        // The shell holds this process's pipe: when the test process exits,
        // `read` returns and the shell stops moto, so nothing outlives the run.
        // One request at a time: see tests/moto_serial.py.
        let script = format!(
            "'{}' '{}' 127.0.0.1 {port} >/dev/null 2>&1 & pid=$!; read _; kill $pid",
            python.display(),
            launcher.display()
        );
        let wrapper = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::piped())
            .spawn()
            .expect("starting moto");
        super::net::wait_listening(port, "moto", Duration::from_secs(60));
        Moto {
            endpoint: format!("http://127.0.0.1:{port}"),
            _wrapper: wrapper,
        }
    }
}

/// AWS configuration pointing at moto.
pub async fn sdk_config() -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .endpoint_url(&moto().endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "moto"))
        .load()
        .await
}

/// Clients for the two services.
pub async fn clients() -> (aws_sdk_s3::Client, aws_sdk_dynamodb::Client) {
    let clients = mcp_v8_lambda::backends::aws::Clients::new(&sdk_config().await, true, None);
    (clients.s3, clients.dynamodb)
}

/// A name unique to one test (buckets and table prefixes).
pub fn unique(stem: &str) -> String {
    format!(
        "{stem}-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    )
}

/// A fresh bucket and table prefix with everything `setup` creates.
pub async fn provisioned() -> (aws_sdk_s3::Client, aws_sdk_dynamodb::Client, String, String) {
    let (s3, dynamodb) = clients().await;
    let bucket = unique("heaps");
    let prefix = format!("{}-", unique("t"));
    mcp_v8_lambda::backends::aws::setup(&dynamodb, &s3, &prefix, &bucket)
        .await
        .expect("setup against moto");
    (s3, dynamodb, bucket, prefix)
}

/// The environment of a `serve`, `setup` or Lambda function on moto, with
/// heaps in `bucket` (cached in `cache`) and tables named `table_prefix`*.
pub fn serve_env(bucket: &str, table_prefix: &str, cache: &Path) -> Vec<(String, String)> {
    [
        ("AWS_ENDPOINT_URL", moto().endpoint.as_str()),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_EC2_METADATA_DISABLED", "true"),
        ("MCP_V8_HEAP_BUCKET", bucket),
        ("MCP_V8_TABLE_PREFIX", table_prefix),
        ("MCP_V8_S3_FORCE_PATH_STYLE", "true"),
        ("MCP_V8_HEAP_CACHE_DIR", cache.to_str().unwrap()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// `mcp-v8-lambda setup` with `env`: the bucket and tables it names.
pub fn setup(env: &[(String, String)]) {
    let setup = Command::new(env!("CARGO_BIN_EXE_mcp-v8-lambda"))
        .arg("setup")
        .envs(env.iter().cloned())
        .output()
        .unwrap();
    assert!(
        setup.status.success(),
        "{}",
        String::from_utf8_lossy(&setup.stderr)
    );
}
