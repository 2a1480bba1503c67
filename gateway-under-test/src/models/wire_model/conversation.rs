//! Our [`Message`]s and tools as the codec's wire-neutral conversation
//! ([`model_wire::conversation`]), which the Responses and Messages request builders write in
//! their wire's terms. The choices mirror the Chat Completions mapping (`wire.rs`): user content
//! keeps its blocks, other roles send their text, invalid tool calls are sent back with their
//! raw arguments (so the tool messages answering them still have a call), and reasoning goes back
//! only when the provider signed it (Anthropic's thinking, `additional_kwargs.reasoning_content`
//! with its `reasoning_signature`). Message names are not carried: neither wire has them.

use model_wire::chat_completions::REASONING_SIGNATURE;
use model_wire::conversation::{Call, Message as WireMessage, Thinking, Tool};
use serde_json::Value;

use crate::messages::{Message, MessageType};
use crate::models::ModelRequest;

/// The request's messages, in order.
pub(crate) fn messages(request: &ModelRequest) -> Vec<WireMessage> {
    request.messages.iter().map(|m| message(m)).collect()
}

/// The request's bound tools.
pub(crate) fn tools(request: &ModelRequest) -> Vec<Tool> {
    request
        .tools
        .iter()
        .map(|tool| Tool {
            name: tool.name.clone(),
            description: tool.description.clone(),
            parameters: tool.parameters.clone(),
        })
        .collect()
}

fn message(message: &Message) -> WireMessage {
    match message.kind {
        MessageType::System => WireMessage::System {
            text: message.text(),
        },
        MessageType::Human => WireMessage::User {
            content: message.content.clone(),
        },
        MessageType::Tool => WireMessage::Tool {
            call_id: message.tool_call_id.clone().unwrap_or_default(),
            content: message.text(),
        },
        MessageType::Ai => {
            let mut calls: Vec<Call> = message
                .tool_calls
                .iter()
                .map(|call| Call {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.args.to_string(),
                })
                .collect();
            calls.extend(message.invalid_tool_calls.iter().map(|call| {
                let field = |key: &str| {
                    call.get(key)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                Call {
                    id: field("id"),
                    name: field("name"),
                    arguments: match call.get("args") {
                        Some(Value::String(raw)) => raw.clone(),
                        Some(Value::Null) | None => String::new(),
                        Some(other) => other.to_string(),
                    },
                }
            }));
            let kwarg = |key: &str| {
                message
                    .additional_kwargs
                    .get(key)
                    .and_then(Value::as_str)
                    .filter(|value| !value.is_empty())
            };
            let thinking = kwarg(REASONING_SIGNATURE).map(|signature| Thinking {
                text: kwarg("reasoning_content").unwrap_or_default().to_owned(),
                signature: signature.to_owned(),
            });
            WireMessage::Assistant {
                text: message.text(),
                calls,
                thinking,
            }
        }
    }
}
