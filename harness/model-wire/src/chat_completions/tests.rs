//! The codec held to what providers send, without HTTP: one table of streams (each a list of
//! `data:` payloads as the provider's public API reference describes them), what the assembler
//! must make of each, and the renderer's round trip (an answer rendered as chunks or as one
//! completion reads back as the same answer).

use serde_json::{Value, json};

use super::*;

/// What a stream must assemble into.
struct Want {
    text: &'static str,
    reasoning: &'static str,
    refusal: Option<&'static str>,
    /// `(id, name, arguments text)`; `None` for the id means "filled by the codec".
    calls: Vec<(Option<&'static str>, &'static str, &'static str)>,
    finish_reason: Option<&'static str>,
    ending: Ending,
}

fn text(text: &'static str) -> Want {
    Want {
        text,
        reasoning: "",
        refusal: None,
        calls: Vec::new(),
        finish_reason: Some("stop"),
        ending: Ending::Complete,
    }
}

fn calls(calls: Vec<(Option<&'static str>, &'static str, &'static str)>) -> Want {
    Want {
        calls,
        finish_reason: Some("tool_calls"),
        ..text("")
    }
}

fn chunk(delta: Value, finish: Value) -> String {
    json!({"id": "chatcmpl-t", "object": "chat.completion.chunk", "model": "m",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    .to_string()
}

fn delta(delta: Value) -> String {
    chunk(delta, Value::Null)
}

fn finish(reason: &str) -> String {
    chunk(json!({}), json!(reason))
}

const DONE: &str = "[DONE]";

/// The table: a name, the payloads, and the answer or the failure (its exception name).
fn streams() -> Vec<(&'static str, Vec<String>, Result<Want, &'static str>)> {
    let usage_only = json!({"id": "chatcmpl-t", "choices": [],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}})
    .to_string();
    vec![
        (
            "openai_text_then_a_usage_only_chunk",
            vec![
                delta(json!({"role": "assistant", "content": ""})),
                delta(json!({"content": "Hel"})),
                delta(json!({"content": "lo"})),
                finish("stop"),
                usage_only,
                DONE.into(),
            ],
            Ok(text("Hello")),
        ),
        (
            "openai_interleaved_parallel_calls",
            vec![
                delta(json!({"tool_calls": [{"index": 0, "id": "a", "type": "function", "function": {"name": "ls", "arguments": ""}}]})),
                delta(json!({"tool_calls": [{"index": 1, "id": "b", "type": "function", "function": {"name": "read_file", "arguments": "{\"p"}}]})),
                delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]})),
                delta(json!({"tool_calls": [{"index": 1, "function": {"arguments": "\": 1}"}}]})),
                finish("tool_calls"),
                DONE.into(),
            ],
            Ok(calls(vec![(Some("a"), "ls", "{}"), (Some("b"), "read_file", "{\"p\": 1}")])),
        ),
        (
            "openai_refusal",
            vec![
                delta(json!({"role": "assistant", "content": null, "refusal": ""})),
                delta(json!({"refusal": "No, "})),
                delta(json!({"refusal": "sorry."})),
                finish("stop"),
                DONE.into(),
            ],
            Ok(Want {
                refusal: Some("No, sorry."),
                ..text("")
            }),
        ),
        (
            "deepseek_reasoning_content_then_content",
            vec![
                delta(json!({"content": null, "reasoning_content": "Hm, "})),
                delta(json!({"content": null, "reasoning_content": "yes."})),
                delta(json!({"content": "Yes.", "reasoning_content": null})),
                finish("stop"),
                DONE.into(),
            ],
            Ok(Want {
                reasoning: "Hm, yes.",
                ..text("Yes.")
            }),
        ),
        (
            "openrouter_reasoning",
            vec![
                delta(json!({"content": "", "reasoning": "Let me see."})),
                delta(json!({"content": "Seen."})),
                finish("stop"),
                DONE.into(),
            ],
            Ok(Want {
                reasoning: "Let me see.",
                ..text("Seen.")
            }),
        ),
        (
            "mistral_list_content_and_thinking_parts",
            vec![
                delta(json!({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "Why?"}]}]})),
                delta(json!({"content": [{"type": "text", "text": "Bon"}]})),
                delta(json!({"content": [{"type": "text", "text": "jour"}]})),
                finish("stop"),
                DONE.into(),
            ],
            Ok(Want {
                reasoning: "Why?",
                ..text("Bonjour")
            }),
        ),
        (
            "ollama_one_chunk_call_without_done",
            vec![
                delta(json!({"content": "", "tool_calls": [{"id": "call_o", "index": 0, "type": "function",
                    "function": {"name": "ls", "arguments": "{\"path\":\"/\"}"}}]})),
                finish("tool_calls"),
            ],
            Ok(Want {
                ending: Ending::NoDoneMarker,
                ..calls(vec![(Some("call_o"), "ls", "{\"path\":\"/\"}")])
            }),
        ),
        (
            "gemini_call_without_id_or_index_finishing_with_stop",
            vec![
                delta(json!({"role": "assistant", "tool_calls": [{"id": "", "type": "function",
                    "function": {"name": "ls", "arguments": "{}"}}]})),
                finish("stop"),
                DONE.into(),
            ],
            Ok(Want {
                finish_reason: Some("stop"),
                ..calls(vec![(None, "ls", "{}")])
            }),
        ),
        (
            "a_new_id_under_a_reused_index_is_a_new_call",
            vec![
                delta(json!({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "ls", "arguments": "{}"}}]})),
                delta(json!({"tool_calls": [{"index": 0, "id": "b", "function": {"name": "ls", "arguments": "{\"x\":1}"}}]})),
                finish("tool_calls"),
                DONE.into(),
            ],
            Ok(calls(vec![(Some("a"), "ls", "{}"), (Some("b"), "ls", "{\"x\":1}")])),
        ),
        (
            "object_arguments_are_kept_as_their_text",
            vec![
                delta(json!({"tool_calls": [{"index": 0, "id": "o", "function": {"name": "ls", "arguments": {"path": "/a"}}}]})),
                finish("tool_calls"),
                DONE.into(),
            ],
            Ok(calls(vec![(Some("o"), "ls", "{\"path\":\"/a\"}")])),
        ),
        (
            "done_without_a_finish_reason_is_accepted_and_said",
            vec![delta(json!({"content": "partial"})), DONE.into()],
            Ok(Want {
                finish_reason: None,
                ending: Ending::NoFinishReason,
                ..text("partial")
            }),
        ),
        (
            "no_finish_reason_and_no_done_is_truncated",
            vec![delta(json!({"content": "cut"}))],
            Err("RemoteProtocolError"),
        ),
        ("a_stream_without_choices", vec![DONE.into()], Err("EmptyResponseError")),
        (
            "openrouter_error_chunk_after_length",
            vec![
                delta(json!({"content": "long"})),
                finish("length"),
                json!({"id": "chatcmpl-t", "error": {"code": 502, "message": "Provider returned error"},
                       "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]})
                .to_string(),
                DONE.into(),
            ],
            Err("APIError"),
        ),
        (
            "a_payload_that_is_not_json",
            vec![delta(json!({"content": "a"})), "{not json".into()],
            Err("RemoteProtocolError"),
        ),
    ]
}

/// The payloads through the assembler: every event, then the answer (or the failure).
fn assemble(payloads: &[String]) -> Result<(Vec<Event>, Assembled), WireError> {
    let mut assembler = ChunkAssembler::new();
    let mut events = Vec::new();
    for payload in payloads {
        events.extend(assembler.push_data(payload)?);
    }
    let (closing, assembled) = assembler.finish()?;
    events.extend(closing);
    Ok((events, assembled))
}

fn check(name: &str, assembled: &Assembled, want: &Want) {
    assert_eq!(assembled.text, want.text, "{name}");
    assert_eq!(assembled.reasoning, want.reasoning, "{name}");
    assert_eq!(assembled.refusal.as_deref(), want.refusal, "{name}");
    assert_eq!(
        assembled.finish_reason.as_deref(),
        want.finish_reason,
        "{name}"
    );
    assert_eq!(assembled.ending, want.ending, "{name}");
    assert_eq!(
        assembled.calls.len(),
        want.calls.len(),
        "{name}: {:?}",
        assembled.calls
    );
    for (position, (call, (id, tool, arguments))) in
        assembled.calls.iter().zip(&want.calls).enumerate()
    {
        let id = id.map_or_else(|| fill_call_id(position, tool, arguments), str::to_owned);
        assert_eq!(
            (
                call.id.as_str(),
                call.name.as_str(),
                call.arguments.as_str()
            ),
            (id.as_str(), *tool, *arguments),
            "{name}"
        );
    }
}

#[test]
fn every_provider_stream_assembles_into_what_the_provider_sent() {
    for (name, payloads, want) in streams() {
        match (assemble(&payloads), want) {
            (Ok((_, assembled)), Ok(want)) => check(name, &assembled, &want),
            (Err(error), Err(exception)) => {
                assert_eq!(error.exception_name(), exception, "{name}: {error}")
            }
            (got, want) => panic!("{name}: got {got:?}, want {:?}", want.err()),
        }
    }
}

#[test]
fn an_error_chunk_keeps_the_providers_message_and_payload() {
    let payload = json!({"error": {"message": "Provider returned error", "code": 502}});
    let error = ChunkAssembler::new()
        .push_data(&payload.to_string())
        .expect_err("an error chunk");
    assert_eq!(error.to_string(), "Provider returned error");
    assert!(matches!(error, WireError::Provider { ref body, .. } if *body == payload));
    let from_event = WireError::from_error_event("{\"message\": \"busy\"}");
    assert_eq!(from_event.to_string(), "busy");
}

fn identity() -> Identity {
    Identity {
        id: "chatcmpl-r".into(),
        model: "m".into(),
        created: 1,
    }
}

/// An answer through the AI message and back to the wire, the way the model server replays a
/// recording: as chunks (after the recorded events) or as one completion.
fn rendered(events: &[Event], assembled: &Assembled) -> (Vec<String>, Value) {
    let message = assembled.to_ai_message("lc_run--1", "m");
    let answer = Answer::from_ai_message(&message).with_streamed_arguments(events);
    let mut renderer = ChunkRenderer::new(identity());
    let mut chunks = vec![renderer.start()];
    chunks.extend(events.iter().filter_map(|event| renderer.event(event)));
    chunks.extend(renderer.finish(&answer));
    let mut payloads: Vec<String> = chunks.iter().map(|c| c.to_value().to_string()).collect();
    payloads.push(DONE.into());
    (payloads, completion(&identity(), &answer).to_value())
}

#[test]
fn a_rendered_answer_reads_back_as_the_same_answer_streamed_or_whole() {
    for (name, payloads, want) in streams() {
        let Ok(want) = want else { continue };
        let (events, assembled) = assemble(&payloads).expect(name);
        let (chunks, whole) = rendered(&events, &assembled);
        let (_, streamed) = assemble(&chunks).expect(name);
        let parsed = parse_completion(&whole).expect(name);
        for (how, again) in [("streamed", &streamed), ("whole", &parsed)] {
            let what = format!("{name}, rendered {how}");
            assert_eq!(again.text, assembled.text, "{what}");
            assert_eq!(again.reasoning, assembled.reasoning, "{what}");
            assert_eq!(again.refusal, assembled.refusal, "{what}");
            assert_eq!(
                again.calls, assembled.calls,
                "{what}: arguments as sent, ids kept"
            );
            let reason = want.finish_reason.unwrap_or("stop");
            assert_eq!(again.finish_reason.as_deref(), Some(reason), "{what}");
        }
    }
}

#[test]
fn a_filled_call_id_depends_on_the_call_and_nothing_else() {
    let id = fill_call_id(0, "ls", "{}");
    assert_eq!(id, fill_call_id(0, "ls", "{}"), "the same on every run");
    assert!(id.starts_with("call_") && id.len() == 21, "{id}");
    for other in [
        fill_call_id(1, "ls", "{}"),
        fill_call_id(0, "lt", "{}"),
        fill_call_id(0, "ls", "{ }"),
    ] {
        assert_ne!(id, other);
    }
}

#[test]
fn usage_converts_both_ways() {
    let usage = json!({"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": 1, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 1, "audio_tokens": 0}});
    let metadata = usage_metadata(&usage).expect("an object");
    assert_eq!(metadata["input_token_details"]["cache_read"], 1);
    assert_eq!(openai_usage(&metadata), Some(usage));
    assert_eq!(usage_metadata(&Value::Null), None);
}
