//! An upstream's answer as recording events, read by its wire's [`StreamReader`] (or, whole, by
//! [`Wire::parse_answer`]): `model_wire`'s, the one the gateway's providers read the same answers
//! with, so both stop a stream at the same event (one end rule per wire). Streamed events one by
//! one, or a whole answer, become the recording format's events, ending with `done` and the assembled AI message in LangChain's dump form
//! (the form a fixture's `output` holds), so the fixture built from a proxy's recording replays
//! in-process as well as over the wire.
//!
//! The events are the codec's (`start` before them, `done` after), so the recording has the
//! blocks and tool-call fragments the gateway's provider produces for the same stream. A
//! failure is one `error` event, last: a failure the provider reported inside the 200 answer
//! (an `error` chunk, an SSE `error` event, an error body) carries `in_stream: true`; a stream
//! cut off (no `finish_reason` and no `[DONE]`) or without a choice is the error the gateway's
//! provider raises for it, never a good turn.

use model_wire::StreamReader;
use model_wire::chat_completions::{Answer, Assembled, Ending, Event, WireError, new_run_id};
use replay_core::recording::{DeltaHold, KnownSecrets, RecordedEvent};
use serde_json::{Map, Value};

use super::request::Wire;

/// The recording's `error` event for an answer the codec could not read.
pub(crate) fn error_event(error: &WireError) -> RecordedEvent {
    RecordedEvent::Error {
        message: error.to_string(),
        error_type: Some(error.exception_name().to_owned()),
        status: None,
        in_stream: matches!(error, WireError::Provider { .. }),
    }
}

/// The `done` event of an answer.
fn done_event(assembled: &Assembled, requested_model: &str) -> RecordedEvent {
    let message = match assembled.to_ai_message(&new_run_id(), requested_model) {
        Value::Object(message) => message,
        _ => Map::new(),
    };
    RecordedEvent::done(message)
}

/// Folds an upstream's stream, at one wire, into recording events and, at the end, the AI
/// message.
#[derive(Debug)]
pub(crate) struct StreamRecorder {
    /// The wire's reader, the gateway's providers' too: one end rule per wire.
    reader: StreamReader,
    requested_model: String,
    started: bool,
    /// What the events go through: a known secret split over deltas is removed whole (issue
    /// 45, finding 1).
    hold: DeltaHold,
}

impl StreamRecorder {
    /// A recorder for a request at `wire` that named `requested_model` (the fallback
    /// `model_name`).
    pub(crate) fn new(wire: Wire, requested_model: &str) -> StreamRecorder {
        StreamRecorder {
            reader: wire.reader(),
            requested_model: requested_model.to_owned(),
            started: false,
            hold: DeltaHold::new(KnownSecrets::default()),
        }
    }

    /// The recorder with its deltas rid of every form of `secrets`, even one split over several
    /// of them ([`DeltaHold`]): the last characters of a stream of deltas that could still
    /// start a form are held back until it goes on or ends.
    pub(crate) fn holding(self, secrets: KnownSecrets) -> StreamRecorder {
        StreamRecorder {
            hold: DeltaHold::new(secrets),
            ..self
        }
    }

    /// `out` through the hold.
    fn held(&mut self, out: Vec<RecordedEvent>) -> Vec<RecordedEvent> {
        out.into_iter()
            .flat_map(|event| self.hold.push(event))
            .collect()
    }

    /// `start`, the first time.
    fn start(&mut self, out: &mut Vec<RecordedEvent>) {
        if !self.started {
            self.started = true;
            out.push(RecordedEvent::Start);
        }
    }

    /// The events one SSE event (or, at Converse, one event-stream message: `name` is its
    /// `:event-type`) causes, as the wire's [`StreamReader::push`] reads it; a failure is an
    /// `error` event, last.
    pub(crate) fn on_event(&mut self, name: &str, data: &str) -> Vec<RecordedEvent> {
        let mut out = Vec::new();
        let pushed = self.reader.push(name, data);
        self.start(&mut out);
        match pushed {
            Ok(events) => out.extend(events.iter().cloned().map(RecordedEvent::Delta)),
            Err(error) => out.push(error_event(&error)),
        }
        self.held(out)
    }

    /// The `error` event for an exception message of a Converse stream (`:exception-type` and
    /// its payload): the provider's failure, reported inside its answer.
    pub(crate) fn on_exception(&mut self, exception_type: &str, data: &str) -> Vec<RecordedEvent> {
        let mut out = Vec::new();
        self.start(&mut out);
        out.push(error_event(
            &self.reader.push_exception(exception_type, data),
        ));
        self.held(out)
    }

    /// What the upstream's stream has said of its answer so far (its model and usage), for the
    /// opening of the stream the gateway gets while the answer is not over
    /// ([`StreamReader::so_far`]).
    pub(crate) fn so_far(&self) -> Answer {
        self.reader.so_far()
    }

    /// True once the answer's last event (`data: [DONE]`, `message_stop`, `response.completed`,
    /// …) has arrived, by the wire's one end rule ([`StreamReader::ended`]); never at Gemini and
    /// Converse, whose streams are read to their end.
    pub(crate) fn done(&self) -> bool {
        self.reader.ended()
    }

    /// The last events: closing ones, then `done` with the assembled message; or the `error` of
    /// a stream that was cut off or carried no choice.
    pub(crate) fn finish(self) -> Vec<RecordedEvent> {
        let mut out = Vec::new();
        let mut this = self;
        this.start(&mut out);
        let finished: Result<(Vec<Event>, Assembled), WireError> =
            this.reader.finish().inspect(|(_, assembled)| {
                if assembled.ending != Ending::Complete {
                    tracing::warn!(ending = ?assembled.ending,
                        "the upstream's stream ended without [DONE] or without a finish reason");
                }
            });
        match finished {
            Ok((closing, assembled)) => {
                out.extend(closing.iter().cloned().map(RecordedEvent::Delta));
                out.push(done_event(&assembled, &this.requested_model));
            }
            Err(error) => out.push(error_event(&error)),
        }
        let mut hold = this.hold;
        let mut out: Vec<RecordedEvent> =
            out.into_iter().flat_map(|event| hold.push(event)).collect();
        out.extend(hold.flush());
        out
    }
}

/// The events of a whole answer at `wire` (a `chat.completion`, a Messages `message`, a
/// Responses `response`): what a stream of it in one piece would give.
pub(crate) fn events_from_completion(
    wire: Wire,
    body: &Value,
    requested_model: &str,
) -> Vec<RecordedEvent> {
    let mut events = vec![RecordedEvent::Start];
    let parsed = wire.parse_answer(body);
    match parsed {
        Ok(assembled) => {
            events.extend(assembled.events().iter().cloned().map(RecordedEvent::Delta));
            events.push(done_event(&assembled, requested_model));
        }
        Err(error) => events.push(error_event(&error)),
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Recording events in the JSON form a recording holds them in.
    fn values(events: Vec<RecordedEvent>) -> Vec<Value> {
        events.iter().map(RecordedEvent::to_value).collect()
    }

    fn types(events: &[Value]) -> Vec<&str> {
        events
            .iter()
            .map(|e| e["type"].as_str().unwrap_or("?"))
            .collect()
    }

    fn chunk(delta: Value, finish: Value) -> String {
        json!({"model": "up-model", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            .to_string()
    }

    #[test]
    fn streamed_tool_call_arguments_split_mid_json_assemble_into_one_call() {
        let mut recorder = StreamRecorder::new(Wire::ChatCompletions, "asked");
        let mut events = Vec::new();
        for data in [
            chunk(
                json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "write_file", "arguments": ""}}]}),
                Value::Null,
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"pa"}}]}),
                Value::Null,
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "th\": \"/a\"}"}}]}),
                Value::Null,
            ),
            chunk(json!({}), json!("tool_calls")),
            json!({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}).to_string(),
            "[DONE]".to_owned(),
        ] {
            events.extend(values(recorder.on_event("message", &data)));
        }
        assert!(recorder.done());
        events.extend(values(recorder.finish()));
        assert_eq!(
            types(&events),
            [
                "start",
                "toolcall_start",
                "toolcall_delta",
                "toolcall_delta",
                "toolcall_end",
                "done"
            ]
        );
        let message = &events.last().unwrap()["message"];
        assert_eq!(message["tool_calls"][0]["args"], json!({"path": "/a"}));
        assert_eq!(message["tool_calls"][0]["id"], "c1");
        assert_eq!(message["response_metadata"]["finish_reason"], "tool_calls");
        assert_eq!(message["response_metadata"]["model_name"], "up-model");
        assert_eq!(message["usage_metadata"]["total_tokens"], 7);
        assert!(message["id"].as_str().unwrap().starts_with("lc_run--"));
        for event in &events {
            replay_core::recording::RecordedEvent::parse(event).expect("a valid recording event");
        }
    }

    #[test]
    fn a_cut_off_or_failing_stream_ends_with_an_error_event_not_a_good_turn() {
        let text = chunk(json!({"content": "Hel"}), Value::Null);
        let failure = json!({"error": {"message": "Token limit reached", "code": 400}}).to_string();
        let cases: [(&[&str], &str, Option<bool>); 3] = [
            (&[&text], "RemoteProtocolError", None),
            (&[], "EmptyResponseError", None),
            (&[&text, &failure], "APIError", Some(true)),
        ];
        for (payloads, error_type, in_stream) in cases {
            let mut recorder = StreamRecorder::new(Wire::ChatCompletions, "m");
            let mut events: Vec<Value> = payloads
                .iter()
                .flat_map(|p| values(recorder.on_event("message", p)))
                .collect();
            if !events.iter().any(|e| e["type"] == "error") {
                events.extend(values(recorder.finish()));
            }
            let last = events.last().unwrap();
            assert_eq!(last["type"], "error", "{payloads:?}");
            assert_eq!(last["error_type"], error_type, "{payloads:?}");
            assert_eq!(last["in_stream"].as_bool(), in_stream, "{payloads:?}");
        }
    }

    #[test]
    fn a_whole_completion_gives_the_same_message_and_invalid_arguments_stay_raw() {
        let body = json!({"model": "m", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "bad", "arguments": "{\"x"}},
        ]}}]});
        let events = values(events_from_completion(
            Wire::ChatCompletions,
            &body,
            "asked",
        ));
        let message = &events.last().unwrap()["message"];
        assert_eq!(message["tool_calls"][0]["name"], "ls");
        assert_eq!(message["invalid_tool_calls"][0]["args"], "{\"x");
        let no_choices = values(events_from_completion(
            Wire::ChatCompletions,
            &json!({"error": {"message": "nope"}}),
            "m",
        ));
        assert_eq!(types(&no_choices), ["start", "error"]);
        assert_eq!(no_choices[1]["message"], "nope");
        assert_eq!(no_choices[1]["in_stream"], true);
    }

    /// Each wire's stream through the recorder: a complete one ends with `done` (and says it is
    /// done at its last event, so the proxy stops reading there); one cut off before its last
    /// event, or carrying the provider's `error` event, ends with that failure, never a good turn.
    #[test]
    fn each_wire_s_stream_is_recorded_as_its_answer_or_its_failure() {
        let text_start = json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}});
        let text = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}});
        let stop = json!({"type": "message_stop"});
        let failure = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
        let added = json!({"type": "response.output_item.added", "output_index": 0, "item": {"id": "m", "type": "message", "role": "assistant", "content": []}});
        let delta = json!({"type": "response.output_text.delta", "item_id": "m", "output_index": 0, "delta": "Hi"});
        let completed = json!({"type": "response.completed", "response": {"status": "completed", "output": []}});
        type Case = (Wire, Vec<Value>, bool, &'static str, Option<&'static str>);
        let cases: [Case; 5] = [
            (
                Wire::AnthropicMessages,
                vec![text_start.clone(), text.clone(), stop],
                true,
                "done",
                None,
            ),
            (
                Wire::AnthropicMessages,
                vec![text_start.clone(), text.clone()],
                false,
                "error",
                Some("RemoteProtocolError"),
            ),
            (
                Wire::AnthropicMessages,
                vec![text_start, text, failure],
                false,
                "error",
                Some("APIError"),
            ),
            (
                Wire::Responses,
                vec![added.clone(), delta.clone(), completed],
                true,
                "done",
                None,
            ),
            (
                Wire::Responses,
                vec![added, delta],
                false,
                "error",
                Some("RemoteProtocolError"),
            ),
        ];
        for (wire, payloads, ended, last, error_type) in cases {
            let mut recorder = StreamRecorder::new(wire, "m");
            let mut events: Vec<Value> = payloads
                .iter()
                .flat_map(|p| {
                    values(recorder.on_event(p["type"].as_str().unwrap(), &p.to_string()))
                })
                .collect();
            let how = format!("{wire:?} {payloads:?}");
            assert_eq!(recorder.done(), ended, "{how}");
            if !events.iter().any(|e| e["type"] == "error") {
                events.extend(values(recorder.finish()));
            }
            let final_event = events.last().unwrap();
            assert_eq!(final_event["type"], last, "{how}: {events:?}");
            assert_eq!(final_event["error_type"].as_str(), error_type, "{how}");
            if last == "done" {
                assert_eq!(final_event["message"]["content"], "Hi", "{how}");
            }
            for event in &events {
                replay_core::recording::RecordedEvent::parse(event)
                    .expect("a valid recording event");
            }
        }
    }
}
