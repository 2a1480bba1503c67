//! The built-in middlewares, in the order they run (`docs/gateway-contract.md` §7.3): thread data,
//! uploads and dynamic context before the agent; LLM error handling and input sanitisation around
//! each model call; title and token-usage attribution after each model call; lazy sandbox
//! acquisition in the first tool step.

mod dynamic_context;
mod input_sanitization;
mod llm_errors;
mod sandbox;
mod thread_data;
mod title;
mod token_usage;
mod uploads;

#[cfg(test)]
mod tests;

use std::sync::Arc;

pub use dynamic_context::DynamicContextMiddleware;
pub use input_sanitization::{InputSanitizationMiddleware, wrap_user_input};
pub use llm_errors::{LlmErrorHandlingMiddleware, fallback_message};
pub use sandbox::SandboxMiddleware;
pub use thread_data::ThreadDataMiddleware;
pub use title::{TitleMiddleware, local_title, title_prompt};
pub use token_usage::TokenUsageMiddleware;
pub use uploads::UploadsMiddleware;

use crate::runtime::middleware::Middleware;

/// The built-in chain, in order.
pub fn builtin_chain() -> Vec<Arc<dyn Middleware>> {
    vec![
        Arc::new(ThreadDataMiddleware),
        Arc::new(UploadsMiddleware),
        Arc::new(DynamicContextMiddleware),
        Arc::new(LlmErrorHandlingMiddleware),
        Arc::new(InputSanitizationMiddleware),
        Arc::new(TitleMiddleware),
        Arc::new(TokenUsageMiddleware),
        Arc::new(SandboxMiddleware),
    ]
}

/// The newest human message that is not hidden, with its index.
pub(crate) fn newest_human(
    state: &crate::runtime::state::AgentState,
) -> Option<(usize, &crate::messages::Message)> {
    state
        .messages
        .iter()
        .enumerate()
        .rev()
        .find(|(_, m)| m.kind == crate::messages::MessageType::Human && !m.is_hidden())
}
