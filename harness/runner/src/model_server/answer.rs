//! A recorded answer as the model server reads it, whichever wire serves it.
//!
//! The common currency is the recording's own event list, the core's `RecordedEvent`: `start`,
//! the codec's deltas (`model_wire::Event`), `done` with the AI message (read into the codec's
//! [`Answer`] by [`done_answer`] where it is rendered), `error` with the recorded failure (typed
//! by [`failure`]). A recorded call's events are served as strict replay returns them and the
//! recorder writes them, and a fixture's recorded AI message becomes such a list with
//! [`events_from_message`] (its text as one delta, each tool call's arguments as one delta).
//! A stream of them is rendered by the wire's streaming renderer (`render.rs`), so a recording
//! is streamed with the chunk boundaries it was recorded with; [`whole_answer`] is the one
//! answer they spell, with each tool call's arguments as the recording streamed them
//! (`docs/recording-format.md` §8.2). [`error_body`] is OpenAI's error object.

use model_wire::Event;
use model_wire::chat_completions::{self, Answer, ErrorBody};
use replay_core::RecordedError;
use replay_core::recording::RecordedEvent;
use serde_json::{Value, json};

/// The identity every chunk or completion of one answer carries.
pub(crate) type AnswerId = chat_completions::Identity;

/// A recorded event's failure, typed for the renderers; `None` for any other event. A status
/// outside 4xx and 5xx is none (a transport failure's 502).
pub(crate) fn failure(event: &RecordedEvent) -> Option<WireError> {
    let RecordedEvent::Error {
        message,
        error_type,
        status,
        in_stream,
    } = event
    else {
        return None;
    };
    let status = status
        .flatten()
        .filter(|status| (400..600).contains(status));
    let error_type = error_type.as_deref().unwrap_or_default();
    Some(WireError::new(status, error_type, message, *in_stream))
}

/// A `done` event's AI message read into the codec's [`Answer`], what every wire renders;
/// `None` for any other event.
pub(crate) fn done_answer(event: &RecordedEvent) -> Option<Answer> {
    match event {
        RecordedEvent::Done { message } => {
            Some(Answer::from_ai_message(&Value::Object(message.clone())))
        }
        _ => None,
    }
}

/// The codec's events among recorded events (`start`, `done` and `error` are the answer's own
/// framing).
fn wire_events(events: &[RecordedEvent]) -> Vec<Event> {
    events
        .iter()
        .filter_map(|event| match event {
            RecordedEvent::Delta(event) => Some(event.clone()),
            _ => None,
        })
        .collect()
}

/// The events of a recorded AI message, as a streaming provider would have sent it in one piece
/// per block: `start`, the reasoning, the text, each tool call (`toolcall_start`, its arguments
/// as one `toolcall_delta`, `toolcall_end`), then `done` with the message read once.
pub(crate) fn events_from_message(message: &Value) -> Vec<RecordedEvent> {
    let answer = Answer::from_ai_message(message);
    let mut events = vec![RecordedEvent::Start];
    events.extend(answer.events().into_iter().map(RecordedEvent::Delta));
    // A message that is not an object reads as an empty one (`Answer::from_ai_message`).
    let message = message.as_object().cloned().unwrap_or_default();
    events.push(RecordedEvent::done(message));
    events
}

/// The events of a fixture's recorded failure: `start` then the `error` (in a successful answer
/// when the provider reported it there), read as a recorded `error` event is.
pub(crate) fn events_from_error(recorded: &RecordedError) -> Vec<RecordedEvent> {
    vec![RecordedEvent::Start, RecordedEvent::from(recorded)]
}

/// A recorded provider failure, from an `error` event (`message`, and the `error_type`,
/// `status` and `in_stream` this harness records) or a fixture's `error` turn.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WireError {
    /// The HTTP status to answer with: 200 for a failure reported inside a successful answer.
    pub(crate) status: u16,
    /// The provider's error class name, e.g. `BadRequestError`.
    pub(crate) error_type: String,
    /// The message as the provider sent it.
    pub(crate) message: String,
    /// The provider reported it inside a successful answer: a stream carries it as an error
    /// chunk, a whole answer as a 200 error body.
    pub(crate) in_stream: bool,
}

impl WireError {
    /// A recorded failure: a message in an OpenAI client's form (`Error code: 400 - <detail>`)
    /// answers `<detail>` under its status, so that the client builds the same message again;
    /// an `in_stream` failure answers 200, and one without a status failed in transport and
    /// answers 502; no error class reads as `APIError`.
    pub(crate) fn new(
        status: Option<u16>,
        error_type: &str,
        message: &str,
        in_stream: bool,
    ) -> WireError {
        let http_status = status.unwrap_or(502);
        let prefix = format!("Error code: {http_status} - ");
        WireError {
            status: if in_stream { 200 } else { http_status },
            error_type: if error_type.is_empty() {
                "APIError".to_owned()
            } else {
                error_type.to_owned()
            },
            message: message.strip_prefix(&prefix).unwrap_or(message).to_owned(),
            in_stream,
        }
    }

    /// OpenAI's error body for this failure. A message that is the Python repr of a body (the
    /// OpenAI Python client's `Error code: 400 - {'error': {...}}`) answers that very body, so the
    /// client prints the recorded message again.
    pub(crate) fn body(&self) -> Value {
        let kind = if self.in_stream {
            "api_error"
        } else {
            ErrorBody::kind_for_status(self.status)
        };
        model_wire::pyrepr::parse(&self.message)
            .filter(Value::is_object)
            .unwrap_or_else(|| error_body(&self.message, kind, None))
    }
}

/// OpenAI's error body: `{"error": {"message", "type", "param": null, "code"}}`.
pub(crate) fn error_body(message: &str, error_type: &str, code: Option<&str>) -> Value {
    ErrorBody::new(message, error_type, code).to_value()
}

/// The one answer an event list spells: the `done` message when there is one, else the message
/// the deltas spell, with each tool call's arguments as the events streamed them; the first
/// `error` event is the answer's failure.
pub(crate) fn whole_answer(events: &[RecordedEvent]) -> Result<Answer, WireError> {
    if let Some(error) = events.iter().find_map(failure) {
        return Err(error);
    }
    let done = events.iter().find_map(done_answer);
    Ok(done
        .unwrap_or_else(|| Answer::from_ai_message(&message_from_deltas(events)))
        .with_streamed_arguments(&wire_events(events)))
}

/// The message the deltas of an unfinished event list spell (a call that ended without `done`).
fn message_from_deltas(events: &[RecordedEvent]) -> Value {
    let mut text = String::new();
    // Calls by their stream index, in the order they started: a delta belongs to the call of
    // its index, which need not be the last one started (parallel calls interleave).
    let mut calls: Vec<(u32, String, String, String)> = Vec::new();
    for event in wire_events(events) {
        match event {
            Event::TextDelta { delta } => text.push_str(&delta),
            Event::ToolcallStart { index, id, name } => {
                calls.push((index, id, name, String::new()));
            }
            Event::ToolcallDelta { index, delta } => {
                if let Some(call) = calls.iter_mut().rev().find(|call| call.0 == index) {
                    call.3.push_str(&delta);
                }
            }
            _ => {}
        }
    }
    let calls: Vec<Value> = calls
        .into_iter()
        .map(|(_, id, name, args)| json!({"id": id, "name": name, "args": args}))
        .collect();
    json!({"content": text, "tool_calls": calls, "type": "ai"})
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Recording events in their JSON form, typed as a recording's reader and the renderers
    /// read them.
    fn typed(events: &[Value]) -> Vec<RecordedEvent> {
        events
            .iter()
            .map(|event| RecordedEvent::parse(event).expect("a recording event"))
            .collect()
    }

    /// The `chat.completion` of an event list, or its failure.
    fn completion(identity: &AnswerId, events: &[RecordedEvent]) -> Result<Value, WireError> {
        whole_answer(events)
            .map(|answer| model_wire::Wire::ChatCompletions.render_answer(identity, &answer))
    }

    /// The SSE body a Chat Completions replay streams for an event list.
    fn sse_body(identity: AnswerId, events: &[RecordedEvent]) -> String {
        use super::super::render::StreamOut;
        use super::super::request::Framing;
        let wire = model_wire::Wire::ChatCompletions;
        let mut out = StreamOut::new(wire, &identity, None, Framing::Sse);
        let mut body: Vec<u8> = events.iter().flat_map(|event| out.push(event)).collect();
        body.extend(out.end(true));
        String::from_utf8(body).expect("UTF-8")
    }

    fn identity() -> AnswerId {
        AnswerId {
            id: "chatcmpl-replay-1".into(),
            model: "requested".into(),
            created: 7,
        }
    }

    fn recorded() -> Value {
        json!({"type": "ai", "data": {
            "content": "", "type": "ai", "id": "lc_run--1",
            "additional_kwargs": {"reasoning_content": "think"},
            "response_metadata": {"finish_reason": "tool_calls", "model_name": "recorded-model"},
            "tool_calls": [{"name": "write_file", "args": {"path": "/a", "n": 1.0}, "id": "call_1", "type": "tool_call"}],
            "invalid_tool_calls": [{"name": "bad", "args": "{\"x", "id": "call_2", "error": "e", "type": "invalid_tool_call"}],
            "usage_metadata": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5,
                               "input_token_details": {"cache_read": 1}, "output_token_details": {"reasoning": 1}},
        }})
    }

    #[test]
    fn a_recorded_message_becomes_one_completion() {
        let Ok(body) = completion(&identity(), &events_from_message(&recorded())) else {
            panic!("a message")
        };
        assert_eq!(
            body,
            json!({
                "id": "chatcmpl-replay-1", "object": "chat.completion", "created": 7,
                "model": "recorded-model",
                "choices": [{"index": 0, "logprobs": null, "finish_reason": "tool_calls", "message": {
                    "role": "assistant", "content": null, "reasoning_content": "think",
                    "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "write_file", "arguments": "{\"path\":\"/a\",\"n\":1.0}"}},
                        {"id": "call_2", "type": "function", "function": {"name": "bad", "arguments": "{\"x"}},
                    ]}}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5,
                          "prompt_tokens_details": {"cached_tokens": 1, "audio_tokens": 0},
                          "completion_tokens_details": {"reasoning_tokens": 1, "audio_tokens": 0}},
            })
        );
    }

    #[test]
    fn a_call_recorded_streamed_completes_with_its_arguments_as_streamed() {
        // Issue 17 item 4: the provider streamed `{"b": 1, "a": 2}` (spaces, this key order);
        // the done message holds the parsed object. A non-streamed replay must send the text.
        let streamed = "{\"b\": 1, \"a\": 2}";
        let events = [
            json!({"type": "start"}),
            json!({"type": "toolcall_start", "index": 0, "id": "c1", "name": "ls"}),
            json!({"type": "toolcall_delta", "index": 0, "delta": "{\"b\": 1, "}),
            json!({"type": "toolcall_delta", "index": 0, "delta": "\"a\": 2}"}),
            json!({"type": "toolcall_end", "index": 0}),
            json!({"type": "done", "message": {"content": "", "type": "ai", "tool_calls": [
                {"name": "ls", "args": {"a": 2, "b": 1}, "id": "c1", "type": "tool_call"}]}}),
        ];
        let Ok(body) = completion(&identity(), &typed(&events)) else {
            panic!("a message")
        };
        let arguments = &body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"];
        assert_eq!(arguments, streamed);
        let sse = sse_body(identity(), &typed(&events));
        let sent: String = sse
            .split("\n\n")
            .filter_map(|frame| frame.strip_prefix("data: "))
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .filter_map(|chunk| {
                chunk["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect();
        assert_eq!(sent, streamed, "streamed the same way");
    }

    #[test]
    fn a_recorded_message_streams_as_content_and_tool_call_deltas() {
        let body = sse_body(identity(), &events_from_message(&recorded()));
        let deltas: Vec<Value> = body
            .split("\n\n")
            .filter_map(|frame| frame.strip_prefix("data: "))
            .map(|data| {
                if data == "[DONE]" {
                    return json!("[DONE]");
                }
                let chunk: Value = serde_json::from_str(data).expect("json chunk");
                assert_eq!(chunk["id"], "chatcmpl-replay-1");
                match chunk["choices"].get(0) {
                    Some(choice) => json!([choice["delta"], choice["finish_reason"]]),
                    None => json!({"usage": chunk["usage"]["total_tokens"]}),
                }
            })
            .collect();
        assert_eq!(
            deltas,
            [
                json!([{"role": "assistant", "content": ""}, null]),
                json!([{"reasoning_content": "think"}, null]),
                json!([{"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "write_file", "arguments": ""}}]}, null]),
                json!([{"tool_calls": [{"index": 0, "function": {"arguments": "{\"path\":\"/a\",\"n\":1.0}"}}]}, null]),
                json!([{"tool_calls": [{"index": 1, "id": "call_2", "type": "function", "function": {"name": "bad", "arguments": ""}}]}, null]),
                json!([{"tool_calls": [{"index": 1, "function": {"arguments": "{\"x"}}]}, null]),
                json!([{}, "tool_calls"]),
                json!({"usage": 5}),
                json!("[DONE]"),
            ]
        );
    }

    #[test]
    fn recorded_failures_answer_with_their_status_and_the_detail_the_client_wraps_again() {
        let cases = [
            (
                json!({"type": "error", "message": "Error code: 400 - too long", "error_type": "BadRequestError", "status": 400}),
                (400, "too long", "invalid_request_error"),
            ),
            (
                json!({"type": "error", "message": "Error code: 500 - other status", "status": 429}),
                (429, "Error code: 500 - other status", "rate_limit_error"),
            ),
            (
                json!({"type": "error", "message": "connection reset"}),
                (502, "connection reset", "api_error"),
            ),
            (
                json!({"type": "error", "message": "Token limit", "error_type": "APIError", "in_stream": true}),
                (200, "Token limit", "api_error"),
            ),
        ];
        for (event, (status, message, kind)) in cases {
            let Err(error) = completion(
                &identity(),
                &typed(&[json!({"type": "start"}), event.clone()]),
            ) else {
                panic!("{event}")
            };
            assert_eq!(error.status, status, "{event}");
            assert_eq!(error.body()["error"]["message"], message, "{event}");
            assert_eq!(error.body()["error"]["type"], kind, "{event}");
        }
    }

    #[test]
    fn an_in_stream_failure_is_an_error_chunk_and_other_failures_end_the_stream() {
        let text = json!({"type": "text_delta", "delta": "par"});
        let cases = [
            (
                json!({"type": "error", "message": "boom", "in_stream": true}),
                true,
            ),
            (
                json!({"type": "error", "message": "broke", "error_type": "RemoteProtocolError"}),
                false,
            ),
        ];
        for (error, in_stream) in cases {
            let body = sse_body(
                identity(),
                &typed(&[json!({"type": "start"}), text.clone(), error.clone()]),
            );
            assert!(!body.contains("[DONE]"), "{body}");
            assert_eq!(body.contains("\"error\""), in_stream, "{error}: {body}");
        }
    }

    #[test]
    fn deltas_without_done_still_make_a_completion() {
        let events = [
            json!({"type": "start"}),
            json!({"type": "text_delta", "delta": "par"}),
            json!({"type": "text_delta", "delta": "tial"}),
        ];
        let Ok(body) = completion(&identity(), &typed(&events)) else {
            panic!("message")
        };
        assert_eq!(body["choices"][0]["message"]["content"], "partial");
        assert_eq!(body["choices"][0]["finish_reason"], "stop");
        assert_eq!(body["model"], "requested");
    }

    /// Parallel calls stream their arguments interleaved: each fragment goes to the call of its
    /// index, not to the call started last.
    #[test]
    fn interleaved_call_fragments_without_done_go_to_the_call_of_their_index() {
        let events = [
            json!({"type": "start"}),
            json!({"type": "toolcall_start", "index": 0, "id": "a", "name": "ls"}),
            json!({"type": "toolcall_start", "index": 1, "id": "b", "name": "cat"}),
            json!({"type": "toolcall_delta", "index": 0, "delta": "{\"path\": "}),
            json!({"type": "toolcall_delta", "index": 1, "delta": "{\"file\": \"x\"}"}),
            json!({"type": "toolcall_delta", "index": 0, "delta": "\"/\"}"}),
        ];
        let message = message_from_deltas(&typed(&events));
        assert_eq!(
            message["tool_calls"],
            json!([
                {"id": "a", "name": "ls", "args": "{\"path\": \"/\"}"},
                {"id": "b", "name": "cat", "args": "{\"file\": \"x\"}"},
            ])
        );
    }
}
