//! The built-in middlewares: DeerFlow's lead-agent chain (`docs/gateway-contract.md` §7.3).
//! Before the agent: thread data, uploads, the sandbox, dynamic context, plan-mode to-dos, loop
//! detection and the terminal-response check; around each model call: LLM error handling and
//! input sanitisation; before it: durable context and to-dos; after it (in reverse list order):
//! the safety and length finish-reason checks, the terminal-response check, loop detection, the
//! subagent limit, title, token-usage attribution, to-dos and durable context; in the tool
//! step: lazy sandbox acquisition; after the agent: the terminal-response check, loop
//! detection, memory, to-dos and the sandbox. The middlewares whose subsystem this gateway lacks
//! are in `inert`.
//!
//! # The chain and the order of state writes
//!
//! The chain is DeerFlow's lead-agent chain, a list. Each node hook a middleware declares is one
//! graph node: `before_agent` and `before_model` nodes run in list order, `after_model` and
//! `after_agent` nodes in reverse list order (LangChain's wiring), and `wrap_model_call` hooks nest
//! with the first one outermost. A node that returns a non-empty update is applied through the
//! reducers, checkpointed, and published as one `values` frame; one that returns nothing is a silent
//! step (no `values` frame, an `updates` frame `{"<node>": null}`).
//!
//! | Order | Middleware | Node hooks | Writes |
//! |---|---|---|---|
//! | 1 | `ThreadDataMiddleware` | before_agent | `thread_data`; stamps the input message (`user-input`, `run_id`, `timestamp`) |
//! | 2 | `UploadsMiddleware` | before_agent | `uploaded_files` (`[]` when none) |
//! | 3 | `SandboxMiddleware` | before_agent, after_agent (+ tool_step) | `sandbox` (first tool step), in the same frame as the tool messages; its nodes write nothing |
//! | 4 | `DynamicContextMiddleware` | before_agent | replaces the input with the hidden date reminder (same id) and appends the `<id>__user` copy; nothing when today's reminder is in the thread |
//! | 5 | `LlmErrorHandlingMiddleware` | — (wrap_model_call) | nothing; retries, `llm_retry` custom events, fallback AI message |
//! | 6 | `InputSanitizationMiddleware` | — (wrap_model_call) | nothing; wraps user input on the request only |
//! | 7 | `DurableContextMiddleware` | before_model, after_model | nothing (no durable store here; `middlewares/inert.rs`) |
//! | 8 | `TodoMiddleware` (plan mode) | all four | nothing (no `todos` channel; `inert.rs`) |
//! | 9 | `TokenUsageMiddleware` | after_model | rewrites the last AI message with `token_usage_attribution` |
//! | 10 | `TitleMiddleware` | after_model | `title` (first model call only) |
//! | 11 | `MemoryMiddleware` | after_agent | nothing (memory is off; `inert.rs`) |
//! | 12 | `SubagentLimitMiddleware` (subagents on) | after_model | caps `task` calls per answer at 3 |
//! | 13 | `LoopDetectionMiddleware` | before_agent, after_model, after_agent | strips the 5th identical tool-call set of a turn (forced stop) |
//! | 14 | `TerminalResponseMiddleware` | before_agent, after_model, after_agent | an empty answer after tools becomes a fallback |
//! | 15 | `ModelLengthFinishReasonMiddleware` | after_model | strips the tool calls of a length-capped answer |
//! | 16 | `SafetyFinishReasonMiddleware` | after_model | strips the tool calls of a content-filtered answer |
//! | … | registered with `AppBuilder::middleware` | all four unless declared | appended after the built-ins |
//!
//! So one run of the write/read-file scenario writes: input; thread data; uploads; dynamic context;
//! then per model call: the AI message, title (first call only), token usage; and per tool batch:
//! the tool messages (+ `sandbox` once). That is 13 `values` frames between `metadata` and `end`;
//! every other node is streamed in `updates` mode only, as `null`.
//!
//! Other stream modes never change that sequence. A step publishes, in LangGraph's order, the
//! `messages` tuples of the messages it added that the client has not seen (by id: the user's
//! visible copy, tool results, an AI message that was not streamed), then its `updates` frame named
//! after the node (`model`, `tools`, `<Middleware>.<hook>`; none for the input), then its `values`
//! frame. A streamed model call publishes its chunks while it runs, under the id the final message
//! keeps. A streamed call that fails midway closes its chunks with a `last` chunk whose
//! `finish_reason` is `error`, so a client never reads the failed attempt as the start of the answer.

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
