//! The finish-reason checks after each model call (`docs/gateway-contract.md` §7.3): a provider
//! that stopped for safety, or at its output limit, may still have sent tool calls whose
//! arguments are cut off, and running those would act on a truncated payload.
//!
//! - `SafetyFinishReasonMiddleware`: an answer with tool calls whose `finish_reason` is
//!   `content_filter` (or `stop_reason` `refusal`) loses its tool calls, gets an explanation
//!   appended and `additional_kwargs.safety_termination`; a `custom` event
//!   `{"type": "safety_termination", …}` tells the client.
//! - `ModelLengthFinishReasonMiddleware`: an answer whose `finish_reason` is `length` (or
//!   `max_tokens`) that has tool calls or no visible text loses its tool calls, keeps its text or
//!   gets a notice, and carries `additional_kwargs.model_length_termination`.

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::messages::{Message, MessageType};
use crate::runtime::RunContext;
use crate::runtime::middleware::{Hook, HookResult, Middleware};
use crate::runtime::state::{AgentState, StateUpdate};

/// The explanation appended to a safety-stopped answer.
const SAFETY_EXPLANATION: &str = "The model provider stopped this response with a safety-related signal ({field}={value:?}, detector={detector:?}). Any tool calls produced in this turn were suppressed because their arguments may be truncated and unsafe to execute. Please rephrase the request or ask for a narrower output.";

/// The notice of a length-capped answer without visible text.
const LENGTH_NOTICE: &str = "The model reached its output limit before producing a complete final response. Please continue the conversation to resume.";

/// A provider stop signal: which detector matched, and the field and value it read.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Termination {
    detector: &'static str,
    field: &'static str,
    value: String,
}

/// The string `field` of `message`, from `response_metadata` or else `additional_kwargs`.
fn metadata_value(message: &Message, field: &str) -> Option<String> {
    [&message.response_metadata, &message.additional_kwargs]
        .into_iter()
        .find_map(|container| container.get(field).and_then(Value::as_str))
        .filter(|value| !value.is_empty())
        .map(str::to_string)
}

/// The first detector in `detectors` (name, field, values) whose field has one of its values.
fn detect(
    message: &Message,
    detectors: &[(&'static str, &'static str, &[&str])],
) -> Option<Termination> {
    detectors.iter().find_map(|(detector, field, values)| {
        let value = metadata_value(message, field)?;
        let matched = values.contains(&value.to_lowercase().as_str());
        matched.then_some(Termination {
            detector,
            field,
            value,
        })
    })
}

/// `content` with `text` appended as DeerFlow appends it: a string gets `\n\n<text>`, a block
/// list a text block, empty content becomes `text`.
fn append_text(content: &Value, text: &str) -> Value {
    match content {
        Value::Null => json!(text),
        Value::String(existing) if existing.is_empty() => json!(text),
        Value::String(existing) => json!(format!("{existing}\n\n{text}")),
        Value::Array(blocks) => {
            let mut blocks = blocks.clone();
            blocks.push(json!({"type": "text", "text": format!("\n\n{text}")}));
            Value::Array(blocks)
        }
        other => json!(format!("{other}\n\n{text}")),
    }
}

/// The newest message when it is an AI message.
fn last_ai(state: &AgentState) -> Option<&Message> {
    state.last_message().filter(|m| m.kind == MessageType::Ai)
}

/// Suppresses the tool calls of an answer the provider stopped for safety.
#[derive(Debug, Default)]
pub struct SafetyFinishReasonMiddleware;

#[async_trait]
impl Middleware for SafetyFinishReasonMiddleware {
    fn name(&self) -> &'static str {
        "SafetyFinishReasonMiddleware"
    }

    fn hooks(&self) -> &'static [Hook] {
        &[Hook::AfterModel]
    }

    async fn after_model(&self, state: &AgentState, run: &RunContext) -> HookResult {
        Ok(safety_update(state).map(|(update, event)| {
            run.emit_custom(event);
            update
        }))
    }
}

/// The update and `custom` event of a safety stop, if the newest answer is one.
fn safety_update(state: &AgentState) -> Option<(StateUpdate, Value)> {
    let last = last_ai(state).filter(|m| !m.tool_calls.is_empty())?;
    let termination = detect(
        last,
        &[
            (
                "openai_compatible_content_filter",
                "finish_reason",
                &["content_filter"],
            ),
            ("anthropic_refusal", "stop_reason", &["refusal"]),
        ],
    )?;
    let names: Vec<&str> = last.tool_calls.iter().map(|c| c.name.as_str()).collect();
    let record = json!({
        "detector": termination.detector,
        "reason_field": termination.field,
        "reason_value": termination.value,
        "suppressed_tool_call_count": names.len(),
        "suppressed_tool_call_names": names,
        "extras": {},
    });
    let mut patched = last.clone();
    let explanation = SAFETY_EXPLANATION
        .replace("{field}", termination.field)
        .replace("{value:?}", &format!("'{}'", termination.value))
        .replace("{detector:?}", &format!("'{}'", termination.detector));
    patched.content = append_text(&last.content, &explanation);
    patched.tool_calls.clear();
    patched.additional_kwargs.remove("tool_calls");
    patched
        .additional_kwargs
        .insert("safety_termination".into(), record.clone());
    let mut event = json!({"type": "safety_termination"});
    if let (Value::Object(event), Value::Object(record)) = (&mut event, record) {
        event.extend(record.into_iter().filter(|(key, _)| key != "extras"));
    }
    Some((StateUpdate::messages(vec![patched]), event))
}

/// Blocks the tool calls of an answer cut off at the provider's output limit.
#[derive(Debug, Default)]
pub struct ModelLengthFinishReasonMiddleware;

#[async_trait]
impl Middleware for ModelLengthFinishReasonMiddleware {
    fn name(&self) -> &'static str {
        "ModelLengthFinishReasonMiddleware"
    }

    fn hooks(&self) -> &'static [Hook] {
        &[Hook::AfterModel]
    }

    async fn after_model(&self, state: &AgentState, _run: &RunContext) -> HookResult {
        Ok(length_update(state))
    }
}

/// The update of a length-capped answer that has tool calls or no visible text.
fn length_update(state: &AgentState) -> Option<StateUpdate> {
    let last = last_ai(state)?;
    let termination = detect(
        last,
        &[
            ("openai_compatible_length", "finish_reason", &["length"]),
            ("anthropic_max_tokens", "stop_reason", &["max_tokens"]),
        ],
    )?;
    let has_calls = !last.tool_calls.is_empty() || !last.invalid_tool_calls.is_empty();
    let visible = !last.text().trim().is_empty();
    if !has_calls && visible {
        return None;
    }
    let mut names: Vec<&str> = Vec::new();
    for call in &last.tool_calls {
        if !names.contains(&call.name.as_str()) {
            names.push(&call.name);
        }
    }
    let count = last.tool_calls.len() + last.invalid_tool_calls.len();
    let mut patched = last.clone();
    if !visible {
        patched.content = append_text(&last.content, LENGTH_NOTICE);
    }
    patched.tool_calls.clear();
    patched.invalid_tool_calls.clear();
    patched.additional_kwargs.remove("tool_calls");
    patched.additional_kwargs.remove("function_call");
    patched.additional_kwargs.insert(
        "model_length_termination".into(),
        json!({
            "detector": termination.detector,
            "reason_field": termination.field,
            "reason_value": termination.value,
            "suppressed_tool_call_count": count,
            "suppressed_tool_call_names": names,
        }),
    );
    Some(StateUpdate::messages(vec![patched]))
}
