//! Runs: request validation, SSE framing and headers, background/wait/list/get/cancel/join,
//! reconnects, disconnects, error handling and the message journal (`docs/gateway-contract.md`
//! §4–5, §11–12).

use std::time::Duration;

use futures::StreamExt;
use gateway_under_test::models::{ErrorClass, ModelError};
use serde_json::{Value, json};

use crate::vocabulary::*;

#[tokio::test]
async fn run_requests_are_validated_with_the_contract_errors() {
    let gateway = spawn_gateway().await;
    gateway.model.answer_always("ok");
    let (client, thread_id) = gateway.client_with_thread().await;
    let path = format!("/api/threads/{thread_id}/runs/stream");
    let with = |patch: Value| {
        let mut body = run_body("hi", json!({}));
        body.as_object_mut()
            .unwrap()
            .extend(patch.as_object().unwrap().clone());
        body
    };
    let cases = [
        (with(json!({"surprise": 1})), 422, None),
        (
            with(json!({"stream_mode": ["values", "bogus"]})),
            422,
            Some(json!("Unsupported stream mode(s): bogus")),
        ),
        (
            with(json!({"webhook": "http://x"})),
            422,
            Some(json!("Run option 'webhook' is not supported by DeerFlow")),
        ),
        (
            with(json!({"feedback_keys": ["a"]})),
            422,
            Some(json!(
                "Run option 'feedback_keys' is not supported by DeerFlow"
            )),
        ),
        (with(json!({"stream_resumable": true})), 422, None),
        (with(json!({"on_disconnect": "explode"})), 422, None),
        (with(json!({"multitask_strategy": "enqueue"})), 422, None),
        // Accepted and ignored, but still type-checked where the contract gives a type.
        (
            with(json!({
                "command": {"resume": "x"}, "checkpoint_id": "c-1", "checkpoint": {},
                "interrupt_before": "*", "interrupt_after": ["model"], "stream_subgraphs": true,
            })),
            200,
            None,
        ),
        (with(json!({"checkpoint_id": 7})), 422, None),
        (with(json!({"stream_subgraphs": "yes"})), 422, None),
        (
            with(json!({"input": {"messages": [{"role": "robot", "content": "x"}]}})),
            400,
            Some(json!(
                "Invalid message at input.messages[0]: unknown role 'robot'"
            )),
        ),
        (
            with(json!({"context": {"model_name": "gpt-nope"}})),
            400,
            Some(json!(
                "Model 'gpt-nope' is not in the configured model allowlist"
            )),
        ),
    ];
    for (body, status, detail) in cases {
        let (got_status, got_body) = client.post(&path, body.clone()).await;
        assert_eq!(got_status, status, "{body}\n→ {got_body}");
        if let Some(detail) = detail {
            assert_eq!(got_body["detail"], detail, "{body}");
        }
    }
    gateway.stop().await;
}

#[tokio::test]
async fn streams_carry_the_contract_headers_ids_and_end_frame() {
    let gateway = spawn_gateway().await;
    gateway.model.answer_always("hello");
    let (client, thread_id) = gateway.client_with_thread().await;
    let transcript = client
        .run_stream(&thread_id, "hi", json!({"mode": "flash"}))
        .await;
    let headers = &transcript.headers;
    assert_eq!(headers["content-type"], "text/event-stream");
    assert_eq!(headers["cache-control"], "no-cache");
    assert_eq!(headers["x-accel-buffering"], "no");
    let run_id = transcript.run_id().to_string();
    assert_eq!(
        headers["content-location"],
        format!("/api/threads/{thread_id}/runs/{run_id}").as_str()
    );
    assert_eq!(transcript.frames[0].event, "metadata");
    assert_eq!(
        transcript.frames[0].data,
        json!({"run_id": run_id, "thread_id": thread_id})
    );
    for (seq, frame) in transcript.frames[..transcript.frames.len() - 1]
        .iter()
        .enumerate()
    {
        let id = frame.id.as_deref().expect("published frames carry an id");
        let (millis, n) = id.split_once('-').unwrap();
        assert!(
            millis.parse::<u64>().unwrap() > 1_600_000_000_000 && n == seq.to_string(),
            "{id}"
        );
    }
    assert!(
        transcript.raw.ends_with("event: end\ndata: null\n\n"),
        "{}",
        transcript.raw
    );
    gateway.stop().await;
}

#[tokio::test]
async fn the_recursion_limit_is_clamped_and_enforced() {
    let gateway = spawn_gateway().await;
    gateway.model.answer_always("ok");
    let (client, thread_id) = gateway.client_with_thread().await;
    let mut body = run_body("hi", json!({}));
    body["config"] = json!({"recursion_limit": 5000});
    let (status, run) = client
        .post(&format!("/api/threads/{thread_id}/runs/wait"), body)
        .await;
    assert_eq!(status, 200, "{run}");
    let (_, runs) = client.get(&format!("/api/threads/{thread_id}/runs")).await;
    assert_eq!(runs[0]["kwargs"]["config"]["recursion_limit"], 1000);

    gateway.model.push([tool_call(
        "ls",
        json!({"description": "d", "path": "/mnt/user-data"}),
        "c1",
    )]);
    let mut body = run_body("again", json!({}));
    body["config"] = json!({"recursion_limit": 3});
    let transcript = client.stream_run(&thread_id, body).await;
    let events = transcript.events();
    assert_eq!(events[events.len() - 2], "error", "{}", transcript.raw);
    assert_eq!(
        transcript.frames[events.len() - 2].data["name"],
        "GraphRecursionError"
    );
    assert_eq!(*events.last().unwrap(), "end");
    gateway.stop().await;
}

/// Finding 14 of issue 21: junk `recursion_limit` values silently became 100. Numbers keep
/// DeerFlow's clamp; anything else is a 422 naming the field.
#[tokio::test]
async fn leftovers_a_recursion_limit_that_is_not_a_number_is_refused() {
    let gateway = spawn_gateway().await;
    gateway.model.answer_always("ok");
    let (client, thread_id) = gateway.client_with_thread().await;
    let rows = [
        (json!("50"), 422, None),
        (json!(true), 422, None),
        (json!([5]), 422, None),
        (json!({"n": 5}), 422, None),
        (json!(null), 200, Some(100)),
        (json!(0), 200, Some(100)),
        (json!(2.5), 200, Some(100)),
        (json!(7), 200, Some(7)),
        (json!(1e12), 200, Some(100)),
        (json!(5_000), 200, Some(1000)),
    ];
    for (value, status, stored) in rows {
        let mut body = run_body("hi", json!({}));
        body["config"] = json!({"recursion_limit": value});
        let (got, answer) = client
            .post(&format!("/api/threads/{thread_id}/runs/wait"), body)
            .await;
        assert_eq!(got, status, "{value}: {answer}");
        if status == 422 {
            assert!(
                answer.to_string().contains("config.recursion_limit"),
                "{answer}"
            );
        }
        if let Some(stored) = stored {
            let (_, runs) = client.get(&format!("/api/threads/{thread_id}/runs")).await;
            assert_eq!(
                runs[0]["kwargs"]["config"]["recursion_limit"], stored,
                "{value}"
            );
        }
    }
    gateway.stop().await;
}

#[tokio::test]
async fn a_concurrent_run_is_rejected_with_409() {
    let gateway = spawn_gateway().await;
    gateway.model.set_delay(400);
    gateway.model.answer_always("slow");
    let (client, thread_id) = gateway.client_with_thread().await;
    let (status, first) = client
        .post(
            &format!("/api/threads/{thread_id}/runs"),
            run_body("one", json!({})),
        )
        .await;
    assert_eq!(status, 200, "{first}");
    assert!(["pending", "running"].contains(&first["status"].as_str().unwrap()));
    let (status, _) = client
        .post(
            &format!("/api/threads/{thread_id}/runs"),
            run_body("two", json!({})),
        )
        .await;
    assert_eq!(status, 409);
    let mut body = run_body("three", json!({}));
    body["multitask_strategy"] = json!("interrupt");
    let (status, third) = client
        .post(&format!("/api/threads/{thread_id}/runs/wait"), body)
        .await;
    assert_eq!(status, 200, "{third}");
    let (_, first_now) = client
        .get(&format!(
            "/api/threads/{thread_id}/runs/{}",
            first["run_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(first_now["status"], "interrupted");
    gateway.stop().await;
}

#[tokio::test]
async fn background_wait_list_get_join_and_cancel() {
    let gateway = spawn_gateway().await;
    gateway.model.answer_always("done");
    let (client, thread_id) = gateway.client_with_thread().await;
    let base = format!("/api/threads/{thread_id}/runs");
    let (status, values) = client
        .post(&format!("{base}/wait"), run_body("first", json!({})))
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        values["messages"].as_array().unwrap().last().unwrap()["content"],
        "done"
    );
    let (_, second) = client.post(&base, run_body("second", json!({}))).await;
    let second_id = second["run_id"].as_str().unwrap().to_string();
    let keys: Vec<&String> = second.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 18, "{keys:?}");

    let join = client
        .request(reqwest::Method::GET, &format!("{base}/{second_id}/join"))
        .send()
        .await
        .unwrap();
    let joined = parse_sse(&join.text().await.unwrap());
    assert_eq!(joined.first().unwrap().event, "metadata");
    assert_eq!(joined.last().unwrap().event, "end");

    let (_, list) = client.get(&base).await;
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["run_id"], second_id.as_str(), "newest first");
    assert!(list[0]["created_at"].as_str() >= list[1]["created_at"].as_str());
    let (status, run) = client.get(&format!("{base}/{second_id}")).await;
    assert_eq!(status, 200);
    assert_eq!(run["status"], "success");
    assert_eq!(run["llm_call_count"], 1);
    let (status, body) = client
        .post(&format!("{base}/{second_id}/cancel"), json!({}))
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(client.get(&format!("{base}/not-a-run")).await.0, 404);

    gateway.model.set_delay(2_000);
    let (_, third) = client.post(&base, run_body("third", json!({}))).await;
    let third_id = third["run_id"].as_str().unwrap();
    let response = client
        .request(
            reqwest::Method::POST,
            &format!("{base}/{third_id}/cancel?wait=true"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 204);
    assert_eq!(
        client.get(&format!("{base}/{third_id}")).await.1["status"],
        "interrupted"
    );
    gateway.stop().await;
}

#[tokio::test]
async fn reconnecting_with_last_event_id_replays_the_rest_or_reports_a_gap() {
    let gateway = spawn_gateway_configured(|config| config.runs.stream_buffer_events = 4).await;
    gateway.model.push(write_read_script());
    let (client, thread_id) = gateway.client_with_thread().await;
    let transcript = client.run_scenario(&thread_id).await;
    let run_id = transcript.run_id();
    let join = |cursor: String| {
        client
            .request(
                reqwest::Method::GET,
                &format!("/api/threads/{thread_id}/runs/{run_id}/join"),
            )
            .header("Last-Event-ID", cursor)
            .send()
    };
    let recent = transcript.frames[transcript.frames.len() - 3]
        .id
        .clone()
        .unwrap();
    let resumed = parse_sse(&join(recent).await.unwrap().text().await.unwrap());
    assert_eq!(
        resumed.iter().map(|f| f.event.as_str()).collect::<Vec<_>>(),
        ["values", "end"]
    );
    assert_eq!(
        resumed[0].id,
        transcript.frames[transcript.frames.len() - 2].id
    );

    let old = transcript.frames[1].id.clone().unwrap();
    let raw = join(old.clone()).await.unwrap().text().await.unwrap();
    let gap = parse_sse(&raw);
    assert_eq!(gap.len(), 1, "a gap frame and nothing after it:\n{raw}");
    assert_eq!(gap[0].event, "gap");
    assert_eq!(gap[0].data["code"], "stream_replay_gap");
    assert_eq!(gap[0].data["requested_event_id"], old.as_str());
    assert_eq!(gap[0].data["recovery"], "reload_durable_state");
    gateway.stop().await;
}

#[tokio::test]
async fn a_disconnecting_client_cancels_the_run_unless_asked_to_continue() {
    for (on_disconnect, expected) in [("cancel", "interrupted"), ("continue", "success")] {
        let gateway = spawn_gateway().await;
        gateway.model.set_delay(300);
        gateway.model.answer_always("late answer");
        let (client, thread_id) = gateway.client_with_thread().await;
        let mut body = run_body("hi", json!({}));
        body["on_disconnect"] = json!(on_disconnect);
        let response = client
            .request(
                reqwest::Method::POST,
                &format!("/api/threads/{thread_id}/runs/stream"),
            )
            .json(&body)
            .send()
            .await
            .unwrap();
        let location = response.headers()["content-location"]
            .to_str()
            .unwrap()
            .to_string();
        let mut bytes = response.bytes_stream();
        let _first = bytes.next().await;
        drop(bytes);
        tokio::time::sleep(Duration::from_millis(800)).await;
        let (_, run) = client.get(&location).await;
        assert_eq!(
            run["status"], expected,
            "on_disconnect={on_disconnect}: {run}"
        );
        gateway.stop().await;
    }
}

#[tokio::test]
async fn idle_streams_send_heartbeat_comments() {
    let gateway = spawn_gateway_configured(|config| config.runs.heartbeat_seconds = 1).await;
    gateway.model.set_delay(1_600);
    gateway.model.answer_always("eventually");
    let (client, thread_id) = gateway.client_with_thread().await;
    let transcript = client.run_stream(&thread_id, "hi", json!({})).await;
    assert!(
        transcript.raw.contains("\n\n: heartbeat\n\n"),
        "{}",
        transcript.raw
    );
    assert_eq!(*transcript.events().last().unwrap(), "end");
    gateway.stop().await;
}

#[tokio::test]
async fn a_failing_model_ends_in_a_fallback_message_with_status_error_and_no_error_event() {
    let gateway = spawn_gateway().await;
    gateway
        .model
        .push([Err(ModelError::new("APIStatusError", "upstream said no"))]);
    let (client, thread_id) = gateway.client_with_thread().await;
    let transcript = client.run_stream(&thread_id, "hi", json!({})).await;
    assert!(
        !transcript.events().contains(&"error"),
        "{}",
        transcript.raw
    );
    assert_eq!(*transcript.events().last().unwrap(), "end");
    let last = transcript.last_message();
    assert_eq!(last["content"], "LLM request failed: upstream said no");
    assert_eq!(last["additional_kwargs"]["deerflow_error_fallback"], true);
    assert_eq!(last["additional_kwargs"]["error_reason"], "generic");
    assert_eq!(
        last["additional_kwargs"]["error_detail"],
        "upstream said no"
    );
    let run_id = transcript.run_id();
    let (_, run) = client
        .get(&format!("/api/threads/{thread_id}/runs/{run_id}"))
        .await;
    assert_eq!(run["status"], "error");
    let (_, thread) = client.get(&format!("/api/threads/{thread_id}")).await;
    assert_eq!(thread["status"], "error");
    gateway.stop().await;
}

#[tokio::test]
async fn retryable_failures_are_retried_with_llm_retry_events() {
    let table = [
        (
            ModelError::new("APIConnectionError", "connection reset"),
            ErrorClass::Transient,
            3,
            2,
        ),
        (
            ModelError::new("APIStatusError", "server overloaded"),
            ErrorClass::Busy,
            3,
            2,
        ),
        (
            ModelError::new("X", "burst limit").with_class(ErrorClass::BurstRate),
            ErrorClass::BurstRate,
            2,
            1,
        ),
        (
            ModelError::new("AuthenticationError", "invalid api key").with_status(401),
            ErrorClass::Auth,
            1,
            0,
        ),
        (
            ModelError::new("RateLimitError", "insufficient_quota"),
            ErrorClass::Quota,
            1,
            0,
        ),
    ];
    for (error, class, calls, retry_events) in table {
        let gateway = spawn_gateway().await;
        gateway
            .model
            .push(std::iter::repeat_n(Err(error.clone()), 5));
        let (client, thread_id) = gateway.client_with_thread().await;
        let mut body = run_body("hi", json!({}));
        body["stream_mode"] = json!(["values", "custom"]);
        let transcript = client.stream_run(&thread_id, body).await;
        assert_eq!(gateway.model.requests().len(), calls, "{class:?}");
        let retries: Vec<&Frame> = transcript
            .frames
            .iter()
            .filter(|f| f.event == "custom")
            .collect();
        assert_eq!(
            retries.len(),
            retry_events,
            "{class:?}:\n{}",
            transcript.raw
        );
        if let Some(first) = retries.first() {
            let keys: Vec<&String> = first.data.as_object().unwrap().keys().collect();
            assert_eq!(
                keys,
                [
                    "type",
                    "attempt",
                    "max_attempts",
                    "wait_ms",
                    "reason",
                    "message"
                ]
            );
            assert_eq!(first.data["reason"], class.as_str());
        }
        let last = transcript.last_message();
        assert_eq!(last["additional_kwargs"]["error_reason"], class.as_str());
        gateway.stop().await;
    }
}

#[tokio::test]
async fn the_journal_serves_run_messages_with_pagination_and_turn_duration() {
    let gateway = spawn_gateway().await;
    gateway.model.push(write_read_script());
    let (client, thread_id) = gateway.client_with_thread().await;
    let transcript = client.run_scenario(&thread_id).await;
    let run_id = transcript.run_id();
    let path = format!("/api/threads/{thread_id}/runs/{run_id}/messages");
    let (status, page) = client.get(&path).await;
    assert_eq!(status, 200);
    let rows = page["data"].as_array().unwrap();
    let types: Vec<&str> = rows
        .iter()
        .map(|r| r["event_type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "llm.human.input",
            "llm.ai.response",
            "llm.tool.result",
            "llm.ai.response",
            "llm.tool.result",
            "llm.ai.response"
        ]
    );
    assert_eq!(page["has_more"], false);
    assert_eq!(
        rows[0]["content"]["content"], SCENARIO_PROMPT,
        "the journal restores the original user text"
    );
    assert_eq!(rows[1]["metadata"]["caller"], "lead_agent");
    assert_eq!(rows[1]["metadata"]["llm_call_index"], 0);
    let keys: Vec<&String> = rows[0].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "thread_id",
            "run_id",
            "event_type",
            "category",
            "content",
            "metadata",
            "seq",
            "created_at"
        ]
    );
    let seqs: Vec<i64> = rows.iter().map(|r| r["seq"].as_i64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert!(rows[5]["content"]["additional_kwargs"]["turn_duration"].is_i64());
    assert!(
        rows[3]["content"]["additional_kwargs"]
            .get("turn_duration")
            .is_none()
    );

    let (_, last_two) = client.get(&format!("{path}?limit=2")).await;
    assert_eq!(last_two["has_more"], true);
    assert_eq!(last_two["data"][1]["seq"], seqs[5]);
    let (_, first_two) = client
        .get(&format!("{path}?limit=2&after_seq={}", seqs[0] - 1))
        .await;
    assert_eq!(first_two["data"][0]["seq"], seqs[0]);
    assert_eq!(first_two["has_more"], true);
    let (_, before) = client.get(&format!("{path}?before_seq={}", seqs[2])).await;
    assert_eq!(before["data"].as_array().unwrap().len(), 2);
    assert_eq!(client.get(&format!("{path}?limit=0")).await.0, 422);
    assert_eq!(client.get(&format!("{path}?limit=201")).await.0, 422);
    let (status, stateless) = client.get(&format!("/api/runs/{run_id}/messages")).await;
    assert_eq!(status, 200);
    assert_eq!(stateless["data"], page["data"]);
    gateway.stop().await;
}

#[tokio::test]
async fn updates_and_messages_modes_stream_their_own_frames() {
    let gateway = spawn_gateway().await;
    gateway.model.answer_always("streamed words");
    let (client, thread_id) = gateway.client_with_thread().await;
    let mut body = run_body("hi", json!({}));
    body["stream_mode"] = json!(["updates", "messages-tuple"]);
    let transcript = client.stream_run(&thread_id, body).await;
    let events = transcript.events();
    assert!(!events.contains(&"values"));
    let updates: Vec<&Frame> = transcript
        .frames
        .iter()
        .filter(|f| f.event == "updates")
        .collect();
    assert!(
        updates.iter().any(|f| f.data.get("model").is_some()),
        "{}",
        transcript.raw
    );
    assert!(
        updates
            .iter()
            .any(|f| f.data.get("TitleMiddleware.after_model").is_some())
    );
    let chunk = transcript
        .frames
        .iter()
        .find(|f| f.event == "messages" && f.data[0]["type"] == "AIMessageChunk")
        .expect("an AI chunk");
    assert_eq!(chunk.data[0]["content"], "streamed words");
    gateway.stop().await;
}

#[tokio::test]
async fn a_second_run_continues_the_same_thread() {
    let gateway = spawn_gateway().await;
    gateway
        .model
        .push([answer("first answer"), answer("second answer")]);
    let (client, thread_id) = gateway.client_with_thread().await;
    client
        .run_stream(&thread_id, "first question", json!({}))
        .await;
    let transcript = client
        .run_stream(&thread_id, "second question", json!({}))
        .await;
    let messages = transcript.last_values()["messages"]
        .as_array()
        .unwrap()
        .clone();
    let visible: Vec<(&str, &str)> = messages
        .iter()
        .filter(|m| m["additional_kwargs"]["hide_from_ui"] != true)
        .map(|m| (m["type"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect();
    assert_eq!(
        visible,
        [
            ("human", "first question"),
            ("ai", "first answer"),
            ("human", "second question"),
            ("ai", "second answer")
        ]
    );
    assert_eq!(
        transcript.last_values()["title"],
        "first question",
        "the title is set once"
    );
    let second_request = &gateway.model.requests()[1];
    let humans: Vec<String> = second_request
        .messages
        .iter()
        .filter(|m| m.kind.as_str() == "human")
        .map(|m| m.text())
        .collect();
    assert_eq!(humans.len(), 2);
    gateway.stop().await;
}
