//! Record mode: a proxy between the gateway and a real OpenAI-compatible endpoint. Each call's
//! request (the wire view of `request.rs`) and the upstream's answer, as recording events, go to
//! a versioned JSONL recording, redacted before they are written; the gateway gets the redacted
//! answer, so a live run continues on exactly the conversation its replay will produce. When the
//! server stops, the fixture is built from the recording.
//!
//! A streamed answer is passed on chunk by chunk as it arrives (each event written before it is
//! sent); the recording keeps the upstream's chunk boundaries, tool-call arguments split mid-JSON
//! included. The API key lives in memory only: it is sent in the `Authorization` header and
//! nowhere else, and neither `Debug` nor any error shows it.
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
use axum::response::Response;
use eventsource_stream::{EventStreamError, Eventsource};
use futures::StreamExt;
use parking_lot::Mutex;
use replay_core::recording::{
    Access, CallWriter, Outcome, RecordingSink, read_recording, redact, redact_text,
};
use replay_core::{DEFAULT_CALLER, Fixture, Scenario, TurnSummary, build_fixture};
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use model_wire::chat_completions::{error_message, status_exception_name};

use super::answer::{ChunkRenderer, Rendered, WireError, push_data};
use super::assemble::{StreamRecorder, events_from_completion};
use super::request::WireRequest;
use super::{
    ModelServerError, Problem, Shared, error_response, failure_response, respond, sse_response,
};

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
}

impl std::fmt::Debug for RecordConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordConfig")
            .field("upstream", &redact_text(&self.upstream))
            .field("api_key", &self.api_key)
            .field("recording", &self.recording)
            .field("scenario", &self.scenario.stem())
            .finish()
    }
}

/// The fixture built when a recording server stops.
#[derive(Debug)]
pub struct RecordedFixture {
    /// The fixture.
    pub fixture: Fixture,
    /// One line per recorded call.
    pub summary: Vec<TurnSummary>,
}

/// The recording proxy.
pub(super) struct Recorder {
    endpoint: String,
    api_key: SecretString,
    http: reqwest::Client,
    sink: RecordingSink,
    scenario: Scenario,
    calls: AtomicUsize,
    first_model: Mutex<Option<String>>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("endpoint", &redact_text(&self.endpoint))
            .field("recording", &self.sink.path())
            .finish_non_exhaustive()
    }
}

/// How long the proxy waits for the upstream's next bytes (connecting, or reading a body)
/// before the call fails as `APITimeoutError`, as the gateway's provider does with its
/// `request_timeout_secs`: a stalled upstream must not hold a recording open forever.
const UPSTREAM_READ_TIMEOUT: Duration = Duration::from_secs(120);

/// A reqwest failure as the gateway's provider classifies it (the Python client's names):
/// a timeout is `APITimeoutError`; a failure once the answer has started (`in_body`) is
/// `RemoteProtocolError`; a failure to connect `APIConnectionError`.
fn transport_error_event(err: &reqwest::Error, in_body: bool) -> Value {
    let detail = redact_text(&err.to_string());
    let (error_type, message) = if err.is_timeout() {
        ("APITimeoutError", format!("Request timed out: {detail}"))
    } else if in_body || err.is_body() || err.is_decode() {
        (
            "RemoteProtocolError",
            format!("the response broke off: {detail}"),
        )
    } else {
        ("APIConnectionError", format!("Connection error: {detail}"))
    };
    json!({"type": "error", "message": message, "error_type": error_type})
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
        let loopback = matches!(parsed.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"));
        let mut builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .read_timeout(UPSTREAM_READ_TIMEOUT);
        if loopback {
            builder = builder.no_proxy();
        }
        let http = builder
            .build()
            .map_err(|err| ModelServerError::Upstream(err.to_string()))?;
        Ok(Recorder {
            endpoint: format!("{base}/chat/completions"),
            api_key: config.api_key,
            http,
            sink: RecordingSink::open(&config.recording)?,
            scenario: config.scenario,
            calls: AtomicUsize::new(0),
            first_model: Mutex::new(None),
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

    /// Reads the recording back and builds the fixture.
    pub(super) fn build(&self) -> Result<RecordedFixture, ModelServerError> {
        let recording = read_recording(self.sink.path(), Access::External)?;
        let scenario = Scenario {
            model: self.model_hint(),
            ..self.scenario.clone()
        };
        let (fixture, summary) = build_fixture(&recording, &scenario)?;
        Ok(RecordedFixture { fixture, summary })
    }
}

/// Writes an event (redacted) and returns what was written, which is what goes on.
fn write(shared: &Shared, call: &mut CallWriter, event: &Value) -> Value {
    let written = redact(event);
    if let Err(err) = call.event(&written) {
        shared.report(Problem::RecordingWrite {
            message: err.to_string(),
        });
    }
    written
}

fn end(shared: &Shared, call: CallWriter, outcome: Outcome) {
    if let Err(err) = call.end(outcome) {
        shared.report(Problem::RecordingWrite {
            message: err.to_string(),
        });
    }
}

/// Records a failed call and answers the gateway with the same (redacted) failure.
fn fail(shared: &Shared, mut call: CallWriter, event: Value) -> Response {
    let written = write(shared, &mut call, &event);
    end(shared, call, Outcome::Error);
    failure_response(&WireError::from_event(&written))
}

/// Forwards one call upstream and records it.
pub(super) async fn proxy(
    shared: &Arc<Shared>,
    recorder: &Recorder,
    caller: Option<String>,
    request: WireRequest,
) -> Response {
    recorder
        .first_model
        .lock()
        .get_or_insert_with(|| request.model.clone());
    let recorded = request.recorded(caller.as_deref().unwrap_or(DEFAULT_CALLER));
    let mut call = match recorder.sink.begin_call(&recorded) {
        Ok(call) => call,
        Err(err) => {
            let message = err.to_string();
            shared.report(Problem::RecordingWrite {
                message: message.clone(),
            });
            return error_response(
                axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                &message,
                "api_error",
                "recording_write",
            );
        }
    };
    recorder.calls.fetch_add(1, Ordering::Relaxed);
    // Dropped mid-call (the gateway went away), the call is recorded as abandoned.
    call.set_drop_outcome(Outcome::Abandoned);
    let accept = if request.stream {
        "text/event-stream"
    } else {
        "application/json"
    };
    let sent = recorder
        .http
        .post(&recorder.endpoint)
        .bearer_auth(recorder.api_key.expose_secret())
        .header(reqwest::header::ACCEPT, accept)
        .json(&Value::Object(request.body.clone()))
        .send()
        .await;
    let upstream = match sent {
        Ok(upstream) => upstream,
        Err(err) => return fail(shared, call, transport_error_event(&err, false)),
    };
    let status = upstream.status().as_u16();
    if !upstream.status().is_success() {
        let body = upstream.text().await.unwrap_or_default();
        let detail = serde_json::from_str::<Value>(&body)
            .ok()
            .and_then(|json| error_message(&json))
            .or_else(|| Some(body.trim().to_owned()).filter(|body| !body.is_empty()))
            .unwrap_or_else(|| "no error detail".to_owned());
        let event = json!({"type": "error", "message": format!("Error code: {status} - {detail}"),
                           "error_type": status_exception_name(status), "status": status});
        return fail(shared, call, event);
    }
    // As OpenAI clients read it: a JSON body is one completion, anything else a stream (some
    // servers stream without `text/event-stream`).
    let whole = upstream
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with("application/json"));
    if whole {
        let events = match upstream.json::<Value>().await {
            Ok(body) => events_from_completion(&body, &request.model),
            Err(err) if err.is_decode() => {
                let event = json!({"type": "error", "error_type": "APIResponseValidationError",
                                   "message": format!("the provider's answer is not valid JSON: {err}")});
                return fail(shared, call, event);
            }
            Err(err) => return fail(shared, call, transport_error_event(&err, true)),
        };
        let written: Vec<Value> = events
            .iter()
            .map(|event| write(shared, &mut call, event))
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
        return respond(shared, &request, &written);
    }
    let (sender, receiver) = mpsc::channel::<Result<Bytes, std::io::Error>>(64);
    let target = PumpTarget {
        sender: request.stream.then_some(sender),
        renderer: ChunkRenderer::new(shared.answer_id(&request.model)),
    };
    let pumped = tokio::spawn(pump(
        shared.clone(),
        call,
        upstream,
        request.model.clone(),
        target,
    ));
    if request.stream {
        let body = futures::stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|item| (item, receiver))
        });
        return sse_response(Body::from_stream(body));
    }
    // The gateway asked for one completion but the upstream streamed: record the stream
    // whole, then answer with the message it spelled.
    match pumped.await {
        Ok(events) => respond(shared, &request, &events),
        Err(err) => error_response(
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            &format!("the recording task failed: {err}"),
            "api_error",
            "recording_task",
        ),
    }
}

/// Where a pumped stream's chunks go: the gateway's stream, or nowhere when it asked for one
/// completion.
struct PumpTarget {
    sender: Option<mpsc::Sender<Result<Bytes, std::io::Error>>>,
    renderer: ChunkRenderer,
}

impl PumpTarget {
    /// Sends an event's chunks; false once the gateway has gone. A failure the upstream
    /// reported inside its stream is passed on as its error chunk; any other failure (a cut-off
    /// or broken stream) ends the gateway's stream the same way, with nothing more.
    async fn deliver(&mut self, event: &Value) -> bool {
        let Some(sender) = &self.sender else {
            return true;
        };
        let mut body = String::new();
        match self.renderer.render(event) {
            Rendered::Chunks(chunks) => {
                for chunk in chunks {
                    push_data(&mut body, &chunk);
                }
            }
            Rendered::Failed(Some(error)) => push_data(&mut body, &error),
            Rendered::Failed(None) => {}
        }
        body.is_empty() || sender.send(Ok(Bytes::from(body))).await.is_ok()
    }

    /// Ends the gateway's stream with `[DONE]`, sent only when the upstream sent it.
    async fn close(&self) {
        if let Some(sender) = &self.sender {
            let _ = sender
                .send(Ok(Bytes::from_static(b"data: [DONE]\n\n")))
                .await;
        }
    }
}

fn is_error(event: &Value) -> bool {
    event.get("type").and_then(Value::as_str) == Some("error")
}

/// Reads the upstream's stream, writing each event before passing its chunks on; returns the
/// written events. A gateway that stops reading leaves the call `abandoned` (the writer's drop
/// outcome); a stream that breaks, is cut off or reports an error ends it with `error`.
async fn pump(
    shared: Arc<Shared>,
    mut call: CallWriter,
    upstream: reqwest::Response,
    requested_model: String,
    mut target: PumpTarget,
) -> Vec<Value> {
    let mut recorder = StreamRecorder::new(&requested_model);
    let mut written = Vec::new();
    let mut source = upstream.bytes_stream().eventsource();
    let mut failed = false;
    while !failed && !recorder.done() {
        let events = match source.next().await {
            None => break,
            Some(Ok(frame)) if frame.event == "error" => recorder.on_error_event(&frame.data),
            // Only `message` events carry chunks; others (and comments) are not the answer.
            Some(Ok(frame)) if frame.event != "message" => continue,
            Some(Ok(frame)) => recorder.on_data(&frame.data),
            Some(Err(EventStreamError::Transport(err))) => {
                vec![transport_error_event(&err, true)]
            }
            Some(Err(err)) => vec![json!({"type": "error", "error_type": "RemoteProtocolError",
                                          "message": format!("malformed event stream: {err}")})],
        };
        for event in events {
            let event = write(&shared, &mut call, &event);
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
    if !failed {
        let done_marker = recorder.done();
        for event in recorder.finish() {
            let event = write(&shared, &mut call, &event);
            failed = is_error(&event);
            let delivered = target.deliver(&event).await;
            written.push(event);
            if !delivered {
                return written;
            }
        }
        if !failed && done_marker {
            target.close().await;
        }
    }
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
        };
        let shown = format!("{config:?}");
        for secret in ["SECRET", "pass@", "sk-in-the-query"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
    }

    #[test]
    fn an_upstream_that_is_not_an_http_url_is_refused_before_anything_is_written() {
        let folder = tempfile::tempdir().expect("tempdir");
        let recording = folder.path().join("r.jsonl");
        for upstream in ["not a url", "ftp://example.com/v1"] {
            let error = Recorder::new(RecordConfig {
                upstream: upstream.into(),
                api_key: "k".into(),
                recording: recording.clone(),
                scenario: Scenario::new("s", UiMode::Flash, "p"),
            })
            .expect_err(upstream);
            assert!(error.to_string().starts_with("upstream: "), "{error}");
            assert!(!recording.exists(), "{upstream}: nothing written");
        }
    }
}
