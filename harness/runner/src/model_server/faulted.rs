//! Fault scenarios applied at the wire (issue 42; `docs/replay-and-fixtures.md`, "Fault
//! scenarios"). The server holds every plan it was given, by the name of the fault scenario
//! (`<scenario>.<mode>@<fault-name>`); selecting that name (`POST /_keyless/reset`, or the first
//! fixture at start) makes its plan active and starts its counts afresh. [`apply`] is the one
//! place a model call meets the plan: once the backend has answered, the call is counted (the
//! run's Nth call, the caller's Nth, the recorded turn that answered it) and the first fault it
//! matches that has not fired its `times` is rendered as the call's provider would send it
//! (`model_wire::Wire::status_error`, `Wire::stream_error`): a refusal, the in-stream error
//! after N chunks of the recorded stream, a stream cut with no end marker, the recording late,
//! or no answer at all. A refused, cut or broken call gives its turn back to the replay
//! (`ReplayEngine::give_back`), so the gateway's retry is served the recording.
//!
//! A `delay` or `hang` waits at most until the run ends (the next reset) or the server stops,
//! never longer: a client that gave up costs no more than its own timeout. What fired is
//! reported with the server's state ([`FaultFired`]); a fault that never fired is a
//! [`Problem::FaultNotFired`].

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::problems::Problem;
use super::request::{Framing, WireRequest};
use crate::faults::{FaultKind, FaultPlan, Select};

/// How long a cut waits after its last chunk before it breaks the connection, so the chunks
/// reach the client first.
const FLUSH_BEFORE_BREAK: Duration = Duration::from_millis(20);

/// How often one fault fired in the run so far (`GET /_keyless/state`'s `faults`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultFired {
    /// The fault, in words (`call 1: status 429`).
    pub fault: String,
    /// How many calls it was applied to.
    pub fired: u32,
    /// How many it may be applied to.
    pub times: u32,
}

/// The active plan's counts.
#[derive(Debug, Default)]
struct Run {
    plan: Option<Arc<FaultPlan>>,
    /// Model calls of the run, in all and by caller.
    calls: u32,
    by_caller: HashMap<String, u32>,
    /// Per fault, how often it fired.
    fired: Vec<u32>,
    /// Cancelled when the run ends: a delay or a hang ends with it.
    over: CancellationToken,
}

/// The fault plans a server holds, and the active one's counts.
#[derive(Debug, Default)]
pub(super) struct Faults {
    plans: Vec<(String, Arc<FaultPlan>)>,
    run: Mutex<Run>,
}

impl Faults {
    /// The plans, each under its fault scenario's name; none active yet.
    pub(super) fn new(plans: Vec<(String, FaultPlan)>) -> Faults {
        Faults {
            plans: (plans.into_iter())
                .map(|(name, plan)| (name, Arc::new(plan)))
                .collect(),
            run: Mutex::new(Run::default()),
        }
    }

    /// A run of the fixture `name` starts: its plan, if it has one, is active with fresh
    /// counts; whatever the last run left waiting ends.
    pub(super) fn select(&self, name: Option<&str>) {
        let plan = name.and_then(|name| {
            (self.plans.iter())
                .find(|(plan_name, _)| plan_name == name)
                .map(|(_, plan)| plan.clone())
        });
        let fired = plan.as_ref().map_or(0, |plan| plan.faults.len());
        let run = Run {
            plan,
            fired: vec![0; fired],
            ..Run::default()
        };
        let old = std::mem::replace(&mut *self.run.lock(), run);
        old.over.cancel();
    }

    /// The server stops: a delay or a hang in progress ends now.
    pub(super) fn stop(&self) {
        self.run.lock().over.cancel();
    }

    /// Counts a call by `caller` answered by `turn` (an index, if the replay served one) and
    /// returns the fault it gets, if any.
    fn decide(&self, caller: &str, turn: Option<usize>) -> Option<(FaultKind, CancellationToken)> {
        let mut run = self.run.lock();
        let plan = run.plan.clone()?;
        run.calls += 1;
        let calls = run.calls;
        let of_caller = {
            let count = run.by_caller.entry(caller.to_owned()).or_default();
            *count += 1;
            *count
        };
        for (index, fault) in plan.faults.iter().enumerate() {
            if run.fired[index] >= fault.times {
                continue;
            }
            let counted = match &fault.caller {
                Some(wanted) if wanted != caller => continue,
                Some(_) => of_caller,
                None => calls,
            };
            let matches = match fault.select {
                Select::Call(n) => counted >= n,
                Select::Turn(n) => turn.is_some_and(|turn| turn + 1 == n as usize),
            };
            if matches {
                run.fired[index] += 1;
                return Some((fault.kind, run.over.clone()));
            }
        }
        None
    }

    /// What fired so far, and a problem for each fault that never did.
    pub(super) fn report(&self) -> (Vec<FaultFired>, Vec<Problem>) {
        let run = self.run.lock();
        let Some(plan) = &run.plan else {
            return (Vec::new(), Vec::new());
        };
        let mut fired = Vec::new();
        let mut problems = Vec::new();
        for (fault, &count) in plan.faults.iter().zip(&run.fired) {
            fired.push(FaultFired {
                fault: fault.to_string(),
                fired: count,
                times: fault.times,
            });
            if count == 0 {
                problems.push(Problem::FaultNotFired {
                    message: format!(
                        "the fault \"{fault}\" of the fault scenario (fixture {}) never fired: \
                         the run made {} model call(s) and none matched it, so the gateway took \
                         another path than the one under test",
                        plan.fixture, run.calls
                    ),
                });
            }
        }
        (fired, problems)
    }
}

/// One step of a faulted body.
enum Step {
    Wait(Duration),
    Send(Bytes),
    /// The connection breaks: the client sees the body end without its end.
    Break,
}

/// A body that plays `steps`; a wait ends early, breaking the body, when `over` is cancelled.
fn played(steps: VecDeque<Step>, over: CancellationToken) -> Body {
    let stream = futures::stream::unfold((steps, over), |(mut steps, over)| async move {
        loop {
            match steps.pop_front()? {
                Step::Wait(wait) => {
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        () = over.cancelled() => {
                            return Some((Err(broken()), (VecDeque::new(), over)));
                        }
                    }
                }
                Step::Send(bytes) => return Some((Ok(bytes), (steps, over))),
                Step::Break => return Some((Err(broken()), (VecDeque::new(), over))),
            }
        }
    });
    Body::from_stream(stream)
}

fn broken() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::ConnectionAborted,
        "the fault scenario broke the connection",
    )
}

/// Waits `wait`, or until `over`; whether the wait ran its course.
async fn waited(wait: Duration, over: &CancellationToken) -> bool {
    tokio::select! {
        () = tokio::time::sleep(wait) => true,
        () = over.cancelled() => false,
    }
}

/// A response whose body breaks at once (a wait the run's end cut short).
fn broken_response() -> Response {
    (
        StatusCode::OK,
        played(VecDeque::from([Step::Break]), CancellationToken::new()),
    )
        .into_response()
}

/// A stream's body split into what went out as one piece: SSE events, event-stream messages,
/// NDJSON lines, or a JSON array's elements.
enum Pieces {
    Framed(Vec<Bytes>),
    JsonArray(Vec<String>),
}

/// Splits a streamed answer's body as its framing sends it.
fn pieces(framing: Framing, body: &Bytes) -> Pieces {
    match framing {
        Framing::Sse => {
            let mut pieces = Vec::new();
            let mut start = 0;
            let mut at = 0;
            while at < body.len() {
                let end = if body[at..].starts_with(b"\r\n\r\n") {
                    Some(at + 4)
                } else if body[at..].starts_with(b"\n\n") {
                    Some(at + 2)
                } else {
                    None
                };
                match end {
                    Some(end) => {
                        pieces.push(body.slice(start..end));
                        start = end;
                        at = end;
                    }
                    None => at += 1,
                }
            }
            if start < body.len() {
                pieces.push(body.slice(start..));
            }
            Pieces::Framed(pieces)
        }
        Framing::AwsEventStream => {
            let mut pieces = Vec::new();
            let mut start = 0;
            while start + 4 <= body.len() {
                let length = u32::from_be_bytes([
                    body[start],
                    body[start + 1],
                    body[start + 2],
                    body[start + 3],
                ]) as usize;
                let end = (start + length.max(4)).min(body.len());
                pieces.push(body.slice(start..end));
                start = end;
            }
            Pieces::Framed(pieces)
        }
        // One piece per line, its `\n` kept.
        Framing::Ndjson => {
            let mut pieces = Vec::new();
            let mut start = 0;
            for (at, byte) in body.iter().enumerate() {
                if *byte == b'\n' {
                    pieces.push(body.slice(start..=at));
                    start = at + 1;
                }
            }
            if start < body.len() {
                pieces.push(body.slice(start..));
            }
            Pieces::Framed(pieces)
        }
        Framing::JsonArray => {
            let elements = serde_json::from_slice::<Vec<serde_json::Value>>(body)
                .unwrap_or_default()
                .iter()
                .map(serde_json::Value::to_string)
                .collect();
            Pieces::JsonArray(elements)
        }
    }
}

/// The steps of a streamed answer under `kind`: its first pieces, then the fault.
fn stream_steps(request: &WireRequest, body: &Bytes, kind: FaultKind) -> VecDeque<Step> {
    let pieces = pieces(request.framing, body);
    let total = match &pieces {
        Pieces::Framed(framed) => framed.len(),
        Pieces::JsonArray(elements) => elements.len(),
    };
    // A cut or an error never lets the last piece out: it is the stream's end marker
    // (`[DONE]`, `message_stop`, `response.completed`, the last chunk with its finish reason).
    let (sent, between) = match kind {
        FaultKind::StreamError { after_chunks } | FaultKind::Cut { after_chunks } => {
            (after_chunks.min(total.saturating_sub(1)), Duration::ZERO)
        }
        FaultKind::Delay { between_chunks, .. } => (total, between_chunks),
        FaultKind::Status { .. } | FaultKind::Hang => (total, Duration::ZERO),
    };
    let mut steps = VecDeque::new();
    let mut push = |index: usize, bytes: Bytes| {
        if index > 0 && !between.is_zero() {
            steps.push_back(Step::Wait(between));
        }
        steps.push_back(Step::Send(bytes));
    };
    match pieces {
        Pieces::Framed(framed) => {
            for (index, piece) in framed.into_iter().take(sent).enumerate() {
                push(index, piece);
            }
        }
        Pieces::JsonArray(elements) => {
            for (index, element) in elements.into_iter().take(sent).enumerate() {
                let lead = if index == 0 { "[" } else { ",\r\n" };
                push(index, Bytes::from(format!("{lead}{element}")));
            }
            if sent == total && total > 0 {
                steps.push_back(Step::Send(Bytes::from_static(b"]")));
            } else if sent == 0 && !matches!(kind, FaultKind::Cut { .. }) {
                steps.push_back(Step::Send(Bytes::from_static(b"[")));
            }
        }
    }
    match kind {
        FaultKind::StreamError { .. } => {
            let error = request.wire.stream_error("resp_keyless_fault", sent);
            let framed = super::render::in_stream_error(error, request.framing, sent);
            steps.push_back(Step::Send(framed));
        }
        FaultKind::Cut { .. } => {
            // The chunks go out before the break: hyper flushes what it holds only when the
            // body waits, so a break right after them would lose them (and the client, having
            // seen no answer, would retry a connection error instead of reading a cut stream).
            steps.push_back(Step::Wait(FLUSH_BEFORE_BREAK));
            steps.push_back(Step::Break);
        }
        _ => {}
    }
    steps
}

/// The refusal `status` as the request's provider sends it.
fn refusal(request: &WireRequest, status: u16, retry_after: Option<u32>) -> Response {
    let refused = request.wire.status_error(status, retry_after);
    let code = StatusCode::from_u16(refused.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (code, axum::Json(refused.body)).into_response();
    for (name, value) in refused.headers {
        if let Ok(value) = HeaderValue::from_str(&value) {
            response
                .headers_mut()
                .insert(HeaderName::from_static(name), value);
        }
    }
    response
}

/// The answer to a model call under the active fault plan: `response` as the backend's answer
/// was rendered, or what the first matching fault makes of it. `turn` is the recorded turn
/// that answered (fixture replay); `answered` says whether the backend answered at all (a miss
/// or another problem is no call a fault applies to, though it is counted).
pub(super) async fn apply(
    faults: &Faults,
    give_back: &(dyn Fn(usize) + Sync),
    request: &WireRequest,
    caller: Option<&str>,
    turn: Option<usize>,
    answered: bool,
    response: Response,
) -> Response {
    let caller = caller.unwrap_or(replay_core::DEFAULT_CALLER);
    let Some((kind, over)) = faults.decide(caller, turn) else {
        return response;
    };
    if !answered {
        return response;
    }
    if let (Some(turn), false) = (turn, matches!(kind, FaultKind::Delay { .. })) {
        give_back(turn);
    }
    match kind {
        FaultKind::Status {
            status,
            retry_after,
        } => refusal(request, status, retry_after),
        FaultKind::Hang => {
            over.cancelled().await;
            broken_response()
        }
        FaultKind::Delay { first_byte, .. } if !request.stream => {
            if waited(first_byte, &over).await {
                response
            } else {
                broken_response()
            }
        }
        FaultKind::StreamError { .. } if !request.stream => refusal(request, 500, None),
        FaultKind::Cut { .. } if !request.stream => {
            let (parts, body) = response.into_parts();
            let bytes = axum::body::to_bytes(body, usize::MAX)
                .await
                .unwrap_or_default();
            let half = bytes.slice(..bytes.len() / 2);
            let steps = VecDeque::from([
                Step::Send(half),
                Step::Wait(FLUSH_BEFORE_BREAK),
                Step::Break,
            ]);
            Response::from_parts(parts, played(steps, over))
        }
        FaultKind::StreamError { .. } | FaultKind::Cut { .. } | FaultKind::Delay { .. } => {
            let (mut parts, body) = response.into_parts();
            let bytes = axum::body::to_bytes(body, usize::MAX)
                .await
                .unwrap_or_default();
            if !parts.status.is_success() {
                // A recorded failure is no stream to break: it goes out as recorded.
                return Response::from_parts(parts, Body::from(bytes));
            }
            if let FaultKind::Delay { first_byte, .. } = kind
                && !waited(first_byte, &over).await
            {
                return broken_response();
            }
            parts.headers.remove(header::CONTENT_LENGTH);
            let steps = stream_steps(request, &bytes, kind);
            Response::from_parts(parts, played(steps, over))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::Fault;

    fn plan(faults: Vec<Fault>) -> Faults {
        let faults = Faults::new(vec![(
            "s.flash@f".to_owned(),
            FaultPlan {
                fixture: "s.flash".to_owned(),
                faults,
            },
        )]);
        faults.select(Some("s.flash@f"));
        faults
    }

    fn fault(select: Select, caller: Option<&str>, times: u32) -> Fault {
        Fault {
            select,
            caller: caller.map(str::to_owned),
            kind: FaultKind::Hang,
            times,
        }
    }

    #[test]
    fn a_fault_fires_on_its_calls_times_times_then_the_recording_answers() {
        // (fault, the calls in order as (caller, turn), which of them fire)
        type Calls = Vec<(&'static str, Option<usize>)>;
        let cases: Vec<(Fault, Calls, Vec<bool>)> = vec![
            (
                fault(Select::Call(1), None, 1),
                vec![("lead_agent", Some(0)); 3],
                vec![true, false, false],
            ),
            (
                fault(Select::Call(2), None, 2),
                vec![("lead_agent", Some(0)); 4],
                vec![false, true, true, false],
            ),
            (
                fault(Select::Call(1), Some("title"), 1),
                vec![
                    ("lead_agent", Some(0)),
                    ("title", Some(1)),
                    ("title", Some(1)),
                ],
                vec![false, true, false],
            ),
            (
                fault(Select::Turn(2), None, 2),
                vec![
                    ("lead_agent", Some(0)),
                    ("lead_agent", Some(1)),
                    ("lead_agent", Some(1)),
                    ("lead_agent", Some(1)),
                ],
                vec![false, true, true, false],
            ),
        ];
        for (fault, calls, fires) in cases {
            let name = fault.to_string();
            let faults = plan(vec![fault]);
            let fired: Vec<bool> = (calls.iter())
                .map(|(caller, turn)| faults.decide(caller, *turn).is_some())
                .collect();
            assert_eq!(fired, fires, "{name}");
        }
    }

    #[test]
    fn a_fault_that_never_fired_is_a_problem_and_no_plan_counts_nothing() {
        let faults = plan(vec![fault(Select::Call(5), None, 1)]);
        assert!(faults.decide("lead_agent", Some(0)).is_none());
        let (fired, problems) = faults.report();
        assert_eq!(fired[0].fired, 0);
        assert!(
            problems[0]
                .message()
                .contains("never fired: the run made 1 model call(s)"),
            "{}",
            problems[0].message()
        );
        faults.select(Some("s.flash"));
        assert!(faults.decide("lead_agent", Some(0)).is_none());
        assert_eq!(faults.report(), (Vec::new(), Vec::new()));
    }

    #[test]
    fn a_new_run_ends_the_last_ones_wait() {
        let faults = plan(vec![fault(Select::Call(1), None, 1)]);
        let (_, over) = faults.decide("lead_agent", None).expect("fires");
        assert!(!over.is_cancelled());
        faults.select(Some("s.flash@f"));
        assert!(over.is_cancelled());
    }

    #[test]
    fn a_stream_is_split_as_it_was_framed() {
        let sse = Bytes::from_static(b"data: 1\n\ndata: 2\r\n\r\ndata: [DONE]\n\n");
        let Pieces::Framed(framed) = pieces(Framing::Sse, &sse) else {
            panic!("framed");
        };
        assert_eq!(
            framed,
            ["data: 1\n\n", "data: 2\r\n\r\n", "data: [DONE]\n\n"]
        );
        let array = Bytes::from_static(b"[{\"a\":1},\r\n{\"b\":2}]");
        let Pieces::JsonArray(elements) = pieces(Framing::JsonArray, &array) else {
            panic!("array");
        };
        assert_eq!(elements, ["{\"a\":1}", "{\"b\":2}"]);
        let ndjson = Bytes::from_static(b"{\"a\":1}\n{\"done\":true}\n");
        let Pieces::Framed(lines) = pieces(Framing::Ndjson, &ndjson) else {
            panic!("lines");
        };
        assert_eq!(lines, ["{\"a\":1}\n", "{\"done\":true}\n"]);
    }
}

/// The plan over real HTTP: what a client waiting on a `hang` or a long `delay` costs.
#[cfg(test)]
mod served {
    use std::path::PathBuf;
    use std::time::{Duration, Instant};

    use super::super::{Mode, ModelServer, ServerOptions};
    use crate::faults::{Fault, FaultKind, FaultPlan, Select};

    fn fixture() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/write_read_file.flash.json")
    }

    /// The first recorded turn's request at Chat Completions, streamed.
    fn first_call() -> String {
        let fixture = replay_core::Fixture::load(&fixture()).expect("fixture");
        let canonical = fixture.turns[0].canonical.as_deref().expect("canonical");
        let entries: Vec<serde_json::Value> = serde_json::from_str(canonical).expect("entries");
        let messages: Vec<serde_json::Value> = (entries.iter())
            .map(|entry| {
                serde_json::json!({"role": "user", "content": entry["content"], "name": entry["name"]})
            })
            .collect();
        serde_json::json!({"model": "m", "stream": true, "messages": messages}).to_string()
    }

    async fn server_with(kind: FaultKind) -> ModelServer {
        let plan = FaultPlan {
            fixture: "write_read_file.flash".to_owned(),
            faults: vec![Fault {
                select: Select::Call(1),
                caller: None,
                kind,
                times: 1,
            }],
        };
        let options = ServerOptions {
            faults: vec![("write_read_file.flash".to_owned(), plan)],
            ..ServerOptions::default()
        };
        ModelServer::start(Mode::Fixtures(vec![fixture()]), options)
            .await
            .expect("model server")
    }

    #[tokio::test]
    async fn a_client_that_gives_up_on_a_hang_or_a_long_delay_costs_its_own_timeout() {
        let kinds = [
            FaultKind::Hang,
            FaultKind::Delay {
                first_byte: Duration::from_secs(40),
                between_chunks: Duration::ZERO,
            },
        ];
        for kind in kinds {
            let server = server_with(kind).await;
            let client = reqwest::Client::builder()
                .timeout(Duration::from_secs(1))
                .build()
                .expect("client");
            let started = Instant::now();
            let answer = client
                .post(format!("{}/v1/chat/completions", server.url()))
                .header("content-type", "application/json")
                .body(first_call())
                .send()
                .await;
            assert!(
                answer.as_ref().is_err_and(reqwest::Error::is_timeout),
                "{kind:?}: {answer:?}"
            );
            // Nothing is held once the client left: the server stops at once, not after its grace.
            let stopping = Instant::now();
            server.stop().await.expect("stop");
            assert!(
                stopping.elapsed() < Duration::from_millis(1500),
                "{kind:?}: the stop took {:?}",
                stopping.elapsed()
            );
            assert!(started.elapsed() < Duration::from_secs(3), "{kind:?}");
        }
    }

    /// At Ollama's native wire a fault is Ollama's: a refusal is `{"error": "..."}` with the
    /// status, and an in-stream error the NDJSON stream's last line, `{"error": "..."}`, after
    /// the chunks it let out.
    #[tokio::test]
    async fn an_ollama_fault_is_an_error_object_as_the_body_or_the_last_line() {
        let client = reqwest::Client::new();
        let body = first_call();
        let refused_server = server_with(FaultKind::Status {
            status: 503,
            retry_after: None,
        })
        .await;
        let refused = (client.post(format!("{}/api/chat", refused_server.url())))
            .body(body.clone())
            .send()
            .await
            .expect("answered");
        assert_eq!(refused.status(), 503);
        let error: serde_json::Value = refused.json().await.expect("json");
        assert!(error["error"].is_string(), "{error}");
        refused_server.stop().await.expect("stop");

        let server = server_with(FaultKind::StreamError { after_chunks: 1 }).await;
        let streamed = (client.post(format!("{}/api/chat", server.url())))
            .body(body)
            .send()
            .await
            .expect("answered");
        assert_eq!(streamed.status(), 200);
        let text = streamed.text().await.expect("body");
        let lines: Vec<serde_json::Value> = (text.lines())
            .map(|line| serde_json::from_str(line).expect("one JSON object a line"))
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(lines[0]["done"], false, "{text}");
        assert!(lines[1]["error"].is_string(), "{text}");
        server.stop().await.expect("stop");
    }

    #[tokio::test]
    async fn a_status_fault_answers_the_wires_refusal_then_the_retry_the_recording() {
        let server = server_with(FaultKind::Status {
            status: 429,
            retry_after: Some(2),
        })
        .await;
        let client = reqwest::Client::new();
        let call = || {
            client
                .post(format!("{}/v1/chat/completions", server.url()))
                .header("content-type", "application/json")
                .body(first_call())
                .send()
        };
        let refused = call().await.expect("answered");
        assert_eq!(refused.status(), 429);
        let header = |name: &str| {
            refused
                .headers()
                .get(name)
                .map(|value| value.to_str().unwrap_or_default().to_owned())
        };
        assert_eq!(
            (header("retry-after"), header("retry-after-ms")),
            (Some("2".to_owned()), Some("2000".to_owned()))
        );
        let body: serde_json::Value = refused.json().await.expect("json");
        assert_eq!(body["error"]["code"], "rate_limit_exceeded");
        let retried = call().await.expect("answered");
        assert_eq!(retried.status(), 200);
        assert!(retried.text().await.expect("body").contains("data: [DONE]"));
        let state = server
            .client()
            .expect("client")
            .state()
            .await
            .expect("state");
        assert_eq!(state.faults[0].fired, 1);
        assert!(state.problems.is_empty(), "{:?}", state.problems);
        server.stop().await.expect("stop");
    }
}
