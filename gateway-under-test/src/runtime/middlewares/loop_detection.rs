//! Loop detection (`docs/gateway-contract.md` §7.3): a model that asks for the same set of tool
//! calls again and again is stopped. After each model call, the answer's tool calls are compared
//! with each earlier answer's (names and arguments as JSON values, so neither the order within a
//! batch nor an object's key order matters); when the same set has been asked for
//! [`HARD_LIMIT`] times in the current turn
//! (since the newest visible user message), the answer loses its tool calls and gets DeerFlow's
//! forced-stop text appended, so the run ends with what it has.
//!
//! The count is read from the thread's messages, not kept in the middleware, so it needs no
//! state of its own. The before- and after-agent nodes, where DeerFlow resets its per-thread
//! tracking, write nothing. DeerFlow's earlier warning (at three repeats) and its per-tool
//! frequency limits are not implemented.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;

use crate::messages::{Message, MessageType, ToolCall};
use crate::runtime::RunContext;
use crate::runtime::middleware::{Hook, HookResult, Middleware};
use crate::runtime::state::{AgentState, StateUpdate};

/// Identical tool-call sets in one turn before the tool calls are stripped.
pub const HARD_LIMIT: usize = 5;

/// DeerFlow's forced-stop text.
pub const HARD_STOP_MESSAGE: &str = "[FORCED STOP] Repeated tool calls exceeded the safety limit. Producing final answer with results collected so far.";

/// Stops a model that repeats the same tool calls.
#[derive(Debug, Default)]
pub struct LoopDetectionMiddleware;

/// A call's arguments as compared: an object, or nothing (arguments that are not an object
/// count as none, as an empty object does).
fn call_args(call: &ToolCall) -> Option<&serde_json::Map<String, serde_json::Value>> {
    call.args.as_object().filter(|args| !args.is_empty())
}

/// Whether two answers ask for the same set of tool calls: the same names and arguments, in any
/// order. Compared as JSON values, whose objects are equal whatever their key order, so nothing
/// is serialised: the check runs over the whole turn after every model call, and a key built
/// per message made each step cost the turn's length in serialisations.
fn same_calls(a: &Message, b: &Message) -> bool {
    if a.tool_calls.len() != b.tool_calls.len() {
        return false;
    }
    let mut used = vec![false; b.tool_calls.len()];
    a.tool_calls.iter().all(|call| {
        let found = b.tool_calls.iter().enumerate().position(|(index, other)| {
            !used[index] && other.name == call.name && call_args(other) == call_args(call)
        });
        found.map(|index| used[index] = true).is_some()
    })
}

/// The stripped answer when the newest AI message repeats a tool-call set [`HARD_LIMIT`] times
/// in the current turn.
pub(crate) fn hard_stop(messages: &[Arc<Message>]) -> Option<Message> {
    let last = messages
        .last()
        .filter(|m| m.kind == MessageType::Ai && !m.tool_calls.is_empty())?;
    let turn_start = messages
        .iter()
        .rposition(|m| m.kind == MessageType::Human && !m.is_hidden())
        .map_or(0, |index| index + 1);
    let repeats = messages[turn_start..]
        .iter()
        .filter(|m| m.kind == MessageType::Ai && same_calls(m, last))
        .count();
    if repeats < HARD_LIMIT {
        return None;
    }
    let mut stopped = Message::clone(last);
    stopped.tool_calls.clear();
    stopped.additional_kwargs.remove("tool_calls");
    stopped.content = match &last.content {
        serde_json::Value::String(text) if !text.is_empty() => {
            json!(format!("{text}\n\n{HARD_STOP_MESSAGE}"))
        }
        serde_json::Value::Array(blocks) => {
            let mut blocks = blocks.clone();
            blocks.push(json!({"type": "text", "text": HARD_STOP_MESSAGE}));
            serde_json::Value::Array(blocks)
        }
        _ => json!(HARD_STOP_MESSAGE),
    };
    Some(stopped)
}

#[async_trait]
impl Middleware for LoopDetectionMiddleware {
    fn name(&self) -> &'static str {
        "LoopDetectionMiddleware"
    }

    fn hooks(&self) -> &'static [Hook] {
        &[Hook::BeforeAgent, Hook::AfterModel, Hook::AfterAgent]
    }

    async fn after_model(&self, state: &AgentState, _run: &RunContext) -> HookResult {
        Ok(hard_stop(&state.messages).map(|stopped| StateUpdate::messages(vec![stopped])))
    }
}
