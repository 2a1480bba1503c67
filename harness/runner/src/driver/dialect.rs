//! What a dialect file implements and is handed: the [`Dialect`] trait, what a conversation
//! starts from ([`Begin`]), what a run's request is built from ([`RunContext`]) and is
//! ([`RunRequest`]), and the [`Protocol`] each dialect declares in its file (its default paths,
//! framing rule and frame names), with [`first_violation`] for framing rules run by run.

use std::fmt;

use serde_json::Value;

use replay_core::{Framing, FramingProblem, Scenario, Shape, Turn};

use super::api::StreamModes;
use super::error::DriverError;
use super::http::{HttpClient, RunRequest};
use super::transcript::RunTranscript;

/// What a dialect knows of its protocol (`docs/testing-your-own-gateway.md`, "The dialects";
/// `docs/golden-format.md` §10), declared in its own file as `<dialect>::PROTOCOL`: its default
/// routes, its framing rule and how its frames name themselves. A transcript keeps its run's
/// [`Api`](super::Api), so a verdict reads it after the session is gone.
#[derive(Debug)]
pub struct Protocol {
    /// The prefix of the routes when none is configured.
    pub base_path: &'static str,
    /// The path that answers 2xx once the gateway is ready, when none is configured.
    pub ready_path: &'static str,
    /// The route a run is posted to, below the base path, when none is configured (`None`: the
    /// runs stream below a thread).
    pub endpoint: Option<&'static str>,
    /// Whether a fixture's mode is one of DeerFlow's UI modes, not only a label.
    pub ui_modes: bool,
    /// The response headers the framing rule reads (lowercase names).
    pub headers: &'static [&'static str],
    /// Whether the protocol's client reads LF line ends only (AG-UI's), so a CR is refused.
    pub lf_only: bool,
    /// The framing of a conversation's runs; the flag says whether the fixture records a model
    /// error.
    pub framing: fn(&[RunTranscript], bool) -> Framing,
    /// A self-naming dialect's frames as shapes, each with the id of the delta run it belongs
    /// to (`None`: the shapes come from the stream modes, DeerFlow's and LangGraph's).
    pub named: Option<fn(&RunTranscript) -> NamedFrames>,
}

/// A self-naming dialect's frames as shapes, each with the id of the delta run it belongs to.
pub type NamedFrames = Vec<(Shape, Option<String>)>;

/// The first run `problem` finds broken, naming it; [`Framing::Ok`] when none is.
pub(crate) fn first_violation(
    runs: &[RunTranscript],
    problem: impl Fn(&RunTranscript) -> Option<FramingProblem>,
) -> Framing {
    (runs.iter().enumerate())
        .find_map(|(run, transcript)| {
            Some(Framing::Violated {
                run,
                problem: problem(transcript)?,
            })
        })
        .unwrap_or(Framing::Ok)
}
/// One API dialect: how a session opens, how a conversation starts, what each run's request
/// holds, what a finished run leaves for the next one, and how its stream is framed.
/// [`DeerFlow`](super::deerflow::DeerFlow) and [`LangGraph`](super::langgraph::LangGraph) start a thread and post to its
/// `runs/stream`; a dialect with one JSON endpoint per turn (the AI SDK's chat route, AG-UI, an
/// OpenAI-style endpoint) starts nothing on the server, keeps the conversation itself and sends
/// it back with each follow-up, built from the streams it read ([`Dialect::read_run`]).
/// [`Session`](super::Session) drives any of them; a dialect value drives one conversation at a time.
#[async_trait::async_trait]
pub trait Dialect: fmt::Debug + Send + Sync {
    /// Opens the session before the first conversation (DeerFlow registers; LangGraph lists its
    /// assistants when none is configured).
    async fn open(&mut self, client: &mut HttpClient) -> Result<(), DriverError> {
        let _ = client;
        Ok(())
    }

    /// Starts `scenario`'s conversation, forgetting the last one's (DeerFlow and LangGraph create
    /// a thread; a dialect without threads mints its ids and empties its history).
    async fn begin(&mut self, start: Begin<'_>) -> Result<(), DriverError>;

    /// The request of the run's prompt in the conversation begun.
    fn run_request(&self, run: &RunContext<'_>) -> Result<RunRequest, DriverError>;

    /// Reads a finished run into the conversation, as the dialect's client does before the next
    /// prompt (the AI SDK's assistant message assembled from the stream, AG-UI's messages and
    /// state). Fails, naming the frame, where that client would fail to read the stream.
    fn read_run(&mut self, transcript: &RunTranscript) -> Result<(), DriverError> {
        let _ = transcript;
        Ok(())
    }

    /// The conversation as the dialect's client holds it after the runs read so far (the UI
    /// messages the next request carries), for a cross-check against the protocol's own
    /// client; `None` for a dialect whose server keeps the conversation.
    fn history(&self) -> Option<Value> {
        None
    }
}

/// What a conversation starts from: the session's HTTP side (for a dialect that creates a
/// thread) and the scenario (for one that takes its model from it).
#[derive(Debug, Clone, Copy)]
pub struct Begin<'a> {
    /// The session's HTTP side.
    pub client: &'a HttpClient,
    /// The scenario the conversation drives.
    pub scenario: &'a Scenario,
}

/// What a run's request is built from, as the session hands it to its dialect.
#[derive(Debug, Clone, Copy)]
pub struct RunContext<'a> {
    /// The scenario the conversation drives.
    pub scenario: &'a Scenario,
    /// This run's prompt (the scenario's, then each follow-up).
    pub prompt: &'a str,
    /// The fixture's turns (none while recording).
    pub recorded: &'a [Turn],
    /// The stream modes of the run.
    pub modes: StreamModes,
}

#[cfg(test)]
impl<'a> RunContext<'a> {
    /// A run of `prompt` in `scenario`, nothing recorded, in the `values` mode.
    pub(crate) fn values(scenario: &'a Scenario, prompt: &'a str) -> RunContext<'a> {
        RunContext {
            scenario,
            prompt,
            recorded: &[],
            modes: StreamModes::Values,
        }
    }
}
