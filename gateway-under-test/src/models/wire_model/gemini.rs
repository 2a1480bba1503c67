//! The Gemini request body the all-wire model sends (`generateContent` /
//! `streamGenerateContent`), with the wire's default endpoint: what
//! the Gemini provider (`models/gemini.rs`)'s models send.

use model_wire::gemini::GenerateContentRequest;
use serde_json::{Map, Value};

use super::conversation;
use super::wire::{effective_settings, merge_extra_body};
use crate::models::ModelRequest;

/// The endpoint root used when a model entry has no `base_url` (`/models/{model}:…` is appended
/// to it).
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// Settings and the `generationConfig` keys they become.
const GENERATION_SETTINGS: &[(&str, &str)] = &[
    ("temperature", "temperature"),
    ("top_p", "topP"),
    ("top_k", "topK"),
    ("max_tokens", "maxOutputTokens"),
    ("max_output_tokens", "maxOutputTokens"),
    ("stop", "stopSequences"),
    ("seed", "seed"),
    ("thinking_config", "thinkingConfig"),
];

/// The JSON body of `generateContent` / `streamGenerateContent`: `contents`,
/// `systemInstruction`, `tools` (only when bound), `generationConfig` from the settings
/// (`temperature`, `top_p`, `top_k`, `max_tokens`, `stop`, `seed`, `thinking_config`; the run's
/// `when_thinking_enabled` overlaid first), then `extra_body` merged in last. The model and the
/// mode are in the path.
pub(crate) fn request_body(request: &ModelRequest, settings: &Map<String, Value>) -> Value {
    let effective = effective_settings(settings, request.options.thinking_enabled);
    let mut body = GenerateContentRequest::new(
        &conversation::messages(request),
        &conversation::tools(request),
    );
    let mut generation = Map::new();
    for (setting, key) in GENERATION_SETTINGS {
        if let Some(value) = effective.get(*setting).filter(|value| !value.is_null()) {
            let value = match (*key, value) {
                ("stopSequences", Value::String(one)) => {
                    Value::Array(vec![Value::String(one.clone())])
                }
                (_, other) => other.clone(),
            };
            generation.insert((*key).to_owned(), value);
        }
    }
    if !generation.is_empty() {
        body.extra
            .insert("generationConfig".into(), Value::Object(generation));
    }
    merge_extra_body(&mut body.extra, &effective);
    body.to_value()
}
