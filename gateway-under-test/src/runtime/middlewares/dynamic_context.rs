//! Dynamic context: replaces the run's input message with a hidden date reminder that takes over
//! its id, and appends a visible copy of the user's message with id `<id>__user`.

use async_trait::async_trait;
use serde_json::json;

use super::newest_human;
use crate::messages::Message;
use crate::runtime::RunContext;
use crate::runtime::middleware::{HookResult, Middleware};
use crate::runtime::state::{AgentState, StateUpdate};

/// The `__user` suffix of the visible copy.
const USER_COPY_SUFFIX: &str = "__user";

/// Injects the `<system-reminder>` with the server's local date (`docs/gateway-contract.md` §6.4).
#[derive(Debug, Default)]
pub struct DynamicContextMiddleware;

/// The hidden reminder message for `date` (`YYYY-MM-DD, Weekday`).
pub fn date_reminder(date: &str) -> Message {
    let mut reminder = Message::system(format!(
        "<system-reminder>\n<current_date>{date}</current_date>\n</system-reminder>"
    ));
    reminder
        .additional_kwargs
        .insert("hide_from_ui".into(), json!(true));
    reminder
        .additional_kwargs
        .insert("dynamic_context_reminder".into(), json!(true));
    reminder
        .additional_kwargs
        .insert("reminder_date".into(), json!(date));
    reminder
}

#[async_trait]
impl Middleware for DynamicContextMiddleware {
    fn name(&self) -> &'static str {
        "DynamicContextMiddleware"
    }

    async fn before_agent(&self, state: &AgentState, _run: &RunContext) -> HookResult {
        let Some((_, human)) = newest_human(state) else {
            return Ok(None);
        };
        let Some(id) = human.id.clone() else {
            return Ok(None);
        };
        if id.ends_with(USER_COPY_SUFFIX) {
            return Ok(None);
        }
        let mut reminder = date_reminder(&crate::clock::local_date_with_weekday());
        reminder.id = Some(id.clone());
        let mut copy = human.clone();
        copy.id = Some(format!("{id}{USER_COPY_SUFFIX}"));
        Ok(Some(StateUpdate::messages(vec![reminder, copy])))
    }
}
