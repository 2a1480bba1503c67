//! The `embeddings` boundary (`docs/replay-and-fixtures.md` §12.6): every provider's embeddings
//! route served through the shared exchange engine (`replay_core::exchange`), in every mode the
//! other boundaries are.
//!
//! - **Routes** ([`EmbeddingsRoute`]): OpenAI `POST /v1/embeddings` (and `/embeddings`), Ollama
//!   `POST /api/embed` and `/api/embeddings`, Gemini `:embedContent` and `:batchEmbedContents`
//!   (beside `:generateContent`, `wires.rs`), Bedrock `POST /model/{id}/invoke` on a Titan
//!   Text Embeddings or Cohere Embed model.
//! - **Key** ([`EmbeddingsBoundary`]): the caller (the caller header, else `lead_agent`, as a chat
//!   call's), and the codec's canonical call (`{"model", "inputs", "dimensions", "options"}`),
//!   each input text normalised by the engine as a conversation's text is; a batch is one call;
//!   the answer's encoding is not part of it.
//! - **Answer**: the recorded vectors (stored as `CompactVector`s) rendered in the form the
//!   request asked for (float lists, or OpenAI's base64), bit for bit the recorded f32s. A
//!   failure the upstream answered while recording is stored as its status and body, and one it
//!   never answered (unreachable, no vectors) as a 502 in the wire's shape; either is replayed
//!   so.
//! - **Miss**: the wire's own error (the status and body a chat miss at that wire gets, code
//!   `replay_miss`) whose message is the engine's diagnostic (the call, the nearest recorded
//!   call, the first differing input), reported to the run's ledger as an `exchange_miss`.
//! - **Recording**: forwarded to the model proxy's upstream with the proxy's key (or SigV4 at
//!   Bedrock, as Converse is signed), the gateway's own credentials never passed on, the
//!   exchange written through the recorder (every known secret removed), and the gateway
//!   answered from what was written.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use model_wire::Wire;
use model_wire::embeddings::{
    EmbeddingsRequest, EmbeddingsRoute, answer_from_recorded, read_answer, recorded_answer,
    render_answer,
};
use replay_core::protocol::CALLER;
use replay_core::{Boundary, BoundaryKind, DEFAULT_CALLER, ExchangeCall, ExchangeReplay};
use serde_json::{Value, json};

use super::backend::Shared;
use super::exchanges::{ExchangeRecorder, Exchanges};
use super::problems::Problem;

/// The most of an upstream's embeddings answer read while recording (a batch of 1536-dimension
/// vectors as decimals is ~30 KB a vector).
const MAX_ANSWER_BYTES: usize = 64 * 1024 * 1024;

/// The embeddings boundary's rules for reading a call ([`Boundary`]), for one caller (the
/// caller header's value, else the default caller: nothing in the body names it).
#[derive(Debug, Clone, Copy)]
pub(super) struct EmbeddingsBoundary<'a> {
    /// Who made the call.
    pub(super) caller: &'a str,
}

impl Boundary for EmbeddingsBoundary<'_> {
    type Request = EmbeddingsRequest;

    fn kind(&self) -> BoundaryKind {
        BoundaryKind::Embeddings
    }

    fn caller(&self, _request: &EmbeddingsRequest) -> String {
        self.caller.to_owned()
    }

    fn label(&self, request: &EmbeddingsRequest) -> String {
        format!("{} {}", request.route.name(), request.model)
    }

    fn canonical(&self, request: &EmbeddingsRequest) -> Value {
        request.canonical()
    }
}

/// An error in the shape of `wire` (the chat wire of the route's provider).
fn wire_error(wire: Wire, status: StatusCode, message: &str, code: &str) -> Response {
    let body = Json(wire.error_body(status.as_u16(), message, Some(code)));
    match wire.error_header(status.as_u16()) {
        Some(header) => (status, [header], body).into_response(),
        None => (status, body).into_response(),
    }
}

/// `POST /v1/embeddings` (and `/embeddings`).
pub(super) async fn openai(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(
        &shared,
        EmbeddingsRoute::OpenAi,
        None,
        &uri,
        &headers,
        &body,
    )
    .await
}

/// `POST /api/embed`.
pub(super) async fn ollama_embed(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(
        &shared,
        EmbeddingsRoute::OllamaEmbed,
        None,
        &uri,
        &headers,
        &body,
    )
    .await
}

/// `POST /api/embeddings`.
pub(super) async fn ollama_embeddings(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let route = EmbeddingsRoute::OllamaEmbeddings;
    serve(&shared, route, None, &uri, &headers, &body).await
}

/// `POST /model/{modelId}/invoke`: an embeddings model's (Titan, Cohere) call; any other
/// model's is an unserved route (no recording answers a text model's InvokeModel).
pub(super) async fn bedrock_invoke(
    State(shared): State<Arc<Shared>>,
    Path(model): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(route) = EmbeddingsRoute::bedrock(&model) else {
        let message = format!(
            "{method} {}: InvokeModel is served for embeddings models only (amazon.titan-embed-…, \
             cohere.embed-…), not {model:?}; call a chat model through Converse",
            uri.path()
        );
        shared.report(Problem::UnservedRoute {
            message: message.clone(),
            method: method.to_string(),
            path: uri.path().to_owned(),
        });
        let wire = Wire::BedrockConverse;
        return wire_error(wire, StatusCode::NOT_FOUND, &message, "unserved_route");
    };
    serve(&shared, route, Some(&model), &uri, &headers, &body).await
}

/// One embeddings call at `route`, whatever the mode. `path_model` is the model the path
/// names (Gemini, Bedrock).
pub(super) async fn serve(
    shared: &Arc<Shared>,
    route: EmbeddingsRoute,
    path_model: Option<&str>,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    let wire = route.wire();
    if shared.closed.load(std::sync::atomic::Ordering::SeqCst) {
        let message = format!(
            "an embeddings call ({}) arrived between two runs: it was refused, not answered from \
             either fixture; a gateway kept across fixtures (--reuse-gateway) made it after its \
             run, e.g. from a background task",
            route.name()
        );
        shared.report(Problem::CallBetweenRuns {
            message: message.clone(),
        });
        return wire_error(wire, StatusCode::CONFLICT, &message, "call_between_runs");
    }
    let parsed = serde_json::from_slice::<Value>(body)
        .map_err(|err| format!("the body is not JSON: {err}"))
        .and_then(|body| {
            EmbeddingsRequest::parse(route, path_model, &body).map_err(|err| err.to_string())
        });
    let request = match parsed {
        Ok(request) => request,
        Err(reason) => {
            let message = format!("{} request: {reason}", route.name());
            shared.report(Problem::BadRequest {
                message: message.clone(),
            });
            return wire_error(wire, StatusCode::BAD_REQUEST, &message, "invalid_request");
        }
    };
    let caller = CALLER
        .find(|spelling| headers.get(spelling))
        .and_then(|(_, value)| value.to_str().ok())
        .unwrap_or(DEFAULT_CALLER);
    let call = ExchangeCall::read(&EmbeddingsBoundary { caller }, &request);
    match shared.backend.exchanges() {
        Exchanges::Replay(replay) if !recorded_any(&replay) => {
            let message = format!(
                "POST {}: the fixture records no embeddings call ({}), so none is replayed; \
                 record the run through the model server's proxy (`keyless record`) to serve it",
                uri.path(),
                call.label()
            );
            unserved(shared, uri, wire, message)
        }
        Exchanges::Replay(replay) => match replay.lookup(&call) {
            Ok(served) => answer(&request, &served.exchange.answer),
            Err(miss) => {
                let message = miss.to_string();
                shared.report(Problem::exchange_miss(*miss));
                wire_error(wire, StatusCode::BAD_REQUEST, &message, "replay_miss")
            }
        },
        Exchanges::Record(recorder) => {
            record(shared, &recorder, &request, call, headers, body).await
        }
        Exchanges::Unserved(mode) => {
            let message = format!(
                "POST {}: the model server in {mode} mode replays no embeddings call (a \
                 recording holds chat calls only; replay its fixture instead)",
                uri.path()
            );
            unserved(shared, uri, wire, message)
        }
    }
}

/// Whether the active fixture recorded any embeddings call: one that recorded none answers an
/// embeddings call as an unserved route (the route was never recorded), not as a miss.
fn recorded_any(replay: &ExchangeReplay) -> bool {
    (replay.exchanges().iter()).any(|exchange| exchange.boundary == BoundaryKind::Embeddings)
}

/// An embeddings call no recording can answer: an `unserved_route` problem naming the route,
/// answered `404` in the wire's shape.
fn unserved(shared: &Shared, uri: &Uri, wire: Wire, message: String) -> Response {
    shared.report(Problem::UnservedRoute {
        message: message.clone(),
        method: Method::POST.to_string(),
        path: uri.path().to_owned(),
    });
    wire_error(wire, StatusCode::NOT_FOUND, &message, "unserved_route")
}

/// The recorded answer in the form `request` asked for: the vectors rendered, or a recorded
/// failure's status and body as they came.
fn answer(request: &EmbeddingsRequest, recorded: &Value) -> Response {
    if let Some(status) = recorded.get("status").and_then(Value::as_u64) {
        let status = u16::try_from(status)
            .ok()
            .and_then(|status| StatusCode::from_u16(status).ok())
            .unwrap_or(StatusCode::BAD_GATEWAY);
        let body = recorded.get("body").cloned().unwrap_or(Value::Null);
        return (status, Json(body)).into_response();
    }
    match answer_from_recorded(recorded) {
        Ok(embedded) => Json(render_answer(request, &embedded)).into_response(),
        Err(err) => wire_error(
            request.route.wire(),
            StatusCode::BAD_GATEWAY,
            &format!("the recorded embeddings answer cannot be read: {err}"),
            "bad_exchange",
        ),
    }
}

/// Recording: forwards the call to the proxy's upstream, writes the exchange (vectors compact;
/// a failure as its status and body), answers from what was written.
async fn record(
    shared: &Shared,
    recorder: &ExchangeRecorder,
    request: &EmbeddingsRequest,
    call: ExchangeCall,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    let wire = request.route.wire();
    let recorded = match forward(recorder, request, headers, body).await {
        Ok(recorded) => recorded,
        // As the HTTP boundary's: a failure to get an answer is an answer too (502 in the
        // wire's shape), recorded and replayed as the upstream's, so the replay fails the way
        // the live run did.
        Err(reason) => {
            let message = format!("{} upstream: {reason}", request.route.name());
            let status = StatusCode::BAD_GATEWAY.as_u16();
            let body = wire.error_body(status, &message, Some("upstream_error"));
            json!({"status": status, "body": body})
        }
    };
    match recorder.write(call.answered(recorded)) {
        Ok(written) => answer(request, &written.answer),
        Err(err) => {
            let message = format!("the embeddings exchange could not be recorded: {err}");
            shared.report(Problem::RecordingWrite {
                message: message.clone(),
            });
            wire_error(wire, StatusCode::BAD_GATEWAY, &message, "recording_write")
        }
    }
}

/// The upstream's answer as the exchange records it: `{"vectors", "prompt_tokens"}`, or
/// `{"status", "body"}` for a failure status; `Err` when no answer could be had (unreachable,
/// too large, no vectors where the route carries them).
async fn forward(
    recorder: &ExchangeRecorder,
    request: &EmbeddingsRequest,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Value, String> {
    let upstream = recorder
        .upstream()
        .ok_or("no model upstream is configured")?;
    let route = request.route;
    let path = route.call_path(&request.model);
    let outgoing = upstream
        .post(
            route.wire(),
            &path,
            "application/json",
            body.to_vec(),
            headers,
        )
        .map_err(|err| err.to_string())?;
    let answered = outgoing.send().await.map_err(|err| err.to_string())?;
    let status = answered.status();
    let (bytes, whole) = transport::read_capped(answered.bytes_stream(), MAX_ANSWER_BYTES)
        .await
        .map_err(|err| err.to_string())?;
    if !whole {
        return Err(format!("the answer is over {MAX_ANSWER_BYTES} bytes"));
    }
    let parsed: Value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| json!(String::from_utf8_lossy(&bytes).into_owned()));
    if !status.is_success() {
        return Ok(json!({"status": status.as_u16(), "body": parsed}));
    }
    let embedded = read_answer(route, &parsed).map_err(|err| err.to_string())?;
    Ok(recorded_answer(&embedded))
}
