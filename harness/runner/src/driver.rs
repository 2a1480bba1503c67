//! The wire driver: drives a gateway over HTTP with reqwest and eventsource-stream. It knows no
//! gateway types, only the wire contract of an API dialect ([`Dialect`]), one file each:
//! DeerFlow's ([`deerflow`]: register → CSRF cookie → thread → `runs/stream` below `/api`, the
//! way its frontend does), LangGraph's own API server's ([`langgraph`]: no session, an optional
//! static auth header, `POST /assistants/search`, threads and `runs/stream` at the root), and the
//! dialects whose frames name themselves in their JSON (`docs/testing-your-own-gateway.md`, "The
//! dialects"): a dialect owns its routes, its run request, what a follow-up carries
//! ([`Dialect::read_run`]), and in its [`Protocol`] its default paths, its framing rule and how
//! its stream reduces to shapes. A new dialect is one more file implementing [`Dialect`] and
//! declaring its `PROTOCOL`, and one [`Api`] variant.
//!
//! This file dispatches an [`Api`] to its dialect's file and drives a [`Session`]; what the
//! dialect files share lives in child modules, so none of them imports this file (a tidy test,
//! `no_child_module_imports_its_parent_in_the_model_server_and_the_driver`, holds it): `api` (the
//! dialect and stream-mode names), `error` ([`DriverError`]), `http` ([`HttpClient`], the bounded
//! reads of a page answer and of a run's event stream), `dialect` (the [`Dialect`] trait and
//! what a dialect is handed), and `transcript` ([`RunTranscript`]).

pub mod ag_ui;
pub mod ai_sdk;
mod api;
pub mod deerflow;
mod dialect;
mod error;
mod http;
pub mod langgraph;
pub mod openai_chat;
pub mod openai_responses;
mod parsed_size;
pub mod schema_enums;
pub mod transcript;

use std::collections::BTreeMap;

use replay_core::{Framing, Scenario, Shape, Turn};

use crate::ignored::IgnoredEvents;

pub use api::{Api, StreamModes, UnknownApi};
pub use dialect::{Begin, Dialect, Protocol, RunContext};
pub use error::DriverError;
pub use http::{AuthHeader, AuthHeaderError, Exchange, HttpClient};
pub use transcript::{RunTranscript, SseEvent};

impl Api {
    /// What the dialect knows of its protocol, declared in its own file.
    pub fn protocol(self) -> &'static Protocol {
        match self {
            Api::Deerflow => &deerflow::PROTOCOL,
            Api::Langgraph => &langgraph::PROTOCOL,
            Api::AiSdk => &ai_sdk::PROTOCOL,
            Api::AgUi => &ag_ui::PROTOCOL,
            Api::OpenaiResponses => &openai_responses::PROTOCOL,
            Api::OpenaiChat => &openai_chat::PROTOCOL,
        }
    }

    /// The prefix of the dialect's routes when none is configured.
    pub fn default_base_path(self) -> &'static str {
        self.protocol().base_path
    }

    /// The path that answers 2xx once the gateway is ready, when none is configured.
    pub fn default_ready_path(self) -> &'static str {
        self.protocol().ready_path
    }

    /// The route a run is posted to, below the base path, when no `--endpoint` is configured
    /// (`None`: the dialect's runs stream below its threads).
    pub fn default_endpoint(self) -> Option<&'static str> {
        self.protocol().endpoint
    }

    /// Whether a fixture's mode is one of DeerFlow's UI modes with the run context it implies
    /// (DeerFlow's dialect), or only a label (every other dialect, e.g. `chat`).
    pub fn has_ui_modes(self) -> bool {
        self.protocol().ui_modes
    }

    /// The framing of `runs` under the dialect's rule; `model_error_recorded` says whether the
    /// fixture records a failed model call (whose error frame the golden then holds).
    pub fn framing(self, runs: &[RunTranscript], model_error_recorded: bool) -> Framing {
        (self.protocol().framing)(runs, model_error_recorded)
    }

    /// The shapes a run's golden holds in this dialect: for DeerFlow and LangGraph, by the
    /// stream modes the run asked for (every frame's shape for `values`, the web reduction for
    /// the web client's modes); a dialect whose frames name themselves reduces its delta runs
    /// ([`replay_core::delta_run_shapes`]).
    pub fn golden_shapes(self, transcript: &RunTranscript) -> Vec<Shape> {
        self.golden_shapes_without(transcript, &IgnoredEvents::default())
    }

    /// [`Api::golden_shapes`] with the frames of the `ignored` types left out before the
    /// reduction (so a `RAW` frame between two deltas of one message no longer splits their run).
    pub fn golden_shapes_without(
        self,
        transcript: &RunTranscript,
        ignored: &IgnoredEvents,
    ) -> Vec<Shape> {
        match (self.protocol().named, transcript.modes) {
            (Some(named), _) => {
                let mut named = named(transcript);
                named.retain(|(shape, _)| !ignored.contains(shape.event.as_deref()));
                replay_core::delta_run_shapes(named)
            }
            (None, StreamModes::Values) => (transcript.shapes().into_iter())
                .filter(|shape| !ignored.contains(shape.event.as_deref()))
                .collect(),
            (None, StreamModes::Web) => transcript.web_shapes_without(ignored),
        }
    }

    /// Each frame's shape, unreduced, named as the dialect names its frames (for reports).
    pub fn frame_shapes(self, transcript: &RunTranscript) -> Vec<Shape> {
        match self.protocol().named {
            Some(named) => named(transcript)
                .into_iter()
                .map(|(shape, _)| shape)
                .collect(),
            None => transcript.shapes(),
        }
    }
}
impl StreamModes {
    /// The `stream_mode` list of the run request.
    pub fn modes(self) -> &'static [&'static str] {
        match self {
            StreamModes::Values => &["values"],
            StreamModes::Web => &deerflow::WEB_STREAM_MODES,
        }
    }
}
/// How a session drives a gateway: the dialect, its routes' prefix, its endpoint, the
/// assistant, the auth header and the stream modes (`keyless test --api …`, `keyless.toml`'s
/// keys).
#[derive(Debug, Clone, Default)]
pub struct DriveOptions {
    /// The API dialect.
    pub api: Api,
    /// The prefix of the dialect's routes [default: [`Api::default_base_path`]].
    pub base_path: Option<String>,
    /// The route runs are posted to, below the base path, for a dialect with one endpoint
    /// [default: [`Api::default_endpoint`]].
    pub endpoint: Option<String>,
    /// LangGraph: the assistant (or graph id) every run goes to [default: the only graph the
    /// server lists].
    pub assistant: Option<String>,
    /// LangGraph: the assistant of each scenario id, over `assistant`.
    pub assistants: BTreeMap<String, String>,
    /// A static auth header for every request.
    pub auth: Option<AuthHeader>,
    /// The stream modes of every run.
    pub stream_modes: StreamModes,
}

impl DriveOptions {
    /// The prefix of the dialect's routes, without a trailing `/` (`""` for the root).
    pub fn base_path(&self) -> String {
        let path = self
            .base_path
            .as_deref()
            .unwrap_or(self.api.default_base_path());
        route_path(path)
    }

    /// The path runs are posted to: the base path, then the endpoint (configured, else the
    /// dialect's); `/` when both are the root. `None` for a dialect without one endpoint.
    pub fn endpoint(&self) -> Option<String> {
        let endpoint = self.endpoint.as_deref().or(self.api.default_endpoint())?;
        match format!("{}{}", self.base_path(), route_path(endpoint)) {
            path if path.is_empty() => Some("/".to_owned()),
            path => Some(path),
        }
    }
}

/// `path` with a leading `/` and no trailing one (`""` for the root).
fn route_path(path: &str) -> String {
    match path.trim_end_matches('/') {
        "" => String::new(),
        path if path.starts_with('/') => path.to_owned(),
        path => format!("/{path}"),
    }
}
/// A driver opened in a dialect: runs a scenario's prompt and follow-ups in one conversation.
#[derive(Debug)]
pub struct Session {
    client: HttpClient,
    api: Api,
    dialect: Box<dyn Dialect>,
    modes: StreamModes,
}

impl Session {
    /// Opens a session on the gateway at `url` as `options` say.
    pub async fn open(url: &str, options: &DriveOptions) -> Result<Session, DriverError> {
        let mut client = HttpClient::new(url)?;
        client.auth = options.auth.clone();
        let base = options.base_path();
        let mut dialect: Box<dyn Dialect> = match options.api {
            Api::Deerflow => Box::new(deerflow::DeerFlow::new(base)),
            Api::Langgraph => Box::new(langgraph::LangGraph::new(
                base,
                options.assistant.clone(),
                options.assistants.clone(),
            )),
            Api::AiSdk => Box::new(ai_sdk::AiSdk::new(endpoint(options)?)),
            Api::OpenaiResponses => {
                Box::new(openai_responses::OpenaiResponses::new(endpoint(options)?))
            }
            Api::OpenaiChat => Box::new(openai_chat::OpenaiChat::new(endpoint(options)?)),
            Api::AgUi => Box::new(ag_ui::AgUi::new(endpoint(options)?)),
        };
        dialect.open(&mut client).await?;
        Ok(Session {
            client,
            api: options.api,
            dialect,
            modes: options.stream_modes,
        })
    }

    /// Starts a conversation and streams the scenario's prompt and each follow-up in it, one run
    /// after another, each run read into the conversation before the next; `recorded` is the
    /// fixture's turns (none while recording).
    pub async fn run_scenario(
        &mut self,
        scenario: &Scenario,
        recorded: &[Turn],
    ) -> Result<Vec<RunTranscript>, DriverError> {
        self.begin(scenario).await?;
        self.runs(scenario, recorded).await
    }

    /// The first half of [`Session::run_scenario`]: starts the conversation (a dialect's thread),
    /// sending no run yet.
    pub async fn begin(&mut self, scenario: &Scenario) -> Result<(), DriverError> {
        let start = Begin {
            client: &self.client,
            scenario,
        };
        self.dialect.begin(start).await
    }

    /// The second half of [`Session::run_scenario`]: the runs, in the conversation
    /// [`Session::begin`] started.
    pub async fn runs(
        &mut self,
        scenario: &Scenario,
        recorded: &[Turn],
    ) -> Result<Vec<RunTranscript>, DriverError> {
        let mut transcripts = Vec::new();
        for prompt in scenario.prompts() {
            let run = RunContext {
                scenario,
                prompt,
                recorded,
                modes: self.modes,
            };
            let request = self.dialect.run_request(&run)?;
            let mut transcript = self.client.stream(request, self.modes, self.api).await?;
            self.dialect.read_run(&transcript)?;
            transcript.history = self.dialect.history();
            transcripts.push(transcript);
        }
        Ok(transcripts)
    }
}
/// The path a dialect with one endpoint posts its runs to.
fn endpoint(options: &DriveOptions) -> Result<String, DriverError> {
    options
        .endpoint()
        .ok_or(DriverError::Unsupported { api: options.api })
}
#[cfg(test)]
mod tests {
    use std::time::Duration;

    use replay_core::FramingProblem;
    use serde_json::{Value, json};

    use super::http::{EXCERPT_CHARS, MAX_FRAME_BYTES, RunRequest};
    use super::*;

    fn transcript(events: &[&str], api: Api) -> RunTranscript {
        RunTranscript {
            request: Value::Null,
            events: (events.iter())
                .map(|event| {
                    SseEvent::new(
                        (*event).to_owned(),
                        r#"{"error":"APIConnectionError","message":"boom"}"#.to_owned(),
                        None,
                    )
                })
                .collect(),
            modes: StreamModes::Values,
            api,
            headers: Vec::new(),
            history: None,
        }
    }

    /// (case, rule, each run's events, the fixture records a model error, expected framing)
    type Case<'a> = (&'a str, Api, &'a [&'a [&'a str]], bool, Framing);

    #[test]
    fn each_dialects_framing_rule_fails_what_it_must() {
        use Api::{Deerflow as End, Langgraph as Close};
        let violated = |run, problem| Framing::Violated { run, problem };
        let first = |got: Option<&str>| FramingProblem::First {
            expected: "\"metadata\"".into(),
            got: got.map(str::to_owned),
        };
        let error = r#"{"error":"APIConnectionError","message":"boom"}"#.to_owned();
        let cases: [Case; 7] = [
            (
                "deerflow framed",
                End,
                &[&["metadata", "values", "end"]],
                false,
                Framing::Ok,
            ),
            (
                "deerflow without end",
                End,
                &[&["metadata", "values"]],
                false,
                violated(
                    0,
                    FramingProblem::Last {
                        expected: "\"end\"".into(),
                        got: Some("values".into()),
                    },
                ),
            ),
            (
                "langgraph closes without end",
                Close,
                &[&["metadata", "values"], &["metadata"]],
                false,
                Framing::Ok,
            ),
            (
                "langgraph follow-up without metadata",
                Close,
                &[&["metadata"], &["values"]],
                false,
                violated(1, first(Some("values"))),
            ),
            (
                "langgraph empty run",
                Close,
                &[&[]],
                false,
                violated(0, first(None)),
            ),
            (
                "langgraph error frame, no model error recorded",
                Close,
                &[&["metadata", "values", "error"]],
                false,
                violated(
                    0,
                    FramingProblem::ErrorFrame {
                        frame: "error".into(),
                        data: error,
                    },
                ),
            ),
            (
                "langgraph error frame of a recorded model error",
                Close,
                &[&["metadata", "values", "error"]],
                true,
                Framing::Ok,
            ),
        ];
        for (case, rule, runs, model_error, expected) in cases {
            let runs: Vec<RunTranscript> = runs.iter().map(|run| transcript(run, rule)).collect();
            assert_eq!(rule.framing(&runs, model_error), expected, "{case}");
        }
    }

    #[test]
    fn the_auth_header_value_is_read_from_the_environment_and_never_shown() {
        let header =
            AuthHeader::from_value("x-api-key", "MY_KEY", Some("sk-secret-1".into())).unwrap();
        let options = DriveOptions {
            auth: Some(header.clone()),
            ..DriveOptions::default()
        };
        let shown = format!("{header:?} {options:?}");
        assert!(
            !shown.contains("sk-secret-1") && shown.contains("x-api-key"),
            "{shown}"
        );
        // (case, name, value, the error names)
        let cases = [
            ("unset", "x-api-key", None, "set MY_KEY"),
            ("empty", "x-api-key", Some(" "), "set MY_KEY"),
            (
                "bad name",
                "x api key",
                Some("v"),
                "not a valid HTTP header name",
            ),
            (
                "bad value",
                "x-api-key",
                Some("a\nb"),
                "MY_KEY is not a valid header value",
            ),
        ];
        for (case, name, value, names) in cases {
            let err = AuthHeader::from_value(name, "MY_KEY", value.map(str::to_owned)).unwrap_err();
            assert!(err.to_string().contains(names), "{case}: {err}");
        }
    }

    #[test]
    fn the_base_path_defaults_to_the_dialects_and_is_normalised() {
        let cases = [
            (Api::Deerflow, None, "/api"),
            (Api::Langgraph, None, ""),
            (Api::Langgraph, Some("/"), ""),
            (Api::Langgraph, Some("agents/"), "/agents"),
            (Api::Deerflow, Some("/gw/api/"), "/gw/api"),
        ];
        for (api, base_path, expected) in cases {
            let options = DriveOptions {
                api,
                base_path: base_path.map(str::to_owned),
                ..DriveOptions::default()
            };
            assert_eq!(options.base_path(), expected, "{api:?} {base_path:?}");
        }
    }

    /// A server answering every request `status` with an endless body, written 1 MB at a time.
    async fn serve_endless(status: u16) -> String {
        let app = axum::Router::new().fallback(move || async move {
            let piece = axum::body::Bytes::from(vec![b'x'; 1024 * 1024]);
            let body = futures::stream::repeat_with(move || Ok::<_, std::io::Error>(piece.clone()));
            let status = axum::http::StatusCode::from_u16(status).unwrap();
            (status, axum::body::Body::from_stream(body))
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    }

    /// Issue 45, finding 3: an unexpected status's endless body is read to the excerpt's bound
    /// and dropped (it was read whole: 2 GB), and a page request's answer to its own bound; an
    /// answer within it whose parse would pass it is refused unparsed.
    #[tokio::test]
    async fn an_endless_error_body_or_page_answer_is_read_only_to_its_bound() {
        let url = serve_endless(500).await;
        let client = HttpClient::new(&url).unwrap();
        let deadline = Duration::from_secs(30);
        let sent = tokio::time::timeout(deadline, client.post_json("/t", &json!({}), 200)).await;
        match sent.expect("the error body was read within 30 s") {
            Err(DriverError::Status { status, body, .. }) => {
                assert_eq!(status, 500);
                assert_eq!(body.chars().count(), EXCERPT_CHARS, "the excerpt");
            }
            other => panic!("{other:?}"),
        }
        let page = client.exchange(reqwest::Method::GET, "/p", None);
        match tokio::time::timeout(deadline, page)
            .await
            .expect("read within 30 s")
        {
            Err(DriverError::Unexpected { route, message }) => {
                assert_eq!(route, "GET /p");
                assert!(message.contains("longer than"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        let zeros = format!("[{}0]", "0,".repeat(512 * 1024));
        let app = axum::Router::new().fallback(move || std::future::ready(zeros.clone()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let client = HttpClient::new(&url).unwrap();
        match client.exchange(reqwest::Method::GET, "/p", None).await {
            Err(DriverError::Unexpected { message, .. }) => {
                assert!(message.contains("as parsed JSON"), "{message}");
            }
            other => panic!("{:?}", other.map(|exchange| exchange.status)),
        }
    }

    /// A server whose `runs/stream` answers `metadata`, one `values` frame whose data is a JSON
    /// string of `size` bytes, and `end`, in 16 KiB pieces as a socket delivers them.
    async fn serve_one_frame(size: usize) -> String {
        let mut body = b"event: metadata\ndata: {}\n\nevent: values\ndata: \"".to_vec();
        body.resize(body.len() + size, b'x');
        body.extend_from_slice(b"\"\n\nevent: end\ndata: null\n\n");
        let pieces: Vec<Vec<u8>> = body.chunks(16 * 1024).map(<[u8]>::to_vec).collect();
        let app = axum::Router::new().route(
            "/t/runs/stream",
            axum::routing::post(move || {
                let pieces = pieces.clone();
                async move {
                    let pieces = pieces.into_iter().map(Ok::<_, std::io::Error>);
                    axum::body::Body::from_stream(futures::stream::iter(pieces))
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    }

    /// Issue 45, finding 4: frames of 1 MB of `[0,0,…]`, each within the byte bounds, are refused
    /// once their parse would pass the run's bound (each costs 43 MB parsed), naming the frame.
    #[tokio::test]
    async fn frames_whose_parse_passes_the_bound_are_refused_before_they_are_parsed() {
        let mut frame = br#"data: {"type":"data-x","data":["#.to_vec();
        frame.extend(b"0,".repeat(512 * 1024));
        frame.extend_from_slice(b"0]}\n\n");
        let body = frame.repeat(12);
        let app = axum::Router::new().route(
            "/chat",
            axum::routing::post(move || {
                let pieces: Vec<Vec<u8>> = body.chunks(64 * 1024).map(<[u8]>::to_vec).collect();
                let pieces = pieces.into_iter().map(Ok::<_, std::io::Error>);
                async move { axum::body::Body::from_stream(futures::stream::iter(pieces)) }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let request = RunRequest {
            path: "/chat".to_owned(),
            body: json!({}),
            headers: Vec::new(),
        };
        let client = HttpClient::new(&url).unwrap();
        let read = client
            .stream(request, StreamModes::Values, Api::Deerflow)
            .await;
        match read {
            Err(error @ DriverError::ParsedTooLarge { frame: 4, .. }) => {
                assert!(error.to_string().contains("past 160 MiB"), "{error}");
            }
            other => panic!("{:?}", other.map(|transcript| transcript.events.len())),
        }
    }

    /// Reads the one-frame stream of `size` bytes, and how long that took.
    async fn read_one_frame(size: usize) -> (Result<RunTranscript, DriverError>, Duration) {
        let url = serve_one_frame(size).await;
        let client = HttpClient::new(&url).unwrap();
        let started = std::time::Instant::now();
        let request = RunRequest {
            path: "/t/runs/stream".to_owned(),
            body: json!({"stream_mode": ["values"]}),
            headers: Vec::new(),
        };
        let read = client
            .stream(request, StreamModes::Values, Api::Deerflow)
            .await;
        (read, started.elapsed())
    }

    /// Issue 34, finding 10: a long frame is read in one linear pass, and a frame past the
    /// bound is an error naming it. Before the fix a 16 MiB frame took minutes, in one poll a
    /// timer cannot interrupt: the read runs on a thread of its own, and the test gives up on
    /// it after a deadline.
    #[test]
    fn a_long_frame_is_read_linearly_and_one_past_the_bound_is_named() {
        // (size of the frame's data, the frames read or the frame named)
        let cases = [(1024 * 1024, Ok(3)), (MAX_FRAME_BYTES + 1, Err(1))];
        for (size, expected) in cases {
            let (sender, receiver) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .unwrap();
                let _ = sender.send(runtime.block_on(read_one_frame(size)));
            });
            let (read, took) = receiver
                .recv_timeout(Duration::from_secs(120))
                .unwrap_or_else(|_| panic!("a {size}-byte frame was not read within 120 s"));
            match (read, expected) {
                (Ok(transcript), Ok(frames)) => assert_eq!(transcript.events.len(), frames),
                (Err(DriverError::FrameTooLong { frame, route, .. }), Err(named)) => {
                    assert_eq!(frame, named, "{size}");
                    assert!(route.ends_with("/t/runs/stream"), "{route}");
                }
                (read, _) => panic!("{size}: {read:?}"),
            }
            eprintln!("a {size}-byte frame: {took:?}");
        }
    }

    /// Issue 45, finding 11: lines end as each protocol's client ends them. An AG-UI stream
    /// framed with CRLF or CR fails the drive (`@ag-ui/client` splits at LF only), where the same
    /// stream is read whole as the AI SDK's (`eventsource-parser` takes any SSE line end).
    #[tokio::test]
    async fn an_ag_ui_stream_with_a_cr_fails_and_another_dialect_reads_it() {
        let run = r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#;
        let finished = r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r"}"#;
        for (line_end, rule, read) in [
            ("\n", Api::AgUi, true),
            ("\r\n", Api::AgUi, false),
            ("\r", Api::AgUi, false),
            ("\r", Api::AiSdk, true),
        ] {
            let body =
                format!("data: {run}{line_end}{line_end}data: {finished}{line_end}{line_end}");
            let app = axum::Router::new().route("/", axum::routing::post(move || async { body }));
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}", listener.local_addr().unwrap());
            tokio::spawn(async move { axum::serve(listener, app).await });
            let client = HttpClient::new(&url).unwrap();
            let request = RunRequest {
                path: "/".to_owned(),
                body: json!({}),
                headers: Vec::new(),
            };
            let result = client.stream(request, StreamModes::Values, rule).await;
            match (result, read) {
                (Ok(transcript), true) => assert_eq!(transcript.events.len(), 2, "{line_end:?}"),
                (Err(DriverError::Stream { message, .. }), false) => {
                    assert!(message.contains("@ag-ui/client splits"), "{message}")
                }
                (other, _) => panic!("{line_end:?} {rule:?}: {other:?}"),
            }
        }
    }
}
