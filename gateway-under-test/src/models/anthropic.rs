//! The built-in Anthropic provider (`use = "anthropic"`, also reachable as
//! `langchain_anthropic:ChatAnthropic`, the DeerFlow spelling): Anthropic's Messages API,
//! `POST {base_url}/v1/messages`, streamed (`"stream": true`, its named events) or whole, with
//! tool use, thinking where the answer has it, and usage.
//!
//! The HTTP transport is the all-wire model's (`models/wire_model/`) ([`WireChatModel`], its bounded reads, error
//! mapping and key scrubbing), with this wire's request body, its `x-api-key` and
//! `anthropic-version` headers, and the codec's Messages reader
//! ([`model_wire::anthropic_messages`]). A failure is named as the `anthropic` Python client
//! names it (`RateLimitError`, `OverloadedError`, …), worded as that client words it
//! (`Error code: <status> - <body>`), so that the LLM error-handling middleware retries and
//! falls back as it does for Chat Completions (`docs/gateway-contract.md` §15).

use std::sync::Arc;

use crate::config::ModelConfig;
use crate::models::wire_model::{API_SETTING, Api, RESPONSES_FLAG, WireChatModel};
use crate::models::{ChatModel, ModelError, ModelProvider, ProviderContext};

pub use crate::models::wire_model::anthropic_messages::{
    API_VERSION, DEFAULT_BASE_URL, DEFAULT_MAX_TOKENS,
};

/// The `use` string of the built-in Anthropic provider.
pub const ANTHROPIC_PROVIDER: &str = "anthropic";

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
