//! The terminal-response check (`docs/gateway-contract.md` §7.3): a model that ran tools in this
//! turn and then answered with nothing (no text, no tool calls, not cut off at its output limit)
//! would end the run in silent success. Its answer becomes DeerFlow's fallback text, flagged
//! `deerflow_error_fallback` with the `error_reason`. The before- and after-agent nodes, where
//! DeerFlow keeps its per-run bookkeeping, write nothing.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::messages::{Message, MessageType};
use crate::runtime::RunContext;
use crate::runtime::middleware::{Hook, HookResult, Middleware};
use crate::runtime::state::{AgentState, StateUpdate};

/// DeerFlow's fallback for an empty answer after tools.
pub const FALLBACK_CONTENT: &str = "The model completed the tool run but returned no final response. Please try again or use a different model.";

/// Finish reasons of an answer cut off at the output limit (handled by the length check).
const LENGTH_FINISH_REASONS: [&str; 3] = ["length", "max_tokens", "max_output_tokens"];

/// Replaces an empty answer after tools with the fallback text.
#[derive(Debug, Default)]
pub struct TerminalResponseMiddleware;

/// The fallback for the newest message, when it is an empty AI answer after a tool result of the
/// current turn.
pub(crate) fn empty_terminal_fallback(messages: &[Arc<Message>]) -> Option<Message> {
    let last = messages.last().filter(|m| m.kind == MessageType::Ai)?;
    let has_content = !last.text().trim().is_empty()
        || !last.tool_calls.is_empty()
        || last
            .additional_kwargs
            .get("reasoning_content")
            .and_then(Value::as_str)
            .is_some_and(|text| !text.trim().is_empty());
    if has_content {
        return None;
    }
    let finish = last
        .response_metadata
        .get("finish_reason")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if LENGTH_FINISH_REASONS.contains(&finish) {
        return None;
    }
    let turn_start = messages
        .iter()
        .rposition(|m| m.kind == MessageType::Human && !m.is_hidden())?;
    if !messages[turn_start + 1..]
        .iter()
        .any(|m| m.kind == MessageType::Tool)
    {
        return None;
    }
    let mut fallback = Message::clone(last);
    fallback.content = json!(FALLBACK_CONTENT);
    fallback
        .additional_kwargs
        .insert("deerflow_error_fallback".into(), json!(true));
    fallback.additional_kwargs.insert(
        "error_reason".into(),
        json!("Model returned an empty terminal response"),
    );
    Some(fallback)
}

#[async_trait]
impl Middleware for TerminalResponseMiddleware {
    fn name(&self) -> &'static str {
        "TerminalResponseMiddleware"
    }

    fn hooks(&self) -> &'static [Hook] {
        &[Hook::BeforeAgent, Hook::AfterModel, Hook::AfterAgent]
    }

    async fn after_model(&self, state: &AgentState, _run: &RunContext) -> HookResult {
        Ok(empty_terminal_fallback(&state.messages)
            .map(|fallback| StateUpdate::messages(vec![fallback])))
    }
}
