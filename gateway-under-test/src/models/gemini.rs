//! The built-in Gemini provider (`use = "gemini"`, also reachable as
//! `langchain_google_genai:ChatGoogleGenerativeAI`, the DeerFlow spelling): Google's Gemini API,
//! `POST {base_url}/models/{model}:generateContent`, or `:streamGenerateContent?alt=sse` when
//! streaming (each `data:` frame a whole response, no end marker), with function calls, thought
//! parts where the answer has them, and usage.
//!
//! The HTTP transport is the all-wire model's (`models/wire_model/`) ([`WireChatModel`], its bounded reads, error
//! mapping and key scrubbing), with this wire's request body, the key in `x-goog-api-key` and
//! the codec's Gemini reader ([`model_wire::gemini`]). A failure is named as `google-genai`
//! names it (`ClientError` for a 4xx, `ServerError` for a 5xx).

use std::sync::Arc;

use crate::config::ModelConfig;
use crate::models::wire_model::{Api, WireChatModel, refuse_openai_settings};
use crate::models::{ChatModel, ModelError, ModelProvider, ProviderContext};

pub use crate::models::wire_model::gemini::DEFAULT_BASE_URL;

/// The `use` string of the built-in Gemini provider.
pub const GEMINI_PROVIDER: &str = "gemini";

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
