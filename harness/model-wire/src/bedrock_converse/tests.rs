//! The Converse codec held to the event sequences of Bedrock's ConverseStream reference (text,
//! a `toolUse` block with its input split mid-JSON, reasoning with a signature, `metadata` after
//! `messageStop`, an exception, a cut stream), the request builder, and the renderer's round
//! trip.

use serde_json::{Value, json};

use super::*;
use crate::chat_completions::{Answer, AssembledCall, Identity, WireError};
use crate::conversation::{Call, Message as Said, Thinking};

fn delta(index: u64, delta: Value) -> (&'static str, Value) {
    (
        "contentBlockDelta",
        json!({"delta": delta, "contentBlockIndex": index}),
    )
}

fn stop(index: u64) -> (&'static str, Value) {
    ("contentBlockStop", json!({"contentBlockIndex": index}))
}

fn end(reason: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("messageStop", json!({"stopReason": reason})),
        (
            "metadata",
            json!({"usage": {"inputTokens": 9, "outputTokens": 4, "totalTokens": 13},
                   "metrics": {"latencyMs": 120}}),
        ),
    ]
}

type Want = (
    &'static str,
    &'static str,
    Vec<(&'static str, &'static str, &'static str)>,
    &'static str,
    &'static str,
);

/// A named event sequence and what it must read as.
type Case = (
    &'static str,
    Vec<(&'static str, Value)>,
    Result<Want, &'static str>,
);

fn streams() -> Vec<Case> {
    let start = ("messageStart", json!({"role": "assistant"}));
    let with_end = |mut events: Vec<(&'static str, Value)>, reason: &str| {
        events.extend(end(reason));
        events
    };
    vec![
        (
            "text",
            with_end(
                vec![
                    start.clone(),
                    delta(0, json!({"text": "Hel"})),
                    delta(0, json!({"text": "lo"})),
                    stop(0),
                ],
                "end_turn",
            ),
            Ok(("Hello", "", vec![], "stop", "")),
        ),
        (
            "reasoning_then_text_then_a_tool_use_split_mid_json",
            with_end(
                vec![
                    start.clone(),
                    delta(0, json!({"reasoningContent": {"text": "Need "}})),
                    delta(0, json!({"reasoningContent": {"text": "a list."}})),
                    delta(0, json!({"reasoningContent": {"signature": "EqQB"}})),
                    stop(0),
                    delta(1, json!({"text": "Listing."})),
                    stop(1),
                    (
                        "contentBlockStart",
                        json!({"start": {"toolUse": {"toolUseId": "tooluse_1", "name": "ls"}},
                               "contentBlockIndex": 2}),
                    ),
                    delta(2, json!({"toolUse": {"input": "{\"path\": "}})),
                    delta(2, json!({"toolUse": {"input": "\"/\"}"}})),
                    stop(2),
                ],
                "tool_use",
            ),
            Ok((
                "Listing.",
                "Need a list.",
                vec![("tooluse_1", "ls", "{\"path\": \"/\"}")],
                "tool_calls",
                "EqQB",
            )),
        ),
        (
            "a_stream_cut_before_message_stop",
            vec![start, delta(0, json!({"text": "Hel"}))],
            Err("the stream ended before the answer was complete (no finish_reason and no [DONE])"),
        ),
    ]
}

fn assemble(events: &[(&str, Value)]) -> Result<crate::chat_completions::Assembled, WireError> {
    let mut assembler = StreamAssembler::new();
    for (name, payload) in events {
        assembler.push_data(name, &payload.to_string())?;
    }
    assembler.finish()
}

#[test]
fn each_stream_assembles_as_the_reference_says() {
    for (name, events, want) in streams() {
        let got = assemble(&events).map(|a| {
            let calls: Vec<(String, String, String)> = a
                .calls
                .iter()
                .map(|c| (c.id.clone(), c.name.clone(), c.arguments.clone()))
                .collect();
            (
                a.text,
                a.reasoning,
                calls,
                a.finish_reason.unwrap_or_default(),
                a.reasoning_signature,
            )
        });
        let want = want
            .map(|(text, reasoning, calls, finish, signature)| {
                (
                    text.to_owned(),
                    reasoning.to_owned(),
                    calls
                        .into_iter()
                        .map(|(i, n, a)| (i.to_owned(), n.to_owned(), a.to_owned()))
                        .collect(),
                    finish.to_owned(),
                    signature.to_owned(),
                )
            })
            .map_err(str::to_owned);
        assert_eq!(got.map_err(|e| e.to_string()), want, "{name}");
    }
}

#[test]
fn an_exception_in_the_stream_is_the_provider_s_failure() {
    let mut assembler = StreamAssembler::new();
    let error = assembler.push_exception(
        "throttlingException",
        &json!({"message": "Too many requests, please wait before trying again."}),
    );
    assert_eq!(
        error.to_string(),
        "Too many requests, please wait before trying again."
    );
    assert_eq!(error.exception_name(), "APIError");
}

fn answer() -> Answer {
    Answer {
        text: "Let me look.".to_owned(),
        reasoning: Some("Think.".to_owned()),
        refusal: None,
        calls: vec![AssembledCall {
            id: "tooluse_9".to_owned(),
            name: "read_file".to_owned(),
            arguments: "{\"path\":\"/a\"}".to_owned(),
        }],
        finish_reason: "tool_calls".to_owned(),
        usage: Some(json!({"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10})),
        model: None,
    }
}

fn identity() -> Identity {
    Identity {
        id: "replay_1".to_owned(),
        model: "requested".to_owned(),
        created: 0,
    }
}

#[test]
fn a_rendered_answer_reads_back_the_same_streamed_or_whole() {
    let answer = answer();
    let streamed: Vec<(&str, Value)> = stream_events(&identity(), &answer, &[])
        .into_iter()
        .map(|event| (event.name, event.payload))
        .collect();
    let whole = parse_response(&response(&identity(), &answer));
    for (name, read) in [("streamed", assemble(&streamed)), ("whole", whole)] {
        let read = read.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(read.text, answer.text, "{name}");
        assert_eq!(read.reasoning, "Think.", "{name}");
        assert_eq!(read.calls, answer.calls, "{name}");
        assert_eq!(read.finish_reason.as_deref(), Some("tool_calls"), "{name}");
        assert_eq!(
            read.usage.as_ref().map(|u| u["total_tokens"].clone()),
            Some(json!(10)),
            "{name}"
        );
    }
}

#[test]
fn an_error_is_bedrock_s_message_under_the_exception_for_its_status() {
    assert_eq!(error_body("slow down"), json!({"message": "slow down"}));
    let names: Vec<&str> = [400, 403, 404, 429, 500, 503]
        .into_iter()
        .map(exception_for_status)
        .collect();
    assert_eq!(
        names,
        [
            "ValidationException",
            "AccessDeniedException",
            "ResourceNotFoundException",
            "ThrottlingException",
            "InternalServerException",
            "ServiceUnavailableException"
        ]
    );
    assert_eq!(
        parse_response(&error_body("bad input")).map_err(|e| e.to_string()),
        Err("bad input".to_owned())
    );
}

#[test]
fn a_conversation_becomes_alternating_messages_with_signed_reasoning_and_tool_results() {
    let conversation = vec![
        Said::System {
            text: "Be brief.".into(),
        },
        Said::User {
            content: json!("list /"),
        },
        Said::Assistant {
            text: String::new(),
            calls: vec![Call {
                id: "t1".into(),
                name: "ls".into(),
                arguments: "{\"path\": \"/\"}".into(),
            }],
            thinking: Some(Thinking {
                text: "Need a list.".into(),
                signature: "EqQB".into(),
            }),
        },
        Said::Tool {
            call_id: "t1".into(),
            content: "a b".into(),
        },
        Said::User {
            content: json!("thanks"),
        },
    ];
    let tools = [crate::conversation::Tool {
        name: "ls".into(),
        description: "List.".into(),
        parameters: json!({"type": "object"}),
    }];
    let body = ConverseRequest::new(&conversation, &tools).to_value();
    assert_eq!(
        body,
        json!({
            "messages": [
                {"role": "user", "content": [{"text": "list /"}]},
                {"role": "assistant", "content": [
                    {"reasoningContent": {"reasoningText": {"text": "Need a list.", "signature": "EqQB"}}},
                    {"toolUse": {"toolUseId": "t1", "name": "ls", "input": {"path": "/"}}}]},
                {"role": "user", "content": [
                    {"toolResult": {"toolUseId": "t1", "content": [{"text": "a b"}]}},
                    {"text": "thanks"}]}
            ],
            "system": [{"text": "Be brief."}],
            "toolConfig": {"tools": [{"toolSpec": {"name": "ls", "description": "List.",
                "inputSchema": {"json": {"type": "object"}}}}]}
        })
    );
    let read: ConverseRequest = serde_json::from_value(body.clone()).expect("reads back");
    assert_eq!(read.to_value(), body);
}
