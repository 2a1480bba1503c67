//! One model call answered at any wire ([`serve`]: parse, ask the backend, answer in the wire's
//! shape), and the wires' routes. Chat Completions is answered by `answer.rs`'s renderer
//! ([`respond_at`]); the others, Anthropic's Messages API
//! (`POST /v1/messages`), OpenAI's Responses API (`POST /v1/responses`), Google's Gemini API
//! (`POST /v1beta/models/{model}:generateContent` and `:streamGenerateContent`, SSE with
//! `?alt=sse`, else one JSON array; also at `/v1/`), AWS Bedrock's Converse API (`POST
//! /model/{modelId}/converse` and `/converse-stream`, AWS's binary event stream,
//! `transport::eventstream`) and Ollama's native API (`POST /api/chat` and `/api/generate`,
//! NDJSON unless `"stream": false`), in every mode (`docs/testing-your-own-gateway.md`, "The wires"):
//! their routes, answers and error shapes. No key or signature is checked (any is accepted)
//! and none is ever written. [`respond`] and [`failure`] are never called for Chat Completions;
//! were they, they answer in the Responses shape, the nearest, rather than fail.
//!
//! A request's conversation is rebuilt with `replay_core::messages_from_anthropic`,
//! `messages_from_responses`, `messages_from_gemini`, `messages_from_converse`,
//! `messages_from_ollama` (`messages_from_ollama_prompt` at `/api/generate`) and looked up
//! with the name-free key
//! (`ReplayEngine::lookup_at_wire_without_names`, `docs/replay-and-fixtures.md` §11.1), since
//! none of these wires carries message names: one fixture serves all five wires. The recorded
//! answer goes back through that wire's renderer (`model_wire::Wire::render_answer`,
//! `render_stream`): a whole answer, or its stream, with tool calls, reasoning where recorded
//! and usage; a recorded failure and every problem answer in the wire's own error shape
//! (`Wire::error_body`, `Wire::error_header`). Strict replay of a recording and the recording proxy serve these wires
//! too ([`serve`], `record`): a recorded call's `done` message or `error` is answered the
//! same way ([`respond`]).

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use model_wire::RenderedStream;
use model_wire::chat_completions::{Answer as WireAnswer, Identity, error_message};
use serde_json::Value;

use super::answer::{self, Completion, WireError, completion, error_body};
use super::backend::{Answered, Call, Shared};
use super::problems::Problem;
use super::request::{Framing, Target, Wire, WireRequest};
use super::routes::Route;
use super::shared::CALLER_HEADER;
use replay_core::recording::RecordedEvent;
use transport::eventstream::{event_frame, exception_frame};

/// An error answer in the shape of `wire`; `code` is the harness's reason (Responses carries it
/// as OpenAI's `code`; the other wires' bodies have no code field). Bedrock's names its
/// exception in the `x-amzn-errortype` header, as boto3 reads it.
pub(super) fn error(wire: Wire, status: StatusCode, message: &str, code: &str) -> Response {
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
/// SSE, else one JSON array), and the same at `/v1/`; any other method of a model (`:countTokens`,
/// `:embedContent`) is an unserved route.
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

/// An NDJSON body (Ollama's stream): each line one JSON object and `\n`.
pub(super) fn ndjson_response(body: impl Into<axum::body::Body>) -> Response {
    (
        [(header::CONTENT_TYPE, model_wire::NDJSON_CONTENT_TYPE)],
        body.into(),
    )
        .into_response()
}

/// A Gemini stream of `chunks`: SSE `data:` frames (no end marker), or one JSON array.
fn gemini_stream(framing: Framing, chunks: &[Value]) -> Response {
    match framing {
        Framing::JsonArray => {
            let elements: Vec<String> = chunks.iter().map(Value::to_string).collect();
            (
                [(header::CONTENT_TYPE, "application/json; charset=UTF-8")],
                format!("[{}]", elements.join(",\r\n")),
            )
                .into_response()
        }
        Framing::Sse | Framing::AwsEventStream | Framing::Ndjson => sse_response(
            chunks
                .iter()
                .map(|chunk| format!("data: {chunk}\r\n\r\n"))
                .collect::<String>(),
        ),
    }
}

/// An event stream body of `frames`.
fn event_stream(frames: Vec<Bytes>) -> Response {
    (
        [(header::CONTENT_TYPE, model_wire::EVENT_STREAM_CONTENT_TYPE)],
        frames.concat(),
    )
        .into_response()
}

/// The answer of a complete event list (a fixture's turn as events, or a recorded call): the
/// `done` event's AI message in the wire's format, or the `error` event in its error shape.
/// The message is rendered again from the assembled answer, so a recorded stream's chunk
/// boundaries are not kept at these wires (they are at Chat Completions).
pub(super) fn respond(
    shared: &Shared,
    request: &WireRequest,
    events: &[RecordedEvent],
) -> Response {
    if let Some(error) = events.iter().find_map(answer::failure) {
        return failure(shared, request, &error);
    }
    match events.iter().find_map(answer::done_answer) {
        Some(done) => answer(shared, request, &done),
        None => failure(
            shared,
            request,
            &WireError::new(None, "", "the recorded answer has no done event", false),
        ),
    }
}

fn identity(wire: Wire, shared: &Shared, model: &str) -> Identity {
    let mut identity = shared.answer_id(model);
    let number = identity.id.rsplit('-').next().unwrap_or("0").to_owned();
    identity.id = match wire {
        Wire::AnthropicMessages => format!("msg_replay_{number}"),
        _ => format!("replay_{number}"),
    };
    identity
}

/// The recorded AI message in the wire's format, whole or streamed, as the wire's renderer
/// writes it ([`Wire::render_answer`], [`Wire::render_stream`]).
fn answer(shared: &Shared, request: &WireRequest, answer: &WireAnswer) -> Response {
    // [`respond_at`] answers Chat Completions with `answer.rs`'s renderer, keeping a recording's chunk
    // boundaries; were it to come here, it is answered in the Responses shape, the nearest.
    let wire = match request.wire {
        Wire::ChatCompletions => Wire::Responses,
        wire => wire,
    };
    let identity = identity(wire, shared, &request.model);
    if !request.stream {
        return Json(wire.render_answer(&identity, answer)).into_response();
    }
    streamed(request.framing, wire.render_stream(&identity, answer, &[]))
}

/// A rendered stream framed as its wire sends it: SSE, Gemini's chunks in the framing the
/// client asked for, or Converse's event-stream messages (and the exception that ends a failed
/// one).
fn streamed(framing: Framing, stream: RenderedStream) -> Response {
    match stream {
        RenderedStream::Sse(body) => sse_response(body),
        RenderedStream::Chunks(chunks) => gemini_stream(framing, &chunks),
        RenderedStream::Lines(lines) => ndjson_response(
            lines
                .iter()
                .map(|line| format!("{line}\n"))
                .collect::<String>(),
        ),
        RenderedStream::Events { events, exception } => {
            let mut frames: Vec<Bytes> = events
                .iter()
                .map(|event| event_frame(event.name, &event.payload))
                .collect();
            if let Some(exception) = exception {
                frames.push(exception_frame(
                    exception.exception_type,
                    &exception.message,
                ));
            }
            event_stream(frames)
        }
    }
}

/// A recorded failure in the wire's error shape: the recorded status and message; one the
/// provider reported inside its answer (`in_stream`) is, on a stream, the wire's `error` event
/// after the answer's first event, as the provider sent it, and otherwise a 200 error body.
pub(super) fn failure(shared: &Shared, request: &WireRequest, error: &WireError) -> Response {
    let wire = request.wire;
    let message = error_message(&error.body()).unwrap_or_else(|| error.message.clone());
    let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::BAD_GATEWAY);
    if !(error.in_stream && request.stream) {
        if wire == Wire::Responses {
            // OpenAI's two wires share one error body: the recorded one goes back as it was,
            // so the gateway's error text, and the prompts that later quote it (a fallback
            // message, the suggestions request), are the recording's at either wire.
            return (status, axum::Json(error.body())).into_response();
        }
        return self::error(wire, status, &message, "recorded_error");
    }
    // Chat Completions is answered by `mod.rs`; were it to come here, in the Responses shape.
    let wire = match wire {
        Wire::ChatCompletions => Wire::Responses,
        wire => wire,
    };
    let identity = identity(wire, shared, &request.model);
    streamed(
        request.framing,
        wire.render_stream_failure(&identity, status.as_u16(), &message),
    )
}

/// An OpenAI error response.
pub(super) fn error_response(
    status: StatusCode,
    message: &str,
    error_type: &str,
    code: &str,
) -> Response {
    (status, Json(error_body(message, error_type, Some(code)))).into_response()
}

/// A recorded failure as the provider answered it.
pub(super) fn failure_response(error: &WireError) -> Response {
    let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::BAD_GATEWAY);
    (status, Json(error.body())).into_response()
}

/// A server-sent event stream body.
pub(super) fn sse_response(body: impl Into<axum::body::Body>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body.into(),
    )
        .into_response()
}

/// The answer for a complete event list: one completion, or the stream of chunks. A call whose
/// events fail before any content fails with the recorded status, as a provider refusing a
/// request does, streaming or not; a failure the provider reported inside its answer
/// (`in_stream`) is served inside a 200 answer, as it came.
fn respond_chat_completions(
    shared: &Shared,
    request: &WireRequest,
    events: &[RecordedEvent],
) -> Response {
    let identity = shared.answer_id(&request.model);
    let failed_at_start = events
        .iter()
        .find(|event| !matches!(event, RecordedEvent::Start))
        .and_then(answer::failure)
        .is_some_and(|error| !error.in_stream);
    if !request.stream || failed_at_start {
        return match completion(&identity, events) {
            Completion::Message(body) => Json(body).into_response(),
            Completion::Failed(error) => failure_response(&error),
        };
    }
    sse_response(super::answer::sse_body(identity, events))
}

/// An error answer in the wire's shape ([`wires::error`]).
pub(super) fn wire_error(wire: Wire, status: StatusCode, message: &str, code: &str) -> Response {
    match wire {
        Wire::ChatCompletions => error_response(
            status,
            message,
            model_wire::chat_completions::ErrorBody::kind_for_status(status.as_u16()),
            code,
        ),
        _ => error(wire, status, message, code),
    }
}

/// The answer for a complete event list in the request's wire.
pub(super) fn respond_at(
    shared: &Shared,
    request: &WireRequest,
    events: &[RecordedEvent],
) -> Response {
    match request.wire {
        Wire::ChatCompletions => respond_chat_completions(shared, request, events),
        _ => respond(shared, request, events),
    }
}

/// A recorded failure in the request's wire.
pub(super) fn failure_at(shared: &Shared, request: &WireRequest, error: &WireError) -> Response {
    match request.wire {
        Wire::ChatCompletions => failure_response(error),
        _ => failure(shared, request, error),
    }
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
            let message = match wire {
                Wire::ChatCompletions => message.to_string(),
                _ => format!("{} request: {message}", wire.name()),
            };
            shared.report(Problem::BadRequest {
                message: message.clone(),
            });
            return wire_error(wire, StatusCode::BAD_REQUEST, &message, "invalid_request");
        }
    };
    let caller = headers
        .get(CALLER_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let call = Call {
        shared,
        request: &request,
        caller,
        headers,
    };
    match shared.backend.answer(call).await {
        Answered::Events(events) => respond_at(shared, &request, &events),
        Answered::Failure(error) => failure_at(shared, &request, &error),
        Answered::Problem {
            problem,
            status,
            code,
        } => {
            let message = problem.message().to_owned();
            shared.report(problem);
            wire_error(request.wire, status, &message, code)
        }
        Answered::Response(response) => response,
    }
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
    error_response(status, &message, "invalid_request_error", "unserved_route")
}
