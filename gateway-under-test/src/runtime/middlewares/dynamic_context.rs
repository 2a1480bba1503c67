//! Dynamic context: gives the thread its hidden date reminder once per day. The first run (no
//! reminder yet) and the first run after the date changed replace the newest user message with
//! a hidden reminder that takes over its id, and append a visible copy of the user's message with
//! id `<id>__user`; a later run on the same day writes nothing (`docs/gateway-contract.md` §6.4).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;

use crate::messages::{Message, MessageType};
use crate::runtime::RunContext;
use crate::runtime::middleware::{Hook, HookResult, Middleware};
use crate::runtime::state::{AgentState, StateUpdate};

/// The `__user` suffix of the visible copy.
const USER_COPY_SUFFIX: &str = "__user";

/// The `additional_kwargs` flag of a reminder.
const REMINDER_FLAG: &str = "dynamic_context_reminder";

/// The `additional_kwargs` key holding a reminder's date.
const REMINDER_DATE: &str = "reminder_date";

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
        .insert(REMINDER_FLAG.into(), json!(true));
    reminder
        .additional_kwargs
        .insert(REMINDER_DATE.into(), json!(date));
    reminder
}

/// The date of the newest reminder in `messages`: its `reminder_date`, or for an older reminder
/// without one, the `<current_date>` of its content.
fn last_reminder_date(messages: &[Arc<Message>]) -> Option<String> {
    messages
        .iter()
        .rev()
        .filter(|m| {
            matches!(m.kind, MessageType::Human | MessageType::System)
                && m.additional_kwargs
                    .get(REMINDER_FLAG)
                    .is_some_and(crate::messages::is_truthy)
        })
        .find_map(|m| match m.additional_kwargs.get(REMINDER_DATE) {
            Some(serde_json::Value::String(date)) if !date.is_empty() => Some(date.clone()),
            _ if m.kind == MessageType::System => {
                let text = m.text();
                let start = text.find("<current_date>")? + "<current_date>".len();
                let end = start + text[start..].find("</current_date>")?;
                Some(text[start..end].to_string())
            }
            _ => None,
        })
}

/// Whether `message` can take a reminder: a human message that is not a reminder, not a
/// summary, and not already a `__user` copy (a copy swapped again would grow its suffix).
fn is_injection_target(message: &Message) -> bool {
    message.kind == MessageType::Human
        && !message
            .additional_kwargs
            .get(REMINDER_FLAG)
            .is_some_and(crate::messages::is_truthy)
        && message.name.as_deref() != Some("summary")
        && message
            .id
            .as_deref()
            .is_some_and(|id| !id.ends_with(USER_COPY_SUFFIX))
}

/// What the middleware writes for `messages` on `today`: nothing when the newest reminder is
/// of `today`; otherwise the reminder taking the newest target's id and the target's copy.
pub(crate) fn inject(messages: &[Arc<Message>], today: &str) -> Option<StateUpdate> {
    if last_reminder_date(messages).as_deref() == Some(today) {
        return None;
    }
    let target = messages.iter().rev().find(|m| is_injection_target(m))?;
    let id = target.id.clone()?;
    let mut reminder = date_reminder(today);
    reminder.id = Some(id.clone());
    let mut copy = Message::clone(target);
    copy.id = Some(format!("{id}{USER_COPY_SUFFIX}"));
    Some(StateUpdate::messages(vec![reminder, copy]))
}

#[async_trait]
impl Middleware for DynamicContextMiddleware {
    fn name(&self) -> &'static str {
        "DynamicContextMiddleware"
    }

    fn hooks(&self) -> &'static [Hook] {
        &[Hook::BeforeAgent]
    }

    async fn before_agent(&self, state: &AgentState, _run: &RunContext) -> HookResult {
        Ok(inject(
            &state.messages,
            &crate::clock::local_date_with_weekday(),
        ))
    }
}
