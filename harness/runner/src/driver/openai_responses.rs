//! The dialect of an agent served as OpenAI's Responses API (`--api openai-responses`;
//! `docs/testing-your-own-gateway.md`, "The dialects"): each prompt is one `POST <endpoint>`
//! (`/v1/responses`) with `{"model", "input", "stream": true}`, the input being the whole
//! conversation so far as `{"role", "content"}` items (the server keeps none: no
//! `previous_response_id`), each assistant item the text the stream assembled, read with the
//! Responses codec the model server uses (`model_wire::responses::StreamAssembler`).
//!
//! Framing (`run_problem`, run by run): `response.created` first, `response.completed` (or
//! `response.incomplete`) last, every event one the codec reads, no `response.failed` or `error`
//! unless the fixture records a model error. Shapes: a frame is named by its SSE `event:` (the
//! same as its JSON `type`); a run of `response.output_text.delta`s,
//! `response.reasoning_summary_text.delta`s, `response.reasoning_text.delta`s or
//! `response.function_call_arguments.delta`s of one `item_id` is one entry.

use serde_json::{Value, json};

use model_wire::responses::StreamAssembler;
use replay_core::{
    DeltaRule, FrameName, FramingProblem, Shape, delta_id, first_chars, named_frame_shape,
};

use super::dialect::{Begin, Dialect, Protocol, RunContext, first_violation};
use super::error::DriverError;
use super::http::RunRequest;
use super::openai_chat::Resent;
use super::transcript::RunTranscript;

/// An OpenAI Responses endpoint (`/v1/responses`), its framing rule in `run_problem`.
pub const PROTOCOL: Protocol = Protocol {
    base_path: "",
    ready_path: "/",
    endpoint: Some("/v1/responses"),
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
    client: Resent,
}

impl OpenaiResponses {
    /// The dialect posting to `endpoint`.
    pub fn new(endpoint: String) -> OpenaiResponses {
        OpenaiResponses {
            client: Resent::new(endpoint, "input"),
        }
    }
}

#[async_trait::async_trait]
impl Dialect for OpenaiResponses {
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
        let route = self.client.route();
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
        self.client.answered(
            transcript,
            json!({"role": "assistant", "content": answer.text}),
        );
        Ok(())
    }

    fn history(&self) -> Option<Value> {
        self.client.history()
    }
}

/// Each frame's shape, named by its SSE event, with the id of the item a delta streams into
/// ([`super::Api::golden_shapes`] reduces the delta runs; [`framing`] checks run by run).
pub(super) fn named(transcript: &RunTranscript) -> Vec<(Shape, Option<String>)> {
    transcript
        .frames()
        .map(|(event, raw, data)| {
            let shape = named_frame_shape(FrameName::SseEvent, Some(event), raw, data);
            let id = delta_id(&shape, data, &DELTAS);
            (shape, id)
        })
        .collect()
}

/// What breaks the Responses stream's framing of one run, if anything.
pub(super) fn run_problem(
    transcript: &RunTranscript,
    model_error_recorded: bool,
) -> Option<FramingProblem> {
    let names: Vec<Option<String>> = named(transcript)
        .into_iter()
        .map(|(shape, _)| shape.event)
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

#[cfg(test)]
mod tests {
    use super::super::{Api, StreamModes};
    use super::*;
    use crate::driver::transcript::SseEvent;
    use replay_core::Scenario;

    use replay_core::Framing;

    /// The dialect's framing rule, as the runner applies it.
    fn framing(runs: &[RunTranscript], model_error_recorded: bool) -> Framing {
        Api::OpenaiResponses.framing(runs, model_error_recorded)
    }

    /// The golden's shapes of a run, delta runs reduced.
    fn golden_shapes(transcript: &RunTranscript) -> Vec<Shape> {
        Api::OpenaiResponses.golden_shapes(transcript)
    }

    /// A streamed answer as OpenAI frames it: created, the message item, the text deltas in
    /// `chunks`, the item done, completed.
    fn stream(chunks: &[&str]) -> Vec<(String, Value)> {
        let item = json!({"id": "msg_1", "type": "message", "role": "assistant", "content": []});
        let mut frames = vec![
            (
                "response.created",
                json!({"response": {"id": "r", "model": "m"}}),
            ),
            (
                "response.output_item.added",
                json!({"output_index": 0, "item": item}),
            ),
        ];
        for delta in chunks {
            frames.push((
                "response.output_text.delta",
                json!({"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": delta}),
            ));
        }
        frames.push((
            "response.output_item.done",
            json!({"output_index": 0, "item": item}),
        ));
        frames.push((
            "response.completed",
            json!({"response": {"id": "r", "status": "completed"}}),
        ));
        (frames.into_iter())
            .map(|(name, mut data)| {
                data["type"] = json!(name);
                (name.to_owned(), data)
            })
            .collect()
    }

    fn run(frames: &[(String, Value)]) -> RunTranscript {
        RunTranscript {
            request: json!({"input": [{"role": "user", "content": "Hi"}]}),
            events: (frames.iter())
                .map(|(name, data)| SseEvent::new(name.clone(), data.to_string(), None))
                .collect(),
            modes: StreamModes::Values,
            api: Api::OpenaiResponses,
            headers: Vec::new(),
            history: None,
        }
    }

    #[test]
    fn the_golden_holds_one_delta_entry_per_item_and_the_follow_up_the_answer() {
        let golden = |chunks: &[&str]| golden_shapes(&run(&stream(chunks)));
        assert_eq!(
            golden(&["Hello ", "there."]),
            golden(&["He", "llo ", "there", "."])
        );
        assert_eq!(golden(&["Hello ", "there."]).len(), 5);

        let mut dialect = OpenaiResponses::new("/v1/responses".into());
        dialect
            .read_run(&run(&stream(&["Hello ", "there."])))
            .unwrap();
        let scenario = Scenario::new("s", replay_core::Mode::Label("chat".into()), "Again");
        let follow_up = dialect
            .run_request(&RunContext::values(&scenario, "Again"))
            .unwrap();
        assert_eq!(
            follow_up.body["input"],
            json!([{"role": "user", "content": "Hi"},
                   {"role": "assistant", "content": "Hello there."},
                   {"role": "user", "content": "Again"}])
        );
    }

    #[test]
    fn the_framing_rule_fails_a_missing_end_an_event_out_of_order_and_a_failure() {
        let frames = stream(&["ok"]);
        let mut no_completed = frames.clone();
        no_completed.pop();
        let mut completed_early = frames.clone();
        let completed = completed_early.pop().unwrap();
        completed_early.insert(1, completed.clone());
        completed_early.push(completed);
        let mut no_created = frames.clone();
        no_created.remove(0);
        let mut failed = frames.clone();
        failed.insert(
            3,
            (
                "response.failed".into(),
                json!({"type": "response.failed", "response": {}}),
            ),
        );
        let cases = [
            ("framed", frames.clone(), None),
            (
                "a dropped response.completed",
                no_completed,
                Some("the last frame"),
            ),
            (
                "response.completed out of order",
                completed_early,
                Some("frame 1 \"response.completed\" is out of order"),
            ),
            ("no response.created", no_created, Some("the first frame")),
            (
                "a failed response",
                failed,
                Some("the server sent an \"response.failed\""),
            ),
        ];
        for (case, frames, expected) in cases {
            match (framing(&[run(&frames)], false), expected) {
                (Framing::Ok, None) => {}
                (Framing::Violated { run: 0, problem }, Some(start)) => {
                    assert!(problem.to_string().starts_with(start), "{case}: {problem}");
                }
                (got, _) => panic!("{case}: {got:?}"),
            }
        }
    }
}
