//! Lazy sandbox acquisition: the first tool step of a thread acquires the local sandbox and
//! persists it as the `sandbox` channel, in the same update as the tool messages.

use async_trait::async_trait;
use serde_json::json;

use crate::runtime::RunContext;
use crate::runtime::middleware::{Hook, HookResult, Middleware};
use crate::runtime::state::{AgentState, StateUpdate};

/// Writes `sandbox: {"sandbox_id": "local:<user_id>:<thread_id>"}` on the first tool call.
#[derive(Debug, Default)]
pub struct SandboxMiddleware;

#[async_trait]
impl Middleware for SandboxMiddleware {
    fn name(&self) -> &'static str {
        "SandboxMiddleware"
    }

    /// Nodes that write nothing: the local sandbox is acquired lazily in the tool step (and
    /// folded into the `tools` node) and needs no release.
    fn hooks(&self) -> &'static [Hook] {
        &[Hook::BeforeAgent, Hook::AfterAgent]
    }

    async fn tool_step(&self, state: &AgentState, run: &RunContext) -> HookResult {
        if state.channel("sandbox").is_some() {
            return Ok(None);
        }
        let sandbox_id = format!("local:{}:{}", run.user_id, run.thread_id);
        Ok(Some(StateUpdate::channel(
            "sandbox",
            json!({ "sandbox_id": sandbox_id }),
        )))
    }
}
