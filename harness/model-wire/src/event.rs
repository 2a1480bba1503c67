//! The one delta vocabulary of a model answer: [`Event`], what a streaming client sees of an
//! answer between its start and its end. Every wire's reader produces it and every wire's
//! renderer consumes it; the harness's recording event and the gateway's stream event wrap it
//! (start, delta, done, error) rather than declaring it again, so it is declared here, outside
//! any one wire, and serde-only so that every crate may use it.

use serde::{Deserialize, Serialize};

/// What a streaming client sees of an answer, in order: text and reasoning blocks (opened on
/// their first non-empty fragment, closed when the other kind opens, a tool call starts or the
/// choice finishes) and tool calls (`toolcall_start` on a call's first fragment,
/// `toolcall_delta` per non-empty argument fragment, split wherever the provider split it,
/// `toolcall_end` for every call when the choice finishes). `index` is the call's position in
/// the answer (0, 1, … in order of first appearance), not the provider's `index`.
///
/// Serialised with a `type` tag in snake case, which is the form the harness's recording format
/// gives the same events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A text block starts.
    TextStart,
    /// A text fragment.
    TextDelta {
        /// The fragment.
        delta: String,
    },
    /// The text block ended.
    TextEnd,
    /// A reasoning block starts.
    ThinkingStart,
    /// A reasoning fragment.
    ThinkingDelta {
        /// The fragment.
        delta: String,
    },
    /// The reasoning block ended.
    ThinkingEnd,
    /// A tool call starts; `id` is empty when the provider sent none yet.
    ToolcallStart {
        /// The call's position in the answer.
        index: u32,
        /// The provider's call id, possibly empty.
        id: String,
        /// The tool name, possibly empty until a later fragment names it.
        name: String,
    },
    /// A fragment of a call's arguments (JSON text).
    ToolcallDelta {
        /// The call's position in the answer.
        index: u32,
        /// The fragment.
        delta: String,
    },
    /// A call's arguments are complete.
    ToolcallEnd {
        /// The call's position in the answer.
        index: u32,
    },
}

impl Event {
    /// The event's `type` tag (its serde tag), e.g. `text_delta`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Event::TextStart => "text_start",
            Event::TextDelta { .. } => "text_delta",
            Event::TextEnd => "text_end",
            Event::ThinkingStart => "thinking_start",
            Event::ThinkingDelta { .. } => "thinking_delta",
            Event::ThinkingEnd => "thinking_end",
            Event::ToolcallStart { .. } => "toolcall_start",
            Event::ToolcallDelta { .. } => "toolcall_delta",
            Event::ToolcallEnd { .. } => "toolcall_end",
        }
    }
}
