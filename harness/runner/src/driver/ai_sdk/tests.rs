//! Tests of the AI SDK dialect over canned UI message streams: the assembled message, the
//! follow-up it goes into, the framing rule and the golden's reduction, each drift seen red.

use serde_json::{Value, json};

use replay_core::{Framing, FramingProblem};

use super::*;
use crate::driver::api::{Api, StreamModes};
use crate::driver::transcript::{RunTranscript, SseEvent};

/// The dialect's framing rule, as the runner applies it.
fn framing(runs: &[RunTranscript], model_error_recorded: bool) -> Framing {
    Api::AiSdk.framing(runs, model_error_recorded)
}

/// The golden's shapes of a run, delta runs reduced.
fn golden_shapes(transcript: &RunTranscript) -> Vec<Shape> {
    Api::AiSdk.golden_shapes(transcript)
}

/// A tool loop as `streamText(...).toUIMessageStreamResponse()` streams it, the text chunked as
/// `chunks` says.
fn tool_loop(chunks: &[&str]) -> Vec<Value> {
    let mut frames = vec![
        json!({"type": "start"}),
        json!({"type": "start-step"}),
        json!({"type": "tool-input-start", "toolCallId": "call_1", "toolName": "weather"}),
        json!({"type": "tool-input-delta", "toolCallId": "call_1", "inputTextDelta": "{\"city\":"}),
        json!({"type": "tool-input-delta", "toolCallId": "call_1", "inputTextDelta": "\"Paris\"}"}),
        json!({"type": "tool-input-available", "toolCallId": "call_1", "toolName": "weather",
               "input": {"city": "Paris"}}),
        json!({"type": "tool-output-available", "toolCallId": "call_1",
               "output": {"forecast": "sunny"}}),
        json!({"type": "finish-step"}),
        json!({"type": "start-step"}),
        json!({"type": "text-start", "id": "t1"}),
    ];
    for chunk in chunks {
        frames.push(json!({"type": "text-delta", "id": "t1", "delta": chunk}));
    }
    frames.extend([
        json!({"type": "text-end", "id": "t1"}),
        json!({"type": "data-weather", "id": "w", "data": {"city": "Paris"}}),
        json!({"type": "finish-step"}),
        json!({"type": "finish", "finishReason": "stop"}),
    ]);
    frames
}

/// A run's transcript of `frames`, `[DONE]` after them, with the stream header unless
/// `header` is `None`.
fn run(frames: &[Value], header: Option<&str>) -> RunTranscript {
    let mut events: Vec<SseEvent> = (frames.iter())
        .map(|frame| SseEvent::new("message".into(), frame.to_string(), None))
        .collect();
    events.push(SseEvent::new("message".into(), "[DONE]".into(), None));
    RunTranscript {
        request: json!({"messages": [{"id": "u1", "role": "user",
                                      "parts": [{"type": "text", "text": "Weather in Paris?"}]}]}),
        events,
        modes: StreamModes::Values,
        api: Api::AiSdk,
        headers: header
            .map(|value| vec![(STREAM_HEADER.0.to_owned(), value.to_owned())])
            .unwrap_or_default(),
        history: None,
    }
}

/// The message `frames` assemble into, or where the client stops reading them.
fn assembled(frames: &[Value]) -> Result<Option<Value>, AssembleError> {
    let transcript = run(frames, Some("v1"));
    match assemble(transcript.frames().map(|(_, raw, data)| (raw, data))) {
        (message, None) => Ok(message),
        (_, Some(unreadable)) => Err(unreadable),
    }
}

#[test]
fn the_stream_assembles_into_the_message_the_ai_sdks_client_assembles() {
    let message = assembled(&tool_loop(&["In Paris ", "it is sunny."]))
        .unwrap()
        .unwrap();
    // As `processUIMessageStream` leaves it (`JSON.stringify` dropping its `undefined`s).
    let expected = json!({"id": "", "role": "assistant", "parts": [
        {"type": "step-start"},
        {"type": "tool-weather", "toolCallId": "call_1", "state": "output-available",
         "input": {"city": "Paris"}, "output": {"forecast": "sunny"}},
        {"type": "step-start"},
        {"type": "text", "text": "In Paris it is sunny.", "state": "done"},
        {"type": "data-weather", "id": "w", "data": {"city": "Paris"}},
    ]});
    assert_eq!(message, expected);

    // A call whose input never became available shows what streamed, as the client shows it
    // while the deltas come.
    let mut frames = tool_loop(&["ok"]);
    frames.truncate(5);
    let streaming = assembled(&frames).unwrap().unwrap();
    assert_eq!(
        streaming["parts"][1],
        json!({"type": "tool-weather", "toolCallId": "call_1", "state": "input-streaming",
               "input": {"city": "Paris"}, "rawInput": "{\"city\":\"Paris\"}"})
    );
}

#[test]
fn a_follow_up_carries_the_conversation_with_the_assembled_tool_part() {
    let mut dialect = AiSdk::new("/api/chat".into());
    dialect.chat_id = "chat".into();
    dialect
        .read_run(&run(&tool_loop(&["ok"]), Some("v1")))
        .unwrap();
    let follow_up = chat_request("chat", &dialect.messages, "And Lisbon?", "u2");
    let messages = follow_up["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert_eq!(follow_up["trigger"], "submit-message");
    assert_eq!(
        follow_up.get("messageId"),
        None,
        "undefined for a new message"
    );
    let tool = &messages[1]["parts"][1];
    assert_eq!(
        (&tool["state"], &tool["output"]),
        (&json!("output-available"), &json!({"forecast": "sunny"}))
    );
    assert_ne!(
        messages[1]["id"], "",
        "Chat names a message the stream did not name"
    );

    // Drift: a gateway that no longer streams the tool's output leaves the follow-up's history
    // without it (the model then sees another conversation, and the replay misses).
    let mut frames = tool_loop(&["ok"]);
    frames.retain(|frame| frame["type"] != "tool-output-available");
    let mut drifted = AiSdk::new("/api/chat".into());
    drifted.read_run(&run(&frames, Some("v1"))).unwrap();
    let tool = &drifted.messages[1]["parts"][1];
    assert_eq!(
        (&tool["state"], tool.get("output")),
        (&json!("input-available"), None)
    );
}

#[test]
fn a_stream_the_client_cannot_read_fails_the_run_naming_the_frame_and_keeps_what_it_read() {
    let renamed = |frames: &mut Vec<Value>| frames[9]["type"] = json!("text-begin");
    let delta_first = |frames: &mut Vec<Value>| frames.swap(9, 10);
    let orphan_output = |frames: &mut Vec<Value>| {
        frames.remove(2);
        frames.remove(2);
        frames.remove(2);
        frames.remove(2);
    };
    let no_delta = |frames: &mut Vec<Value>| frames[10]["delta"] = json!(5);
    let wire_reason = |frames: &mut Vec<Value>| {
        let last = frames.len() - 1;
        frames[last]["finishReason"] = json!("tool_calls");
    };
    // (case, drift, the frame named, the message)
    type Drift = fn(&mut Vec<Value>);
    let cases: [(&str, Drift, &str, &str); 5] = [
        (
            "a renamed part type",
            renamed,
            "text-begin",
            "is not a UI message chunk type",
        ),
        (
            "a delta before its start",
            delta_first,
            "text-delta",
            "no text-start came before",
        ),
        (
            "an output of no call",
            orphan_output,
            "tool-output-available",
            "no tool invocation",
        ),
        (
            "a delta without its text",
            no_delta,
            "text-delta",
            "\"delta\" is missing",
        ),
        (
            "a model wire's finish reason",
            wire_reason,
            "finish",
            "its finishReason is \"tool_calls\", not one of stop, length",
        ),
    ];
    for (case, drift, frame, message) in cases {
        let mut frames = tool_loop(&["ok"]);
        drift(&mut frames);
        let err = assembled(&frames).unwrap_err();
        assert_eq!(err.frame, frame, "{case}: {err}");
        assert!(err.to_string().contains(message), "{case}: {err}");
        // The framing rule fails the run naming the frame; the drive goes on.
        let transcript = run(&frames, Some("v1"));
        let problem = FramingProblem::Invalid {
            problem: err.to_string(),
        };
        assert_eq!(
            framing(std::slice::from_ref(&transcript), false),
            Framing::Violated { run: 0, problem },
            "{case}"
        );
        AiSdk::new("/api/chat".into())
            .read_run(&transcript)
            .expect("the client keeps reading the conversation");
    }
    // The message keeps what came before the frame the client stopped at, as `Chat` keeps it.
    let mut frames = tool_loop(&["ok"]);
    renamed(&mut frames);
    let transcript = run(&frames, Some("v1"));
    let (message, _) = assemble(transcript.frames().map(|(_, raw, data)| (raw, data)));
    let parts = message.unwrap()["parts"].clone();
    assert_eq!(parts.as_array().map(Vec::len), Some(3), "{parts}");
    assert_eq!(parts[1]["state"], "output-available");
}

#[test]
fn the_framing_rule_fails_what_the_protocol_forbids() {
    let violated = |problem| Framing::Violated { run: 0, problem };
    let out_of_order = |position, frame: &str, expected: &str| {
        violated(FramingProblem::OutOfOrder {
            position,
            frame: frame.into(),
            expected: expected.into(),
        })
    };
    let frames = tool_loop(&["ok"]);
    let without = |kind: &str| -> Vec<Value> {
        let mut frames = frames.clone();
        frames.retain(|frame| frame["type"] != kind);
        frames
    };
    // A `finish` mid-stream (the last one still in place).
    let mut finish_early = frames.clone();
    finish_early.insert(3, json!({"type": "finish"}));
    let mut with_error = frames.clone();
    with_error.insert(5, json!({"type": "error", "errorText": "boom"}));
    let mut unpaired = frames.clone();
    unpaired.remove(7);
    // (case, frames, header, model error recorded, expected)
    type Case<'a> = (&'a str, Vec<Value>, Option<&'a str>, bool, Framing);
    let cases: Vec<Case> = vec![
        ("framed", frames.clone(), Some("v1"), false, Framing::Ok),
        (
            "no header",
            frames.clone(),
            None,
            false,
            violated(FramingProblem::Header {
                name: STREAM_HEADER.0.into(),
                expected: "v1".into(),
                got: None,
            }),
        ),
        (
            "no start",
            without("start"),
            Some("v1"),
            false,
            violated(FramingProblem::First {
                expected: "\"start\"".into(),
                got: Some("start-step".into()),
            }),
        ),
        (
            "a dropped finish",
            without("finish"),
            Some("v1"),
            false,
            violated(FramingProblem::Last {
                expected: "\"finish\" then \"[DONE]\"".into(),
                got: Some("[DONE]".into()),
            }),
        ),
        (
            "finish out of order",
            finish_early,
            Some("v1"),
            false,
            out_of_order(3, "finish", "\"finish\" only right before \"[DONE]\""),
        ),
        (
            "a step opened twice",
            unpaired,
            Some("v1"),
            false,
            out_of_order(
                7,
                "start-step",
                "\"finish-step\" before the next \"start-step\"",
            ),
        ),
        (
            "an error part",
            with_error.clone(),
            Some("v1"),
            false,
            violated(FramingProblem::ErrorFrame {
                frame: "error".into(),
                data: r#"{"type":"error","errorText":"boom"}"#.into(),
            }),
        ),
        (
            "an error part of a recorded model error",
            with_error,
            Some("v1"),
            true,
            Framing::Ok,
        ),
    ];
    for (case, frames, header, model_error, expected) in cases {
        let transcript = run(&frames, header);
        assert_eq!(framing(&[transcript], model_error), expected, "{case}");
    }
}

#[test]
fn the_golden_holds_one_entry_per_streamed_part_however_it_was_chunked() {
    let golden = |chunks: &[&str]| golden_shapes(&run(&tool_loop(chunks), Some("v1")));
    let two = golden(&["In Paris ", "it is sunny."]);
    assert_eq!(two, golden(&["In ", "Paris ", "it ", "is ", "sunny."]));
    let names: Vec<String> = two.iter().filter_map(|shape| shape.event.clone()).collect();
    assert_eq!(
        names,
        [
            "start",
            "start-step",
            "tool-input-start",
            "tool-input-delta",
            "tool-input-available",
            "tool-output-available",
            "finish-step",
            "start-step",
            "text-start",
            "text-delta",
            "text-end",
            "data-weather",
            "finish-step",
            "finish",
            "[DONE]"
        ]
    );
    // A renamed part is a renamed entry: the golden goes red.
    let mut frames = tool_loop(&["ok"]);
    frames[11]["type"] = json!("data-forecast");
    assert_ne!(golden_shapes(&run(&frames, Some("v1"))), golden(&["ok"]));
}

/// A route answering `body` with the stream header, in pieces of 7 bytes, and its server's URL.
async fn serve_stream(body: Vec<u8>) -> String {
    let pieces: Vec<Vec<u8>> = body.chunks(7).map(<[u8]>::to_vec).collect();
    let app = axum::Router::new().route(
        "/api/chat",
        axum::routing::post(move || {
            let pieces = pieces.clone();
            async move {
                let pieces = pieces.into_iter().map(Ok::<_, std::io::Error>);
                (
                    [(STREAM_HEADER.0, STREAM_HEADER.1)],
                    axum::body::Body::from_stream(futures::stream::iter(pieces)),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// Issue 45, finding 11: a stream read as the AI SDK's client reads it (`TextDecoder`, then
/// `eventsource-parser`): a delta holding an invalid UTF-8 byte reads on with U+FFFD, and lines
/// ended by CR alone or CRLF frame it as LF does, its `[DONE]` last included.
#[tokio::test]
async fn a_stream_is_read_with_u_fffd_for_invalid_bytes_and_any_sse_line_end() {
    for line_end in ["\n", "\r", "\r\n"] {
        let mut body = Vec::new();
        for frame in tool_loop(&["sunny \u{1}INVALID", " today"]) {
            let data = frame.to_string().replace("\\u0001INVALID", "\u{1}");
            body.extend_from_slice(format!("data: {data}{line_end}{line_end}").as_bytes());
        }
        body.extend_from_slice(format!("data: [DONE]{line_end}{line_end}").as_bytes());
        // The byte 0xFF in place of the placeholder U+0001, which JSON cannot carry raw.
        for byte in body.iter_mut().filter(|byte| **byte == 1) {
            *byte = 0xff;
        }
        let url = serve_stream(body).await;
        let client = crate::driver::http::HttpClient::new(&url).unwrap();
        let request = crate::driver::http::RunRequest {
            path: "/api/chat".into(),
            body: json!({"messages": []}),
            headers: Vec::new(),
        };
        let transcript = (client.stream(request, StreamModes::Values, Api::AiSdk))
            .await
            .unwrap_or_else(|err| panic!("line end {line_end:?}: {err}"));
        assert_eq!(
            framing(std::slice::from_ref(&transcript), false),
            Framing::Ok,
            "line end {line_end:?}"
        );
        let (message, _) = assemble(transcript.frames().map(|(_, raw, data)| (raw, data)));
        assert_eq!(
            message.unwrap()["parts"][3]["text"],
            "sunny \u{fffd} today",
            "line end {line_end:?}"
        );
    }
}

/// Issue 45, finding 2: the chunk types the reader knows are those of `ai`'s
/// `uiMessageChunkSchema` (`schema_enums.json`), and each of its enum fields (`finishReason`,
/// `inputEncoding`) takes each of its values and refuses another, naming the field.
#[test]
fn every_enum_field_of_the_ui_message_chunks_refuses_a_value_outside_it() {
    let known: Vec<&str> = CHUNK_FIELDS.iter().map(|(name, _)| *name).collect();
    assert_eq!(known, ENUMS.types, "CHUNK_FIELDS against {}", ENUMS.package);
    assert!(!ENUMS.fields.is_empty());
    for field in &ENUMS.fields {
        let name = format!("{} {}", field.event, field.path);
        let (_, strings) = (CHUNK_FIELDS.iter())
            .find(|(kind, _)| *kind == field.event)
            .unwrap_or_else(|| panic!("{name}: a type the reader does not know"));
        let mut chunk = json!({"type": field.event});
        for key in strings.iter() {
            chunk[*key] = json!("x");
        }
        for allowed in &field.values {
            crate::driver::schema_enums::set_at(&mut chunk, &field.path, json!(allowed));
            let checked = check_schema(&field.event, chunk.as_object().unwrap());
            assert!(checked.is_ok(), "{name} = {allowed}: {checked:?}");
        }
        crate::driver::schema_enums::set_at(&mut chunk, &field.path, json!("pirate"));
        match check_schema(&field.event, chunk.as_object().unwrap()) {
            Err(SchemaError::NotInSchema(violation)) => {
                assert_eq!(violation.at, field.path, "{name}");
                assert_eq!(violation.allowed, field.values, "{name}");
            }
            other => panic!("{name} = \"pirate\": {other:?}"),
        }
    }
}
