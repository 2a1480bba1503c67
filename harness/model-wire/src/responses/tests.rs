//! The Responses codec held to the events of OpenAI's streaming reference (text, parallel
//! function calls, a reasoning summary, an `error` event, `response.failed`, a cut stream), and
//! the renderer's round trip.

use serde_json::{Value, json};

use super::*;
use crate::chat_completions::{Answer, Assembled, AssembledCall, Identity, WireError};

fn added(index: u64, item: Value) -> Value {
    json!({"type": "response.output_item.added", "output_index": index, "item": item})
}

fn done(index: u64, item: Value) -> Value {
    json!({"type": "response.output_item.done", "output_index": index, "item": item})
}

fn created() -> Value {
    json!({"type": "response.created", "sequence_number": 0,
           "response": {"id": "resp_1", "object": "response", "status": "in_progress",
                        "model": "gpt-x", "output": []}})
}

fn completed() -> Value {
    json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
        "usage": {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7}}})
}

fn text_delta(item: &str, delta: &str) -> Value {
    json!({"type": "response.output_text.delta", "item_id": item, "output_index": 0,
           "content_index": 0, "delta": delta})
}

fn args_delta(item: &str, delta: &str) -> Value {
    json!({"type": "response.function_call_arguments.delta", "item_id": item, "delta": delta})
}

type Want = (
    &'static str,
    &'static str,
    Vec<(&'static str, &'static str, &'static str)>,
    &'static str,
);

fn streams() -> Vec<(&'static str, Vec<Value>, Result<Want, &'static str>)> {
    let message = json!({"id": "msg_1", "type": "message", "role": "assistant", "content": []});
    let call = |id: &str, call_id: &str, name: &str| {
        json!({"id": id, "type": "function_call", "call_id": call_id, "name": name,
               "arguments": ""})
    };
    vec![
        (
            "text",
            vec![
                created(),
                added(0, message.clone()),
                text_delta("msg_1", "Hel"),
                text_delta("msg_1", "lo"),
                done(0, message.clone()),
                completed(),
            ],
            Ok(("Hello", "", vec![], "stop")),
        ),
        (
            "two_function_calls_with_argument_deltas",
            vec![
                created(),
                added(0, call("fc_1", "call_a", "ls")),
                args_delta("fc_1", "{\"p\":"),
                args_delta("fc_1", " 1}"),
                done(0, call("fc_1", "call_a", "ls")),
                added(1, call("fc_2", "call_b", "read_file")),
                done(
                    1,
                    json!({"id": "fc_2", "type": "function_call", "call_id": "call_b",
                               "name": "read_file", "arguments": "{}"}),
                ),
                completed(),
            ],
            Ok((
                "",
                "",
                vec![
                    ("call_a", "ls", "{\"p\": 1}"),
                    ("call_b", "read_file", "{}"),
                ],
                "tool_calls",
            )),
        ),
        (
            "a_reasoning_summary_then_text",
            vec![
                created(),
                added(0, json!({"id": "rs_1", "type": "reasoning", "summary": []})),
                json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "delta": "Hm."}),
                done(0, json!({"id": "rs_1", "type": "reasoning"})),
                added(1, message.clone()),
                text_delta("msg_1", "Yes."),
                done(1, message.clone()),
                completed(),
            ],
            Ok(("Yes.", "Hm.", vec![], "stop")),
        ),
        (
            "an_error_event",
            vec![
                created(),
                json!({"type": "error", "code": "server_error", "message": "boom", "param": null}),
            ],
            Err("boom"),
        ),
        (
            "a_failed_response",
            vec![
                created(),
                json!({"type": "response.failed", "response": {"status": "failed",
                "error": {"code": "server_error", "message": "it failed"}}}),
            ],
            Err("it failed"),
        ),
        (
            "a_stream_cut_before_completed",
            vec![
                created(),
                added(0, message.clone()),
                text_delta("msg_1", "Hel"),
            ],
            Err("the stream ended before the answer was complete (no finish_reason and no [DONE])"),
        ),
    ]
}

fn assemble(events: &[Value]) -> Result<Assembled, WireError> {
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

#[test]
fn a_rendered_answer_reads_back_the_same_streamed_or_whole() {
    let answer = Answer {
        text: "Let me look.".to_owned(),
        reasoning: Some("Think.".to_owned()),
        refusal: None,
        calls: vec![AssembledCall {
            id: "call_9".to_owned(),
            name: "read_file".to_owned(),
            arguments: "{\"path\": \"/a\"}".to_owned(),
        }],
        finish_reason: "tool_calls".to_owned(),
        usage: Some(json!({"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10})),
        model: Some("gpt-x".to_owned()),
    };
    let identity = Identity {
        id: "r1".to_owned(),
        model: "requested".to_owned(),
        created: 0,
    };
    let streamed: Vec<Value> = stream_events(&identity, &answer, &[])
        .into_iter()
        .map(|event| event.data)
        .collect();
    let numbered: Vec<u64> = streamed
        .iter()
        .filter_map(|e| e["sequence_number"].as_u64())
        .collect();
    assert_eq!(numbered, (0..streamed.len() as u64).collect::<Vec<_>>());
    for (name, read) in [
        ("streamed", assemble(&streamed)),
        ("whole", parse_response(&response(&identity, &answer))),
    ] {
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
