//! The Responses request body (`api = "responses"`): the codec's
//! [`ResponsesRequest`](model_wire::responses::ResponsesRequest) for the conversation, with the
//! entry's settings as LangChain's `ChatOpenAI(use_responses_api=True)` sends them.

use model_wire::responses::ResponsesRequest;
use serde_json::{Map, Value, json};

use super::conversation;
use super::wire::{copy_settings, effective_settings, merge_extra_body};
use crate::models::ModelRequest;

/// Settings copied into the body as they are (`max_tokens` is sent as `max_output_tokens`,
/// LangChain's renaming for this wire).
const PASSTHROUGH_SETTINGS: &[&str] = &[
    "temperature",
    "top_p",
    "max_output_tokens",
    "parallel_tool_calls",
    "truncation",
    "service_tier",
];

/// The JSON body of `POST {base}/responses`: `model`, `input`, `tools` (only when bound),
/// `stream` (only when streaming), then `reasoning: {"effort"}` when the run asks for an effort,
/// the pass-through settings, and `extra_body` merged in last; `when_thinking_enabled` overlays
/// the settings first when the run enables thinking, as for Chat Completions.
pub(super) fn request_body(
    model: &str,
    request: &ModelRequest,
    settings: &Map<String, Value>,
    stream: bool,
) -> Value {
    let effective = effective_settings(settings, request.options.thinking_enabled);
    let mut body = ResponsesRequest::new(
        model,
        &conversation::messages(request),
        &conversation::tools(request),
        stream,
    );
    if let Some(effort) = request
        .options
        .reasoning_effort
        .as_deref()
        .filter(|effort| !effort.is_empty())
    {
        body.extra
            .insert("reasoning".into(), json!({ "effort": effort }));
    }
    if let Some(max_tokens) = effective.get("max_tokens").filter(|value| !value.is_null()) {
        body.extra
            .insert("max_output_tokens".into(), max_tokens.clone());
    }
    copy_settings(&mut body.extra, &effective, PASSTHROUGH_SETTINGS);
    merge_extra_body(&mut body.extra, &effective);
    body.to_value()
}
