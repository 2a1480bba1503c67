//! The Anthropic Messages request body the all-wire model sends (`POST {base}/v1/messages`),
//! with the wire's defaults: what the Anthropic provider (`models/anthropic.rs`)'s
//! models send.

use model_wire::anthropic_messages::MessagesRequest;
use serde_json::{Map, Value};

use super::conversation;
use super::wire::{copy_settings, effective_settings, merge_extra_body};
use crate::models::ModelRequest;

/// The endpoint root used when a model entry has no `base_url` (the SDK's; `/v1/messages` is
/// appended to it).
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The `anthropic-version` header every call sends.
pub const API_VERSION: &str = "2023-06-01";

/// `max_tokens` when the entry sets none: the API requires one, and this is
/// `langchain-anthropic`'s default.
pub const DEFAULT_MAX_TOKENS: u64 = 1024;

/// Settings copied into the body as they are (`stop` is sent as `stop_sequences`).
const PASSTHROUGH_SETTINGS: &[&str] = &[
    "temperature",
    "top_p",
    "top_k",
    "stop_sequences",
    "thinking",
    "metadata",
];

/// The JSON body of `POST {base}/v1/messages`: `model`, `max_tokens` (the `max_tokens` setting,
/// else [`DEFAULT_MAX_TOKENS`]), `system`, `messages`, `tools` (only when bound), `stream` (only
/// when streaming), then the pass-through settings and `extra_body` merged in last;
/// `when_thinking_enabled` overlays the settings first when the run enables thinking (DeerFlow's
/// Claude blocks put `thinking: {type: enabled, budget_tokens}` there). The run's
/// `reasoning_effort` has no meaning at this wire and is not sent.
pub(crate) fn request_body(
    model: &str,
    request: &ModelRequest,
    settings: &Map<String, Value>,
    stream: bool,
) -> Value {
    let effective = effective_settings(settings, request.options.thinking_enabled);
    let max_tokens = effective
        .get("max_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(DEFAULT_MAX_TOKENS);
    let mut body = MessagesRequest::new(
        model,
        max_tokens,
        &conversation::messages(request),
        &conversation::tools(request),
        stream,
    );
    if let Some(stop) = effective.get("stop").filter(|value| !value.is_null()) {
        let stop = match stop {
            Value::String(one) => Value::Array(vec![Value::String(one.clone())]),
            other => other.clone(),
        };
        body.extra.insert("stop_sequences".into(), stop);
    }
    copy_settings(&mut body.extra, &effective, PASSTHROUGH_SETTINGS);
    merge_extra_body(&mut body.extra, &effective);
    body.to_value()
}
