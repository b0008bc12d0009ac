//! The Skills extension's methods as the spec says they answer, and a long
//! listing paged without splitting an entry.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_extension_is_declared_and_its_methods_answer_as_the_spec_says() {
    let server = server_with_vars(&[]);
    // Declared in both eras, with resources.
    let session = server.initialize_as("2025-11-25", &[]).await;
    let init = server.rpc(None, initialize_body()).await.body["result"]["capabilities"].clone();
    let discover =
        sessionless(&server, "server/discover", json!({})).await["result"]["capabilities"].clone();
    for capabilities in [&init, &discover] {
        assert_eq!(
            capabilities["extensions"]["io.modelcontextprotocol/skills"],
            json!({"directoryRead": true}),
            "{capabilities}"
        );
        assert!(capabilities["resources"].is_object());
    }
    let rpc = |method: &str, params: Value| json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params});
    let session_call = |method: &'static str, params: Value| {
        let body = rpc(method, params);
        let server = &server;
        let session = session.clone();
        async move { server.rpc(Some(&session), body).await.body }
    };
    let root = "skill://mcp-v8/sessions-and-heaps";
    // Unknown skills, URIs that are not a SKILL.md, unknown files and
    // non-directories are -32602 in both eras.
    for (method, params) in [
        (
            "skills/get",
            json!({"uri": "skill://mcp-v8/no-such-skill/SKILL.md"}),
        ),
        (
            "skills/get",
            json!({"uri": format!("{root}/references/session-tools.md")}),
        ),
        ("skills/get", json!({"uri": root})),
        ("skills/get", json!({})),
        (
            "resources/read",
            json!({"uri": format!("{root}/missing.md")}),
        ),
        (
            "resources/directory/read",
            json!({"uri": format!("{root}/SKILL.md")}),
        ),
        (
            "resources/directory/read",
            json!({"uri": "skill://nowhere"}),
        ),
        ("skills/list", json!({"cursor": "not-a-cursor"})),
    ] {
        let old = session_call(method, params.clone()).await;
        let new = sessionless(&server, method, params.clone()).await;
        assert_eq!(error_code(&old), -32602, "{method} {params}: {old}");
        assert_eq!(error_code(&new), -32602, "{method} {params}: {new}");
    }
    let unknown = session_call("skills/get", json!({"uri": "skill://x/SKILL.md"})).await;
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("skills/list lists the skills here"),
        "{unknown}"
    );
    // Directories list their direct children, subdirectories as such.
    let children = session_call("resources/directory/read", json!({"uri": root})).await;
    assert_eq!(
        children["result"]["resources"],
        json!([
            {"uri": format!("{root}/SKILL.md"), "name": "SKILL.md", "title": "SKILL.md",
             "description": "A file of the skill sessions-and-heaps.", "mimeType": "text/markdown"},
            {"uri": format!("{root}/references"), "name": "references", "title": "references",
             "description": "A directory of skill files.", "mimeType": "inode/directory"},
        ])
    );
    let top = sessionless(
        &server,
        "resources/directory/read",
        json!({"uri": "skill://mcp-v8"}),
    )
    .await;
    assert_eq!(top["result"]["resultType"], "complete");
    assert_eq!(
        top["result"]["resources"].as_array().unwrap().len(),
        BUILTIN_NAMES.len()
    );
    // resources/list names each SKILL.md with its frontmatter's name and
    // description, for clients without the extension.
    let listed = session_call("resources/list", json!({})).await;
    let skill_md = &listed["result"]["resources"][0];
    assert_eq!(skill_md["uri"], format!("{root}/SKILL.md"));
    assert_eq!(skill_md["name"], "sessions-and-heaps");
    assert_eq!(skill_md["mimeType"], "text/markdown");
    assert!(
        skill_md["description"]
            .as_str()
            .unwrap()
            .starts_with("Keep state across")
    );
    // 2026-07-28 reads of skill files are public and cacheable.
    let read = sessionless(
        &server,
        "resources/read",
        json!({"uri": format!("{root}/SKILL.md")}),
    )
    .await;
    assert_eq!(read["result"]["cacheScope"], "public", "{read}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_listing_pages_without_splitting_an_entry() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..60 {
        let name = format!("skill-{i:02}");
        std::fs::create_dir(dir.path().join(&name)).unwrap();
        std::fs::write(
            dir.path().join(&name).join("SKILL.md"),
            format!("---\nname: {name}\ndescription: Skill number {i}\n---\n"),
        )
        .unwrap();
    }
    let server = server_with_vars(&[("MCP_V8_SKILLS_DIR", dir.path().display().to_string())]);
    let session = server.initialize_as("2025-11-25", &[]).await;
    let mut seen = Vec::new();
    let mut cursor = Value::Null;
    let mut pages = 0;
    loop {
        let params = if cursor.is_null() {
            json!({})
        } else {
            json!({"cursor": cursor})
        };
        let page = server
            .rpc(
                Some(&session),
                json!({"jsonrpc": "2.0", "id": 3, "method": "skills/list", "params": params}),
            )
            .await
            .body["result"]
            .clone();
        pages += 1;
        for entry in page["skills"].as_array().unwrap() {
            // Each entry whole: its SKILL.md among its resources.
            let resources = entry["resources"].as_array().unwrap();
            assert!(
                resources.iter().any(|r| r["uri"] == entry["uri"]),
                "{entry}"
            );
            seen.push(entry["frontmatter"]["name"].as_str().unwrap().to_owned());
        }
        cursor = page["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(pages, 2);
    assert_eq!(seen.len(), BUILTIN_NAMES.len() + 60);
    let unique: std::collections::BTreeSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "no entry twice");
}
