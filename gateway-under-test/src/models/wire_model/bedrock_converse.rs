//! The Converse request body the all-wire model sends (`converse` / `converse-stream`), with the
//! wire's default endpoint: what the Bedrock provider (`models/bedrock.rs`)'s
//! models send.

use model_wire::bedrock_converse::ConverseRequest;
use serde_json::{Map, Value};

use super::conversation;
use super::wire::{effective_settings, merge_extra_body};
use crate::models::ModelRequest;

/// The endpoint root used when a model entry has no `base_url`.
pub const DEFAULT_BASE_URL: &str = "https://bedrock-runtime.us-east-1.amazonaws.com";

/// Settings and the `inferenceConfig` keys they become.
const INFERENCE_SETTINGS: &[(&str, &str)] = &[
    ("max_tokens", "maxTokens"),
    ("temperature", "temperature"),
    ("top_p", "topP"),
    ("stop", "stopSequences"),
];

/// The JSON body of `converse` / `converse-stream`: `messages`, `system`, `toolConfig` (only
/// when tools are bound), `inferenceConfig` from the settings (`max_tokens`, `temperature`,
/// `top_p`, `stop`; `when_thinking_enabled` overlaid first), `additionalModelRequestFields`
/// from the setting of that name, then `extra_body` merged in last. The model id and the mode
/// are in the path.
pub(crate) fn request_body(request: &ModelRequest, settings: &Map<String, Value>) -> Value {
    let effective = effective_settings(settings, request.options.thinking_enabled);
    let mut body = ConverseRequest::new(
        &conversation::messages(request),
        &conversation::tools(request),
    );
    let mut inference = Map::new();
    for (setting, key) in INFERENCE_SETTINGS {
        if let Some(value) = effective.get(*setting).filter(|value| !value.is_null()) {
            let value = match (*key, value) {
                ("stopSequences", Value::String(one)) => {
                    Value::Array(vec![Value::String(one.clone())])
                }
                (_, other) => other.clone(),
            };
            inference.insert((*key).to_owned(), value);
        }
    }
    if !inference.is_empty() {
        body.extra
            .insert("inferenceConfig".into(), Value::Object(inference));
    }
    if let Some(fields) = effective
        .get("additional_model_request_fields")
        .filter(|value| value.is_object())
    {
        body.extra
            .insert("additionalModelRequestFields".into(), fields.clone());
    }
    merge_extra_body(&mut body.extra, &effective);
    body.to_value()
}
