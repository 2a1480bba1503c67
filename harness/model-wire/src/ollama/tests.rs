//! The Ollama codec's tests: a stream read into the shared events, a generate line, a stream cut
//! off or failed, and the renderer's lines read back.

use serde_json::{Value, json};

use super::*;
use crate::chat_completions::{Answer, Event, Identity, WireError};

fn identity() -> Identity {
    Identity {
        id: "replay_1".into(),
        model: "llama3.2".into(),
        created: 1_700_000_000,
    }
}

fn read(lines: &[Value]) -> (Vec<Event>, crate::chat_completions::Assembled) {
    let mut assembler = StreamAssembler::new();
    let mut events = Vec::new();
    for line in lines {
        events.extend(assembler.push_data(&line.to_string()).expect("a good line"));
    }
    let (last, assembled) = assembler.finish().expect("a finished stream");
    events.extend(last);
    (events, assembled)
}

/// A stream as Ollama sends it: reasoning, text in two lines, a whole call, the done line.
#[test]
fn a_chat_stream_reads_into_the_shared_events_and_one_answer() {
    let lines = [
        json!({"model": "qwen3", "message": {"role": "assistant", "content": "", "thinking": "Hm."}, "done": false}),
        json!({"model": "qwen3", "message": {"role": "assistant", "content": "Hel"}, "done": false}),
        json!({"model": "qwen3", "message": {"role": "assistant", "content": "lo"}, "done": false}),
        json!({"model": "qwen3", "message": {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "ls", "arguments": {"path": "/"}}}]}, "done": false}),
        json!({"model": "qwen3", "message": {"role": "assistant", "content": ""}, "done": true,
               "done_reason": "stop", "prompt_eval_count": 7, "eval_count": 3}),
    ];
    let (events, answer) = read(&lines);
    let names: Vec<&str> = events.iter().map(Event::type_name).collect();
    assert_eq!(
        names,
        [
            "thinking_start",
            "thinking_delta",
            "thinking_end",
            "text_start",
            "text_delta",
            "text_delta",
            "text_end",
            "toolcall_start",
            "toolcall_delta",
            "toolcall_end"
        ]
    );
    assert_eq!(
        (answer.text.as_str(), answer.reasoning.as_str()),
        ("Hello", "Hm.")
    );
    assert_eq!(answer.calls[0].arguments, r#"{"path":"/"}"#);
    assert_eq!(answer.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(answer.usage.as_ref().unwrap()["total_tokens"], 10);
    assert_eq!(answer.model.as_deref(), Some("qwen3"));
}

#[test]
fn a_generate_line_reads_like_a_chat_line() {
    let answer = parse_response(&json!({"model": "m", "response": "Hi", "thinking": "Hm.",
                                        "done": true, "done_reason": "length"}))
    .unwrap();
    assert_eq!(
        (answer.text.as_str(), answer.reasoning.as_str()),
        ("Hi", "Hm.")
    );
    assert_eq!(answer.finish_reason.as_deref(), Some("length"));
}

/// A stream cut before its done line, and a line that is the server's error, are no answer.
#[test]
fn a_stream_without_its_done_line_or_with_an_error_line_is_no_answer() {
    let mut cut = StreamAssembler::new();
    cut.push_data(r#"{"message": {"role": "assistant", "content": "Hi"}, "done": false}"#)
        .unwrap();
    assert!(!cut.finished());
    assert_eq!(cut.finish().unwrap_err(), WireError::Truncated);
    let failed = StreamAssembler::new()
        .push_data(r#"{"error": "model 'x' not found"}"#)
        .unwrap_err();
    assert_eq!(failed.to_string(), "model 'x' not found");
    assert_eq!(failed.exception_name(), "APIError");
}

/// The renderer writes the recorded deltas' boundaries, one line each, and reads back as the
/// same answer, whole and streamed, at /api/chat and as /api/generate writes it.
#[test]
fn the_renderer_keeps_the_recorded_deltas_and_reads_back() {
    let message = json!({"content": "Hello", "tool_calls": [{"id": "c1", "name": "ls", "args": {"path": "/"}}],
        "additional_kwargs": {"reasoning_content": "Hm."},
        "usage_metadata": {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10},
        "response_metadata": {"finish_reason": "tool_calls"}});
    let answer = Answer::from_ai_message(&message);
    let recorded = [
        Event::ThinkingStart,
        Event::ThinkingDelta {
            delta: "Hm.".into(),
        },
        Event::ThinkingEnd,
        Event::TextStart,
        Event::TextDelta {
            delta: "Hel".into(),
        },
        Event::TextDelta { delta: "lo".into() },
        Event::TextEnd,
        Event::ToolcallStart {
            index: 0,
            id: "c1".into(),
            name: "ls".into(),
        },
        Event::ToolcallDelta {
            index: 0,
            delta: "{\"path\":".into(),
        },
        Event::ToolcallDelta {
            index: 0,
            delta: "\"/\"}".into(),
        },
        Event::ToolcallEnd { index: 0 },
    ];
    let lines = stream_lines(&identity(), &answer, &recorded);
    assert_eq!(lines.len(), 5, "{lines:#?}");
    assert_eq!(lines[1]["message"]["content"], "Hel");
    assert_eq!(lines[0]["created_at"], "2023-11-14T22:13:20Z");
    assert_eq!(lines[4]["done_reason"], "stop");
    assert_eq!(lines[4]["eval_count"], 3);
    let (_, streamed) = read(&lines);
    let whole = parse_response(&response(&identity(), &answer)).unwrap();
    for assembled in [streamed, whole] {
        assert_eq!(assembled.text, "Hello");
        assert_eq!(assembled.reasoning, "Hm.");
        assert_eq!(assembled.calls[0].name, "ls");
        assert_eq!(assembled.calls[0].arguments, r#"{"path":"/"}"#);
        assert_eq!(assembled.finish_reason.as_deref(), Some("tool_calls"));
    }
    let generated: Vec<Value> = lines.iter().map(generate_line).collect();
    assert_eq!(generated[1]["response"], "Hel");
    assert_eq!(generated[0]["thinking"], "Hm.");
    assert!(generated[1].get("message").is_none());
    let (_, assembled) = read(&generated);
    assert_eq!(
        (assembled.text.as_str(), assembled.reasoning.as_str()),
        ("Hello", "Hm.")
    );
}

/// An Ollama tool result names its call by `tool_call_id` (LangChain), by `tool_name` (the
/// `ollama` client), or by neither (the earliest unanswered call).
#[test]
fn an_ollama_tool_result_answers_the_call_it_names() {
    let calls = json!({"role": "assistant", "tool_calls": [
        {"function": {"name": "ls", "arguments": {}}},
        {"id": "c2", "function": {"name": "cat", "arguments": {"path": "a"}}}]});
    let cases = [
        (
            json!({"role": "tool", "content": "x", "tool_call_id": "c2"}),
            "c2",
            "cat",
        ),
        (
            json!({"role": "tool", "content": "x", "tool_name": "cat"}),
            "c2",
            "cat",
        ),
        (
            json!({"role": "tool", "content": "x"}),
            "ollama_call_1",
            "ls",
        ),
    ];
    for (result, id, name) in cases {
        let messages = read_conversation(&[calls.clone(), result.clone()]);
        assert_eq!(messages[1]["tool_call_id"], id, "{result}");
        assert_eq!(messages[1]["name"], name, "{result}");
    }
}

/// Ollama's faults: a refusal is `{"error": "..."}` with the status (and `retry-after` when a
/// wait is given), a failure inside a stream is one `{"error"}` line, which the reader takes
/// as the provider's failure.
#[test]
fn a_fault_is_ollama_s_error_object_as_a_body_or_a_last_line() {
    for (status, retry_after) in [(429, Some(2)), (503, None), (500, None)] {
        let refused = status_error(status, retry_after);
        assert_eq!(refused.status, status);
        let message = refused.body["error"].as_str().expect("an error string");
        assert!(message.contains("replayed by keyless"), "{message}");
        assert_eq!(refused.body.as_object().map(|body| body.len()), Some(1));
        let header = retry_after.map(|secs| ("retry-after", secs.to_string()));
        assert_eq!(refused.headers, header.into_iter().collect::<Vec<_>>());
    }
    let crate::InStreamError::Line(line) = stream_error() else {
        panic!("an NDJSON line");
    };
    let mut assembler = StreamAssembler::new();
    assembler
        .push_data(&json!({"message": {"content": "Hi"}, "done": false}).to_string())
        .expect("a good line");
    let failed = assembler.push_data(&line.to_string()).unwrap_err();
    assert!(
        failed.to_string().contains("replayed by keyless"),
        "{failed}"
    );
}
