//! The AG-UI dialect (`--api ag-ui`, `docs/testing-your-own-gateway.md`, "AG-UI"): each prompt is
//! a `RunAgentInput` POSTed to the agent's endpoint with `Accept: text/event-stream`, and each
//! follow-up keeps the thread, takes a new run id and carries the messages and state the earlier
//! runs produced, assembled by [`client::Conversation`] as `@ag-ui/client`'s `HttpAgent`
//! assembles them. A stream is framed by `RUN_STARTED` first and `RUN_FINISHED` or `RUN_ERROR`
//! last, in the order `verifyEvents` enforces ([`client::verify_run`]); it reduces to shapes named
//! by each event's JSON `type`, a run of deltas of one id (`TEXT_MESSAGE_CONTENT`,
//! `TOOL_CALL_ARGS`, reasoning content) as one entry (`docs/golden-format.md` §10).

pub mod client;

use serde_json::Value;

use replay_core::{
    DeltaRule, FrameName, FramingProblem, Shape, delta_id, first_chars, named_frame_shape,
};

use super::dialect::{Begin, Dialect, Protocol, RunContext, first_violation};
use super::error::DriverError;
use super::http::RunRequest;
use super::transcript::RunTranscript;

/// AG-UI: one agent endpoint at the root, LF line ends only (as `@ag-ui/client` reads), its framing rule in `run_problem`.
pub const PROTOCOL: Protocol = Protocol {
    base_path: "",
    ready_path: "/",
    endpoint: Some("/"),
    ui_modes: false,
    headers: &[],
    lf_only: true,
    framing,
    named: Some(named),
};

/// The framing of `runs`: the first run [`run_problem`] finds broken.
fn framing(runs: &[RunTranscript], model_error_recorded: bool) -> replay_core::Framing {
    first_violation(runs, |transcript| {
        run_problem(transcript, model_error_recorded)
    })
}
use client::{AgUiProblem, Conversation, RunEnd};

/// The delta events whose runs of one id reduce to one golden entry.
const DELTAS: [DeltaRule; 6] = [
    DeltaRule {
        name: "TEXT_MESSAGE_CONTENT",
        id_key: "messageId",
    },
    DeltaRule {
        name: "TEXT_MESSAGE_CHUNK",
        id_key: "messageId",
    },
    DeltaRule {
        name: "TOOL_CALL_ARGS",
        id_key: "toolCallId",
    },
    DeltaRule {
        name: "TOOL_CALL_CHUNK",
        id_key: "toolCallId",
    },
    DeltaRule {
        name: "REASONING_MESSAGE_CONTENT",
        id_key: "messageId",
    },
    DeltaRule {
        name: "REASONING_MESSAGE_CHUNK",
        id_key: "messageId",
    },
];

/// The AG-UI dialect: one thread per scenario, the conversation held client-side.
#[derive(Debug)]
pub struct AgUi {
    endpoint: String,
    thread_id: String,
    conversation: Conversation,
}

impl AgUi {
    /// The dialect posting every run to `endpoint` (a path below the agent's URL).
    pub fn new(endpoint: String) -> AgUi {
        AgUi {
            endpoint,
            thread_id: String::new(),
            conversation: Conversation::default(),
        }
    }
}

#[async_trait::async_trait]
impl Dialect for AgUi {
    async fn begin(&mut self, _start: Begin<'_>) -> Result<(), DriverError> {
        self.thread_id = uuid::Uuid::new_v4().to_string();
        self.conversation = Conversation::default();
        Ok(())
    }

    fn run_request(&self, run: &RunContext<'_>) -> Result<RunRequest, DriverError> {
        let prompt = run.prompt;
        let run_id = uuid::Uuid::new_v4().to_string();
        let message_id = uuid::Uuid::new_v4().to_string();
        Ok(RunRequest {
            path: self.endpoint.clone(),
            body: self
                .conversation
                .run_input(&self.thread_id, &run_id, &message_id, prompt),
            headers: vec![("accept", "text/event-stream".to_owned())],
        })
    }

    fn read_run(&mut self, transcript: &RunTranscript) -> Result<(), DriverError> {
        let route = format!("POST {}", self.endpoint);
        let sent = transcript.request.get("messages").and_then(Value::as_array);
        if let Some(prompt) = sent.and_then(|messages| messages.last()) {
            self.conversation.add_message(prompt);
        }
        // A RUN_ERROR ends the run without failing the drive: the framing rule judges it (a
        // fixture may record the model error it stands for). So does a frame out of order or of
        // an unknown type: the events before it stay applied, as in `HttpAgent` (whose run then
        // errors), and the verdict names the frame beside the golden's diff. What the framing
        // rule cannot see, a patch that does not apply or a delta for an unknown id, fails here.
        let frames = || transcript.events.iter().map(|event| event.json());
        match self.conversation.apply_run(frames()) {
            Ok(_) => Ok(()),
            Err(_) if client::verify_run(frames()).is_err() => Ok(()),
            Err(problem) => Err(DriverError::Unexpected {
                route,
                message: format!("an AG-UI client cannot read the stream: {problem}"),
            }),
        }
    }

    fn history(&self) -> Option<Value> {
        Some(serde_json::json!({
            "messages": self.conversation.messages,
            "state": self.conversation.state,
        }))
    }
}

/// What breaks the framing of one run, read as an AG-UI client reads it
/// ([`client::verify_run`]); a `RUN_ERROR` breaks it unless the fixture records a model error.
pub(super) fn run_problem(
    transcript: &RunTranscript,
    model_error_recorded: bool,
) -> Option<FramingProblem> {
    let verified = client::verify_run(transcript.events.iter().map(|event| event.json()));
    let problem = match verified {
        Ok(RunEnd::Finished) => return None,
        Ok(RunEnd::Error(_)) if model_error_recorded => return None,
        Ok(RunEnd::Error(error)) => error,
        Err(problem) => problem,
    };
    Some(framing_problem(problem))
}

/// An AG-UI problem as the verdict's framing problem.
fn framing_problem(problem: AgUiProblem) -> FramingProblem {
    match problem {
        AgUiProblem::FirstNotRunStarted { first } => FramingProblem::First {
            expected: "RUN_STARTED".into(),
            got: first,
        },
        AgUiProblem::NotFinished { last } => FramingProblem::Last {
            expected: "RUN_FINISHED or RUN_ERROR".into(),
            got: last,
        },
        AgUiProblem::OutOfOrder {
            frame,
            name,
            reason,
        } => FramingProblem::OutOfOrder {
            position: frame,
            frame: name,
            expected: reason,
        },
        AgUiProblem::RunError { message, code, .. } => FramingProblem::ErrorFrame {
            frame: "RUN_ERROR".into(),
            data: first_chars(
                &match code {
                    Some(code) => format!("({code}) {message}"),
                    None => message,
                },
                300,
            )
            .to_owned(),
        },
        other => FramingProblem::Invalid {
            problem: other.to_string(),
        },
    }
}

/// A run's frames as shapes named by their JSON `type`, unreduced, each with its delta id
/// ([`super::Api::golden_shapes`] reduces the delta runs).
pub(super) fn named(transcript: &RunTranscript) -> Vec<(Shape, Option<String>)> {
    transcript
        .frames()
        .map(|(event, raw, data)| {
            let shape = named_frame_shape(FrameName::JsonType, Some(event), raw, data);
            let id = delta_id(&shape, data, &DELTAS);
            (shape, id)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::{Api, StreamModes};
    use replay_core::Scenario;
    use serde_json::json;

    use super::*;
    use crate::driver::transcript::SseEvent;

    use replay_core::Framing;

    /// The dialect's framing rule, as the runner applies it.
    fn framing(runs: &[RunTranscript], model_error_recorded: bool) -> Framing {
        Api::AgUi.framing(runs, model_error_recorded)
    }

    /// The golden's shapes of a run, delta runs reduced.
    fn golden_shapes(transcript: &RunTranscript) -> Vec<Shape> {
        Api::AgUi.golden_shapes(transcript)
    }

    /// Each frame's shape, unreduced.
    fn frame_shapes(transcript: &RunTranscript) -> Vec<Shape> {
        Api::AgUi.frame_shapes(transcript)
    }

    /// A run as the example agent streams it (Pydantic AI's adapter): `deltas` splits the answer.
    fn tool_loop(deltas: &[&str]) -> Vec<Value> {
        let mut events = vec![
            json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
            json!({"type": "TEXT_MESSAGE_START", "messageId": "a1", "role": "assistant"}),
            json!({"type": "TEXT_MESSAGE_END", "messageId": "a1"}),
            json!({"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "add_item", "parentMessageId": "a1"}),
            json!({"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{\"item\": \"milk\"}"}),
            json!({"type": "TOOL_CALL_END", "toolCallId": "c1"}),
            json!({"type": "TOOL_CALL_RESULT", "messageId": "t1", "toolCallId": "c1", "content": "Added milk.", "role": "tool"}),
            json!({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/items", "value": ["milk"]}]}),
            json!({"type": "TEXT_MESSAGE_START", "messageId": "a2", "role": "assistant"}),
        ];
        for delta in deltas {
            events.push(json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "a2", "delta": delta}));
        }
        events.push(json!({"type": "TEXT_MESSAGE_END", "messageId": "a2"}));
        events.push(json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}));
        events
    }

    fn transcript(request: Value, events: &[Value]) -> RunTranscript {
        RunTranscript {
            request,
            events: events
                .iter()
                .map(|event| SseEvent::new("message".into(), event.to_string(), None))
                .collect(),
            modes: StreamModes::Values,
            api: Api::AgUi,
            headers: Vec::new(),
            history: None,
        }
    }

    fn scenario() -> Scenario {
        let mode: replay_core::Mode = "chat".parse().unwrap();
        Scenario::new("shopping", mode, "Put 'milk' on my list.")
    }

    /// The first run read, the follow-up's request built, as the session does.
    fn follow_up_after(events: &[Value]) -> Result<RunRequest, DriverError> {
        let mut dialect = AgUi::new("/".into());
        dialect.thread_id = "thread".into();
        let scenario = scenario();
        let first =
            dialect.run_request(&RunContext::values(&scenario, "Put 'milk' on my list."))?;
        dialect.read_run(&transcript(first.body, events))?;
        dialect.run_request(&RunContext::values(&scenario, "Add 'eggs' too."))
    }

    #[test]
    fn a_run_is_posted_as_a_run_agent_input_accepting_an_event_stream() {
        let dialect = AgUi::new("/agent".into());
        let request = dialect
            .run_request(&RunContext::values(&scenario(), "hi"))
            .unwrap();
        assert_eq!(request.path, "/agent");
        assert_eq!(
            request.headers,
            [("accept", "text/event-stream".to_owned())]
        );
        let mut keys: Vec<&str> = request
            .body
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "context",
                "forwardedProps",
                "messages",
                "runId",
                "state",
                "threadId",
                "tools"
            ]
        );
        assert_eq!(request.body["messages"][0]["content"], "hi");
    }

    /// The follow-up keeps the thread, takes a new run id, and carries the prompt, the tool call,
    /// its result, the answer and the patched state.
    #[test]
    fn a_follow_up_carries_the_tool_call_its_result_and_the_state() {
        let first = {
            let dialect = AgUi::new("/".into());
            dialect
                .run_request(&RunContext::values(&scenario(), "x"))
                .unwrap()
        };
        let request = follow_up_after(&tool_loop(&["Done."])).unwrap();
        assert_eq!(request.body["threadId"], "thread");
        assert_ne!(request.body["runId"], first.body["runId"]);
        assert_eq!(request.body["state"], json!({"items": ["milk"]}));
        let messages = request.body["messages"].as_array().unwrap();
        let summary: Vec<String> = messages
            .iter()
            .map(|m| match m["role"].as_str().unwrap() {
                "assistant" if m.get("toolCalls").is_some() => {
                    format!("assistant calls {}", m["toolCalls"][0]["function"]["name"])
                }
                "tool" => format!("tool answers {}", m["toolCallId"]),
                role => format!("{role}: {}", m["content"]),
            })
            .collect();
        assert_eq!(
            summary,
            [
                "user: \"Put 'milk' on my list.\"",
                "assistant calls \"add_item\"",
                "tool answers \"c1\"",
                "assistant: \"Done.\"",
                "user: \"Add 'eggs' too.\"",
            ]
        );
    }

    /// A server whose `MESSAGES_SNAPSHOT` loses the tool call and its result makes the follow-up
    /// lose them too, as `HttpAgent`'s does: the model then sees another conversation, and the
    /// replay misses instead of passing.
    #[test]
    fn a_history_that_lost_the_tool_call_is_carried_as_lost() {
        let mut events = tool_loop(&["Done."]);
        let finished = events.pop().unwrap();
        events.push(json!({"type": "MESSAGES_SNAPSHOT", "messages": [
            {"id": "a2", "role": "assistant", "content": "Done."}]}));
        events.push(finished);
        let request = follow_up_after(&events).unwrap();
        let roles: Vec<&str> = request.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["assistant", "user"]);
    }

    #[test]
    fn a_stream_no_client_can_read_fails_the_drive_naming_the_frame() {
        let mut events = tool_loop(&["Done."]);
        events[7] = json!({"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/nope/0", "value": 1}]});
        let error = follow_up_after(&events).unwrap_err().to_string();
        assert!(
            error.contains("frame 7: STATE_DELTA: the patch does not apply"),
            "{error}"
        );
    }

    /// A frame the framing rule reports does not stop the drive: the follow-up is still sent
    /// (the verdict then names the frame beside the golden's diff).
    #[test]
    fn a_framing_drift_is_left_to_the_verdict() {
        let mut events = tool_loop(&["Done."]);
        events[6]["type"] = json!("TOOL_CALL_OUTPUT");
        let request = follow_up_after(&events).expect("the drive goes on");
        let roles: Vec<&str> = request.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(
            roles,
            ["user", "assistant", "user"],
            "applied up to the renamed frame"
        );
    }

    /// Each framing drift of the issue, over a canned transcript, and what the verdict says.
    #[test]
    fn framing_drifts_are_violations() {
        let content_before_start = {
            let mut events = tool_loop(&["Done."]);
            events.swap(8, 9);
            events
        };
        let renamed = {
            let mut events = tool_loop(&["Done."]);
            events[6]["type"] = json!("TOOL_CALL_OUTPUT");
            events
        };
        let unfinished = {
            let mut events = tool_loop(&["Done."]);
            events.pop();
            events
        };
        let errored = vec![
            json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
            json!({"type": "RUN_ERROR", "message": "boom"}),
        ];
        let cases: Vec<(&str, Vec<Value>, bool, &str)> = vec![
            ("as recorded", tool_loop(&["Done."]), false, "ok"),
            (
                "a renamed event type",
                renamed,
                false,
                "`TOOL_CALL_OUTPUT` is not an AG-UI event type",
            ),
            (
                "a dropped RUN_FINISHED",
                unfinished,
                false,
                "expected RUN_FINISHED or RUN_ERROR",
            ),
            (
                "TEXT_MESSAGE_CONTENT before START",
                content_before_start,
                false,
                "no active text message",
            ),
            (
                "RUN_ERROR not recorded",
                errored.clone(),
                false,
                "\"RUN_ERROR\" frame",
            ),
            ("RUN_ERROR recorded", errored, true, "ok"),
        ];
        for (drift, events, model_error_recorded, expected) in cases {
            let runs = [transcript(json!({}), &events)];
            let framing = framing(&runs, model_error_recorded);
            let said = match &framing {
                Framing::Ok => "ok".to_owned(),
                Framing::Violated { problem, .. } => problem.to_string(),
            };
            assert!(
                said.contains(expected),
                "{drift}: {said:?} does not say {expected:?}"
            );
        }
    }

    /// However the answer was chunked, the golden is the same; a renamed event changes it.
    #[test]
    fn delta_runs_reduce_so_chunk_boundaries_keep_the_golden() {
        let shapes = |deltas: &[&str]| golden_shapes(&transcript(json!({}), &tool_loop(deltas)));
        let one = shapes(&["Done."]);
        assert_eq!(one, shapes(&["Do", "ne", "."]));
        assert_eq!(
            frame_shapes(&transcript(json!({}), &tool_loop(&["Do", "ne."]))).len(),
            one.len() + 1
        );
        let names: Vec<&str> = one.iter().map(|s| s.event.as_deref().unwrap()).collect();
        assert_eq!(names[0], "RUN_STARTED");
        assert_eq!(names[names.len() - 1], "RUN_FINISHED");
        let mut renamed = tool_loop(&["Done."]);
        renamed[7]["type"] = json!("STATE_SNAPSHOT");
        assert_ne!(golden_shapes(&transcript(json!({}), &renamed)), one);
    }
}
