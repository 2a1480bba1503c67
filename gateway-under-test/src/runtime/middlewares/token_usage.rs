//! Token-usage attribution: after each model call, rewrites the last AI message with
//! `additional_kwargs.token_usage_attribution` saying what the call's tokens were spent on.

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::messages::Message;
use crate::runtime::RunContext;
use crate::runtime::middleware::{Hook, HookResult, Middleware};
use crate::runtime::state::{AgentState, StateUpdate};

/// Stamps `token_usage_attribution` (`docs/gateway-contract.md` §6.4) on the newest AI message.
#[derive(Debug, Default)]
pub struct TokenUsageMiddleware;

/// The attribution of one AI message: a tool batch when it calls tools, else a final answer
/// (or `thinking` when it carries only reasoning).
pub fn attribution(message: &Message) -> Value {
    let kind = if !message.tool_calls.is_empty() {
        "tool_batch"
    } else if message.text().trim().is_empty()
        && message.additional_kwargs.contains_key("reasoning_content")
    {
        "thinking"
    } else {
        "final_answer"
    };
    let actions: Vec<Value> = message
        .tool_calls
        .iter()
        .map(|call| {
            json!({
                "kind": "tool",
                "tool_name": call.name,
                "description": call.args.get("description").cloned().unwrap_or(Value::Null),
                "tool_call_id": call.id,
            })
        })
        .collect();
    json!({
        "version": 1,
        "kind": kind,
        // Whether the call's tokens are shared by more than one action, as DeerFlow says it.
        "shared_attribution": actions.len() > 1,
        "tool_call_ids": message.tool_calls.iter().map(|c| c.id.clone()).collect::<Vec<_>>(),
        "actions": actions,
    })
}

#[async_trait]
impl Middleware for TokenUsageMiddleware {
    fn name(&self) -> &'static str {
        "TokenUsageMiddleware"
    }

    fn hooks(&self) -> &'static [Hook] {
        &[Hook::AfterModel]
    }

    async fn after_model(&self, state: &AgentState, _run: &RunContext) -> HookResult {
        let Some(last) = state
            .last_message()
            .filter(|m| m.kind == crate::messages::MessageType::Ai)
        else {
            return Ok(None);
        };
        let mut stamped = last.clone();
        stamped
            .additional_kwargs
            .insert("token_usage_attribution".into(), attribution(last));
        Ok(Some(StateUpdate::messages(vec![stamped])))
    }
}
