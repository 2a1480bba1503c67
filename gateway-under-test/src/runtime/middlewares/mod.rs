//! The built-in middlewares: DeerFlow's lead-agent chain (`docs/gateway-contract.md` §7.3).
//! Before the agent: thread data, uploads, the sandbox, dynamic context, plan-mode to-dos, loop
//! detection and the terminal-response check; around each model call: LLM error handling and
//! input sanitisation; before it: durable context and to-dos; after it (in reverse list order):
//! the safety and length finish-reason checks, the terminal-response check, loop detection, the
//! subagent limit, title, token-usage attribution, to-dos and durable context; in the tool
//! step: lazy sandbox acquisition; after the agent: the terminal-response check, loop
//! detection, memory, to-dos and the sandbox. The middlewares whose subsystem this gateway lacks
//! are in `inert`.

mod dynamic_context;
mod finish_reason;
mod inert;
mod input_sanitization;
mod llm_errors;
mod loop_detection;
mod sandbox;
mod subagent_limit;
mod terminal_response;
mod thread_data;
mod title;
mod token_usage;
mod uploads;

#[cfg(test)]
mod tests;

use std::sync::Arc;

pub use dynamic_context::DynamicContextMiddleware;
pub use finish_reason::{ModelLengthFinishReasonMiddleware, SafetyFinishReasonMiddleware};
pub use inert::{DurableContextMiddleware, MemoryMiddleware, TodoMiddleware};
pub use input_sanitization::{InputSanitizationMiddleware, wrap_user_input};
pub use llm_errors::{LlmErrorHandlingMiddleware, fallback_message};
pub use loop_detection::LoopDetectionMiddleware;
pub use sandbox::SandboxMiddleware;
pub use subagent_limit::SubagentLimitMiddleware;
pub use terminal_response::TerminalResponseMiddleware;
pub use thread_data::ThreadDataMiddleware;
pub use title::{TitleMiddleware, local_title, title_prompt};
pub use token_usage::TokenUsageMiddleware;
pub use uploads::UploadsMiddleware;

use crate::runtime::middleware::Middleware;

/// The built-in chain, in list order. `before_*` hooks run in this order and `after_*` hooks in
/// the reverse, so this one list gives DeerFlow's node order for every hook.
pub fn builtin_chain() -> Vec<Arc<dyn Middleware>> {
    vec![
        Arc::new(ThreadDataMiddleware),
        Arc::new(UploadsMiddleware),
        Arc::new(SandboxMiddleware),
        Arc::new(DynamicContextMiddleware),
        Arc::new(LlmErrorHandlingMiddleware),
        Arc::new(InputSanitizationMiddleware),
        Arc::new(DurableContextMiddleware),
        Arc::new(TodoMiddleware),
        Arc::new(TokenUsageMiddleware),
        Arc::new(TitleMiddleware),
        Arc::new(MemoryMiddleware),
        Arc::new(SubagentLimitMiddleware),
        Arc::new(LoopDetectionMiddleware),
        Arc::new(TerminalResponseMiddleware),
        Arc::new(ModelLengthFinishReasonMiddleware),
        Arc::new(SafetyFinishReasonMiddleware),
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
        .map(|(index, m)| (index, &**m))
}
