//! One model call answered at any wire ([`serve`]: parse, ask the backend, answer in the wire's
//! shape, the same way at every one), and the handlers of the wires whose path says more than the
//! wire: Anthropic's Messages API (`POST /v1/messages`), OpenAI's Responses API
//! (`POST /v1/responses`), Google's Gemini API (`POST /v1beta/models/{model}:generateContent` and
//! `:streamGenerateContent`, SSE with `?alt=sse`, else one JSON array; also at `/v1/`) and AWS
//! Bedrock's Converse API (`POST /model/{modelId}/converse` and `/converse-stream`, AWS's binary
//! event stream, `transport::eventstream`), in every mode (`docs/testing-your-own-gateway.md`,
//! "The wires"); Ollama's native API (`POST /api/chat` and `/api/generate`, NDJSON unless
//! `"stream": false`) is served here too. No key or signature is checked (any is accepted) and none is ever written.
//!
//! A request's conversation is read by its wire (`request.rs`) and looked up with the key its
//! wire allows (names only at Chat Completions; `docs/replay-and-fixtures.md` §11.1): one
//! fixture serves every wire. The recorded answer goes back through that wire's renderer
//! ([`respond`]): streamed, the recorded events one by one through `model_wire`'s streaming
//! renderer (`render.rs`), keeping the recording's chunk boundaries; whole, through
//! `Wire::render_answer`; a recorded failure and every problem answer in the wire's own error
//! shape (`Wire::error_body`, `Wire::error_header`). Fixture replay, strict replay and the
//! recording proxy answer the same way.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use model_wire::chat_completions::error_message;
use model_wire::embeddings::EmbeddingsRoute;

use super::answer::{self, WireError, error_body, whole_answer};
use super::backend::{Answered, Call, Shared};
use super::problems::Problem;
use super::render::replayed_stream;
use super::request::{Framing, Target, Wire, WireRequest};
use super::routes::Route;
use replay_core::protocol::CALLER;
use replay_core::recording::RecordedEvent;

/// An error answer in the shape of `wire`; `code` is the harness's reason (OpenAI's two wires
/// carry it as OpenAI's `code`; the other wires' bodies have no code field). Bedrock's names its
/// exception in the `x-amzn-errortype` header, as boto3 reads it.
pub(super) fn wire_error(wire: Wire, status: StatusCode, message: &str, code: &str) -> Response {
    let body = Json(wire.error_body(status.as_u16(), message, Some(code)));
    match wire.error_header(status.as_u16()) {
        Some(header) => (status, [header], body).into_response(),
        None => (status, body).into_response(),
    }
}

/// `POST /v1/messages`.
pub(crate) async fn anthropic(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(Wire::AnthropicMessages, &shared, &headers, &body, None).await
}

/// `POST /v1/responses`.
pub(crate) async fn responses(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(Wire::Responses, &shared, &headers, &body, None).await
}

/// `POST /v1beta/models/{model}:generateContent` or `:streamGenerateContent` (`?alt=sse` for
/// SSE, else one JSON array), and the same at `/v1/`; `:embedContent` and `:batchEmbedContents`
/// are the embeddings boundary's (`embeddings.rs`); any other method of a model (`:countTokens`)
/// is an unserved route.
pub(crate) async fn gemini(
    State(shared): State<Arc<Shared>>,
    Path(model_action): Path<String>,
    RawQuery(query): RawQuery,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let sse = query
        .as_deref()
        .unwrap_or_default()
        .split('&')
        .any(|pair| pair == "alt=sse");
    let stream = match model_action.rsplit_once(':') {
        Some((_, "generateContent")) => None,
        Some((_, "streamGenerateContent")) if sse => Some(Framing::Sse),
        Some((_, "streamGenerateContent")) => Some(Framing::JsonArray),
        Some((model, action @ ("embedContent" | "batchEmbedContents"))) => {
            let route = match action {
                "embedContent" => EmbeddingsRoute::GeminiEmbed,
                _ => EmbeddingsRoute::GeminiBatch,
            };
            let model = Some(model);
            return super::embeddings::serve(&shared, route, model, &uri, &headers, &body).await;
        }
        _ => return unserved_response(&shared, StatusCode::NOT_FOUND, &method, &uri),
    };
    let model = model_action
        .rsplit_once(':')
        .map(|(model, _)| model.to_owned())
        .unwrap_or_default();
    let target = Target { model, stream };
    serve(Wire::Gemini, &shared, &headers, &body, Some(target)).await
}

/// `POST /model/{modelId}/converse`.
pub(crate) async fn converse(
    State(shared): State<Arc<Shared>>,
    Path(model): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let target = Target {
        model,
        stream: None,
    };
    serve(
        Wire::BedrockConverse,
        &shared,
        &headers,
        &body,
        Some(target),
    )
    .await
}

/// `POST /model/{modelId}/converse-stream`.
pub(crate) async fn converse_stream(
    State(shared): State<Arc<Shared>>,
    Path(model): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let target = Target {
        model,
        stream: Some(Framing::AwsEventStream),
    };
    serve(
        Wire::BedrockConverse,
        &shared,
        &headers,
        &body,
        Some(target),
    )
    .await
}

/// `POST /api/chat`, Ollama's native chat.
pub(crate) async fn ollama_chat(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(Wire::OllamaChat, &shared, &headers, &body, None).await
}

/// `POST /api/generate`, Ollama's native completion.
pub(crate) async fn ollama_generate(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(Wire::OllamaGenerate, &shared, &headers, &body, None).await
}

/// The answer of a complete event list (a fixture's turn as events, or a recorded call) at the
/// request's wire, the same way at every wire: streamed, every recorded event through the
/// wire's streaming renderer (`render.rs`), so the recording's chunk boundaries are the
/// client's; whole, the one answer the events spell ([`whole_answer`]) through the wire's
/// [`Wire::render_answer`]. A call whose events fail before any content fails with the recorded
/// status, as a provider refusing a request does, streaming or not; a failure the provider
/// reported inside its answer (`in_stream`) is served inside a 200 answer, as it came.
pub(super) fn respond(
    shared: &Shared,
    request: &WireRequest,
    events: &[RecordedEvent],
) -> Response {
    let identity = shared.answer_id(request.wire, &request.model);
    let failed_at_start = events
        .iter()
        .find(|event| !matches!(event, RecordedEvent::Start))
        .and_then(answer::failure)
        .is_some_and(|error| !error.in_stream);
    if request.stream && !failed_at_start {
        return replayed_stream(request.wire, &identity, request.framing, events);
    }
    match whole_answer(events) {
        Ok(answer) => Json(request.wire.render_answer(&identity, &answer)).into_response(),
        Err(error) => failure(request, &error),
    }
}

/// A recorded failure in the wire's error shape, with the recorded status (200 for one the
/// provider reported inside its answer). At OpenAI's two wires the recorded body goes back as
/// it was, so the gateway's error text, and the prompts that later quote it (a fallback
/// message, the suggestions request), are the recording's at either wire.
pub(super) fn failure(request: &WireRequest, error: &WireError) -> Response {
    let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::BAD_GATEWAY);
    if request.wire.speaks_openai_errors() {
        return (status, Json(error.body())).into_response();
    }
    let message = error_message(&error.body()).unwrap_or_else(|| error.message.clone());
    wire_error(request.wire, status, &message, "recorded_error")
}

/// One model call at `wire`, whatever the mode: fixture replay, strict replay or recording.
/// `target` is what the path says at the wires whose path names the model and the mode.
pub(super) async fn serve(
    wire: Wire,
    shared: &Arc<Shared>,
    headers: &HeaderMap,
    body: &[u8],
    target: Option<Target>,
) -> Response {
    if shared.closed.load(std::sync::atomic::Ordering::SeqCst) {
        let message = format!(
            "a model call ({}) arrived between two runs (after one run ended, before the next \
             began): it was refused, not answered from either fixture; a gateway kept across \
             fixtures (--reuse-gateway) made it after its run, e.g. from a background task",
            wire.name()
        );
        shared.report(Problem::CallBetweenRuns {
            message: message.clone(),
        });
        return wire_error(wire, StatusCode::CONFLICT, &message, "call_between_runs");
    }
    let parsed = match target {
        Some(target) => WireRequest::parse_at(wire, body, target),
        None => WireRequest::parse(wire, body),
    };
    let request = match parsed {
        Ok(request) => request,
        Err(message) => {
            let message = format!("{} request: {message}", wire.name());
            shared.report(Problem::BadRequest {
                message: message.clone(),
            });
            return wire_error(wire, StatusCode::BAD_REQUEST, &message, "invalid_request");
        }
    };
    // The caller header, or its older spelling when only that was sent.
    let caller = CALLER
        .find(|spelling| headers.get(spelling))
        .and_then(|(_, value)| value.to_str().ok())
        .map(str::to_owned);
    let call = Call {
        shared,
        request: &request,
        caller: caller.clone(),
        headers,
    };
    let (turn, answered, response) = match shared.backend.answer(call).await {
        Answered::Events(events) => (None, true, respond(shared, &request, &events)),
        Answered::Served { turn, events } => (Some(turn), true, respond(shared, &request, &events)),
        Answered::Failure(error) => (None, true, failure(&request, &error)),
        Answered::Problem {
            problem,
            status,
            code,
        } => {
            let message = problem.message().to_owned();
            shared.report(problem);
            (
                None,
                false,
                wire_error(request.wire, status, &message, code),
            )
        }
        Answered::Response(response) => (None, true, response),
    };
    // The one place a fault scenario meets a call (`faulted`): a call of no fault scenario
    // goes out as it is.
    let give_back = |turn: usize| shared.backend.give_back(turn);
    super::faulted::apply(
        &shared.faults,
        &give_back,
        &request,
        caller.as_deref(),
        turn,
        answered,
        response,
    )
    .await
}

/// A request no [`Route`] serves: an OpenAI error naming it, and a problem.
pub(super) fn unserved_response(
    shared: &Shared,
    status: StatusCode,
    method: &Method,
    uri: &Uri,
) -> Response {
    // The path only: a query string may carry a credential.
    let path = uri.path();
    let message = format!(
        "{method} {path} is not served by the model server (it serves {}); no recording answers \
         it, so the run that called it is not replayed",
        Route::listed()
    );
    shared.report(Problem::UnservedRoute {
        message: message.clone(),
        method: method.to_string(),
        path: path.to_owned(),
    });
    let body = error_body(&message, "invalid_request_error", Some("unserved_route"));
    (status, Json(body)).into_response()
}
