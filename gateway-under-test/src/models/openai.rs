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

pub use crate::models::wire_model::{
    API_SETTING, Api, DEFAULT_BASE_URL, RESPONSES_FLAG, SECRET_REMOVED, WireChatModel,
};

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
