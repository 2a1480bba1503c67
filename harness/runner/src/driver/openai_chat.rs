//! The dialect of an agent served as OpenAI's Chat Completions API (`--api openai-chat`;
//! `docs/testing-your-own-gateway.md`, "The dialects"): each prompt is one `POST <endpoint>`
//! (`/v1/chat/completions`) with `{"model", "messages", "stream": true}`, the messages being the
//! whole conversation so far (the server keeps none), each assistant message the one the stream
//! assembled (its text, and its tool calls when it made some), read with the Chat Completions
//! codec the model server uses (`model_wire::chat_completions::ChunkAssembler`).
//!
//! Framing (`run_problem`, run by run): every frame a chunk the codec reads, a chunk with a `finish_reason`,
//! `[DONE]` last, no error chunk unless the fixture records a model error. Shapes: a chunk is
//! named by what the codec reads in it (`text_delta`, `toolcall_start`, `toolcall_delta`, …, one
//! entry per event; `chunk` when it reads nothing), its keys the chunk's; `[DONE]` is `[DONE]`;
//! a run of `text_delta`s, `thinking_delta`s, or `toolcall_delta`s of one call, is one entry.

use serde_json::{Value, json};

use model_wire::chat_completions::{ChunkAssembler, Event, WireError};
use replay_core::{DONE_MARKER, FrameData, FramingProblem, Scenario, Shape, first_chars};

use super::dialect::{Begin, Dialect, Protocol, RunContext, first_violation};
use super::error::DriverError;
use super::http::RunRequest;
use super::transcript::RunTranscript;

/// An OpenAI Chat Completions endpoint (`/v1/chat/completions`), its framing rule in `run_problem`.
pub const PROTOCOL: Protocol = Protocol {
    base_path: "",
    ready_path: "/",
    endpoint: Some("/v1/chat/completions"),
    ui_modes: false,
    headers: &[],
    lf_only: false,
    framing,
    named: Some(named),
};

/// The framing of `runs`: the first run [`run_problem`] finds broken.
fn framing(runs: &[RunTranscript], model_error_recorded: bool) -> replay_core::Framing {
    first_violation(runs, |transcript| {
        run_problem(transcript, model_error_recorded)
    })
}

/// The model name sent when the fixture names none.
const DEFAULT_MODEL: &str = "agent";

/// What the client of an OpenAI-style agent holds, for both OpenAI dialects: the route, the
/// model, and the whole conversation, which each request resends under `key` (`messages` for
/// Chat Completions, `input` for Responses) because the server keeps none.
#[derive(Debug, Clone)]
pub(crate) struct Resent {
    endpoint: String,
    key: &'static str,
    model: String,
    conversation: Vec<Value>,
}

impl Resent {
    /// A client posting to `endpoint`, the conversation under `key`.
    pub(crate) fn new(endpoint: String, key: &'static str) -> Resent {
        Resent {
            endpoint,
            key,
            model: DEFAULT_MODEL.to_owned(),
            conversation: Vec::new(),
        }
    }

    /// A new conversation for `scenario`.
    pub(crate) fn begin(&mut self, scenario: &Scenario) {
        self.model = model_of(scenario);
        self.conversation.clear();
    }

    /// The request of one prompt: the conversation so far and the prompt, streamed.
    pub(crate) fn request(&self, prompt: &str) -> RunRequest {
        let mut conversation = self.conversation.clone();
        conversation.push(json!({"role": "user", "content": prompt}));
        RunRequest {
            path: self.endpoint.clone(),
            body: json!({"model": self.model, self.key: conversation, "stream": true}),
            headers: Vec::new(),
        }
    }

    /// `POST <endpoint>`, for errors.
    pub(crate) fn route(&self) -> String {
        format!("POST {}", self.endpoint)
    }

    /// The conversation after a run: what its request sent, then the assistant's `answer`.
    pub(crate) fn answered(&mut self, transcript: &RunTranscript, answer: Value) {
        if let Some(sent) = transcript.request[self.key].as_array() {
            self.conversation = sent.clone();
        }
        self.conversation.push(answer);
    }

    /// The conversation as the client holds it.
    pub(crate) fn history(&self) -> Option<Value> {
        Some(Value::Array(self.conversation.clone()))
    }
}

/// An agent at a Chat Completions route, and the conversation its client holds.
#[derive(Debug, Clone)]
pub struct OpenaiChat {
    client: Resent,
}

impl OpenaiChat {
    /// The dialect posting to `endpoint`.
    pub fn new(endpoint: String) -> OpenaiChat {
        OpenaiChat {
            client: Resent::new(endpoint, "messages"),
        }
    }
}

/// The model name a scenario's requests carry: the fixture's model, else `agent`.
fn model_of(scenario: &Scenario) -> String {
    match scenario.model.trim() {
        "" => DEFAULT_MODEL.to_owned(),
        model => model.to_owned(),
    }
}

#[async_trait::async_trait]
impl Dialect for OpenaiChat {
    async fn begin(&mut self, start: Begin<'_>) -> Result<(), DriverError> {
        let scenario = start.scenario;
        self.client.begin(scenario);
        Ok(())
    }

    fn run_request(&self, run: &RunContext<'_>) -> Result<RunRequest, DriverError> {
        let prompt = run.prompt;
        Ok(self.client.request(prompt))
    }

    fn read_run(&mut self, transcript: &RunTranscript) -> Result<(), DriverError> {
        let mut assembler = ChunkAssembler::new();
        for (position, (_, raw, _)) in transcript.frames().enumerate() {
            assembler
                .push_data(raw)
                .map_err(|err| DriverError::Protocol {
                    route: self.client.route(),
                    message: format!("frame {position}: {err}"),
                })?;
        }
        let (_, answer) = assembler.finish().map_err(|err| DriverError::Protocol {
            route: self.client.route(),
            message: err.to_string(),
        })?;
        let mut message = json!({"role": "assistant", "content": answer.text});
        if !answer.calls.is_empty() {
            message["tool_calls"] = (answer.calls.iter())
                .map(|call| {
                    json!({"id": call.id, "type": "function",
                           "function": {"name": call.name, "arguments": call.arguments}})
                })
                .collect();
        }
        self.client.answered(transcript, message);
        Ok(())
    }

    fn history(&self) -> Option<Value> {
        self.client.history()
    }
}

/// An event's name: its `type` tag (`text_delta`, `toolcall_start`, …).
fn event_name(event: &Event) -> String {
    serde_json::to_value(event)
        .ok()
        .and_then(|value| value.get("type")?.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The delta id of an event: the block it streams into.
fn delta_of(event: &Event) -> Option<String> {
    match event {
        Event::TextDelta { .. } => Some("text".into()),
        Event::ThinkingDelta { .. } => Some("thinking".into()),
        Event::ToolcallDelta { index, .. } => Some(format!("call {index}")),
        _ => None,
    }
}

/// Each frame's entries (one per event the codec reads in it), with their delta ids; a frame the
/// codec refuses is named `error` (the framing rule reports it).
pub(super) fn named(transcript: &RunTranscript) -> Vec<(Shape, Option<String>)> {
    let mut assembler = ChunkAssembler::new();
    let mut out = Vec::new();
    for (_, raw, data) in transcript.frames() {
        if raw.trim() == DONE_MARKER {
            out.push((Shape::named(DONE_MARKER, None), None));
            continue;
        }
        let keys = Shape::keys_of(data);
        match assembler.push_data(raw) {
            Ok(events) if events.is_empty() => out.push((Shape::named("chunk", keys), None)),
            Ok(events) => out.extend(events.iter().map(|event| {
                (
                    Shape::named(event_name(event), keys.clone()),
                    delta_of(event),
                )
            })),
            Err(_) => out.push((Shape::named("error", keys), None)),
        }
    }
    out
}

/// What breaks the Chat Completions stream's framing of one run, if anything.
pub(super) fn run_problem(
    transcript: &RunTranscript,
    model_error_recorded: bool,
) -> Option<FramingProblem> {
    let mut assembler = ChunkAssembler::new();
    let count = transcript.events.len();
    for (position, (_, raw, data)) in transcript.frames().enumerate() {
        let done = raw.trim() == DONE_MARKER;
        if done && position + 1 != count {
            return Some(FramingProblem::OutOfOrder {
                position,
                frame: DONE_MARKER.into(),
                expected: "\"[DONE]\" only last".into(),
            });
        }
        if done && !assembler.finished() {
            return Some(FramingProblem::OutOfOrder {
                position,
                frame: DONE_MARKER.into(),
                expected: "a chunk with a finish_reason before \"[DONE]\"".into(),
            });
        }
        match assembler.push_data(raw) {
            Err(WireError::Provider { .. }) if model_error_recorded => {}
            Err(err) => {
                return Some(FramingProblem::ErrorFrame {
                    frame: frame_name(data),
                    data: first_chars(&format!("{err}: {raw}"), 300).to_owned(),
                });
            }
            Ok(_) => {}
        }
    }
    if !assembler.done() {
        return Some(FramingProblem::Last {
            expected: "\"[DONE]\"".into(),
            got: transcript
                .frames()
                .last()
                .map(|(_, _, data)| frame_name(data)),
        });
    }
    None
}

/// A short name of a frame for a report: its `object`, else `chunk`.
fn frame_name(data: &FrameData) -> String {
    data.json()
        .and_then(|json| json.get("object")?.as_str().map(str::to_owned))
        .unwrap_or_else(|| "chunk".into())
}

#[cfg(test)]
mod tests {
    use super::super::{Api, StreamModes};
    use super::*;
    use crate::driver::transcript::SseEvent;

    use replay_core::Framing;

    /// The dialect's framing rule, as the runner applies it.
    fn framing(runs: &[RunTranscript], model_error_recorded: bool) -> Framing {
        Api::OpenaiChat.framing(runs, model_error_recorded)
    }

    /// The golden's shapes of a run, delta runs reduced.
    fn golden_shapes(transcript: &RunTranscript) -> Vec<Shape> {
        Api::OpenaiChat.golden_shapes(transcript)
    }

    /// A streamed answer: a role chunk, the text in `chunks`, the finish, `[DONE]`.
    fn stream(chunks: &[&str]) -> Vec<String> {
        let chunk = |delta: Value, finish: Value| {
            json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            .to_string()
        };
        let mut frames = vec![chunk(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
        )];
        frames.extend(
            chunks
                .iter()
                .map(|text| chunk(json!({"content": text}), Value::Null)),
        );
        frames.push(chunk(json!({}), json!("stop")));
        frames.push(DONE_MARKER.to_owned());
        frames
    }

    fn run(frames: &[String]) -> RunTranscript {
        RunTranscript {
            request: json!({"messages": [{"role": "user", "content": "Hi"}]}),
            events: (frames.iter())
                .map(|data| SseEvent::new("message".into(), data.clone(), None))
                .collect(),
            modes: StreamModes::Values,
            api: Api::OpenaiChat,
            headers: Vec::new(),
            history: None,
        }
    }

    #[test]
    fn the_golden_holds_one_text_entry_however_it_was_chunked_and_the_follow_up_the_answer() {
        let golden = |chunks: &[&str]| golden_shapes(&run(&stream(chunks)));
        let names: Vec<String> = (golden(&["Hello ", "there."]).into_iter())
            .filter_map(|shape| shape.event)
            .collect();
        assert_eq!(
            names,
            ["chunk", "text_start", "text_delta", "text_end", "[DONE]"]
        );
        assert_eq!(
            golden(&["Hello ", "there."]),
            golden(&["Hel", "lo ", "the", "re."])
        );

        let mut dialect = OpenaiChat::new("/v1/chat/completions".into());
        dialect
            .read_run(&run(&stream(&["Hello ", "there."])))
            .unwrap();
        let follow_up = dialect
            .run_request(&RunContext::values(
                &Scenario::new("s", replay_core::Mode::Label("chat".into()), "Again"),
                "Again",
            ))
            .unwrap();
        assert_eq!(
            follow_up.body["messages"],
            json!([{"role": "user", "content": "Hi"},
                   {"role": "assistant", "content": "Hello there."},
                   {"role": "user", "content": "Again"}])
        );
    }

    #[test]
    fn the_framing_rule_fails_a_stream_without_its_end_or_with_an_error() {
        let frames = stream(&["ok"]);
        let mut no_done = frames.clone();
        no_done.pop();
        let mut no_finish = frames.clone();
        no_finish.remove(no_finish.len() - 2);
        let mut early_done = frames.clone();
        early_done.insert(1, DONE_MARKER.to_owned());
        let mut error = frames.clone();
        error.insert(
            2,
            json!({"error": {"message": "boom", "type": "server_error"}}).to_string(),
        );
        // (case, frames, the problem's start, model error recorded)
        let cases = [
            ("framed", frames.clone(), None, false),
            ("a dropped [DONE]", no_done, Some("the last frame"), false),
            (
                "no finish_reason",
                no_finish,
                Some("frame 2 \"[DONE]\" is out of order"),
                false,
            ),
            (
                "[DONE] out of order",
                early_done,
                Some("frame 1 \"[DONE]\" is out of order"),
                false,
            ),
            (
                "an error chunk",
                error.clone(),
                Some("the server sent an \"chunk\" frame"),
                false,
            ),
            ("a recorded model error", error, None, true),
        ];
        for (case, frames, expected, model_error) in cases {
            match (framing(&[run(&frames)], model_error), expected) {
                (Framing::Ok, None) => {}
                (Framing::Violated { run: 0, problem }, Some(start)) => {
                    assert!(problem.to_string().starts_with(start), "{case}: {problem}");
                }
                (got, _) => panic!("{case}: {got:?}"),
            }
        }
    }
}
