//! The built-in OpenAI provider (`use = "openai"`, also reachable as
//! `langchain_openai:ChatOpenAI`, the DeerFlow spelling): OpenAI's Chat Completions (the
//! default) or, with `api = "responses"` (LangChain's `use_responses_api = true`), OpenAI's
//! Responses, through the all-wire model ([`WireChatModel`], `models/wire_model/`).
//!
//! This module only reads an entry's choice of wire ([`api_of_entry`]); the transport, the
//! request bodies and the answers are the all-wire model's, which no provider module is
//! imported by: each provider depends on it, never on another provider.

use std::sync::Arc;

use serde_json::Value;

use crate::config::ModelConfig;
use crate::models::{ChatModel, ModelError, ModelProvider, ProviderContext};

use crate::models::wire_model::{API_SETTING, Api, RESPONSES_FLAG, WireChatModel};

/// Builds [`WireChatModel`]s from `[[models]]` entries with `use = "openai"`.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiProvider;

impl ModelProvider for OpenAiProvider {
    fn build(
        &self,
        config: &ModelConfig,
        _context: &ProviderContext,
    ) -> Result<Arc<dyn ChatModel>, ModelError> {
        let api = api_of_entry(config)?;
        Ok(Arc::new(WireChatModel::new(config, api)?))
    }
}

/// The wire an `openai` entry chose (see [`API_SETTING`]). An unknown value, a
/// `use_responses_api` that is not a boolean, or one that contradicts `api` names the model
/// and the key.
pub fn api_of_entry(config: &ModelConfig) -> Result<Api, ModelError> {
    let refused = |problem: String| {
        ModelError::new(
            "ConfigurationError",
            format!("model '{}': {problem}", config.name),
        )
    };
    let responses_flag = match config.settings.get(RESPONSES_FLAG) {
        None | Some(Value::Null) => None,
        Some(Value::Bool(flag)) => Some(*flag),
        Some(other) => {
            return Err(refused(format!(
                "{RESPONSES_FLAG} must be true or false, not {other}"
            )));
        }
    };
    let chosen = match config.settings.get(API_SETTING) {
        None | Some(Value::Null) => None,
        Some(Value::String(api)) if api == "chat_completions" => Some(Api::ChatCompletions),
        Some(Value::String(api)) if api == "responses" => Some(Api::Responses),
        Some(other) => {
            return Err(refused(format!(
                "{API_SETTING} must be \"chat_completions\" or \"responses\", not {other}"
            )));
        }
    };
    match (chosen, responses_flag) {
        (Some(Api::ChatCompletions), Some(true)) => Err(refused(format!(
            "{API_SETTING} = \"chat_completions\" contradicts {RESPONSES_FLAG} = true"
        ))),
        (Some(api), _) => Ok(api),
        (None, Some(true)) => Ok(Api::Responses),
        (None, _) => Ok(Api::ChatCompletions),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::models::ProviderRegistry;

    fn built(config: &ModelConfig) -> Result<Arc<dyn ChatModel>, ModelError> {
        let provider = ProviderRegistry::with_builtins()
            .get(&config.use_)
            .expect("a built-in provider");
        provider.build(
            config,
            &ProviderContext {
                home: std::path::PathBuf::from("."),
                aws_credentials: None,
            },
        )
    }

    #[test]
    fn the_entry_chooses_the_wire_and_a_bad_choice_names_the_model_and_the_key() {
        let entry = |use_: &str, settings: Value| {
            let mut config = ModelConfig::new("my-model", use_);
            config.settings = settings.as_object().cloned().unwrap_or_default();
            config
        };
        let table = [
            (
                "openai",
                json!({}),
                "https://api.openai.com/v1/chat/completions",
            ),
            (
                "openai",
                json!({"api": "chat_completions"}),
                "https://api.openai.com/v1/chat/completions",
            ),
            (
                "openai",
                json!({"api": "responses"}),
                "https://api.openai.com/v1/responses",
            ),
            (
                "langchain_openai:ChatOpenAI",
                json!({"use_responses_api": true}),
                "https://api.openai.com/v1/responses",
            ),
            (
                "anthropic",
                json!({}),
                "https://api.anthropic.com/v1/messages",
            ),
            (
                "langchain_anthropic:ChatAnthropic",
                json!({}),
                "https://api.anthropic.com/v1/messages",
            ),
        ];
        for (use_, settings, endpoint) in table {
            let config = entry(use_, settings.clone());
            let api = match use_ {
                "anthropic" | "langchain_anthropic:ChatAnthropic" => Api::AnthropicMessages,
                _ => api_of_entry(&config).expect("a known api"),
            };
            let model = WireChatModel::new(&config, api).expect("builds");
            assert_eq!(model.endpoint(), endpoint, "{use_} {settings}");
            assert!(built(&config).is_ok(), "{use_} {settings}");
        }
        // (use, settings, what the error names besides the model)
        let refused = [
            ("openai", json!({"api": "completions"}), "api must be"),
            ("openai", json!({"api": 3}), "api must be"),
            (
                "openai",
                json!({"use_responses_api": "yes"}),
                "use_responses_api must be",
            ),
            (
                "openai",
                json!({"api": "chat_completions", "use_responses_api": true}),
                "contradicts",
            ),
            (
                "anthropic",
                json!({"api": "responses"}),
                "api is a setting of use = \"openai\"",
            ),
        ];
        for (use_, settings, named) in refused {
            let error = built(&entry(use_, settings.clone())).expect_err("refused");
            assert_eq!(error.error_type, "ConfigurationError", "{settings}");
            assert!(
                error.message.contains("'my-model'") && error.message.contains(named),
                "{use_} {settings}: {}",
                error.message
            );
        }
    }
}
