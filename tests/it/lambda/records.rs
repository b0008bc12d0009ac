//! A result far over the answer budget under the Lambda entry on moto: the
//! run's record stays a small DynamoDB item, its whole result is kept in
//! S3 beside it, and the function reads it back page by page, each page a
//! JSON array of whole rows.

use serde_json::{Value, json};

use crate::common;
use crate::lambda::{event_2026, rpc_body, run_js_event, start_function};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_result_reads_back_whole_from_s3_page_by_page_and_its_item_stays_small() {
    let cache = tempfile::tempdir().unwrap();
    let bucket = common::moto::unique("records");
    let prefix = format!("{}-", common::moto::unique("records"));
    let mut env = common::moto::serve_env(&bucket, &prefix, cache.path());
    common::moto::setup(&env);
    // Fewer, larger pages: the same paging in a quarter of the reads.
    env.push(("MCP_V8_ANSWER_BUDGET_KB".into(), "128".into()));
    let mut api = common::runtime_api::RuntimeApi::start().await;
    env.extend(api.function_env());
    let _function = start_function(env);
    let limit = std::time::Duration::from_secs(120);

    api.give(run_js_event(json!({
        "code": "Array.from({ length: 200000 }, (_, i) => ({ id: i, name: `row ${i}`, value: i * 2 }))",
    })));
    let answer = rpc_body(&api.answer(limit).await);
    let outcome = &answer["result"]["structuredContent"];
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let stand_in = &outcome["result"];
    assert_eq!(stand_in["type"], "array", "{outcome}");
    assert_eq!(stand_in["length"], 200_000, "{outcome}");
    let uri = stand_in["uri"].as_str().unwrap().to_owned();
    let id = outcome["execution_id"].as_str().unwrap().to_owned();

    let mut rows = Vec::new();
    let mut pages = 0;
    loop {
        pages += 1;
        api.give(event_2026(
            "resources/read",
            None,
            json!({ "uri": format!("{uri}?page={pages}") }),
        ));
        let read = rpc_body(&api.answer(limit).await);
        let contents = &read["result"]["contents"][0];
        assert_eq!(contents["mimeType"], "application/json", "{read}");
        let page: Vec<Value> = serde_json::from_str(contents["text"].as_str().unwrap())
            .unwrap_or_else(|e| panic!("page {pages} does not parse: {e}"));
        let place = &contents["_meta"]["mcp-v8-lambda/page"];
        assert_eq!(place["items"]["from"], rows.len(), "{place}");
        rows.extend(page);
        if place["page"] == place["pages"] {
            break;
        }
    }
    assert!(pages > 10, "{pages} pages");
    assert_eq!(rows.len(), 200_000);
    assert_eq!(rows[199_999]["id"], 199_999);

    // The record's item names its result; the bytes are in S3, under records/.
    let (s3, dynamodb) = common::moto::clients().await;
    // The key is the tenant's (the IAM caller's) scoped execution id.
    let items = dynamodb
        .scan()
        .table_name(format!("{prefix}executions"))
        .send()
        .await
        .unwrap();
    let item = items
        .items()
        .iter()
        .find(|item| match item.get("execution_id") {
            Some(aws_sdk_dynamodb::types::AttributeValue::S(key)) => key.ends_with(&id),
            _ => false,
        })
        .expect("the run's record");
    let item_bytes: usize = item
        .iter()
        .map(|(name, value)| name.len() + format!("{value:?}").len())
        .sum();
    assert!(item_bytes < 64 * 1024, "{item_bytes} bytes: {item:?}");
    let kept = s3
        .list_objects_v2()
        .bucket(&bucket)
        .prefix("records/")
        .send()
        .await
        .unwrap();
    let sizes: Vec<i64> = kept.contents().iter().filter_map(|o| o.size()).collect();
    assert!(
        sizes.iter().any(|&size| size > 5_000_000),
        "the whole result is kept under records/: {sizes:?}"
    );
}
