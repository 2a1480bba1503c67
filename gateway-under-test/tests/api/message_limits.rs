//! `[message_limits]`: an oversized user message is refused with 413 naming the field and the
//! key, an oversized tool call is answered with a tool error the model sees, and an oversized
//! model answer fails the call into the LLM error fallback instead of entering the state.

use serde_json::{Value, json};

use gateway_under_test::messages::{Message, ToolCall};
use gateway_under_test::models::ModelError;

use crate::vocabulary::{
    GatewayOptions, TestGateway, answer, run_body, spawn_gateway_configured, spawn_gateway_with,
    tool_call, ultra_context,
};

/// The user-message and tool-argument limits.
const LIMIT: usize = 64;
/// The model-answer limit: larger, so that an answer with oversized tool arguments reaches the
/// tool step.
const ANSWER_LIMIT: usize = 4 * LIMIT;

async fn gateway_with_small_limits() -> TestGateway {
    spawn_gateway_with(GatewayOptions {
        configure: Box::new(|config| {
            config.message_limits.user_message_bytes = LIMIT;
            config.message_limits.model_answer_bytes = ANSWER_LIMIT;
            config.message_limits.tool_call_args_bytes = LIMIT;
        }),
        ..Default::default()
    })
    .await
}

fn big() -> String {
    "x".repeat(LIMIT + 1)
}

fn too_big_an_answer() -> String {
    "y".repeat(ANSWER_LIMIT + 1)
}

/// A short answer carrying `value` in `additional_kwargs[key]`, as a provider puts reasoning and
/// refusals.
fn with_kwarg(key: &str, value: &str) -> Result<Message, ModelError> {
    let mut message = Message::ai("short", Vec::new());
    message.additional_kwargs.insert(key.into(), json!(value));
    Ok(message)
}

#[tokio::test]
async fn an_oversized_user_message_is_refused_with_413_naming_field_and_key() {
    let gateway = gateway_with_small_limits().await;
    let (client, thread_id) = gateway.client_with_thread().await;
    let (status, body) = client
        .post(
            &format!("/api/threads/{thread_id}/runs/wait"),
            run_body(&big(), ultra_context()),
        )
        .await;
    assert_eq!(status, 413, "{body}");
    let detail = body["detail"].as_str().unwrap_or_default();
    for expected in ["input.messages[0]", "message_limits.user_message_bytes"] {
        assert!(detail.contains(expected), "{expected} missing from {body}");
    }
    assert!(
        gateway.model.requests().is_empty(),
        "no model call for a refused run"
    );
}

/// One run per row: the scripted answer, then what the state's messages must show.
#[tokio::test]
async fn oversized_model_output_never_enters_the_state() {
    struct Row {
        name: &'static str,
        script: Vec<
            Result<gateway_under_test::messages::Message, gateway_under_test::models::ModelError>,
        >,
        stream_mode: Value,
        expect_text: &'static str,
        /// Text that must appear neither in the state nor in the stream.
        absent: Option<String>,
    }
    let rows = [
        Row {
            name: "tool call arguments",
            script: vec![
                tool_call(
                    "write_file",
                    json!({"path": "/mnt/user-data/outputs/a.txt", "content": big()}),
                    "call_big",
                ),
                answer("gave up"),
            ],
            stream_mode: json!(["values"]),
            expect_text: "message_limits.tool_call_args_bytes",
            // The call itself stays in the AI message (it is within the answer limit).
            absent: None,
        },
        Row {
            name: "model answer (invoke)",
            script: vec![answer(&too_big_an_answer())],
            stream_mode: json!(["values"]),
            expect_text: "ModelAnswerTooLarge",
            absent: Some(too_big_an_answer()),
        },
        Row {
            name: "model answer (streamed)",
            script: vec![answer(&too_big_an_answer())],
            stream_mode: json!(["values", "messages-tuple"]),
            expect_text: "ModelAnswerTooLarge",
            absent: Some(too_big_an_answer()),
        },
        // Finding 3 of issue 21: reasoning, a refusal and a tool call's name were not counted.
        Row {
            name: "reasoning (invoke)",
            script: vec![with_kwarg("reasoning_content", &too_big_an_answer())],
            stream_mode: json!(["values"]),
            expect_text: "ModelAnswerTooLarge",
            absent: Some(too_big_an_answer()),
        },
        Row {
            name: "reasoning (streamed)",
            script: vec![with_kwarg("reasoning_content", &too_big_an_answer())],
            stream_mode: json!(["values", "messages-tuple"]),
            expect_text: "ModelAnswerTooLarge",
            absent: Some(too_big_an_answer()),
        },
        Row {
            name: "refusal",
            script: vec![with_kwarg("refusal", &too_big_an_answer())],
            stream_mode: json!(["values", "messages-tuple"]),
            expect_text: "ModelAnswerTooLarge",
            absent: Some(too_big_an_answer()),
        },
        Row {
            name: "tool call name",
            script: vec![tool_call(&too_big_an_answer(), json!({}), "call_named")],
            stream_mode: json!(["values", "messages-tuple"]),
            expect_text: "ModelAnswerTooLarge",
            absent: Some(too_big_an_answer()),
        },
    ];
    for row in rows {
        let gateway = gateway_with_small_limits().await;
        let (client, thread_id) = gateway.client_with_thread().await;
        gateway.model.push(row.script);
        let mut body = run_body("hi", ultra_context());
        body["stream_mode"] = row.stream_mode;
        let transcript = client.stream_run(&thread_id, body).await;
        let state = client
            .get(&format!("/api/threads/{thread_id}/state"))
            .await
            .1;
        let messages = state["values"]["messages"].to_string();
        if let Some(oversized) = &row.absent {
            assert!(
                !messages.contains(oversized.as_str()),
                "{}: oversized text in the state",
                row.name
            );
            assert!(
                !transcript.raw.contains(oversized.as_str()),
                "{}: oversized text streamed",
                row.name
            );
        }
        assert!(
            messages.contains(row.expect_text),
            "{}: {} missing from the state's messages\n{}",
            row.name,
            row.expect_text,
            transcript.raw
        );
    }
}

/// Finding 3 of issue 21: 2,000 `read_file` calls in one answer streamed 305 MB. Calls past
/// `tool_calls_per_answer`, and results past `tool_result_bytes_per_step`, become tool errors
/// the model sees (naming the key), and the run goes on.
#[tokio::test]
async fn amplification_tool_calls_and_results_past_their_bounds_become_tool_errors() {
    let gateway = spawn_gateway_configured(|config| {
        config.message_limits.tool_calls_per_answer = 3;
        config.message_limits.tool_result_bytes_per_step = 1000;
    })
    .await;
    let (client, thread_id) = gateway.client_with_thread().await;
    let path = "/mnt/user-data/outputs/a.txt";
    let read = |id: &str| ToolCall {
        name: "read_file".into(),
        args: json!({"description": "read", "path": path}),
        id: id.into(),
    };
    let reads = ["r1", "r2", "r3", "r4"].map(read).to_vec();
    gateway.model.push([
        tool_call(
            "write_file",
            json!({"description": "write", "path": path, "content": "z".repeat(600)}),
            "w",
        ),
        Ok(Message::ai("", reads)),
        answer("done"),
    ]);
    client
        .stream_run(&thread_id, run_body("hi", ultra_context()))
        .await;
    let state = client
        .get(&format!("/api/threads/{thread_id}/state"))
        .await
        .1;
    let results: Vec<(String, String)> = state["values"]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|message| message["type"] == "tool" && message["name"] == "read_file")
        .map(|message| {
            let content = message["content"].as_str().unwrap_or_default();
            let status = message["status"].as_str().unwrap_or_default().to_string();
            let seen = ["tool_result_bytes_per_step", "tool_calls_per_answer"]
                .into_iter()
                .find(|key| content.contains(key))
                .map_or(format!("{} bytes", content.len()), str::to_string);
            (status, seen)
        })
        .collect();
    let expected = [
        ("success", "600 bytes"),
        ("error", "tool_result_bytes_per_step"),
        ("error", "tool_result_bytes_per_step"),
        ("error", "tool_calls_per_answer"),
    ]
    .map(|(status, seen)| (status.to_string(), seen.to_string()));
    assert_eq!(results, expected);
    assert_eq!(
        gateway.model.requests().len(),
        3,
        "the run went on to the final answer"
    );
}

/// The amplification cases of issue 21's finding 3 at the default caps, one run each: what the
/// run streamed (`values`, the whole state at every step), what it added to the database, and
/// the bytes of the requests the model was sent, against what the finding measured before the
/// caps (printed with `--nocapture`). Each must stay within a few times the caps, where before
/// it was hundreds of megabytes.
#[tokio::test]
async fn amplification_at_the_default_caps_stays_near_the_caps() {
    struct Case {
        name: &'static str,
        script: Vec<Result<Message, ModelError>>,
        /// What the finding measured before: SSE, database and model-request bytes.
        before: &'static str,
        /// Each of the three figures must stay below this.
        bound: usize,
    }
    const MIB: usize = 1024 * 1024;
    let path = "/mnt/user-data/outputs/big.txt";
    let reads = (0..2000)
        .map(|index| ToolCall {
            name: "read_file".into(),
            args: json!({"description": "read", "path": path}),
            id: format!("r{index}"),
        })
        .collect();
    let cases = [
        Case {
            name: "2,000 read_file calls of a 50,000-character file in one answer",
            script: vec![
                tool_call(
                    "write_file",
                    json!({"description": "write", "path": path, "content": "z".repeat(50_000)}),
                    "w",
                ),
                Ok(Message::ai("", reads)),
                answer("done"),
            ],
            before: "SSE 305 MB, database ~500 MB",
            bound: 32 * MIB,
        },
        Case {
            name: "20 MB of reasoning_content",
            script: vec![with_kwarg("reasoning_content", &"r".repeat(20 * MIB))],
            before: "SSE 60 MB, database 100 MB",
            bound: MIB,
        },
        Case {
            name: "a tool call named with 5 MB",
            script: vec![tool_call(&"n".repeat(5 * MIB), json!({}), "named")],
            before: "120 MB of model requests",
            bound: MIB,
        },
    ];
    for case in cases {
        let gateway = spawn_gateway_configured(|_| {}).await;
        let (client, thread_id) = gateway.client_with_thread().await;
        let database_before = crate::storage::database_bytes(gateway.home.path());
        gateway.model.push(case.script);
        let transcript = client
            .stream_run(&thread_id, run_body("hi", ultra_context()))
            .await;
        assert_eq!(transcript.events().last(), Some(&"end"), "{}", case.name);
        let sse = transcript.raw.len();
        let database = usize::try_from(
            crate::storage::database_bytes(gateway.home.path()).saturating_sub(database_before),
        )
        .unwrap_or(usize::MAX);
        let requests: usize = gateway
            .model
            .requests()
            .iter()
            .flat_map(|request| request.messages.iter())
            .map(|message| message.to_dump().to_string().len())
            .sum();
        eprintln!(
            "{}: SSE {sse} B, database +{database} B, model requests {requests} B (before: {})",
            case.name, case.before
        );
        for (figure, bytes) in [("SSE", sse), ("database", database), ("requests", requests)] {
            assert!(
                bytes < case.bound,
                "{}: {figure} {bytes} B, over {} B",
                case.name,
                case.bound
            );
        }
    }
}
