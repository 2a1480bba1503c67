//! The built-in Gemini provider (`use = "gemini"`, also reachable as
//! `langchain_google_genai:ChatGoogleGenerativeAI`, the DeerFlow spelling): Google's Gemini API,
//! `POST {base_url}/models/{model}:generateContent`, or `:streamGenerateContent?alt=sse` when
//! streaming (each `data:` frame a whole response, no end marker), with function calls, thought
//! parts where the answer has them, and usage.
//!
//! The HTTP transport is the OpenAI provider's ([`WireChatModel`], its bounded reads, error
//! mapping and key scrubbing), with this wire's request body, the key in `x-goog-api-key` and
//! the codec's Gemini reader ([`model_wire::gemini`]). A failure is named as `google-genai`
//! names it (`ClientError` for a 4xx, `ServerError` for a 5xx).

use std::sync::Arc;

use model_wire::gemini::GenerateContentRequest;
use serde_json::{Map, Value};

use crate::config::ModelConfig;
use crate::models::openai::{API_SETTING, Api, RESPONSES_FLAG, WireChatModel};
use crate::models::{ChatModel, ModelError, ModelProvider, ModelRequest, ProviderContext};

use super::openai::wire::{effective_settings, merge_extra_body};

/// The `use` string of the built-in Gemini provider.
pub const GEMINI_PROVIDER: &str = "gemini";

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

/// Builds Gemini models from `[[models]]` entries with `use = "gemini"`.
#[derive(Debug, Clone, Copy, Default)]
pub struct GeminiProvider;

impl ModelProvider for GeminiProvider {
    fn build(
        &self,
        config: &ModelConfig,
        _context: &ProviderContext,
    ) -> Result<Arc<dyn ChatModel>, ModelError> {
        refuse_openai_settings(config, GEMINI_PROVIDER)?;
        Ok(Arc::new(WireChatModel::new(config, Api::Gemini)?))
    }
}

/// The OpenAI provider's choice of wire means nothing at another provider: refused rather
/// than ignored.
pub(crate) fn refuse_openai_settings(
    config: &ModelConfig,
    provider: &str,
) -> Result<(), ModelError> {
    match [API_SETTING, RESPONSES_FLAG]
        .into_iter()
        .find(|key| config.settings.contains_key(*key))
    {
        Some(key) => Err(ModelError::new(
            "ConfigurationError",
            format!(
                "model '{}': {key} is a setting of use = \"openai\"; use = \"{provider}\" \
                 always speaks its own API",
                config.name
            ),
        )),
        None => Ok(()),
    }
}

/// The JSON body of `generateContent` / `streamGenerateContent`: `contents`,
/// `systemInstruction`, `tools` (only when bound), `generationConfig` from the settings
/// (`temperature`, `top_p`, `top_k`, `max_tokens`, `stop`, `seed`, `thinking_config`; the run's
/// `when_thinking_enabled` overlaid first), then `extra_body` merged in last. The model and the
/// mode are in the path.
pub(crate) fn request_body(request: &ModelRequest, settings: &Map<String, Value>) -> Value {
    let effective = effective_settings(settings, request.options.thinking_enabled);
    let mut body = GenerateContentRequest::new(
        &super::openai::conversation::messages(request),
        &super::openai::conversation::tools(request),
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
