//! The two wires the model server serves besides Chat Completions: Anthropic's Messages API
//! (`POST /v1/messages`) and OpenAI's Responses API (`POST /v1/responses`), in fixture replay
//! (`docs/testing-your-own-gateway.md`, "The three wires").
//!
//! A request's conversation is rebuilt with `replay_core::messages_from_anthropic` /
//! `messages_from_responses` and looked up with the name-free key
//! (`ReplayEngine::lookup_at_wire_without_names`, `docs/replay-and-fixtures.md` §11.1), since
//! neither wire carries message names: one fixture serves all three wires. The recorded answer
//! goes back through that wire's codec (`model_wire::anthropic_messages`,
//! `model_wire::responses`): a whole message or response, or its named SSE events, with tool
//! calls, reasoning where recorded and usage; a recorded failure and every problem answer in the
//! wire's own error shape. Strict replay of a recording and the recording proxy serve only Chat
//! Completions so far: a request at these wires in those modes is refused and is a problem.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use model_wire::chat_completions::{Answer as WireAnswer, Identity, error_message};
use model_wire::{anthropic_messages, responses};
use replay_core::{
    Answer, ReplayEngine, WireLookupError, messages_from_anthropic, messages_from_responses,
    name_free_key,
};
use serde_json::{Value, json};

use super::answer::{WireError, error_body, events_from_error};
use super::{Backend, CALLER_HEADER, Problem, Shared, sse_response};

/// A wire without message names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    /// Anthropic's Messages API.
    AnthropicMessages,
    /// OpenAI's Responses API.
    Responses,
}

/// A parsed request at one of these wires.
#[derive(Debug, Clone)]
struct Request {
    model: String,
    stream: bool,
    /// The conversation as the replay key reads it.
    messages: Vec<Value>,
}

impl Wire {
    fn name(self) -> &'static str {
        match self {
            Wire::AnthropicMessages => "Anthropic Messages",
            Wire::Responses => "OpenAI Responses",
        }
    }

    /// Parses a body; the error names what is wrong.
    fn parse(self, bytes: &[u8]) -> Result<Request, String> {
        let body: Value = serde_json::from_slice(bytes)
            .map_err(|err| format!("the request body is not JSON: {err}"))?;
        let Value::Object(body) = body else {
            return Err("the request body must be a JSON object".to_owned());
        };
        let messages = match self {
            Wire::AnthropicMessages => match body.get("messages") {
                Some(Value::Array(messages)) => messages_from_anthropic(messages),
                _ => return Err("the request body has no \"messages\" array".to_owned()),
            },
            Wire::Responses => match body.get("input") {
                Some(input @ (Value::Array(_) | Value::String(_))) => {
                    messages_from_responses(input)
                }
                _ => {
                    return Err(
                        "the request body has no \"input\" (a string or a list of items)"
                            .to_owned(),
                    );
                }
            },
        };
        Ok(Request {
            model: body
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
            messages,
        })
    }

    /// An error answer in this wire's shape; `code` is the harness's reason (Responses carries
    /// it as OpenAI's `code`; Anthropic's body has no code field).
    fn error(self, status: StatusCode, message: &str, code: &str) -> Response {
        let body = match self {
            Wire::AnthropicMessages => anthropic_messages::error_body(
                anthropic_messages::error_kind_for_status(status.as_u16()),
                message,
            ),
            Wire::Responses => error_body(
                message,
                model_wire::chat_completions::ErrorBody::kind_for_status(status.as_u16()),
                Some(code),
            ),
        };
        (status, Json(body)).into_response()
    }
}

/// `POST /v1/messages`.
pub(crate) async fn anthropic(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(Wire::AnthropicMessages, &shared, &headers, &body)
}

/// `POST /v1/responses`.
pub(crate) async fn responses(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(Wire::Responses, &shared, &headers, &body)
}

fn serve(wire: Wire, shared: &Shared, headers: &HeaderMap, body: &[u8]) -> Response {
    let request = match wire.parse(body) {
        Ok(request) => request,
        Err(message) => {
            let message = format!("{} request: {message}", wire.name());
            shared.report(Problem::BadRequest {
                message: message.clone(),
            });
            return wire.error(StatusCode::BAD_REQUEST, &message, "invalid_request");
        }
    };
    let caller = headers
        .get(CALLER_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    match &shared.backend {
        Backend::Fixtures { active, .. } => {
            let engine = active.lock().engine.clone();
            replay(wire, shared, &engine, caller.as_deref(), &request)
        }
        Backend::Recording { .. } | Backend::Record(_) => {
            let message = format!(
                "the {} wire is served in fixture replay only; strict replay of a recording and \
                 recording serve Chat Completions (POST /v1/chat/completions)",
                wire.name()
            );
            shared.report(Problem::BadRequest {
                message: message.clone(),
            });
            wire.error(StatusCode::NOT_IMPLEMENTED, &message, "unserved_wire")
        }
    }
}

fn replay(
    wire: Wire,
    shared: &Shared,
    engine: &ReplayEngine,
    caller: Option<&str>,
    request: &Request,
) -> Response {
    let looked_up = engine.lookup_at_wire_without_names(caller, &request.messages);
    if looked_up.is_err() {
        // The server's bounded ledger is the one record (see `replay_fixture`).
        engine.take_misses();
        engine.take_ambiguities();
    }
    match looked_up {
        Ok(served) => match &served.answer {
            Answer::Output(output) => answer(wire, shared, request, output),
            Answer::Error(recorded) => {
                let events = events_from_error(recorded);
                let error = events
                    .iter()
                    .find(|e| e.get("type").and_then(Value::as_str) == Some("error"))
                    .map(WireError::from_event)
                    .unwrap_or_else(|| WireError::new(None, "", &recorded.message, false));
                failure(wire, shared, request, &error)
            }
        },
        Err(WireLookupError::Miss(miss)) => {
            let message = format!(
                "{miss}\nthe {} request carries no message names, so its name-free key {} was \
                 tried too and matches no recorded turn's name-free conversation",
                wire.name(),
                name_free_key(&request.messages)
            );
            shared.report(Problem::Miss {
                message: message.clone(),
                miss,
            });
            wire.error(StatusCode::BAD_REQUEST, &message, "replay_miss")
        }
        Err(WireLookupError::AmbiguousAnswer(ambiguity)) => {
            let problem = Problem::ambiguous_answer(*ambiguity);
            let message = problem.message().to_owned();
            shared.report(problem);
            wire.error(StatusCode::BAD_REQUEST, &message, "replay_answer_ambiguous")
        }
        Err(ref error @ WireLookupError::AmbiguousCaller { ref callers, .. }) => {
            let message = format!("{error} (send it in the {CALLER_HEADER} header)");
            shared.report(Problem::AmbiguousCaller {
                message: message.clone(),
                callers: callers.clone(),
            });
            wire.error(StatusCode::BAD_REQUEST, &message, "replay_caller_ambiguous")
        }
    }
}

fn identity(wire: Wire, shared: &Shared, model: &str) -> Identity {
    let mut identity = shared.answer_id(model);
    let number = identity.id.rsplit('-').next().unwrap_or("0").to_owned();
    identity.id = match wire {
        Wire::AnthropicMessages => format!("msg_replay_{number}"),
        Wire::Responses => format!("replay_{number}"),
    };
    identity
}

/// The recorded AI message in the wire's format, whole or streamed.
fn answer(wire: Wire, shared: &Shared, request: &Request, output: &Value) -> Response {
    let identity = identity(wire, shared, &request.model);
    let answer = WireAnswer::from_ai_message(output);
    match (wire, request.stream) {
        (Wire::AnthropicMessages, false) => {
            Json(anthropic_messages::message(&identity, &answer)).into_response()
        }
        (Wire::Responses, false) => Json(responses::response(&identity, &answer)).into_response(),
        (Wire::AnthropicMessages, true) => sse_response(
            anthropic_messages::stream_events(&identity, &answer, &[])
                .iter()
                .map(anthropic_messages::SseEvent::frame)
                .collect::<String>(),
        ),
        (Wire::Responses, true) => sse_response(
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
fn failure(wire: Wire, shared: &Shared, request: &Request, error: &WireError) -> Response {
    let message = error_message(&error.body()).unwrap_or_else(|| error.message.clone());
    let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::BAD_GATEWAY);
    if !(error.in_stream && request.stream) {
        return wire.error(status, &message, "recorded_error");
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
        Wire::Responses => {
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
