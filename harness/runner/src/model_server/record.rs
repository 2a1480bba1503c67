//! Record mode: a proxy between the gateway and a real endpoint of the wire the gateway calls
//! (Chat Completions, Anthropic's Messages, OpenAI's Responses, Google's Gemini, AWS Bedrock's
//! Converse; `docs/recording-format.md` §17).
//! Each call's request (the wire view of `request.rs`, the wire named) and the upstream's
//! answer, as recording events, go to a versioned JSONL recording, redacted before they are written; the gateway gets the redacted
//! answer, so a live run continues on exactly the conversation its replay will produce. When the
//! server stops, the fixture is built from the calls recorded, as the sink wrote them and keeps
//! them in memory (`RecordingSink::open_remembering`): the file is not read back.
//!
//! A streamed answer is passed on chunk by chunk as it arrives (each event written before it is
//! sent); the recording keeps the upstream's chunk boundaries, tool-call arguments split mid-JSON
//! included (at the Messages and Responses wires the upstream's SSE events are passed on as they
//! come; at Gemini's, each chunk, in the framing the gateway asked for; at Converse's, each
//! event-stream message framed again with its CRCs, and a corrupt frame from the upstream is
//! refused, the call failing with an error naming the frame). The API key lives in memory only:
//! it is sent in the wire's key header (`Authorization`, Anthropic's `x-api-key`, Gemini's
//! `x-goog-api-key`) and nowhere else, and neither `Debug` nor any error shows it. A Bedrock
//! request is signed with SigV4 (`aws-sigv4`) from the [`AwsCredentials`] of the standard AWS
//! variables; the gateway's own key or signature is never passed on, and no header is written
//! to the recording. Every read of the upstream is bounded (issue 21, finding 4: answer, error body
//! and SSE line caps through `transport`), and a gateway that stops reading stops the read.
//!
//! The caller of each call is the [`CALLER_HEADER`](super::CALLER_HEADER) when the gateway sends
//! it, else `lead_agent`: nothing else on the wire names it. A fixture recorded from a gateway
//! that does not send it replays over the wire (where every call's caller is then `lead_agent`
//! again), but in-process only for lead-agent calls.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::HeaderMap;

use eventsource_stream::{EventStreamError, Eventsource};
use futures::StreamExt;
use model_wire::chat_completions::{Answer, Identity};
use parking_lot::Mutex;
use replay_core::recording::{
    CallWriter, EventError, KnownSecrets, Outcome, RecordedCall, RecordedEvent, RecordingSink,
    redact_text,
};
use replay_core::{
    DEFAULT_CALLER, Provenance, Scenario, StreamVocabulary, build_fixture_from_calls,
};
use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;
use tokio::sync::mpsc;
use transport::LineTooLong;

use super::answer::{self, WireError};
use super::assemble::{StreamRecorder, events_from_completion};
use super::backend::Shared;
use super::backend::{Answered, Backend, Call, RecordedFixture, ResetDone, ResetRefused};
use super::client::ServerState;
use super::exchanges::{ExchangeRecorder, Exchanges};
use super::problems::Problem;
use super::reach::{ReachTally, with_causes};
use super::render::{StreamOut, stream_response};
use super::request::{Framing, Wire, WireRequest};
use super::shared::ModelServerError;
use super::upstream::{ModelUpstream, UpstreamSetup};
use super::wires::wire_error;
use transport::eventstream::{CorruptFrame, Frame, FrameReader};

/// What record mode needs.
pub struct RecordConfig {
    /// The upstream's OpenAI base URL, e.g. `https://api.openai.com/v1`.
    pub upstream: String,
    /// The upstream's API key. Kept in memory, sent only in the `Authorization` header; its
    /// `Debug` never shows it.
    pub api_key: SecretString,
    /// The recording to write (created with mode 0600; an existing one is appended to).
    pub recording: PathBuf,
    /// The scenario the gateway is driven through, for the fixture built at the end. An empty
    /// `model` is filled with the model the first request named.
    pub scenario: Scenario,
    /// Accept a plain `http://` upstream on a host other than this machine, where the key would
    /// cross the network in clear (refused otherwise; finding 17).
    pub allow_insecure_upstream: bool,
    /// The recording's bounds.
    pub limits: RecordLimits,
    /// The credentials Bedrock requests are signed with (`None`: a Bedrock call fails, saying
    /// which variables are missing).
    pub aws: Option<AwsCredentials>,
}

pub use aws_sign::AwsCredentials;

/// How much one recording may hold and how long one call may take (finding 16): an endless
/// upstream once wrote 29 MB in 60 s. Past either, the call ends as an error, recorded, and the
/// run has a `recording_limit` problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordLimits {
    /// The most bytes the recording file holds (every call's rows); the event that would pass
    /// it is replaced by the error that ends its call.
    pub max_bytes: u64,
    /// The longest one call may take, from its request to its last event.
    pub call_time_limit: Duration,
}

/// [`RecordLimits::max_bytes`] by default: 64 MiB, hundreds of times a long real session.
pub const DEFAULT_RECORDING_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// [`RecordLimits::call_time_limit`] by default: 10 minutes, past the slowest reasoning call.
pub const DEFAULT_CALL_TIME_LIMIT: Duration = Duration::from_secs(600);

impl Default for RecordLimits {
    fn default() -> RecordLimits {
        RecordLimits {
            max_bytes: DEFAULT_RECORDING_MAX_BYTES,
            call_time_limit: DEFAULT_CALL_TIME_LIMIT,
        }
    }
}

impl std::fmt::Debug for RecordConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordConfig")
            .field("upstream", &redact_text(&self.upstream))
            .field("api_key", &self.api_key)
            .field("recording", &self.recording)
            .field("scenario", &self.scenario.stem())
            .field("allow_insecure_upstream", &self.allow_insecure_upstream)
            .field("limits", &self.limits)
            .field("aws", &self.aws)
            .finish()
    }
}

/// The recording proxy.
pub(super) struct Recorder {
    /// The upstream's base URL, without a trailing `/`; each wire's path follows it.
    base: String,
    /// The upstream every wire's call (and every embeddings call) is sent to.
    upstream: Arc<ModelUpstream>,
    sink: RecordingSink,
    scenario: Scenario,
    calls: AtomicUsize,
    first_model: Mutex<Option<String>>,
    /// What every written event goes through.
    writing: Arc<Writing>,
    /// How long one call may take.
    call_time_limit: Duration,
    /// Which calls got an HTTP answer from the upstream (issue 48).
    reach: ReachTally,
    /// The event names and fields the upstream's answers used (issue 43: `keyless drift`).
    stream: Arc<Mutex<StreamVocabulary>>,
    /// Where the other boundaries' exchanges are written, through the same sink.
    exchanges: Arc<ExchangeRecorder>,
}

/// What each written event goes through: the patterns and the proxy's own key in every
/// encoding (finding 6), and the recording's byte budget (finding 16).
pub(super) struct Writing {
    secrets: KnownSecrets,
    /// The recording file, whose size is the budget's measure.
    path: PathBuf,
    max_bytes: u64,
}

impl Writing {
    /// `event` redacted, or the error event that ends the call when the recording is full; the
    /// reason when the redacted event no longer reads as one (redaction replaced a field).
    fn admit(&self, shared: &Shared, event: &RecordedEvent) -> Result<RecordedEvent, EventError> {
        let redacted = self.secrets.redact(&event.to_value());
        // The file as written so far (rows, requests and all) plus this event.
        let size = redacted.to_string().len() as u64;
        let written = std::fs::metadata(&self.path).map_or(0, |meta| meta.len());
        if written + size <= self.max_bytes {
            return RecordedEvent::parse(&redacted);
        }
        let message = format!(
            "the recording reached its limit of {} bytes (--record-max-bytes); the call was cut \
             there",
            self.max_bytes
        );
        shared.report(Problem::RecordingLimit {
            message: message.clone(),
        });
        Ok(failure_event("RecordingLimit", message))
    }
}

/// A recorded failure the provider answered no status to: its client's error class and its
/// message.
fn failure_event(error_type: &str, message: String) -> RecordedEvent {
    RecordedEvent::Error {
        message,
        error_type: Some(error_type.to_owned()),
        status: None,
        in_stream: false,
    }
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("base", &redact_text(&self.base))
            .field("recording", &self.sink.path())
            .finish_non_exhaustive()
    }
}

/// How long the proxy waits for the upstream's next bytes (connecting, or reading a body)
/// before the call fails as `APITimeoutError`, as the gateway's provider does with its
/// `request_timeout_secs`: a stalled upstream must not hold a recording open forever.
const UPSTREAM_READ_TIMEOUT: Duration = Duration::from_secs(120);

/// The most of a whole (non-streamed) answer the proxy reads, as the gateway's provider does
/// (issue 21, finding 4): a larger body fails the call rather than fill memory.
pub(super) const MAX_ANSWER_BYTES: usize = 32 * 1024 * 1024;

/// The most of an error body the proxy reads; the recorded detail is at most this long.
pub(super) const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// The longest SSE line the proxy accepts, in bytes (the gateway's provider's limit): a longer
/// line fails the call (`RemoteProtocolError`) instead of growing without bound.
pub(super) const MAX_SSE_LINE_BYTES: usize = 8 * 1024 * 1024;

/// A reqwest failure as the gateway's provider classifies it
/// (`transport::upstream::TransportFailure`: the Python client's names): a timeout is
/// `APITimeoutError`; a failure once the answer has started (`in_body`) is
/// `RemoteProtocolError`; a failure to connect `APIConnectionError`.
fn transport_error_event(err: &reqwest::Error, in_body: bool) -> RecordedEvent {
    let failure = transport::upstream::TransportFailure::of(err, in_body);
    let message = failure.message(&redact_text(&err.to_string()));
    failure_event(failure.class(), message)
}

/// Why reading the upstream's stream stopped short.
#[derive(Debug, thiserror::Error)]
enum UpstreamRead {
    /// The transport failed.
    #[error(transparent)]
    Transport(#[from] reqwest::Error),
    /// A line past [`MAX_SSE_LINE_BYTES`].
    #[error(transparent)]
    LineTooLong(#[from] LineTooLong),
}

impl Recorder {
    /// Checks the upstream URL and opens the recording.
    pub(super) fn new(config: RecordConfig) -> Result<Recorder, ModelServerError> {
        let base = config.upstream.trim().trim_end_matches('/');
        let parsed = reqwest::Url::parse(base).map_err(|err| {
            ModelServerError::Upstream(format!("the upstream is not a URL: {err}"))
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ModelServerError::Upstream(
                "the upstream must be an http:// or https:// URL".into(),
            ));
        }
        // The gateway's providers' rule (`transport::upstream`): any loopback address or
        // `localhost` name is this machine.
        let loopback = transport::upstream::is_loopback(&parsed);
        if parsed.scheme() == "http" && !loopback && !config.allow_insecure_upstream {
            return Err(ModelServerError::Upstream(format!(
                "the upstream {} is plain http:// on another machine, where the API key would \
                 cross the network in clear; use https://, or pass --allow-insecure-upstream if \
                 that network is yours",
                redact_text(base)
            )));
        }
        // Checked once here, so a key no header can carry fails at start, not as a 401 later.
        if reqwest::header::HeaderValue::from_str(config.api_key.expose_secret()).is_err() {
            return Err(ModelServerError::Upstream(
                "the API key holds characters an HTTP header cannot carry (a newline, a control \
                 character)"
                    .into(),
            ));
        }
        let mut builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .read_timeout(UPSTREAM_READ_TIMEOUT)
            // Finding 7: a redirect to another origin is not followed, so no credential header
            // reaches it; the call is recorded as the upstream's 3xx answer.
            .redirect(transport::upstream::same_origin_redirects());
        if loopback {
            builder = builder.no_proxy();
        }
        let http = builder
            .build()
            .map_err(|err| ModelServerError::Upstream(err.to_string()))?;
        let secrets = KnownSecrets::new([config.api_key.expose_secret()]);
        // It remembers what it writes, so the fixture is built without reading it back.
        let sink = RecordingSink::open_remembering(&config.recording)?;
        let upstream = Arc::new(ModelUpstream {
            base: base.to_owned(),
            api_key: config.api_key.clone(),
            http,
            aws: config.aws,
        });
        let exchanges = Arc::new(ExchangeRecorder::new(
            sink.clone(),
            vec![config.api_key.clone()],
            Some(upstream.clone()),
        ));
        // A key typed into the prompt reaches no file either.
        let mut scenario = config.scenario;
        scenario.prompt = secrets.redact_text(&scenario.prompt);
        for followup in &mut scenario.followups {
            *followup = secrets.redact_text(followup);
        }
        Ok(Recorder {
            base: base.to_owned(),
            upstream,
            scenario,
            calls: AtomicUsize::new(0),
            first_model: Mutex::new(None),
            writing: Arc::new(Writing {
                secrets,
                path: config.recording.clone(),
                max_bytes: config.limits.max_bytes,
            }),
            call_time_limit: config.limits.call_time_limit,
            reach: ReachTally::default(),
            stream: Arc::default(),
            exchanges,
            sink,
        })
    }

    /// Calls recorded so far.
    pub(super) fn calls(&self) -> usize {
        self.calls.load(Ordering::Relaxed)
    }

    /// The model the scenario names, else the first one a request named.
    pub(super) fn model_hint(&self) -> String {
        if !self.scenario.model.is_empty() {
            return self.scenario.model.clone();
        }
        self.first_model.lock().clone().unwrap_or_default()
    }

    /// Builds the fixture from the calls recorded, as the sink wrote them (held in memory, not
    /// read back).
    pub(super) fn build(&self) -> Result<RecordedFixture, ModelServerError> {
        let calls = self.sink.remembered()?;
        // The last check before the recording is kept (issue 45, finding 1): the deltas were
        // rid of the key even split over several of them, so a form found now is a hole in that;
        // the file goes rather than keep a key on disk.
        if let Some(found) = self.writing.secrets.first_in_calls(&calls) {
            let path = self.sink.path().to_path_buf();
            let removed = std::fs::remove_file(&path).is_ok();
            return Err(ModelServerError::SecretInRecording {
                path,
                call: found.call,
                removed,
            });
        }
        let scenario = Scenario {
            model: self.model_hint(),
            ..self.scenario.clone()
        };
        let exchanges = self.sink.remembered_exchanges();
        // The model's key and every key a boundary's request carried.
        let secrets = self.exchanges.known_secrets();
        if let Some(exchange) = secrets.first_in_exchanges(&exchanges) {
            let path = self.sink.path().to_path_buf();
            let removed = std::fs::remove_file(&path).is_ok();
            return Err(ModelServerError::SecretInExchange {
                path,
                exchange,
                removed,
            });
        }
        let (mut fixture, summary) =
            build_fixture_from_calls(self.sink.path(), &calls, &exchanges, &scenario)?;
        fixture.provenance = Some(self.provenance(&calls));
        Ok(RecordedFixture {
            fixture,
            summary,
            reach: self.reach.reach(),
        })
    }

    /// Where and when the calls were recorded (`docs/replay-and-fixtures.md` §2.7): now, the
    /// upstream without credentials or query, the models and wires the calls named.
    fn provenance(&self, calls: &[RecordedCall]) -> Provenance {
        let mut models = Vec::new();
        let mut wires = Vec::new();
        for call in calls {
            for (list, key) in [(&mut models, "model"), (&mut wires, "api")] {
                if let Some(name) = call.request.model.get(key).and_then(Value::as_str)
                    && !list.iter().any(|seen: &String| seen == name)
                {
                    list.push(name.to_owned());
                }
            }
        }
        Provenance {
            recorded_at: chrono::Utc::now(),
            upstream: Provenance::upstream_without_secrets(&self.base),
            models,
            wires,
            keyless_version: env!("CARGO_PKG_VERSION").to_owned(),
            stream: Some(self.stream.lock().clone()),
        }
    }

    /// The upstream request for one call at its wire ([`ModelUpstream::post`]).
    fn upstream_request(
        &self,
        request: &WireRequest,
        headers: &HeaderMap,
    ) -> Result<reqwest::RequestBuilder, UpstreamSetup> {
        let body = serde_json::to_vec(&request.body).unwrap_or_default();
        let accept = request.wire.accept(request.stream);
        (self.upstream).post(
            request.wire,
            &request.upstream_path(),
            accept,
            body,
            headers,
        )
    }
}

#[async_trait::async_trait]
impl Backend for Recorder {
    fn mode(&self) -> &'static str {
        "record"
    }

    async fn answer(&self, call: Call<'_>) -> Answered {
        proxy(call.shared, self, call.caller, call.headers, call.request).await
    }

    fn models(&self) -> Vec<String> {
        vec![self.model_hint()]
    }

    fn state(&self, problems: Vec<Problem>) -> ServerState {
        ServerState {
            mode: self.mode().into(),
            fixture: None,
            fixtures: Vec::new(),
            served_calls: self.calls(),
            unused_turns: Vec::new(),
            recorded_calls: Some(self.calls()),
            problems,
            faults: Vec::new(),
            unused_exchanges: Vec::new(),
        }
    }

    fn reset(&self, _wanted: Option<&str>) -> Result<ResetDone, ResetRefused> {
        Err(ResetRefused::Recording)
    }

    fn finish(&self) -> Result<Option<RecordedFixture>, ModelServerError> {
        self.build().map(Some)
    }

    fn exchanges(&self) -> Exchanges {
        Exchanges::Record(self.exchanges.clone())
    }
}

/// The error event of a call cut at the call time limit, and its problem.
fn time_limit_event(shared: &Shared, limit: Duration) -> RecordedEvent {
    let message = format!(
        "the call ran past the recording's call time limit of {}s \
         (--record-call-time-limit-secs); it was cut there",
        limit.as_secs()
    );
    shared.report(Problem::RecordingLimit {
        message: message.clone(),
    });
    failure_event("APITimeoutError", message)
}

/// Writes an event (redacted, within the recording's budget) and returns what was written,
/// which is what goes on; `None` when the redacted event no longer reads as one (reported, and
/// passed on as nothing).
fn write(
    shared: &Shared,
    writing: &Writing,
    call: &mut CallWriter,
    event: &RecordedEvent,
) -> Option<RecordedEvent> {
    let report = |message: String| shared.report(Problem::RecordingWrite { message });
    let admitted = match writing.admit(shared, event) {
        Ok(admitted) => admitted,
        Err(reason) => {
            report(reason.to_string());
            return None;
        }
    };
    match call.event(&admitted) {
        Ok(written) => Some(written),
        Err(err) => {
            report(err.to_string());
            Some(admitted)
        }
    }
}

fn end(shared: &Shared, call: CallWriter, outcome: Outcome) {
    if let Err(err) = call.end(outcome) {
        shared.report(Problem::RecordingWrite {
            message: err.to_string(),
        });
    }
}

/// Records a failed call and answers the gateway with the same (redacted) failure.
fn fail(
    shared: &Shared,
    writing: &Writing,
    mut call: CallWriter,
    event: RecordedEvent,
) -> Answered {
    let written = write(shared, writing, &mut call, &event);
    end(shared, call, Outcome::Error);
    let failure = written.as_ref().and_then(answer::failure);
    Answered::Failure(
        failure.unwrap_or_else(|| {
            WireError::new(None, "", "the failure could not be recorded", false)
        }),
    )
}

/// The recording's `error` event for an upstream's non-success status, from at most
/// [`MAX_ERROR_BODY_BYTES`] of its body: named as the wire's own client names the failure
/// ([`Wire::http_error_class`]: an Anthropic 529 is `OverloadedError`, a Bedrock failure the
/// exception its `x-amzn-errortype` names), the provider's message worded as
/// [`model_wire::edge::recorded_error_text`] words it (`Error code: <status> - <detail>`).
async fn status_error_event(wire: Wire, upstream: reqwest::Response) -> RecordedEvent {
    let failed = transport::upstream::read_failed_answer(upstream, MAX_ERROR_BODY_BYTES).await;
    let exception = wire.http_error_class(failed.status, failed.amzn_error_type.as_deref());
    let message = model_wire::edge::recorded_error_text(failed.status, &failed.body, failed.whole);
    RecordedEvent::Error {
        message,
        error_type: Some(exception.to_owned()),
        status: Some(Some(failed.status)),
        in_stream: false,
    }
}

/// Forwards one call upstream, at the request's wire, and records it.
async fn proxy(
    shared: &Arc<Shared>,
    recorder: &Recorder,
    caller: Option<String>,
    headers: &HeaderMap,
    request: &WireRequest,
) -> Answered {
    recorder
        .first_model
        .lock()
        .get_or_insert_with(|| request.model.clone());
    let writing = &*recorder.writing;
    let mut recorded = request.recorded(caller.as_deref().unwrap_or(DEFAULT_CALLER));
    for payload in [
        &mut recorded.model,
        &mut recorded.context,
        &mut recorded.options,
    ] {
        *payload = writing.secrets.redact(payload);
    }
    let mut call = match recorder.sink.begin_call(&recorded) {
        Ok(call) => call,
        Err(err) => {
            return Answered::Problem {
                problem: Problem::RecordingWrite {
                    message: err.to_string(),
                },
                status: axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                code: "recording_write",
            };
        }
    };
    recorder.calls.fetch_add(1, Ordering::Relaxed);
    // Dropped mid-call (the gateway went away), the call is recorded as abandoned.
    call.set_drop_outcome(Outcome::Abandoned);
    let deadline = tokio::time::Instant::now() + recorder.call_time_limit;
    let timed_out = || time_limit_event(shared, recorder.call_time_limit);
    // Until the upstream answers with a status, a failure means it was never reached.
    let call_index = call.call_index();
    let unreached = |failure: String| recorder.reach.unreached(call_index, failure);
    let upstream_request = match recorder.upstream_request(request, headers) {
        Ok(upstream_request) => upstream_request,
        Err(err) => {
            unreached(format!("the request was never sent: {err}"));
            let event = failure_event("APIConnectionError", err.to_string());
            return fail(shared, writing, call, event);
        }
    };
    let sent = tokio::time::timeout_at(deadline, upstream_request.send()).await;
    let upstream = match sent {
        Err(_) => {
            unreached(format!(
                "APITimeoutError: no answer within the call time limit of {}s",
                recorder.call_time_limit.as_secs()
            ));
            return fail(shared, writing, call, timed_out());
        }
        Ok(sent) => sent,
    };
    let upstream = match upstream {
        Ok(upstream) => upstream,
        Err(err) => {
            let class = transport::upstream::TransportFailure::of(&err, false).class();
            unreached(format!("{class}: {}", redact_text(&with_causes(&err))));
            return fail(shared, writing, call, transport_error_event(&err, false));
        }
    };
    if upstream.status().is_success() {
        recorder.reach.answered();
    } else {
        recorder.reach.provider_error();
        let event =
            match tokio::time::timeout_at(deadline, status_error_event(request.wire, upstream))
                .await
            {
                Ok(event) => event,
                Err(_) => timed_out(),
            };
        return fail(shared, writing, call, event);
    }
    // As OpenAI clients read it: a JSON body is one answer, anything else a stream (some
    // servers stream without `text/event-stream`).
    let whole = upstream
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with("application/json"));
    if whole {
        let read = tokio::time::timeout_at(
            deadline,
            transport::read_capped(upstream.bytes_stream(), MAX_ANSWER_BYTES),
        )
        .await;
        let Ok(read) = read else {
            return fail(shared, writing, call, timed_out());
        };
        let events = match read {
            Ok((_, false)) => {
                let event = failure_event(
                    "APIResponseValidationError",
                    format!("the provider's answer is larger than {MAX_ANSWER_BYTES} bytes"),
                );
                return fail(shared, writing, call, event);
            }
            Ok((bytes, true)) => match serde_json::from_slice::<Value>(&bytes) {
                Ok(body) => {
                    recorder.stream.lock().note_value(call_index, &body);
                    events_from_completion(request.wire, &body, &request.model)
                }
                Err(err) => {
                    let event = failure_event(
                        "APIResponseValidationError",
                        format!("the provider's answer is not valid JSON: {err}"),
                    );
                    return fail(shared, writing, call, event);
                }
            },
            Err(err) => {
                return fail(shared, writing, call, transport_error_event(&err, true));
            }
        };
        let written: Vec<RecordedEvent> = events
            .iter()
            .filter_map(|event| write(shared, writing, &mut call, event))
            .collect();
        let failed = written.iter().any(is_error);
        end(
            shared,
            call,
            if failed {
                Outcome::Error
            } else {
                Outcome::Complete
            },
        );
        return Answered::Events(written);
    }
    let (sender, receiver) = mpsc::channel::<Result<Bytes, std::io::Error>>(64);
    // One relay rule at every wire: each written event through the wire's streaming renderer,
    // as a replay of the recording will stream it, opened with what the upstream's opening said.
    let target = PumpTarget {
        sender: request.stream.then_some(sender),
        wire: request.wire,
        identity: shared.answer_id(request.wire, &request.model),
        framing: request.framing,
        out: None,
    };
    let source: Source = match request.wire {
        Wire::BedrockConverse => Box::pin(event_stream_source(upstream)),
        Wire::OllamaChat | Wire::OllamaGenerate => Box::pin(ndjson_source(upstream)),
        _ => Box::pin(sse_source(upstream)),
    };
    let pumped = tokio::spawn(pump(
        shared.clone(),
        recorder.writing.clone(),
        (call, deadline, recorder.call_time_limit),
        source,
        StreamRecorder::new(request.wire, &request.model).holding(recorder.writing.secrets.clone()),
        target,
        recorder.stream.clone(),
    ));
    if request.stream {
        let body = futures::stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|item| (item, receiver))
        });
        return Answered::Response(stream_response(request.framing, Body::from_stream(body)));
    }
    // The gateway asked for one answer but the upstream streamed: record the stream whole,
    // then answer with the message it spelled.
    match pumped.await {
        Ok(events) => Answered::Events(events),
        Err(err) => Answered::Response(wire_error(
            request.wire,
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            &format!("the recording task failed: {err}"),
            "recording_task",
        )),
    }
}

/// One piece of an upstream's stream.
#[derive(Debug)]
enum Piece {
    /// A server-sent event.
    Sse(eventsource_stream::Event),
    /// An event-stream message (Converse).
    Frame(Frame),
    /// One line of an NDJSON stream (Ollama), without its line end.
    Line(String),
}

/// The upstream's stream: its pieces, or the `error` event that ends it (a transport failure, a
/// line past the cap, a malformed or corrupt frame).
type Source = std::pin::Pin<Box<dyn futures::Stream<Item = Result<Piece, RecordedEvent>> + Send>>;

/// An SSE upstream, cut at line ends with a line-size cap before parsing.
fn sse_source(
    upstream: reqwest::Response,
) -> impl futures::Stream<Item = Result<Piece, RecordedEvent>> {
    transport::whole_lines(
        upstream
            .bytes_stream()
            .map(|item| item.map_err(UpstreamRead::from)),
        MAX_SSE_LINE_BYTES,
    )
    .eventsource()
    .map(|item| match item {
        Ok(event) => Ok(Piece::Sse(event)),
        Err(EventStreamError::Transport(UpstreamRead::Transport(err))) => {
            Err(transport_error_event(&err, true))
        }
        Err(EventStreamError::Transport(UpstreamRead::LineTooLong(err))) => {
            Err(failure_event("RemoteProtocolError", err.to_string()))
        }
        Err(err) => Err(failure_event(
            "RemoteProtocolError",
            format!("malformed event stream: {err}"),
        )),
    })
}

/// An NDJSON upstream (Ollama's stream), cut at line ends with the SSE line cap, one piece per
/// line; blank lines are nothing.
fn ndjson_source(
    upstream: reqwest::Response,
) -> impl futures::Stream<Item = Result<Piece, RecordedEvent>> {
    transport::whole_lines(
        upstream
            .bytes_stream()
            .map(|item| item.map_err(UpstreamRead::from)),
        MAX_SSE_LINE_BYTES,
    )
    // Each item holds whole lines (one or more).
    .flat_map(|item| {
        let pieces: Vec<Result<Piece, RecordedEvent>> = match item {
            Ok(lines) => String::from_utf8_lossy(&lines)
                .lines()
                .map(str::trim)
                .filter(|line| !line.is_empty())
                .map(|line| Ok(Piece::Line(line.to_owned())))
                .collect(),
            Err(UpstreamRead::Transport(err)) => vec![Err(transport_error_event(&err, true))],
            Err(UpstreamRead::LineTooLong(err)) => {
                vec![Err(failure_event("RemoteProtocolError", err.to_string()))]
            }
        };
        futures::stream::iter(pieces)
    })
}

/// The `error` event of a stream whose frame `corrupt` could not be read.
fn corrupt_frame_event(corrupt: &CorruptFrame) -> RecordedEvent {
    failure_event("RemoteProtocolError", format!("the upstream's {corrupt}"))
}

/// A Converse upstream's binary event stream, cut into messages (CRCs checked) whatever the
/// transport's chunk boundaries; a corrupt frame, or a stream that ends inside a frame, ends it
/// with an error naming the frame.
fn event_stream_source(
    upstream: reqwest::Response,
) -> impl futures::Stream<Item = Result<Piece, RecordedEvent>> {
    struct State {
        bytes: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<Bytes>> + Send>>,
        reader: FrameReader,
        pending: std::collections::VecDeque<Result<Piece, RecordedEvent>>,
        over: bool,
    }
    let state = State {
        bytes: Box::pin(upstream.bytes_stream()),
        reader: FrameReader::new(),
        pending: std::collections::VecDeque::new(),
        over: false,
    };
    futures::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(piece) = state.pending.pop_front() {
                return Some((piece, state));
            }
            if state.over {
                return None;
            }
            match state.bytes.next().await {
                Some(Ok(chunk)) => match state.reader.push(&chunk) {
                    Ok(frames) => state
                        .pending
                        .extend(frames.into_iter().map(|frame| Ok(Piece::Frame(frame)))),
                    Err(corrupt) => {
                        state.pending.push_back(Err(corrupt_frame_event(&corrupt)));
                        state.over = true;
                    }
                },
                Some(Err(err)) => {
                    state
                        .pending
                        .push_back(Err(transport_error_event(&err, true)));
                    state.over = true;
                }
                None => {
                    if state.reader.has_partial_frame() {
                        state.pending.push_back(Err(failure_event(
                            "RemoteProtocolError",
                            "the upstream's event stream ended inside a frame".to_owned(),
                        )));
                    }
                    state.over = true;
                }
            }
        }
    })
}

/// Where a pumped stream's chunks go: the gateway's stream, rendered from the written events,
/// or nowhere when it asked for one answer.
struct PumpTarget {
    sender: Option<mpsc::Sender<Result<Bytes, std::io::Error>>>,
    wire: Wire,
    identity: Identity,
    framing: Framing,
    /// The written (redacted) events as the wire streams them, once the stream has opened.
    out: Option<StreamOut>,
}

impl PumpTarget {
    /// Opens the gateway's stream, once, with what the upstream has said of its answer so far
    /// (its model and usage: the opening of a Messages, Responses or Gemini stream carries them).
    fn open(&mut self, so_far: impl FnOnce() -> Answer) -> &mut StreamOut {
        let (wire, framing) = (self.wire, self.framing);
        let identity = &self.identity;
        self.out
            .get_or_insert_with(|| StreamOut::new(wire, identity, Some(&so_far()), framing))
    }

    /// Sends what the gateway gets for one written event; false once the gateway has gone. A
    /// failure the upstream reported inside its stream is passed on as the wire's error event;
    /// any other failure (a cut-off or broken stream) ends the gateway's stream with nothing
    /// more.
    async fn deliver(&mut self, event: &RecordedEvent) -> bool {
        if self.sender.is_none() {
            return true;
        }
        // Opened before by what the upstream said; else (a failure before it said anything)
        // with nothing known.
        let body = self.open(Answer::empty).push(event);
        self.send(body).await
    }

    /// Sends bytes to the gateway (nothing for none); false once the gateway has gone.
    async fn send(&self, body: Vec<u8>) -> bool {
        match &self.sender {
            Some(sender) if !body.is_empty() => sender.send(Ok(Bytes::from(body))).await.is_ok(),
            _ => true,
        }
    }

    /// Ends the gateway's stream: the wire's end marker only when the upstream `ended` with its
    /// own (Chat Completions' `[DONE]`), and what closes the framing (Gemini's JSON array).
    async fn close(&mut self, ended: bool) {
        if self.sender.is_none() {
            return;
        }
        let end = self.open(Answer::empty).end(ended);
        let _ = self.send(end).await;
    }

    /// Resolves when the gateway has stopped reading its stream (never when it asked for one
    /// answer, whose read the handler awaits).
    async fn gone(&self) {
        match &self.sender {
            Some(sender) => sender.closed().await,
            None => std::future::pending().await,
        }
    }
}

fn is_error(event: &RecordedEvent) -> bool {
    matches!(event, RecordedEvent::Error { .. })
}

/// Reads the upstream's stream, writing each event before passing it on; returns the written
/// events. A gateway that stops reading stops the read at once (even mid-line) and leaves the
/// call `abandoned` (the writer's drop outcome); a stream that breaks, is cut off, carries a
/// line past the cap or a corrupt frame, or reports an error ends it with `error`.
async fn pump(
    shared: Arc<Shared>,
    writing: Arc<Writing>,
    (mut call, deadline, limit): (CallWriter, tokio::time::Instant, Duration),
    mut source: Source,
    mut recorder: StreamRecorder,
    mut target: PumpTarget,
    stream: Arc<Mutex<StreamVocabulary>>,
) -> Vec<RecordedEvent> {
    let call_index = call.call_index();
    let writing = &*writing;
    let mut written = Vec::new();
    let mut failed = false;
    while !failed && !recorder.done() {
        let next = tokio::select! {
            next = source.next() => Some(next),
            () = target.gone() => return written,
            // The server stopped and its grace ran out: the call is left `abandoned`.
            () = shared.aborted.cancelled() => return written,
            () = tokio::time::sleep_until(deadline) => None,
        };
        let Some(next) = next else {
            let event = time_limit_event(&shared, limit);
            if let Some(event) = write(&shared, writing, &mut call, &event) {
                target.open(|| recorder.so_far());
                let _ = target.deliver(&event).await;
                written.push(event);
            }
            failed = true;
            break;
        };
        let events = match next {
            None => break,
            Some(Ok(piece)) => match &piece {
                // Noted as the upstream sent it, before parsing keeps only what keyless knows.
                Piece::Sse(frame) => {
                    stream.lock().note(call_index, &frame.event, &frame.data);
                    recorder.on_event(&frame.event, &frame.data)
                }
                Piece::Frame(Frame::Event {
                    event_type,
                    payload,
                }) => {
                    stream.lock().note(call_index, event_type, payload);
                    recorder.on_event(event_type, payload)
                }
                Piece::Frame(Frame::Exception {
                    exception_type,
                    payload,
                }) => {
                    stream.lock().note(call_index, exception_type, payload);
                    recorder.on_exception(exception_type, payload)
                }
                Piece::Line(line) => {
                    stream.lock().note(call_index, "message", line);
                    recorder.on_event("message", line)
                }
            },
            Some(Err(error)) => vec![error],
        };
        target.open(|| recorder.so_far());
        for event in &events {
            let Some(event) = write(&shared, writing, &mut call, event) else {
                continue;
            };
            failed = is_error(&event);
            let delivered = target.deliver(&event).await;
            written.push(event);
            if !delivered {
                return written;
            }
            if failed {
                break;
            }
        }
    }
    let mut done_marker = false;
    if !failed {
        done_marker = recorder.done();
        target.open(|| recorder.so_far());
        for event in recorder.finish() {
            let Some(event) = write(&shared, writing, &mut call, &event) else {
                continue;
            };
            failed = is_error(&event);
            let delivered = target.deliver(&event).await;
            written.push(event);
            if !delivered {
                return written;
            }
        }
    }
    target.close(!failed && done_marker).await;
    end(
        &shared,
        call,
        if failed {
            Outcome::Error
        } else {
            Outcome::Complete
        },
    );
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use replay_core::UiMode;

    #[test]
    fn debug_never_shows_the_key_or_a_credential_in_the_upstream() {
        let config = RecordConfig {
            upstream: "https://user:pass@example.com/v1?api_key=sk-in-the-query-123456".into(),
            api_key: "sk-live-SECRET-0123456789".into(),
            recording: PathBuf::from("/tmp/r.jsonl"),
            scenario: Scenario::new("s", UiMode::Flash, "p"),
            allow_insecure_upstream: false,
            limits: RecordLimits::default(),
            aws: None,
        };
        let shown = format!("{config:?}");
        for secret in ["SECRET", "pass@", "sk-in-the-query"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
    }

    #[test]
    fn an_upstream_that_is_not_an_http_url_or_a_key_no_header_carries_is_refused_before_anything_is_written()
     {
        let folder = tempfile::tempdir().expect("tempdir");
        let recording = folder.path().join("r.jsonl");
        for (upstream, key) in [
            ("not a url", "k"),
            ("ftp://example.com/v1", "k"),
            ("https://example.com/v1", "sk-with\na-newline"),
        ] {
            let error = Recorder::new(RecordConfig {
                upstream: upstream.into(),
                api_key: key.into(),
                recording: recording.clone(),
                scenario: Scenario::new("s", UiMode::Flash, "p"),
                allow_insecure_upstream: false,
                limits: RecordLimits::default(),
                aws: None,
            })
            .expect_err(upstream);
            assert!(error.to_string().starts_with("upstream: "), "{error}");
            assert!(!recording.exists(), "{upstream}: nothing written");
        }
    }

    /// A failed answer is recorded under the class the wire's own client raises: the Anthropic
    /// client's `OverloadedError` for a 529 (Chat Completions' table said
    /// `InternalServerError`), Bedrock's exception from `x-amzn-errortype`.
    #[tokio::test]
    async fn a_failure_status_is_recorded_under_the_wire_s_own_client_class() {
        let cases = [
            (Wire::AnthropicMessages, 529, None, "OverloadedError"),
            (Wire::ChatCompletions, 529, None, "InternalServerError"),
            (Wire::Gemini, 429, None, "ClientError"),
            (
                Wire::BedrockConverse,
                400,
                Some("ThrottlingException:http://internal.amazon.com/coral/"),
                "ThrottlingException",
            ),
        ];
        for (wire, status, errortype, class) in cases {
            let mut answer = axum::http::Response::builder().status(status);
            if let Some(errortype) = errortype {
                answer = answer.header("x-amzn-errortype", errortype);
            }
            let body = r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#;
            let upstream = reqwest::Response::from(answer.body(body).unwrap());
            let event = status_error_event(wire, upstream).await.to_value();
            assert_eq!(event["error_type"], class, "{wire:?} {status}");
            assert_eq!(event["status"], status, "{wire:?}");
            assert_eq!(
                event["message"],
                format!("Error code: {status} - Overloaded"),
                "{wire:?}"
            );
        }
    }
}
