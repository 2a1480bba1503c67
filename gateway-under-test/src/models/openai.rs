//! The built-in OpenAI-compatible Chat Completions provider.
//!
//! API CONTRACT (implemented by the openai helper).

use std::sync::Arc;

use crate::config::ModelConfig;
use crate::models::{ChatModel, ModelError, ModelProvider, ProviderContext};

/// Builds [`OpenAiChatModel`]s from `[[models]]` entries with `use = "openai"`.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiProvider;

impl ModelProvider for OpenAiProvider {
    fn build(
        &self,
        _config: &ModelConfig,
        _context: &ProviderContext,
    ) -> Result<Arc<dyn ChatModel>, ModelError> {
        todo!()
    }
}
