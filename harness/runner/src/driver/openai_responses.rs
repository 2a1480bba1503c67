//! The dialect of an agent served as OpenAI's Responses API (`--api openai-responses`;
//! `docs/testing-your-own-gateway.md`, "The dialects"): each prompt is one `POST <endpoint>`
//! (`/v1/responses`) with `{"model", "input", "stream": true}`, the input being the whole
//! conversation so far as `{"role", "content"}` items (the server keeps none: no
//! `previous_response_id`), each assistant item the text the stream assembled, read with the
//! Responses codec the model server uses (`model_wire::responses::StreamAssembler`).
//!
//! Framing ([`framing`]): `response.created` first, `response.completed` (or
//! `response.incomplete`) last, every event one the codec reads, no `response.failed` or `error`
//! unless the fixture records a model error. Shapes: a frame is named by its SSE `event:` (the
//! same as its JSON `type`); a run of `response.output_text.delta`s,
//! `response.reasoning_summary_text.delta`s, `response.reasoning_text.delta`s or
//! `response.function_call_arguments.delta`s of one `item_id` is one entry.

use serde_json::{Value, json};

use model_wire::responses::StreamAssembler;
use replay_core::{
    DeltaRule, FrameName, Framing, FramingProblem, Scenario, Shape, Turn, delta_id,
    delta_run_shapes, first_chars, named_frame_shape,
};

use super::openai_chat::model_of;
use super::{Dialect, Driver, DriverError, FramingRule, RunRequest, RunTranscript, StreamModes};

/// The delta events of a Responses stream, by the item they stream into.
pub const DELTAS: [DeltaRule; 4] = [
    DeltaRule {
        name: "response.output_text.delta",
        id_key: "item_id",
    },
    DeltaRule {
        name: "response.reasoning_summary_text.delta",
        id_key: "item_id",
    },
    DeltaRule {
        name: "response.reasoning_text.delta",
        id_key: "item_id",
    },
    DeltaRule {
        name: "response.function_call_arguments.delta",
        id_key: "item_id",
    },
];

/// An agent at a Responses route, and the conversation its client holds.
#[derive(Debug, Clone)]
pub struct OpenaiResponses {
    endpoint: String,
    model: String,
    input: Vec<Value>,
}

impl OpenaiResponses {
    /// The dialect posting to `endpoint`.
    pub fn new(endpoint: String) -> OpenaiResponses {
        OpenaiResponses {
            endpoint,
            model: String::new(),
            input: Vec::new(),
        }
    }
}

#[async_trait::async_trait]
impl Dialect for OpenaiResponses {
    async fn open(&mut self, _driver: &mut Driver) -> Result<(), DriverError> {
        Ok(())
    }

    async fn begin(&mut self, _driver: &Driver, scenario: &Scenario) -> Result<(), DriverError> {
        self.model = model_of(scenario);
        self.input.clear();
        Ok(())
    }

    fn run_request(
        &self,
        _scenario: &Scenario,
        prompt: &str,
        _recorded: &[Turn],
        _modes: StreamModes,
    ) -> Result<RunRequest, DriverError> {
        let mut input = self.input.clone();
        input.push(json!({"role": "user", "content": prompt}));
        Ok(RunRequest {
            path: self.endpoint.clone(),
            body: json!({"model": self.model, "input": input, "stream": true}),
            headers: Vec::new(),
        })
    }

    fn read_run(&mut self, transcript: &RunTranscript) -> Result<(), DriverError> {
        let route = format!("POST {}", self.endpoint);
        let mut assembler = StreamAssembler::new();
        for (position, (_, _, data)) in transcript.frames().enumerate() {
            let Some(event) = data.json() else {
                return Err(DriverError::Protocol {
                    route,
                    message: format!("frame {position}: its data is not JSON"),
                });
            };
            assembler
                .push_event(event)
                .map_err(|err| DriverError::Protocol {
                    route: route.clone(),
                    message: format!("frame {position}: {err}"),
                })?;
        }
        let answer = assembler.finish().map_err(|err| DriverError::Protocol {
            route,
            message: err.to_string(),
        })?;
        if let Some(input) = transcript.request["input"].as_array() {
            self.input = input.clone();
        }
        self.input
            .push(json!({"role": "assistant", "content": answer.text}));
        Ok(())
    }

    fn history(&self) -> Option<Value> {
        Some(Value::Array(self.input.clone()))
    }

    fn framing_rule(&self) -> FramingRule {
        FramingRule::OpenaiResponses
    }
}

fn named(transcript: &RunTranscript) -> impl Iterator<Item = (Shape, Option<String>)> + '_ {
    transcript.frames().map(|(event, raw, data)| {
        let shape = named_frame_shape(FrameName::SseEvent, Some(event), raw, data);
        let id = delta_id(&shape, data, &DELTAS);
        (shape, id)
    })
}

/// The golden's shapes of a run: delta runs of one item reduced to one entry.
pub fn golden_shapes(transcript: &RunTranscript) -> Vec<Shape> {
    delta_run_shapes(named(transcript))
}

/// Each frame's shape, unreduced.
pub fn frame_shapes(transcript: &RunTranscript) -> Vec<Shape> {
    named(transcript).map(|(shape, _)| shape).collect()
}

/// The Responses stream's framing rule, run by run.
pub fn framing(runs: &[RunTranscript], model_error_recorded: bool) -> Framing {
    for (run, transcript) in runs.iter().enumerate() {
        if let Some(problem) = run_problem(transcript, model_error_recorded) {
            return Framing::Violated { run, problem };
        }
    }
    Framing::Ok
}

fn run_problem(transcript: &RunTranscript, model_error_recorded: bool) -> Option<FramingProblem> {
    let names: Vec<Option<String>> = frame_shapes(transcript)
        .into_iter()
        .map(|shape| shape.event)
        .collect();
    let first = names.first().cloned().flatten();
    if first.as_deref() != Some("response.created") {
        return Some(FramingProblem::First {
            expected: "\"response.created\"".into(),
            got: first,
        });
    }
    const LAST: [&str; 2] = ["response.completed", "response.incomplete"];
    let count = names.len();
    for (position, name) in names.iter().enumerate() {
        let name = name.as_deref().unwrap_or("");
        if LAST.contains(&name) && position + 1 != count {
            return Some(FramingProblem::OutOfOrder {
                position,
                frame: name.to_owned(),
                expected: format!("{name:?} only last"),
            });
        }
        if ["response.failed", "error"].contains(&name) && !model_error_recorded {
            return Some(FramingProblem::ErrorFrame {
                frame: name.to_owned(),
                data: first_chars(transcript.events[position].data(), 300).to_owned(),
            });
        }
    }
    let last = names.last().cloned().flatten();
    let ended = last.as_deref().is_some_and(|name| LAST.contains(&name))
        || (model_error_recorded
            && last
                .as_deref()
                .is_some_and(|name| ["response.failed", "error"].contains(&name)));
    (!ended).then(|| FramingProblem::Last {
        expected: "\"response.completed\" or \"response.incomplete\"".into(),
        got: last,
    })
}
