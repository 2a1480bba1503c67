//! The routes DeerFlow's web client relies on (issue 8): the catalog (models, features, skills,
//! channel providers), per-thread token usage, upload limits, the backward message page,
//! history of a thread without checkpoint, search values and a run's workspace changes. Each
//! has a success case, bad input and another user's thread.

use serde_json::{Value, json};

use crate::vocabulary::*;

/// Owner, thread and one finished write/read run in it.
async fn thread_with_run(gateway: &TestGateway) -> (TestClient, String, String) {
    gateway.model.push(write_read_script());
    let (client, thread_id) = gateway.client_with_thread().await;
    let transcript = client.run_scenario(&thread_id).await;
    let run_id = transcript.run_id().to_string();
    (client, thread_id, run_id)
}

/// Every thread-scoped route this issue adds or changes, as `(method, path)`.
fn thread_routes(thread_id: &str, run_id: &str) -> Vec<(reqwest::Method, String)> {
    vec![
        (
            reqwest::Method::GET,
            format!("/api/threads/{thread_id}/messages/page"),
        ),
        (
            reqwest::Method::GET,
            format!("/api/threads/{thread_id}/token-usage"),
        ),
        (
            reqwest::Method::GET,
            format!("/api/threads/{thread_id}/uploads/limits"),
        ),
        (
            reqwest::Method::GET,
            format!("/api/threads/{thread_id}/runs/{run_id}/workspace-changes"),
        ),
        (
            reqwest::Method::POST,
            format!("/api/threads/{thread_id}/history"),
        ),
    ]
}

async fn call(client: &TestClient, method: &reqwest::Method, path: &str) -> (u16, Value) {
    if *method == reqwest::Method::POST {
        client.post(path, json!({})).await
    } else {
        client.get(path).await
    }
}

#[tokio::test]
async fn another_users_thread_and_an_unknown_thread_are_404_on_every_route() {
    let gateway = spawn_gateway().await;
    let (_, thread_id, run_id) = thread_with_run(&gateway).await;
    let stranger = gateway.registered_client().await;
    for (method, path) in thread_routes(&thread_id, &run_id) {
        let (status, body) = call(&stranger, &method, &path).await;
        assert_eq!(
            (status, &body["detail"]),
            (404, &json!(format!("Thread {thread_id} not found"))),
            "{method} {path}: {body}"
        );
    }
    for (method, path) in thread_routes("never-created", &run_id) {
        let (status, body) = call(&stranger, &method, &path).await;
        assert_eq!(status, 404, "{method} {path}: {body}");
    }
    gateway.stop().await;
}

#[tokio::test]
async fn bad_input_is_a_422_naming_the_parameter() {
    let gateway = spawn_gateway().await;
    let (client, thread_id, run_id) = thread_with_run(&gateway).await;
    let page = format!("/api/threads/{thread_id}/messages/page");
    let changes = format!("/api/threads/{thread_id}/runs/{run_id}/workspace-changes");
    let cases = [
        (format!("{page}?limit=0"), "limit"),
        (format!("{page}?limit=201"), "limit"),
        (format!("{page}?limit=many"), "limit"),
        (format!("{page}?before_seq=0"), "before_seq"),
        (format!("{page}?after_seq=3"), "after_seq"),
        (format!("{changes}?include_files=maybe"), "include_files"),
        (format!("{changes}?include_diff=2"), "include_diff"),
    ];
    for (path, parameter) in cases {
        let (status, body) = client.get(&path).await;
        assert_eq!(status, 422, "{path}: {body}");
        assert_eq!(
            body["detail"][0]["loc"],
            json!(["query", parameter]),
            "{path}: {body}"
        );
    }
    for (method, path) in thread_routes("bad.id", &run_id) {
        let (status, body) = call(&client, &method, &path).await;
        assert_eq!(status, 422, "{method} {path}: {body}");
    }
    let (status, body) = client
        .get(&format!(
            "/api/threads/{thread_id}/runs/no-such-run/workspace-changes"
        ))
        .await;
    assert_eq!(
        (status, body["detail"].as_str()),
        (404, Some("Run no-such-run not found"))
    );
    gateway.stop().await;
}

#[tokio::test]
async fn the_catalog_routes_answer_from_the_configuration() {
    let gateway = spawn_gateway_configured(|config| {
        let model = &mut config.models[0];
        model.display_name = Some("Scripted".into());
        model.description = Some("A model for tests".into());
        model.supports_reasoning_effort = true;
        config.token_usage.enabled = true;
    })
    .await;
    let skills = gateway.home.path().join("skills");
    for (folder, text) in [
        (
            "public/pdf",
            "---\nname: pdf\ndescription: Read PDFs\nlicense: MIT\n---\nbody",
        ),
        (
            "custom/notes",
            "---\nname: notes\ndescription: \"Keep notes\"\n---",
        ),
        ("public/not-a-skill", ""),
    ] {
        std::fs::create_dir_all(skills.join(folder)).unwrap();
        if !text.is_empty() {
            std::fs::write(skills.join(folder).join("SKILL.md"), text).unwrap();
        }
    }
    std::fs::write(
        gateway.home.path().join("extensions_config.json"),
        r#"{"mcpServers": {}, "skills": {"notes": {"enabled": false}}}"#,
    )
    .unwrap();
    let mut client = gateway.client();
    assert_eq!(client.get("/api/models").await.0, 401, "not public");
    client.register().await;
    let cases = [
        (
            "/api/models",
            json!({"models": [{"name": "scripted-model", "model": "scripted-model",
                "display_name": "Scripted", "description": "A model for tests",
                "supports_thinking": true, "supports_reasoning_effort": true}],
                "token_usage": {"enabled": true}}),
        ),
        (
            "/api/features",
            json!({"agents_api": {"enabled": false}, "browser_control": {"enabled": false},
                   "mcp_tasks": {"enabled": false}}),
        ),
        (
            "/api/skills",
            json!({"skills": [
                {"name": "pdf", "description": "Read PDFs", "license": "MIT", "category": "public",
                 "enabled": true, "editable": false},
                {"name": "notes", "description": "Keep notes", "license": null, "category": "custom",
                 "enabled": false, "editable": true}]}),
        ),
        (
            "/api/channels/providers",
            json!({"enabled": false, "providers": []}),
        ),
        (
            "/api/suggestions/config",
            json!({"enabled": true, "max_suggestions": 3}),
        ),
    ];
    for (path, expected) in cases {
        assert_eq!(client.get(path).await, (200, expected), "{path}");
    }
    gateway.stop().await;
}

/// Finding 14 of issue 21: `/api/skills` followed symlinks, read files whole, and hung on a
/// FIFO. Linked folders and files are skipped, a FIFO is not waited on, and a huge `SKILL.md`
/// is read only as far as its front matter needs.
#[tokio::test]
async fn leftovers_skills_skip_symlinks_and_fifos_and_read_a_bounded_prefix() {
    let gateway = spawn_gateway().await;
    let skills = gateway.home.path().join("skills");
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(outside.path().join("leak")).unwrap();
    std::fs::write(
        outside.path().join("leak/SKILL.md"),
        "---\nname: leaked\n---",
    )
    .unwrap();
    let public = skills.join("public");
    for folder in ["big", "fifo", "linked-file"] {
        std::fs::create_dir_all(public.join(folder)).unwrap();
    }
    let huge = format!("---\nname: big\n---\n{}", "x".repeat(8 * 1024 * 1024));
    std::fs::write(public.join("big/SKILL.md"), huge).unwrap();
    let fifo = public.join("fifo/SKILL.md");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|status| status.success()), "mkfifo");
    std::os::unix::fs::symlink(outside.path().join("leak"), public.join("linked-folder")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("leak/SKILL.md"),
        public.join("linked-file/SKILL.md"),
    )
    .unwrap();
    let mut client = gateway.client();
    client.register().await;
    let answer = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        client.get("/api/skills"),
    )
    .await;
    let Ok(answer) = answer else {
        // Releases a reader stuck on the FIFO, so that the failure does not hang the tests.
        use std::os::unix::fs::OpenOptionsExt;
        let _writer = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo);
        panic!("/api/skills was stuck on a FIFO");
    };
    let names: Vec<&str> = answer.1["skills"]
        .as_array()
        .expect("skills")
        .iter()
        .filter_map(|skill| skill["name"].as_str())
        .collect();
    assert_eq!((answer.0, names), (200, vec!["big"]));
    gateway.stop().await;
}

#[tokio::test]
async fn upload_limits_are_the_configured_ones() {
    let gateway = spawn_gateway_configured(|config| config.uploads.max_files = 3).await;
    let (client, thread_id) = gateway.client_with_thread().await;
    let (status, limits) = client
        .get(&format!("/api/threads/{thread_id}/uploads/limits"))
        .await;
    assert_eq!(
        (status, limits),
        (
            200,
            json!({"max_files": 3, "max_file_size": 52428800, "max_total_size": 104857600})
        )
    );
    gateway.stop().await;
}

#[tokio::test]
async fn token_usage_sums_the_threads_finished_runs() {
    let gateway =
        spawn_gateway_configured(|config| config.models[0].max_context_tokens = Some(1000)).await;
    let usage = json!({"input_tokens": 100, "output_tokens": 25, "total_tokens": 125,
        "input_token_details": {"audio": 0, "cache_read": 0},
        "output_token_details": {"audio": 0, "reasoning": 0}});
    let mut answered = gateway_under_test::messages::Message::ai("done", Vec::new());
    answered.usage_metadata = Some(usage);
    gateway.model.push([Ok(answered.clone()), Ok(answered)]);
    let (client, thread_id) = gateway.client_with_thread().await;
    for prompt in ["one", "two"] {
        client.run_stream(&thread_id, prompt, json!({})).await;
    }
    let (status, body) = client
        .get(&format!("/api/threads/{thread_id}/token-usage"))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"thread_id": thread_id, "total_tokens": 250, "total_input_tokens": 200,
            "total_output_tokens": 50, "total_runs": 2,
            "by_model": {"scripted-model": {"tokens": 250, "runs": 2}},
            "by_caller": {"lead_agent": 250, "subagent": 0, "middleware": 0},
            "context_usage": {"token_count": 125, "max_context_tokens": 1000, "percentage": 12.5}})
    );
    gateway.stop().await;
}

#[tokio::test]
async fn the_message_page_holds_the_visible_rows_with_feedback_and_turn_duration() {
    let gateway = spawn_gateway().await;
    let (client, thread_id, run_id) = thread_with_run(&gateway).await;
    let (status, page) = client
        .get(&format!("/api/threads/{thread_id}/messages/page"))
        .await;
    assert_eq!(status, 200, "{page}");
    let rows = page["data"].as_array().unwrap();
    let kinds: Vec<(&str, &str)> = rows
        .iter()
        .map(|row| {
            (
                row["event_type"].as_str().unwrap(),
                row["content"]["type"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("llm.human.input", "human"),
            ("llm.ai.response", "ai"),
            ("llm.tool.result", "tool"),
            ("llm.ai.response", "ai"),
            ("llm.tool.result", "tool"),
            ("llm.ai.response", "ai"),
        ]
    );
    for row in rows {
        assert_eq!(row["run_id"], run_id.as_str());
        assert_eq!(row["category"], "message");
        assert_eq!(row["feedback"], Value::Null);
        let has_duration = row["content"]["additional_kwargs"]
            .get("turn_duration")
            .is_some();
        let is_last = std::ptr::eq(row, rows.last().unwrap());
        assert_eq!(has_duration, is_last, "only the run's last AI row: {row}");
    }
    assert!(rows.last().unwrap()["content"]["additional_kwargs"]["turn_duration"].is_i64());
    assert_eq!(
        (&page["has_more"], &page["next_before_seq"]),
        (&json!(false), &Value::Null)
    );
    let newest = rows.last().unwrap()["seq"].as_i64().unwrap();
    let (_, older) = client
        .get(&format!(
            "/api/threads/{thread_id}/messages/page?limit=2&before_seq={newest}"
        ))
        .await;
    let older_rows = older["data"].as_array().unwrap();
    assert_eq!(older_rows.len(), 2);
    assert_eq!(older["has_more"], true);
    assert_eq!(older["next_before_seq"], older_rows[0]["seq"]);
    assert!(
        older_rows
            .iter()
            .all(|row| row["content"]["additional_kwargs"]
                .get("turn_duration")
                .is_none()),
        "the run's last AI row is on a newer page"
    );
    gateway.stop().await;
}

#[tokio::test]
async fn a_run_records_what_it_changed_in_the_sandbox() {
    let gateway = spawn_gateway().await;
    let (client, thread_id, run_id) = thread_with_run(&gateway).await;
    let path = format!("/api/threads/{thread_id}/runs/{run_id}/workspace-changes");
    let (status, changes) = client.get(&path).await;
    assert_eq!(status, 200, "{changes}");
    assert_eq!(changes["available"], true);
    assert_eq!(changes["version"], 1);
    assert_eq!(
        changes["summary"],
        json!({"created": 1, "modified": 0, "deleted": 0, "symlink_created": 0,
               "additions": 1, "deletions": 0, "truncated": false})
    );
    assert_eq!(
        changes["limits"],
        json!({"max_files": 200, "max_scanned_files": 2000,
               "max_file_bytes_for_diff": 262144, "max_total_diff_bytes": 1048576})
    );
    let file = &changes["files"][0];
    assert_eq!(
        (
            &file["path"],
            &file["root"],
            &file["status"],
            &file["size_after"]
        ),
        (
            &json!("/mnt/user-data/outputs/note.txt"),
            &json!("outputs"),
            &json!("created"),
            &json!(15)
        )
    );
    use sha2::Digest;
    let expected_sha = hex::encode(sha2::Sha256::digest(b"hi from replay."));
    assert_eq!(file["sha256_after"], expected_sha.as_str(), "{file}");
    assert_eq!(
        (&file["additions"], &file["deletions"]),
        (&json!(1), &json!(0))
    );
    assert!(
        file["diff"]
            .as_str()
            .unwrap()
            .ends_with("\n+hi from replay."),
        "{file}"
    );
    let (_, without_diff) = client.get(&format!("{path}?include_diff=false")).await;
    assert_eq!(without_diff["files"][0]["diff"], "");
    assert_eq!(without_diff["files"][0]["additions"], 1);
    let (_, without_files) = client.get(&format!("{path}?include_files=0")).await;
    assert_eq!(without_files["files"], json!([]));
    assert_eq!(without_files["summary"], changes["summary"]);

    gateway.model.push([answer("nothing to do")]);
    let quiet = client
        .run_stream(&thread_id, "just answer", json!({}))
        .await;
    let quiet_run = quiet.run_id();
    let (status, nothing) = client
        .get(&format!(
            "/api/threads/{thread_id}/runs/{quiet_run}/workspace-changes"
        ))
        .await;
    assert_eq!(status, 200);
    assert_eq!(nothing["available"], false, "{nothing}");
    assert_eq!(nothing["summary"]["created"], 0);
    gateway.stop().await;
}

#[tokio::test]
async fn search_values_hold_only_the_title() {
    let gateway = spawn_gateway().await;
    let (client, thread_id, _) = thread_with_run(&gateway).await;
    let fresh = client.create_thread().await;
    let (status, threads) = client.post("/api/threads/search", json!({})).await;
    assert_eq!(status, 200);
    let values: Vec<(&str, &Value)> = threads
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["thread_id"].as_str().unwrap(), &t["values"]))
        .collect();
    assert_eq!(
        values,
        [
            (fresh.as_str(), &json!({})),
            (
                thread_id.as_str(),
                &json!({"title": "Using your own file tools directly, create the fil..."})
            ),
        ]
    );
    gateway.stop().await;
}

#[tokio::test]
async fn suggestions_ask_for_at_most_max_suggestions() {
    let gateway = spawn_gateway().await;
    gateway.model.push([answer("[\"a\", \"b\", \"c\", \"d\"]")]);
    let (client, thread_id) = gateway.client_with_thread().await;
    let body = json!({"messages": [{"role": "user", "content": "hi"}], "n": 5});
    let (status, answer) = client
        .post(&format!("/api/threads/{thread_id}/suggestions"), body)
        .await;
    assert_eq!(
        (status, answer),
        (200, json!({"suggestions": ["a", "b", "c"]}))
    );
    assert!(
        gateway.model.requests()[0].messages[1]
            .text()
            .ends_with("Generate 3 follow-up questions"),
        "n = min(5, max_suggestions = 3)"
    );
    gateway.stop().await;
}

/// The web client's run request (issue 8): content blocks, four stream modes, `continue`.
fn web_run_body(prompt: &str, thread_id: &str) -> Value {
    json!({
        "input": {"messages": [{"type": "human", "content": [{"type": "text", "text": prompt}],
                                "additional_kwargs": {}}]},
        "config": {"recursion_limit": 1000},
        "context": {"model_name": "scripted-model", "mode": "ultra", "reasoning_effort": "high",
                    "thinking_enabled": true, "is_plan_mode": true, "subagent_enabled": true,
                    "thread_id": thread_id},
        "stream_mode": ["messages-tuple", "values", "updates", "custom"],
        "assistant_id": "lead_agent",
        "on_disconnect": "continue",
    })
}

#[tokio::test]
async fn the_four_web_modes_stream_langgraph_frames_around_unchanged_values() {
    let gateway = spawn_gateway().await;
    let client = gateway.registered_client().await;
    let values_only = values_only_shapes(&client, &gateway).await;
    gateway.model.push(write_read_script());
    let thread_id = client.create_thread().await;
    let web = client
        .stream_run(&thread_id, web_run_body(SCENARIO_PROMPT, &thread_id))
        .await;
    assert_eq!(web.status, 200, "{}", web.raw);

    // `values` frames are exactly those of a values-only run.
    let web_values: Vec<_> = web
        .shapes()
        .into_iter()
        .filter(|(e, _)| e == "values")
        .collect();
    assert_eq!(web_values, values_only);

    // `updates` are named after the node; the input is not a node. The nodes that wrote
    // (a node that wrote nothing streams `{"<node>": null}`, docs/gateway-contract.md §5.4):
    let nodes: Vec<String> = web
        .frames
        .iter()
        .filter(|f| f.event == "updates")
        .filter(|f| f.data.as_object().unwrap().values().all(|v| !v.is_null()))
        .map(|f| {
            f.data
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    assert_eq!(
        nodes,
        [
            "ThreadDataMiddleware.before_agent",
            "UploadsMiddleware.before_agent",
            "DynamicContextMiddleware.before_agent",
            "model",
            "TitleMiddleware.after_model",
            "TokenUsageMiddleware.after_model",
            "tools",
            "model",
            "TokenUsageMiddleware.after_model",
            "tools",
            "model",
            "TokenUsageMiddleware.after_model",
        ]
    );

    // `messages`: the user's visible copy, each AI message as chunks ending with a terminator
    // (tool calls in `tool_call_chunks`), and each tool result.
    let tuples: Vec<(String, String)> = web
        .frames
        .iter()
        .filter(|f| f.event == "messages")
        .map(|f| {
            let chunk = &f.data[0];
            let detail = match chunk["type"].as_str().unwrap() {
                "AIMessageChunk" if chunk["chunk_position"] == "last" => "last".to_string(),
                "AIMessageChunk" if !chunk["tool_call_chunks"].as_array().unwrap().is_empty() => {
                    format!(
                        "calls {}",
                        chunk["tool_call_chunks"][0]["name"].as_str().unwrap()
                    )
                }
                _ => chunk["content"].as_str().unwrap_or("<blocks>").to_string(),
            };
            (chunk["type"].as_str().unwrap().to_string(), detail)
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("human", "<blocks>"),
        ("AIMessageChunk", "calls write_file"),
        ("AIMessageChunk", "last"),
        ("tool", "OK"),
        ("AIMessageChunk", "calls read_file"),
        ("AIMessageChunk", "last"),
        ("tool", "hi from replay."),
        ("AIMessageChunk", "hi from replay."),
        ("AIMessageChunk", "last"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(tuples, expected, "{}", web.raw);

    // The chunks of the answer carry the id of the AI message the state holds.
    let final_ai = web.last_message();
    let answer_chunk = web
        .frames
        .iter()
        .rev()
        .find(|f| f.event == "messages" && f.data[0]["content"] == "hi from replay.")
        .unwrap();
    assert_eq!(answer_chunk.data[0]["id"], final_ai["id"]);
    assert_eq!(answer_chunk.data[1]["langgraph_node"], "model");

    // The human message is stamped with DeerFlow's ISO timestamp.
    let user_copy = web.last_values()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["type"] == "human" && m["additional_kwargs"]["hide_from_ui"] != true)
        .unwrap()
        .clone();
    let timestamp = user_copy["additional_kwargs"]["timestamp"]
        .as_str()
        .unwrap();
    assert!(
        chrono::DateTime::parse_from_rfc3339(timestamp).is_ok(),
        "{timestamp}"
    );
    assert!(timestamp.ends_with("+00:00"), "{timestamp}");
    gateway.stop().await;
}

/// The `values` shapes of a fresh values-only scenario run.
async fn values_only_shapes(
    client: &TestClient,
    gateway: &TestGateway,
) -> Vec<(String, Option<Vec<String>>)> {
    gateway.model.push(write_read_script());
    let thread_id = client.create_thread().await;
    client
        .run_scenario(&thread_id)
        .await
        .shapes()
        .into_iter()
        .filter(|(event, _)| event == "values")
        .collect()
}

#[tokio::test]
async fn a_streamed_answer_keeps_the_models_own_message_id() {
    let gateway = spawn_gateway().await;
    let mut recorded = gateway_under_test::messages::Message::ai("recorded answer", Vec::new());
    recorded.id = Some("lc_run--recorded-id".into());
    gateway.model.push([Ok(recorded)]);
    let (client, thread_id) = gateway.client_with_thread().await;
    let web = client
        .stream_run(&thread_id, web_run_body("hello", &thread_id))
        .await;
    let chunk_ids: Vec<&Value> = web
        .frames
        .iter()
        .filter(|f| f.event == "messages" && f.data[0]["type"] == "AIMessageChunk")
        .map(|f| &f.data[0]["id"])
        .collect();
    assert_eq!(chunk_ids, [&json!("lc_run--recorded-id"); 2], "{}", web.raw);
    let last = web.last_message();
    assert_eq!(last["id"], "lc_run--recorded-id");
    gateway.stop().await;
}
