//! Input sanitisation: on the model-facing request only, wraps each user message in
//! `--- BEGIN USER INPUT ---` / `--- END USER INPUT ---`, keeping the original text in
//! `additional_kwargs.original_user_content` (the journal restores it from there).

use async_trait::async_trait;
use serde_json::Value;

use crate::messages::{Message, MessageType};
use crate::models::{ModelError, ModelRequest};
use crate::runtime::RunContext;
use crate::runtime::middleware::{Hook, Middleware, ModelCall};

/// Wraps user input on the way to the model; state is never changed.
#[derive(Debug, Default)]
pub struct InputSanitizationMiddleware;

/// The wrapped text.
pub fn wrap_user_input(text: &str) -> String {
    format!("--- BEGIN USER INPUT ---\n{text}\n--- END USER INPUT ---")
}

#[async_trait]
impl Middleware for InputSanitizationMiddleware {
    fn name(&self) -> &'static str {
        "InputSanitizationMiddleware"
    }

    /// No node: it only wraps model calls.
    fn hooks(&self) -> &'static [Hook] {
        &[]
    }

    async fn wrap_model_call(
        &self,
        mut request: ModelRequest,
        _run: &RunContext,
        next: ModelCall<'_>,
    ) -> Result<Message, ModelError> {
        for message in &mut request.messages {
            let is_user_input = message.kind == MessageType::Human
                && !message.is_hidden()
                && message.name.as_deref() == Some("user-input")
                && !message
                    .additional_kwargs
                    .contains_key("original_user_content");
            if is_user_input && let Value::String(text) = &message.content {
                let wrapped = wrap_user_input(text);
                // The request shares its messages with the state: only this one is copied.
                let message = std::sync::Arc::make_mut(message);
                let original = std::mem::replace(&mut message.content, Value::String(wrapped));
                message
                    .additional_kwargs
                    .insert("original_user_content".into(), original);
            }
        }
        next.call(request).await
    }
}
