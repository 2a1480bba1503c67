//! The subagent limit (`docs/gateway-contract.md` §7.3), in runs with subagents on: an answer
//! that asks for more than [`MAX_CONCURRENT_SUBAGENTS`] `task` calls at once keeps the first ones
//! and loses the rest, as DeerFlow's does. This gateway binds no `task` tool, so the node
//! normally writes nothing; the check is still real for a registered one.

use async_trait::async_trait;

use crate::messages::MessageType;
use crate::runtime::middleware::{Hook, HookResult, Middleware};
use crate::runtime::state::{AgentState, StateUpdate};
use crate::runtime::{RunContext, RunFlags};

/// DeerFlow's default cap on `task` calls per answer.
pub const MAX_CONCURRENT_SUBAGENTS: usize = 3;

/// Caps the `task` calls of one answer.
#[derive(Debug, Default)]
pub struct SubagentLimitMiddleware;

#[async_trait]
impl Middleware for SubagentLimitMiddleware {
    fn name(&self) -> &'static str {
        "SubagentLimitMiddleware"
    }

    fn hooks(&self) -> &'static [Hook] {
        &[Hook::AfterModel]
    }

    fn applies_to(&self, flags: &RunFlags) -> bool {
        flags.subagent_enabled()
    }

    async fn after_model(&self, state: &AgentState, _run: &RunContext) -> HookResult {
        let Some(last) = state.last_message().filter(|m| m.kind == MessageType::Ai) else {
            return Ok(None);
        };
        let tasks = last.tool_calls.iter().filter(|c| c.name == "task").count();
        if tasks <= MAX_CONCURRENT_SUBAGENTS {
            return Ok(None);
        }
        let mut capped = last.clone();
        let mut kept = 0;
        capped.tool_calls.retain(|call| {
            if call.name != "task" {
                return true;
            }
            kept += 1;
            kept <= MAX_CONCURRENT_SUBAGENTS
        });
        Ok(Some(StateUpdate::messages(vec![capped])))
    }
}
