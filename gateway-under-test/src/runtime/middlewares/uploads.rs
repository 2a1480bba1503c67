//! Uploads: writes `uploaded_files`, the files attached to the run's input message (always
//! written, `[]` when there are none, which is what adds its own `values` frame).

use async_trait::async_trait;
use serde_json::Value;

use super::newest_human;
use crate::runtime::RunContext;
use crate::runtime::middleware::{Hook, HookResult, Middleware};
use crate::runtime::state::{AgentState, StateUpdate};

/// Writes `uploaded_files` from the input message's `additional_kwargs.files`.
#[derive(Debug, Default)]
pub struct UploadsMiddleware;

#[async_trait]
impl Middleware for UploadsMiddleware {
    fn name(&self) -> &'static str {
        "UploadsMiddleware"
    }

    fn hooks(&self) -> &'static [Hook] {
        &[Hook::BeforeAgent]
    }

    async fn before_agent(&self, state: &AgentState, _run: &RunContext) -> HookResult {
        let files = newest_human(state)
            .and_then(|(_, human)| human.additional_kwargs.get("files"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        Ok(Some(StateUpdate::channel(
            "uploaded_files",
            Value::Array(files),
        )))
    }
}
