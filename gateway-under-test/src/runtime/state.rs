//! The agent state: its channels, their reducers, and its serialisation as a `values` frame.
//!
//! Channels follow `docs/gateway-contract.md` §6: five reducer channels are always present
//! (`messages`, `artifacts`, `delegations`, `skill_context`, `viewed_images`); the others appear
//! once written and are never serialised as `null`.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::messages::Message;

/// Channels that always appear, with their defaults.
pub const ALWAYS_PRESENT: [&str; 4] =
    ["artifacts", "delegations", "skill_context", "viewed_images"];

const MAX_DELEGATIONS: usize = 50;
const MAX_SKILL_CONTEXT: usize = 8;

/// One step's writes: messages (merged by id) and other channels (merged by their reducer).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StateUpdate {
    /// Messages to add, or to replace when one with the same id exists.
    pub messages: Vec<Message>,
    /// Other channel writes, applied in order.
    pub channels: Vec<(String, Value)>,
}

impl StateUpdate {
    /// An update writing only messages.
    pub fn messages(messages: Vec<Message>) -> StateUpdate {
        StateUpdate {
            messages,
            channels: Vec::new(),
        }
    }

    /// An update writing one channel.
    pub fn channel(name: &str, value: Value) -> StateUpdate {
        StateUpdate {
            messages: Vec::new(),
            channels: vec![(name.to_string(), value)],
        }
    }

    /// Adds a channel write.
    pub fn with_channel(mut self, name: &str, value: Value) -> StateUpdate {
        self.channels.push((name.to_string(), value));
        self
    }

    /// Appends another update's writes.
    pub fn merge(&mut self, other: StateUpdate) {
        self.messages.extend(other.messages);
        self.channels.extend(other.channels);
    }

    /// True when nothing is written: such a step emits no frame.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty() && self.channels.is_empty()
    }

    /// The update as the `updates` stream mode shows it.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        if !self.messages.is_empty() {
            object.insert(
                "messages".into(),
                Value::Array(self.messages.iter().map(Message::to_dump).collect()),
            );
        }
        for (name, value) in &self.channels {
            object.insert(name.clone(), value.clone());
        }
        Value::Object(object)
    }
}

/// The state of one thread.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentState {
    /// The conversation. Each message is shared, not copied, with every model request built
    /// from it (a request holds the whole conversation, so copying it made each step cost the
    /// conversation's length); a step replaces the messages it changes.
    pub messages: Vec<Arc<Message>>,
    /// Every other channel, in first-write order (always-present ones first).
    pub channels: Map<String, Value>,
}

impl Default for AgentState {
    fn default() -> Self {
        let mut channels = Map::new();
        for name in ALWAYS_PRESENT {
            channels.insert(name.into(), default_of(name));
        }
        AgentState {
            messages: Vec::new(),
            channels,
        }
    }
}

fn default_of(channel: &str) -> Value {
    match channel {
        "viewed_images" => Value::Object(Map::new()),
        _ => Value::Array(Vec::new()),
    }
}

impl AgentState {
    /// Rebuilds a state from a stored `values` object. Messages that do not parse are reported.
    pub fn from_values(values: &Value) -> Result<AgentState, String> {
        let mut state = AgentState::default();
        let Some(object) = values.as_object() else {
            return Ok(state);
        };
        for (name, value) in object {
            if name == "messages" {
                for (index, message) in value.as_array().into_iter().flatten().enumerate() {
                    state.messages.push(Arc::new(
                        Message::from_json(message)
                            .map_err(|err| format!("messages[{index}]: {err}"))?,
                    ));
                }
            } else {
                state.channels.insert(name.clone(), value.clone());
            }
        }
        Ok(state)
    }

    /// The serialised state: `messages` as dumps, then every channel.
    pub fn to_values(&self) -> Value {
        let mut values = Map::new();
        values.insert(
            "messages".into(),
            Value::Array(
                self.messages
                    .iter()
                    .map(|message| message.to_dump())
                    .collect(),
            ),
        );
        for (name, value) in &self.channels {
            values.insert(name.clone(), value.clone());
        }
        Value::Object(values)
    }

    /// The serialised state with an empty `messages` list in place of the conversation: what a
    /// checkpoint stores besides the messages a step changed (see [`AgentState::apply`]).
    pub fn to_values_without_messages(&self) -> Value {
        let mut values = Map::new();
        values.insert("messages".into(), Value::Array(Vec::new()));
        for (name, value) in &self.channels {
            values.insert(name.clone(), value.clone());
        }
        Value::Object(values)
    }

    /// The value of a channel, if written.
    pub fn channel(&self, name: &str) -> Option<&Value> {
        self.channels.get(name)
    }

    /// Applies an update with each channel's reducer, and returns the positions of the messages
    /// it added or replaced, ascending and once each: a step costs what it changed, not the
    /// conversation (only these are serialised, stored and marked sent).
    pub fn apply(&mut self, update: StateUpdate) -> Vec<usize> {
        let mut changed = self.apply_in_order(update);
        changed.sort_unstable();
        changed.dedup();
        changed
    }

    /// [`AgentState::apply`], returning each of the update's messages' position in update order.
    pub fn apply_in_order(&mut self, update: StateUpdate) -> Vec<usize> {
        let positions: Vec<usize> = update
            .messages
            .into_iter()
            .map(|message| self.add_message(message))
            .collect();
        for (name, value) in update.channels {
            let merged = match (name.as_str(), self.channels.remove(&name)) {
                ("artifacts", Some(Value::Array(old))) => merge_artifacts(old, value),
                ("delegations", Some(Value::Array(old))) => {
                    merge_keyed(old, value, "id", MAX_DELEGATIONS)
                }
                ("skill_context", Some(Value::Array(old))) => {
                    merge_keyed(old, value, "name", MAX_SKILL_CONTEXT)
                }
                ("viewed_images", Some(Value::Object(mut old))) => {
                    if let Value::Object(new) = value {
                        old.extend(new);
                    }
                    Value::Object(old)
                }
                _ => value,
            };
            self.channels.insert(name, merged);
        }
        positions
    }

    /// LangGraph's `add_messages`: a message whose id is already present replaces it in place;
    /// others are appended, with a fresh UUID id when they have none. Returns the message's
    /// position.
    fn add_message(&mut self, mut message: Message) -> usize {
        // Searched from the end: a step replaces a recent message (an after-model hook stamps
        // the answer it just got), so the search stops early.
        if let Some(id) = &message.id
            && let Some(index) = self
                .messages
                .iter()
                .rposition(|existing| existing.id.as_deref() == Some(id))
        {
            self.messages[index] = Arc::new(message);
            return index;
        }
        if message.id.is_none() {
            message.id = Some(uuid::Uuid::new_v4().to_string());
        }
        self.messages.push(Arc::new(message));
        self.messages.len() - 1
    }

    /// The newest message, if any.
    pub fn last_message(&self) -> Option<&Message> {
        self.messages.last().map(|message| &**message)
    }

    /// The last AI message, if any.
    pub fn last_ai(&self) -> Option<&Message> {
        self.messages
            .iter()
            .rev()
            .find(|message| message.kind == crate::messages::MessageType::Ai)
            .map(|message| &**message)
    }
}

fn merge_artifacts(old: Vec<Value>, new: Value) -> Value {
    let mut merged = old;
    for item in new.as_array().cloned().unwrap_or_default() {
        if !merged.contains(&item) {
            merged.push(item);
        }
    }
    Value::Array(merged)
}

/// Merges lists of objects by a key (a newer entry replaces an older one), keeping the newest
/// `cap` entries.
fn merge_keyed(old: Vec<Value>, new: Value, key: &str, cap: usize) -> Value {
    let mut merged = old;
    for item in new.as_array().cloned().unwrap_or_default() {
        let item_key = item.get(key).cloned();
        match merged
            .iter_mut()
            .find(|existing| item_key.is_some() && existing.get(key).cloned() == item_key)
        {
            Some(slot) => *slot = item,
            None => merged.push(item),
        }
    }
    let excess = merged.len().saturating_sub(cap);
    merged.drain(..excess);
    Value::Array(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn keys(state: &AgentState) -> Vec<String> {
        let mut keys: Vec<String> = state
            .to_values()
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        keys.sort();
        keys
    }

    #[test]
    fn a_new_state_has_exactly_the_always_present_channels() {
        assert_eq!(
            keys(&AgentState::default()),
            [
                "artifacts",
                "delegations",
                "messages",
                "skill_context",
                "viewed_images"
            ]
        );
    }

    #[test]
    fn messages_with_a_known_id_replace_in_place_and_others_get_an_id() {
        let mut state = AgentState::default();
        state.apply(StateUpdate::messages(vec![Message::human("hi")]));
        let id = state.messages[0].id.clone().unwrap();
        let mut reminder = Message::system("reminder");
        reminder.id = Some(id.clone());
        let mut copy = Message::human("hi");
        copy.id = Some(format!("{id}__user"));
        state.apply(StateUpdate::messages(vec![reminder, copy]));
        assert_eq!(state.messages.len(), 2);
        assert_eq!(state.messages[0].text(), "reminder");
        assert_eq!(
            state.messages[1].id.as_deref(),
            Some(format!("{id}__user").as_str())
        );
    }

    #[test]
    fn apply_reports_the_positions_it_added_or_replaced() {
        let mut state = AgentState::default();
        let first = state.apply(StateUpdate::messages(vec![
            Message::human("a"),
            Message::human("b"),
        ]));
        assert_eq!(first, [0, 1], "two appended messages");
        let mut replaced = Message::human("b2");
        replaced.id = state.messages[1].id.clone();
        let second = state.apply(
            StateUpdate::messages(vec![Message::human("c"), replaced])
                .with_channel("title", json!("t")),
        );
        assert_eq!(second, [1, 2], "a replacement in place and an append");
        let third = state.apply(StateUpdate::channel("title", json!("u")));
        assert!(third.is_empty(), "a channel write changes no message");
    }

    #[test]
    fn reducers_merge_deduplicate_and_cap() {
        let mut state = AgentState::default();
        state.apply(StateUpdate::channel("artifacts", json!(["a", "b"])));
        state.apply(StateUpdate::channel("artifacts", json!(["b", "c"])));
        assert_eq!(state.channel("artifacts"), Some(&json!(["a", "b", "c"])));
        let many: Vec<Value> = (0..60).map(|i| json!({"id": i})).collect();
        state.apply(StateUpdate::channel("delegations", Value::Array(many)));
        let delegations = state.channel("delegations").unwrap().as_array().unwrap();
        assert_eq!(delegations.len(), 50);
        assert_eq!(delegations[0], json!({"id": 10}));
        state.apply(StateUpdate::channel("viewed_images", json!({"/a.png": {}})));
        state.apply(StateUpdate::channel("viewed_images", json!({"/b.png": {}})));
        assert_eq!(
            state
                .channel("viewed_images")
                .unwrap()
                .as_object()
                .unwrap()
                .len(),
            2
        );
        state.apply(StateUpdate::channel("title", json!("one")));
        state.apply(StateUpdate::channel("title", json!("two")));
        assert_eq!(state.channel("title"), Some(&json!("two")));
    }

    #[test]
    fn values_round_trip_through_storage() {
        let mut state = AgentState::default();
        state.apply(
            StateUpdate::messages(vec![Message::human("hi")]).with_channel("title", json!("t")),
        );
        let restored = AgentState::from_values(&state.to_values()).unwrap();
        assert_eq!(restored, state);
    }
}
