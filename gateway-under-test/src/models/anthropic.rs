//! The built-in Anthropic provider (`use = "anthropic"`, also reachable as
//! `langchain_anthropic:ChatAnthropic`, the DeerFlow spelling): Anthropic's Messages API,
//! `POST {base_url}/v1/messages`, streamed (`"stream": true`, its named events) or whole, with
//! tool use, thinking where the answer has it, and usage.
//!
//! The HTTP transport is the OpenAI provider's ([`WireChatModel`], its bounded reads, error
//! mapping and key scrubbing), with this wire's request body, its `x-api-key` and
//! `anthropic-version` headers, and the codec's Messages reader
//! ([`model_wire::anthropic_messages`]). A failure is named as the `anthropic` Python client
//! names it (`RateLimitError`, `OverloadedError`, …), worded as that client words it
//! (`Error code: <status> - <body>`), so that the LLM error-handling middleware retries and
//! falls back as it does for Chat Completions (`docs/gateway-contract.md` §15).

use std::sync::Arc;

use model_wire::anthropic_messages::MessagesRequest;
use serde_json::{Map, Value};

use crate::config::ModelConfig;
use crate::models::openai::{API_SETTING, Api, RESPONSES_FLAG, WireChatModel};
use crate::models::{ChatModel, ModelError, ModelProvider, ModelRequest, ProviderContext};

use super::openai::wire::{copy_settings, effective_settings, merge_extra_body};

/// The `use` string of the built-in Anthropic provider.
pub const ANTHROPIC_PROVIDER: &str = "anthropic";

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

/// Builds Messages-API models from `[[models]]` entries with `use = "anthropic"`.
#[derive(Debug, Clone, Copy, Default)]
pub struct AnthropicProvider;

impl ModelProvider for AnthropicProvider {
    fn build(
        &self,
        config: &ModelConfig,
        _context: &ProviderContext,
    ) -> Result<Arc<dyn ChatModel>, ModelError> {
        // The OpenAI provider's choice of wire means nothing here: refused rather than ignored.
        if let Some(key) = [API_SETTING, RESPONSES_FLAG]
            .into_iter()
            .find(|key| config.settings.contains_key(*key))
        {
            return Err(ModelError::new(
                "ConfigurationError",
                format!(
                    "model '{}': {key} is a setting of use = \"openai\"; use = \"anthropic\" \
                     always speaks the Messages API",
                    config.name
                ),
            ));
        }
        Ok(Arc::new(WireChatModel::new(
            config,
            Api::AnthropicMessages,
        )?))
    }
}

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
        &super::openai::conversation::messages(request),
        &super::openai::conversation::tools(request),
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
