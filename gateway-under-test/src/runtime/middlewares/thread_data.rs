//! Thread data: creates the thread's sandbox folders, writes `thread_data` (their host paths),
//! and stamps the newest human message as the user's input of this run.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::newest_human;
use crate::runtime::RunContext;
use crate::runtime::middleware::{GraphError, Hook, HookResult, Middleware};
use crate::runtime::state::{AgentState, StateUpdate};

/// Writes `thread_data` and stamps the input message with name `user-input`, `run_id` and
/// `timestamp` (ISO-8601 UTC with microseconds, as DeerFlow writes `datetime.now(UTC).isoformat()`).
#[derive(Debug, Default)]
pub struct ThreadDataMiddleware;

#[async_trait]
impl Middleware for ThreadDataMiddleware {
    fn name(&self) -> &'static str {
        "ThreadDataMiddleware"
    }

    fn hooks(&self) -> &'static [Hook] {
        &[Hook::BeforeAgent]
    }

    async fn before_agent(&self, state: &AgentState, run: &RunContext) -> HookResult {
        let paths = run.paths.clone();
        tokio::task::spawn_blocking(move || paths.create_dirs())
            .await
            .map_err(|err| GraphError::new("SandboxError", err.to_string()))?
            .map_err(|err| {
                GraphError::new(
                    "SandboxError",
                    format!("cannot create thread folders: {err}"),
                )
            })?;
        let mut update = StateUpdate::channel("thread_data", run.paths.thread_data());
        if let Some((_, human)) = newest_human(state)
            && human.additional_kwargs.get("run_id") != Some(&Value::String(run.run_id.clone()))
        {
            let mut stamped = human.clone();
            stamped.name = Some("user-input".into());
            stamped
                .additional_kwargs
                .insert("run_id".into(), json!(run.run_id));
            stamped
                .additional_kwargs
                .insert("timestamp".into(), json!(crate::clock::now_iso()));
            update.messages.push(stamped);
        }
        Ok(Some(update))
    }
}
