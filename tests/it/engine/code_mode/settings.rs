//! Upstream settings: URLs follow the egress rules and open nothing to fetch,
//! and bad settings stop the server without echoing credentials.

use super::*;

/// A name that resolves to loopback is refused (the egress policy's rule:
/// private addresses only by IP literal), and `fetch` cannot reach an
/// upstream's URL: the listing opens it for `mcp`'s calls only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_urls_follow_the_egress_rules_and_open_nothing_to_fetch() {
    let modern = Upstream::modern();
    let mut config = upstream_config(&[("modern", &modern)]);
    let mut named = config.servers["modern"].clone();
    named.url = format!("http://localhost:{}/mcp", modern.port);
    config.servers.insert("named".into(), named);
    let engine = crate::common::engine::on_workers(
        EngineConfig {
            capabilities: CapabilitySettings {
                mcp: config,
                ..Default::default()
            },
            fetch: mcp_v8_lambda::egress::FetchConfig {
                allow: vec!["https://api.example.com".into()],
                ..mcp_v8_lambda::egress::FetchConfig::off()
            },
            ..EngineConfig::default()
        },
        None,
    );
    let out = stateless(
        &engine,
        &format!(
            r#"
            const caught = async (f) => {{ try {{ await f(); return "no error"; }} catch (e) {{ return e.code + ": " + e.message; }} }};
            [await caught(() => mcp.named.add({{ a: 1, b: 1 }})),
             await caught(() => fetch({url:?})),
             (await mcp.modern.add({{ a: 1, b: 1 }})).sum]
            "#,
            url = modern.url()
        ),
    )
    .await;
    let value = json_result(&out);
    let named = value[0].as_str().unwrap();
    assert!(
        named.starts_with("MCP_UNREACHABLE")
            && named.contains("refused by the egress policy")
            && named.contains("IP literal"),
        "{named}"
    );
    assert!(!named.contains(&modern.url()), "the URL is shown: {named}");
    let fetched = value[1].as_str().unwrap();
    assert!(
        fetched.contains("egress policy") && fetched.contains("not in the allow list"),
        "{fetched}"
    );
    assert_eq!(value[2], 2);
}

#[test]
fn bad_upstream_settings_stop_the_server_without_echoing_credentials() {
    let lookup = |vars: Vec<(&'static str, String)>| {
        mcp_v8_lambda::config::Config::from_lookup(move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone())
        })
    };
    for (value, reason) in [
        (
            json!({"gh": {"url": "http://169.254.169.254/mcp", "headers": {"authorization": TOKEN}}}),
            "link-local",
        ),
        (
            json!({"gh": {"url": "http://127.0.0.1:9001/mcp", "headers": {"authorization": TOKEN}}}),
            "Lambda Runtime API",
        ),
        (
            json!({"gh": {"url": "https://a.example/mcp", "headers": {"authorization": format!("{TOKEN}\n")}}}),
            "not a header value",
        ),
        (json!({"gh": "https://a.example/mcp"}), "not a JSON object"),
    ] {
        let error = lookup(vec![
            ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001".into()),
            ("MCP_V8_MCP_SERVERS", value.to_string()),
        ])
        .expect_err("refused")
        .to_string();
        assert!(
            error.contains("MCP_V8_MCP_SERVERS") && error.contains(reason),
            "{value}: {error}"
        );
        // fetch's allow list opens nothing for an upstream.
        assert!(!error.contains("MCP_V8_FETCH_ALLOW"), "{value}: {error}");
        assert_no_token("the configuration error", &error);
    }
    let error = lookup(vec![("MCP_V8_MCP_MAX_CALLS", "0".into())])
        .expect_err("refused")
        .to_string();
    assert!(error.contains("MCP_V8_MCP_MAX_CALLS"), "{error}");
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        file.path(),
        json!({"gh": {"url": "https://api.example.com/mcp"}}).to_string(),
    )
    .unwrap();
    let config = lookup(vec![(
        "MCP_V8_MCP_SERVERS",
        file.path().to_str().unwrap().to_owned(),
    )])
    .unwrap();
    assert_eq!(
        config.mcp.servers.keys().collect::<Vec<_>>(),
        ["gh"],
        "a file path is read"
    );
    assert_eq!(config.mcp.max_calls, UpstreamConfig::DEFAULT_MAX_CALLS);
}
