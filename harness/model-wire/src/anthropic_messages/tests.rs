//! The Messages codec held to the streams of Anthropic's streaming reference (text, tool use
//! with `input_json_delta`s, extended thinking with a signature, `ping`s, an `error` event, a
//! cut stream), and the renderer's round trip.

use serde_json::{Value, json};

use super::*;
use crate::chat_completions::{Answer, AssembledCall, Identity, WireError};

fn start(index: u64, block: Value) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": block})
}

fn delta(index: u64, delta: Value) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": delta})
}

fn stop(index: u64) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

fn message_start() -> Value {
    json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
        "role": "assistant", "content": [], "model": "claude-x", "stop_reason": null,
        "stop_sequence": null, "usage": {"input_tokens": 25, "output_tokens": 1}}})
}

fn end(reason: &str) -> Vec<Value> {
    vec![
        json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null},
               "usage": {"output_tokens": 15}}),
        json!({"type": "message_stop"}),
    ]
}

/// `(text, reasoning, calls (id, name, arguments), finish reason)`.
type Want = (
    &'static str,
    &'static str,
    Vec<(&'static str, &'static str, &'static str)>,
    &'static str,
);

fn streams() -> Vec<(&'static str, Vec<Value>, Result<Want, &'static str>)> {
    let with_end = |mut events: Vec<Value>, reason: &str| {
        events.extend(end(reason));
        events
    };
    vec![
        (
            "text_with_a_ping",
            with_end(
                vec![
                    message_start(),
                    start(0, json!({"type": "text", "text": ""})),
                    json!({"type": "ping"}),
                    delta(0, json!({"type": "text_delta", "text": "Hel"})),
                    delta(0, json!({"type": "text_delta", "text": "lo"})),
                    stop(0),
                ],
                "end_turn",
            ),
            Ok(("Hello", "", vec![], "stop")),
        ),
        (
            "text_then_tool_use_with_input_json_deltas",
            with_end(
                vec![
                    message_start(),
                    start(0, json!({"type": "text", "text": ""})),
                    delta(0, json!({"type": "text_delta", "text": "Checking."})),
                    stop(0),
                    start(
                        1,
                        json!({"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}),
                    ),
                    delta(1, json!({"type": "input_json_delta", "partial_json": ""})),
                    delta(
                        1,
                        json!({"type": "input_json_delta", "partial_json": "{\"path\": "}),
                    ),
                    delta(
                        1,
                        json!({"type": "input_json_delta", "partial_json": "\"/\"}"}),
                    ),
                    stop(1),
                ],
                "tool_use",
            ),
            Ok((
                "Checking.",
                "",
                vec![("toolu_1", "ls", "{\"path\": \"/\"}")],
                "tool_calls",
            )),
        ),
        (
            "thinking_with_a_signature_then_text",
            with_end(
                vec![
                    message_start(),
                    start(0, json!({"type": "thinking", "thinking": ""})),
                    delta(0, json!({"type": "thinking_delta", "thinking": "Hm, "})),
                    delta(0, json!({"type": "thinking_delta", "thinking": "yes."})),
                    delta(0, json!({"type": "signature_delta", "signature": "EqQB"})),
                    stop(0),
                    start(1, json!({"type": "text", "text": ""})),
                    delta(1, json!({"type": "text_delta", "text": "Yes."})),
                    stop(1),
                ],
                "end_turn",
            ),
            Ok(("Yes.", "Hm, yes.", vec![], "stop")),
        ),
        (
            "an_error_event_mid_stream",
            vec![
                message_start(),
                start(0, json!({"type": "text", "text": ""})),
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            ],
            Err("Overloaded"),
        ),
        (
            "a_stream_cut_before_message_stop",
            vec![
                message_start(),
                start(0, json!({"type": "text", "text": ""})),
                delta(0, json!({"type": "text_delta", "text": "Hel"})),
            ],
            Err("the stream ended before the answer was complete (no finish_reason and no [DONE])"),
        ),
    ]
}

fn assemble(events: &[Value]) -> Result<crate::chat_completions::Assembled, WireError> {
    let mut assembler = StreamAssembler::new();
    for event in events {
        assembler.push_data(&event.to_string())?;
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
            )
        });
        let want = want
            .map(|(text, reasoning, calls, finish)| {
                let calls = calls
                    .into_iter()
                    .map(|(i, n, a)| (i.to_owned(), n.to_owned(), a.to_owned()))
                    .collect();
                (
                    text.to_owned(),
                    reasoning.to_owned(),
                    calls,
                    finish.to_owned(),
                )
            })
            .map_err(str::to_owned);
        assert_eq!(got.map_err(|e| e.to_string()), want, "{name}");
    }
}

fn answer() -> Answer {
    Answer {
        text: "Let me look.".to_owned(),
        reasoning: Some("Think.".to_owned()),
        refusal: None,
        calls: vec![AssembledCall {
            id: "toolu_9".to_owned(),
            name: "read_file".to_owned(),
            arguments: "{\"path\":\"/a\"}".to_owned(),
        }],
        finish_reason: "tool_calls".to_owned(),
        usage: Some(json!({"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10})),
        model: Some("claude-x".to_owned()),
    }
}

fn identity() -> Identity {
    Identity {
        id: "msg_r".to_owned(),
        model: "requested".to_owned(),
        created: 0,
    }
}

#[test]
fn a_rendered_answer_reads_back_the_same_streamed_or_whole() {
    let answer = answer();
    let streamed: Vec<Value> = stream_events(&identity(), &answer, &[])
        .into_iter()
        .map(|event| event.data)
        .collect();
    let whole = parse_message(&message(&identity(), &answer));
    for (name, read) in [("streamed", assemble(&streamed)), ("whole", whole)] {
        let read = read.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(read.text, answer.text, "{name}");
        assert_eq!(read.reasoning, "Think.", "{name}");
        assert_eq!(read.calls, answer.calls, "{name}");
        assert_eq!(read.finish_reason.as_deref(), Some("tool_calls"), "{name}");
        assert_eq!(
            read.usage.as_ref().map(|u| u["total_tokens"].clone()),
            Some(json!(10))
        );
    }
}

#[test]
fn an_error_body_has_anthropic_s_shape() {
    assert_eq!(
        error_body(error_kind_for_status(429), "slow down"),
        json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})
    );
}
