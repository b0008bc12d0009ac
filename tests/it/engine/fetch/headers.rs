//! What fetch sends and logs: injected secret headers reach the listed server
//! and nothing else, serve logs requests without them, and headers that would
//! reroute a request are refused with nothing sent.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_headers_reach_the_server_and_nothing_else() {
    let s = server().await;
    let dir = tempfile::tempdir().unwrap();
    let store = FileHeapStore::new(dir.path().join("heaps"));
    let mut fetch = config(&[s.origin()]);
    fetch.headers =
        FetchConfig::parse_headers(&json!({ s.origin(): { "Authorization": SECRET } }).to_string())
            .unwrap();
    let engine = crate::common::engine::on_workers(
        EngineConfig {
            fetch,
            ..EngineConfig::default()
        },
        Some(Arc::new(store.clone()) as Arc<dyn HeapStore>),
    );
    let code = format!(
        r#"
        const request = new Request({echo:?}, {{ method: "POST", body: "x", headers: {{ authorization: "the code's own" }} }});
        globalThis.response = await fetch(request);
        globalThis.echoed = await response.clone().json();
        globalThis.seenHeaders = [...request.headers, ...response.headers];
        console.log(request.headers.get("authorization"), JSON.stringify(seenHeaders), JSON.stringify(echoed));
        ({{ code: request.headers.get("authorization"), names: echoed.header_names, headers: seenHeaders }})
        "#,
        echo = s.url("/echo")
    );
    let out = run(
        &engine,
        RunRequest {
            code,
            stateful: true,
            ..Default::default()
        },
    )
    .await;
    let v = json_result(&out);
    assert_eq!(
        v["code"], "the code's own",
        "the code keeps seeing its own header"
    );
    assert!(
        v["names"]
            .as_array()
            .unwrap()
            .contains(&json!("authorization"))
    );
    assert_eq!(
        s.seen.authorization.lock().unwrap().as_slice(),
        [Some(SECRET.to_owned())],
        "the injected value overrode the code's"
    );
    let everything = serde_json::to_string(&out).unwrap();
    assert!(
        !everything.contains("s3cret"),
        "the outcome leaks it: {everything}"
    );
    let heap = out.heap.expect("a heap");
    // The raw payload: the stored chunks are compressed, so a search of
    // the files would find nothing either way.
    let stored = store
        .get(&Tenant::anonymous(), &heap)
        .await
        .unwrap()
        .unwrap();
    let bytes = stored.payload();
    let needle = b"s3cret";
    assert!(
        !bytes.windows(needle.len()).any(|w| w == needle),
        "the stored snapshot holds the injected secret"
    );
    // The same request through an engine worker: the settings cross the pipe.
    let worker_dir = tempfile::tempdir().unwrap();
    let program = worker_dir.path().join("fetch-worker-under-test");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_mcp-v8-lambda"), &program).unwrap();
    let mut fetch = config(&[s.origin()]);
    fetch.headers =
        FetchConfig::parse_headers(&json!({ s.origin(): { "Authorization": SECRET } }).to_string())
            .unwrap();
    let pooled = crate::common::engine::on_workers(
        EngineConfig {
            fetch,
            engine_workers: 1,
            worker_program: Some(program),
            ..EngineConfig::default()
        },
        Some(Arc::new(store.clone()) as Arc<dyn HeapStore>),
    );
    let out = run(
        &pooled,
        RunRequest {
            code: format!(
                "(await fetch({:?}, {{ method: 'POST', body: 'w' }})).status",
                s.url("/echo")
            ),
            stateful: true,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(completed(&out), "200");
    assert_eq!(
        out.fetches,
        Some(FetchCount {
            count: 1,
            bytes: out.fetches.unwrap().bytes
        })
    );
    assert_eq!(
        s.seen
            .authorization
            .lock()
            .unwrap()
            .last()
            .unwrap()
            .as_deref(),
        Some(SECRET)
    );
}

/// `serve` reads the same variables, logs each request's method, origin
/// and status, and never a header value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_logs_requests_without_their_headers() {
    let s = server().await;
    let data = tempfile::tempdir().unwrap();
    let port = crate::common::net::free_port();
    let log_path = data.path().join("serve.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-v8-lambda"))
        .args(["serve", "--port", &port.to_string(), "--data-dir"])
        .arg(data.path().join("data"))
        .env("MCP_V8_FETCH_ALLOW", s.origin())
        .env(
            "MCP_V8_FETCH_HEADERS",
            json!({ s.origin(): { "authorization": SECRET } }).to_string(),
        )
        .env("RUST_LOG", "info")
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    crate::common::net::wait_listening(port, "serve", Duration::from_secs(20));
    let code = format!(
        "(await fetch({:?}, {{ method: 'POST', body: 'b' }})).status",
        s.url("/echo")
    );
    let params = json!({"name": "run_js", "arguments": {"code": code}});
    let answer = crate::common::post_2026(port, "tools/call", Some("run_js"), params).await;
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        answer["result"]["structuredContent"]["result"], "200",
        "{answer}"
    );
    assert_eq!(
        answer["result"]["structuredContent"]["fetches"]["count"], 1,
        "{answer}"
    );
    let logged = std::fs::read_to_string(&log_path).unwrap();
    let line = logged
        .lines()
        .find(|l| l.contains("\"fetch\"") || l.contains(" fetch"))
        .unwrap_or_else(|| panic!("no fetch line in:\n{logged}"));
    assert!(
        line.contains(&s.origin()) && line.contains("POST") && line.contains("200"),
        "{line}"
    );
    assert!(
        !logged.contains("s3cret"),
        "the log holds the injected secret:\n{logged}"
    );
}

/// A header that would route a request elsewhere than its URL (`Host`, and
/// the forwarding headers proxies honour) is refused with a `TypeError`
/// before anything is sent, so the credentials injected for an origin never
/// reach a virtual host the operator did not name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_that_reroute_a_request_are_refused_and_nothing_is_sent() {
    let s = server().await;
    let mut fetch = config(&[s.origin()]);
    fetch.headers =
        FetchConfig::parse_headers(&json!({ s.origin(): { "Authorization": SECRET } }).to_string())
            .unwrap();
    let engine = crate::common::engine::on_workers(
        EngineConfig {
            fetch,
            ..EngineConfig::default()
        },
        None,
    );
    for header in [
        "Host",
        "host",
        "X-Forwarded-Host",
        "Forwarded",
        "X-Original-URL",
    ] {
        let code = refusal(&format!(
            "{:?}, {{ headers: {{ {header:?}: 'internal-admin.example' }} }}",
            s.url("/echo")
        ));
        let value = json_result(&stateless(&engine, &code).await);
        assert_eq!(value["type"], "TypeError", "{header}: {value}");
        assert!(
            value["message"].as_str().unwrap().contains("cannot be set"),
            "{header}: {value}"
        );
    }
    assert_eq!(
        s.seen.requests.load(Ordering::SeqCst),
        0,
        "nothing was sent"
    );
    // The same request without it goes out, with the URL's host.
    let sent = stateless(
        &engine,
        &format!("(await fetch({:?})).status", s.url("/echo")),
    )
    .await;
    assert_eq!(completed(&sent), "200");
    assert_eq!(
        s.seen.hosts.lock().unwrap().as_slice(),
        [s.address.to_string()]
    );
}
