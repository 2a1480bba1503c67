//! The two wires the model server serves besides Chat Completions: Anthropic's Messages API
//! (`POST /v1/messages`) and OpenAI's Responses API (`POST /v1/responses`), in every mode
//! (`docs/testing-your-own-gateway.md`, "The three wires"): their routes, answers and error
//! shapes. `mod.rs` answers Chat Completions with its own renderer and never calls these for it;
//! were it to, they answer in the Responses shape, the nearest, rather than fail.
//!
//! A request's conversation is rebuilt with `replay_core::messages_from_anthropic` /
//! `messages_from_responses` and looked up with the name-free key
//! (`ReplayEngine::lookup_at_wire_without_names`, `docs/replay-and-fixtures.md` §11.1), since
//! neither wire carries message names: one fixture serves all three wires. The recorded answer
//! goes back through that wire's codec (`model_wire::anthropic_messages`,
//! `model_wire::responses`): a whole message or response, or its named SSE events, with tool
//! calls, reasoning where recorded and usage; a recorded failure and every problem answer in the
//! wire's own error shape. Strict replay of a recording and the recording proxy serve these wires
//! too (`super::serve`, `record`): a recorded call's `done` message or `error` is answered the
//! same way ([`respond`]).

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use model_wire::chat_completions::{Answer as WireAnswer, Identity, error_message};
use model_wire::{anthropic_messages, responses};
use serde_json::{Value, json};

use super::answer::{WireError, error_body};
use super::request::{Wire, WireRequest};
use super::{Shared, serve, sse_response};

/// An error answer in the shape of `wire` (one of these two); `code` is the harness's reason
/// (Responses carries it as OpenAI's `code`; Anthropic's body has no code field).
pub(super) fn error(wire: Wire, status: StatusCode, message: &str, code: &str) -> Response {
    let body = match wire {
        Wire::AnthropicMessages => anthropic_messages::error_body(
            anthropic_messages::error_kind_for_status(status.as_u16()),
            message,
        ),
        Wire::ChatCompletions | Wire::Responses => error_body(
            message,
            model_wire::chat_completions::ErrorBody::kind_for_status(status.as_u16()),
            Some(code),
        ),
    };
    (status, Json(body)).into_response()
}

/// `POST /v1/messages`.
pub(crate) async fn anthropic(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(Wire::AnthropicMessages, &shared, &headers, &body).await
}

/// `POST /v1/responses`.
pub(crate) async fn responses(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(Wire::Responses, &shared, &headers, &body).await
}

/// The answer of a complete event list (a fixture's turn as events, or a recorded call): the
/// `done` event's AI message in the wire's format, or the `error` event in its error shape.
/// The message is rendered again from the assembled answer, so a recorded stream's chunk
/// boundaries are not kept at these wires (they are at Chat Completions).
pub(super) fn respond(shared: &Shared, request: &WireRequest, events: &[Value]) -> Response {
    let of_type = |kind: &str| {
        events
            .iter()
            .find(|e| e.get("type").and_then(Value::as_str) == Some(kind))
    };
    if let Some(error) = of_type("error") {
        return failure(shared, request, &WireError::from_event(error));
    }
    match of_type("done").and_then(|done| done.get("message")) {
        Some(message) => answer(shared, request, message),
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
        Wire::Responses | Wire::ChatCompletions => format!("replay_{number}"),
    };
    identity
}

/// The recorded AI message in the wire's format, whole or streamed.
fn answer(shared: &Shared, request: &WireRequest, output: &Value) -> Response {
    let wire = request.wire;
    let identity = identity(wire, shared, &request.model);
    let answer = WireAnswer::from_ai_message(output);
    match (wire, request.stream) {
        (Wire::AnthropicMessages, false) => {
            Json(anthropic_messages::message(&identity, &answer)).into_response()
        }
        (Wire::Responses | Wire::ChatCompletions, false) => {
            Json(responses::response(&identity, &answer)).into_response()
        }
        (Wire::AnthropicMessages, true) => sse_response(
            anthropic_messages::stream_events(&identity, &answer, &[])
                .iter()
                .map(anthropic_messages::SseEvent::frame)
                .collect::<String>(),
        ),
        (Wire::Responses | Wire::ChatCompletions, true) => sse_response(
            responses::stream_events(&identity, &answer, &[])
                .iter()
                .map(responses::SseEvent::frame)
                .collect::<String>(),
        ),
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
    let identity = identity(wire, shared, &request.model);
    let nothing = WireAnswer::from_ai_message(&json!({"content": ""}));
    let body = match wire {
        Wire::AnthropicMessages => {
            let first = anthropic_messages::stream_events(&identity, &nothing, &[])
                .into_iter()
                .next()
                .map(|event| event.frame())
                .unwrap_or_default();
            let error = anthropic_messages::error_body("api_error", &message);
            format!("{first}event: error\ndata: {error}\n\n")
        }
        Wire::Responses | Wire::ChatCompletions => {
            let first = responses::stream_events(&identity, &nothing, &[])
                .into_iter()
                .next()
                .map(|event| event.frame())
                .unwrap_or_default();
            let mut error = responses::error_event(&message, Some("server_error"));
            error["sequence_number"] = json!(1);
            format!("{first}event: error\ndata: {error}\n\n")
        }
    };
    sse_response(body)
}
