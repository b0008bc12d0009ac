//! What bounds a run's fetches: bytes, concurrency, signals, the run's timeout
//! and its cancellation.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_bytes_and_concurrency_are_limited_per_run() {
    let s = server().await;
    let mut fetch = config(&[s.origin()]);
    fetch.max_requests = 3;
    fetch.max_response_bytes = 1000;
    fetch.concurrency = 2;
    let engine = engine(fetch);
    let code = format!(
        r#"
        const base = {base:?};
        const small = await (await fetch(base + "/big?n=600")).text();
        const big = await fetch(base + "/big?n=600");
        const over = await big.text().then(() => "read", (e) => [e.constructor.name, e.message]);
        await fetch(base + "/json");
        const fourth = await fetch(base + "/json").then(() => "fetched", (e) => [e.constructor.name, e.message]);
        ({{ small: small.length, status: big.status, over, fourth }})
        "#,
        base = s.origin()
    );
    let out = stateless(&engine, &code).await;
    let v = json_result(&out);
    assert_eq!(v["small"], 600, "{v}");
    assert_eq!(v["status"], 200);
    assert_eq!(v["over"][0], "TypeError");
    assert!(
        v["over"][1]
            .as_str()
            .unwrap()
            .contains("MCP_V8_FETCH_MAX_RESPONSE_BYTES"),
        "{v}"
    );
    assert_eq!(v["fourth"][0], "TypeError");
    assert!(
        v["fourth"][1]
            .as_str()
            .unwrap()
            .contains("MCP_V8_FETCH_MAX_REQUESTS"),
        "{v}"
    );
    assert_eq!(out.fetches.map(|f| f.count), Some(3));

    // Six at once on a concurrency of two: never more than two in flight.
    let mut fetch = config(&[s.origin()]);
    fetch.concurrency = 2;
    let engine = self::engine(fetch);
    let code = format!(
        "Promise.all(Array.from({{ length: 6 }}, () => fetch({:?}).then((r) => r.text())))",
        s.url("/slow?ms=150")
    );
    let out = stateless(&engine, &code).await;
    assert_eq!(json_result(&out).as_array().unwrap().len(), 6);
    assert_eq!(s.seen.most_in_flight.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signals_and_the_run_timeout_abort_fetches() {
    let s = server().await;
    let engine = engine(config(&[s.origin()]));
    let started = Instant::now();
    let code = format!(
        r#"
        const timedOut = await fetch({slow:?}, {{ signal: AbortSignal.timeout(100) }}).then(() => "fetched", (e) => [e.name, e.constructor.name]);
        const controller = new AbortController();
        const pending = fetch({slow:?}, {{ signal: controller.signal }});
        controller.abort("stop");
        const aborted = await pending.then(() => "fetched", (e) => e);
        const already = await fetch({slow:?}, {{ signal: AbortSignal.abort() }}).then(() => "fetched", (e) => e.name);
        ({{ timedOut, aborted, already }})
        "#,
        slow = s.url("/slow?ms=20000")
    );
    let out = stateless(&engine, &code).await;
    let v = json_result(&out);
    assert_eq!(
        v["timedOut"],
        json!(["TimeoutError", "DOMException"]),
        "{v}"
    );
    assert_eq!(v["aborted"], "stop");
    assert_eq!(v["already"], "AbortError");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the aborted requests were waited for"
    );

    // A run that times out mid-fetch ends timed out; the next run works.
    let out = run(
        &engine,
        RunRequest {
            code: format!("await fetch({:?})", s.url("/slow?ms=20000")),
            timeout: Some(Duration::from_millis(500)),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(out.status, RunStatus::TimedOut, "{out:?}");
    let next = stateless(
        &engine,
        &format!("(await fetch({:?})).status", s.url("/json")),
    )
    .await;
    assert_eq!(completed(&next), "200");
}

/// Cancelling a run that waits on a request ends it at once, the request
/// aborted with it; the next run is unaffected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_run_aborts_its_pending_fetch() {
    let s = server().await;
    let engine = Arc::new(engine(config(&[s.origin()])));
    let control = Arc::new(mcp_v8_lambda::engine::RunControl::default());
    let started = Instant::now();
    let running = {
        let engine = engine.clone();
        let control = control.clone();
        let code = format!("await fetch({:?})", s.url("/slow?ms=20000"));
        tokio::spawn(async move {
            run(
                &engine,
                RunRequest {
                    code,
                    control: Some(control),
                    ..Default::default()
                },
            )
            .await
        })
    };
    while s.seen.requests.load(Ordering::SeqCst) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the request never arrived"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    control.cancel();
    let out = running.await.unwrap();
    assert_eq!(out.status, RunStatus::Cancelled, "{out:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the run waited for its request"
    );
    let next = stateless(
        &engine,
        &format!("(await fetch({:?})).status", s.url("/json")),
    )
    .await;
    assert_eq!(completed(&next), "200");
}
