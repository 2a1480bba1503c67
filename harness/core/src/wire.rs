//! Replay keys computed at the model's wire (`docs/replay-and-fixtures.md` §11): a gateway that
//! runs in another process, in any language, sends its model calls as OpenAI Chat Completions
//! requests, and the key is rebuilt from the request body alone.
//!
//! Two pieces, both pure JSON:
//!
//! - [`messages_from_chat_completions`] turns the body's `messages` back into the LangChain-style
//!   message dicts the canonical projection reads, so the key is computed by the same
//!   [`replay_key`](crate::replay_key) as in-process replay;
//! - [`ReplayEngine::lookup_at_wire`] finds the caller, which nothing on the wire names, when the
//!   request does not carry it: the one caller among the fixture's callers whose key is recorded.
//!
//! The conversion, message by message:
//!
//! - `system` and `developer` messages are dropped, as the projection drops system messages (a
//!   gateway that merges the hidden date reminder into the system prompt loses it with the
//!   prompt; one that sends it as its own message gets a message that is empty once the reminder
//!   is removed, which the projection drops too);
//! - `user` → `human`, with its content (a string or content parts) and its `name`;
//! - `assistant` → `ai`, with `content or ""`, its `name`, and each tool call as its function name
//!   and its parsed JSON arguments. Arguments that do not parse to a JSON object leave the call
//!   out, as LangChain files it under `invalid_tool_calls`, which the key ignores; blank arguments
//!   mean `{}`;
//! - `tool` → `tool`, with its content and **the name of the tool call it answers**, recovered
//!   from the earlier assistant tool call with the same `tool_call_id`: the wire carries no tool
//!   name on tool messages, while the key includes it (a `name` the message does carry is the
//!   fallback);
//! - any other role is kept as it is (the projection reads `role` when there is no `type`).

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::canonical::{
    DEFAULT_CALLER, ReplayKey, canonical_conversation, conversation_hash, input_hash,
    normalize_caller, replay_key,
};
use crate::pyjson::{python_repr, to_python_json};
use crate::replay::{Ambiguity, Comparison, LookupError, Miss, ReplayEngine, Served};

/// The HTTP header a gateway sends to name the caller of a model call at the wire
/// (`docs/replay-and-fixtures.md` §11, §5.6): one value per graph node that calls the model, so
/// nodes that send the same conversation get their own recorded answers.
pub const CALLER_HEADER: &str = "X-Harness-Caller";

/// The message dicts of a Chat Completions request's `messages`, ready for
/// [`replay_key`](crate::replay_key). See the module documentation for the rules.
pub fn messages_from_chat_completions(messages: &[Value]) -> Vec<Value> {
    let mut tool_names: HashMap<String, String> = HashMap::new();
    let mut converted = Vec::with_capacity(messages.len());
    for message in messages {
        let Some(fields) = message.as_object() else {
            continue;
        };
        let role = fields.get("role").and_then(Value::as_str).unwrap_or("");
        let field = |key: &str| fields.get(key).cloned().unwrap_or(Value::Null);
        let mut out = Map::new();
        match role {
            "system" | "developer" => continue,
            "user" => {
                out.insert("type".into(), "human".into());
                out.insert("content".into(), field("content"));
                copy_name(fields, &mut out);
            }
            "assistant" => {
                let calls = tool_calls(fields.get("tool_calls"), &mut tool_names);
                out.insert("type".into(), "ai".into());
                out.insert(
                    "content".into(),
                    match field("content") {
                        Value::Null => Value::String(String::new()),
                        content => content,
                    },
                );
                copy_name(fields, &mut out);
                out.insert("tool_calls".into(), Value::Array(calls));
            }
            "tool" => {
                let call_id = fields.get("tool_call_id").and_then(Value::as_str);
                out.insert("type".into(), "tool".into());
                out.insert("content".into(), field("content"));
                let recovered = call_id.and_then(|id| tool_names.get(id)).cloned();
                match recovered {
                    Some(name) => {
                        out.insert("name".into(), Value::String(name));
                    }
                    None => copy_name(fields, &mut out),
                }
                if let Some(id) = call_id {
                    out.insert("tool_call_id".into(), Value::String(id.to_owned()));
                }
            }
            _ => {
                converted.push(message.clone());
                continue;
            }
        }
        converted.push(Value::Object(out));
    }
    converted
}

fn copy_name(fields: &Map<String, Value>, out: &mut Map<String, Value>) {
    if let Some(name) = fields.get("name").filter(|name| !name.is_null()) {
        out.insert("name".into(), name.clone());
    }
}

/// `[{"name", "args", "id"}]` from an assistant message's wire tool calls, remembering each id's
/// function name for the tool messages that answer it.
fn tool_calls(calls: Option<&Value>, tool_names: &mut HashMap<String, String>) -> Vec<Value> {
    let Some(Value::Array(calls)) = calls else {
        return Vec::new();
    };
    let mut projected = Vec::with_capacity(calls.len());
    for call in calls {
        let function = call.get("function");
        let name = function
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let id = call.get("id").and_then(Value::as_str).unwrap_or("");
        if !id.is_empty() {
            tool_names.insert(id.to_owned(), name.to_owned());
        }
        let Some(args) = parsed_arguments(function.and_then(|f| f.get("arguments"))) else {
            continue;
        };
        let mut entry = Map::new();
        entry.insert("name".into(), Value::String(name.to_owned()));
        entry.insert("args".into(), args);
        entry.insert("id".into(), Value::String(id.to_owned()));
        projected.push(Value::Object(entry));
    }
    projected
}

/// A call's arguments as LangChain parses them: a JSON string holding an object (blank means
/// `{}`), or an object some servers send as it is. `None` for anything else (an invalid call).
fn parsed_arguments(arguments: Option<&Value>) -> Option<Value> {
    match arguments {
        None | Some(Value::Null) => Some(Value::Object(Map::new())),
        Some(object @ Value::Object(_)) => Some(object.clone()),
        Some(Value::String(text)) if text.trim().is_empty() => Some(Value::Object(Map::new())),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(object @ Value::Object(_)) => Some(object),
            _ => None,
        },
        Some(_) => None,
    }
}

/// The entries of a canonical conversation text with the messages' names left out (a `tool`
/// entry keeps its name: it is the tool's, which every wire carries); `None` when the text is
/// not a JSON list.
pub(crate) fn name_free_entries(canonical: &str) -> Option<Vec<Value>> {
    let Ok(Value::Array(mut entries)) = serde_json::from_str::<Value>(canonical) else {
        return None;
    };
    for entry in &mut entries {
        if let Some(fields) = entry.as_object_mut()
            && fields.get("type").and_then(Value::as_str) != Some("tool")
        {
            fields.remove("name");
        }
    }
    Some(entries)
}

/// The name-free key of a conversation (`messages` as the key reads them): the hash of its
/// canonical entries with the messages' names left out, as a miss report names it.
pub fn name_free_key(messages: &[Value]) -> String {
    let entries = name_free_entries(&canonical_conversation(messages)).unwrap_or_default();
    conversation_hash(&to_python_json(&Value::Array(entries)))
}

/// Why a call at the wire got no recorded output.
#[derive(Debug, Clone, PartialEq)]
pub enum WireLookupError {
    /// No recorded output for the call (see [`Miss`]); also in the engine's ledger.
    Miss(Box<Miss>),
    /// The request named no caller and its conversation is recorded for several callers, so
    /// which output it should get cannot be told.
    AmbiguousCaller {
        /// The callers whose key for this conversation is recorded, in fixture order.
        callers: Vec<String>,
        /// The call's conversation hash.
        conversation_hash: String,
        /// The fixture, as given to the engine.
        fixture_path: PathBuf,
    },
    /// The request named no caller and its key is recorded for several turns that answer
    /// differently (parallel nodes sending one conversation); also in the engine's ledger.
    AmbiguousAnswer(Box<Ambiguity>),
}

impl fmt::Display for WireLookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireLookupError::Miss(miss) => miss.fmt(f),
            WireLookupError::AmbiguousAnswer(ambiguity) => ambiguity.fmt(f),
            WireLookupError::AmbiguousCaller {
                callers,
                conversation_hash,
                fixture_path,
            } => {
                let quoted: Vec<String> = callers.iter().map(|c| python_repr(c)).collect();
                write!(
                    f,
                    "replay caller ambiguous: the conversation {conversation_hash} is recorded \
                     for {} callers in {} ({}); the request must name its caller",
                    callers.len(),
                    python_repr(&fixture_path.display().to_string()),
                    quoted.join(", "),
                )
            }
        }
    }
}

impl std::error::Error for WireLookupError {}

impl ReplayEngine {
    /// Serves a call that arrived at the wire: `messages` as [`messages_from_chat_completions`]
    /// returns them, `caller` when the request named one.
    ///
    /// With a caller this is [`ReplayEngine::lookup`]. Without one, the key is computed for each
    /// of the fixture's callers and the one whose key is recorded is
    /// used (a legacy, caller-less key serves any caller). When several are recorded the call is
    /// [`WireLookupError::AmbiguousCaller`]; when none is, the call misses under the caller of the
    /// recorded turn nearest to it, so the miss names the turn the run diverged from. A call
    /// without a caller whose key holds several different answers is
    /// [`WireLookupError::AmbiguousAnswer`], never a pick (§5.6).
    pub fn lookup_at_wire(
        &self,
        caller: Option<&str>,
        messages: &[Value],
    ) -> Result<Served, WireLookupError> {
        self.lookup_at_wire_compared(caller, messages, Comparison::AsHashed)
    }

    /// [`ReplayEngine::lookup_at_wire`], a miss's nearest turn (and the caller a call that
    /// names none misses under) found by comparing as `comparison` says.
    fn lookup_at_wire_compared(
        &self,
        caller: Option<&str>,
        messages: &[Value],
        comparison: Comparison,
    ) -> Result<Served, WireLookupError> {
        if let Some(caller) = caller {
            return self
                .serve_compared(replay_key(caller, messages), comparison)
                .map_err(|miss| WireLookupError::Miss(Box::new(miss)));
        }
        let canonical = canonical_conversation(messages);
        let conversation = conversation_hash(&canonical);
        self.lookup_conversation(None, canonical, conversation, comparison)
    }

    /// [`ReplayEngine::lookup_at_wire`] for a wire that carries no message names (Anthropic's
    /// Messages API, OpenAI's Responses API; `docs/replay-and-fixtures.md` §11.1). When the
    /// request's own key is recorded it is served as at any wire. Otherwise its **name-free key**
    /// is tried: the turn whose stored canonical conversation, with the messages' names left out
    /// (tool names stay: the wires carry them), equals the request's is served under its own
    /// recorded key. No such turn, or several different conversations that read the same
    /// without names, is the miss of the request's own key; [`name_free_key`] says which
    /// name-free key was tried.
    pub fn lookup_at_wire_without_names(
        &self,
        caller: Option<&str>,
        messages: &[Value],
    ) -> Result<Served, WireLookupError> {
        let canonical = canonical_conversation(messages);
        let conversation = conversation_hash(&canonical);
        let recorded = self.is_recorded(&conversation)
            || match caller {
                Some(caller) => self.is_recorded(&input_hash(caller, &conversation)),
                None => self
                    .callers()
                    .iter()
                    .any(|caller| self.is_recorded(&input_hash(caller, &conversation))),
            };
        if recorded {
            return self.lookup_at_wire(caller, messages);
        }
        let wanted = name_free_entries(&canonical);
        let mut matches: Vec<(String, String)> = Vec::new();
        for turn in &self.fixture().turns {
            let Some(stored) = &turn.canonical else {
                continue;
            };
            if wanted.is_some() && name_free_entries(stored) == wanted {
                let hash = turn
                    .conversation_hash
                    .clone()
                    .unwrap_or_else(|| conversation_hash(stored));
                if !matches.iter().any(|(_, h)| *h == hash) {
                    matches.push((stored.clone(), hash));
                }
            }
        }
        match matches.as_slice() {
            [(stored, hash)] => {
                self.lookup_conversation(caller, stored.clone(), hash.clone(), Comparison::AsHashed)
            }
            // The miss (or ambiguity) of the request's own key, its report comparing without
            // names: the recorded turn's names are not what made it miss at this wire.
            _ => self.lookup_at_wire_compared(caller, messages, Comparison::WithoutNames),
        }
    }

    /// Serves the conversation `canonical` (hashed `conversation`) for `caller`, or for the one
    /// caller whose key is recorded when the request named none (see
    /// [`ReplayEngine::lookup_at_wire`]).
    fn lookup_conversation(
        &self,
        caller: Option<&str>,
        canonical: String,
        conversation: String,
        comparison: Comparison,
    ) -> Result<Served, WireLookupError> {
        if let Some(caller) = caller {
            let caller = normalize_caller(caller);
            let key = ReplayKey {
                input_hash: input_hash(&caller, &conversation),
                caller,
                canonical,
                conversation_hash: conversation,
            };
            return self
                .serve_compared(key, comparison)
                .map_err(|miss| WireLookupError::Miss(Box::new(miss)));
        }
        let recorded: Vec<&String> = self
            .callers()
            .iter()
            .filter(|caller| self.is_recorded(&input_hash(caller, &conversation)))
            .collect();
        let chosen = match recorded.as_slice() {
            [one] => (*one).clone(),
            [] if self.is_recorded(&conversation) => DEFAULT_CALLER.to_owned(),
            [] => self.nearest_caller(&canonical, comparison),
            _ => {
                return Err(WireLookupError::AmbiguousCaller {
                    callers: recorded.into_iter().cloned().collect(),
                    conversation_hash: conversation,
                    fixture_path: self.path().to_path_buf(),
                });
            }
        };
        // The conversation's part of the key is done: only the caller's part remains.
        let caller = normalize_caller(&chosen);
        let key = ReplayKey {
            input_hash: input_hash(&caller, &conversation),
            caller,
            canonical,
            conversation_hash: conversation,
        };
        self.lookup_inferred_compared(key, comparison)
            .map_err(|error| match error {
                LookupError::Miss(miss) => WireLookupError::Miss(miss),
                LookupError::Ambiguous(ambiguity) => WireLookupError::AmbiguousAnswer(ambiguity),
            })
    }

    /// The caller of the recorded turn whose canonical conversation shares the most leading
    /// messages with `canonical` (the first such turn on a tie); without stored canonical texts,
    /// `lead_agent` when the fixture has it, else its first caller.
    fn nearest_caller(&self, canonical: &str, comparison: Comparison) -> String {
        let entries = |text: &str| comparison.entries(text).unwrap_or_default();
        let incoming = entries(canonical);
        let mut best: Option<(usize, &str)> = None;
        for turn in &self.fixture().turns {
            let (Some(caller), Some(recorded)) = (&turn.caller, &turn.canonical) else {
                continue;
            };
            let common = entries(recorded)
                .iter()
                .zip(&incoming)
                .take_while(|(a, b)| a == b)
                .count();
            if best.is_none_or(|(longest, _)| common > longest) {
                best = Some((common, caller));
            }
        }
        if let Some((_, caller)) = best {
            return caller.to_owned();
        }
        let callers = self.callers();
        if callers.is_empty() || callers.iter().any(|c| c == DEFAULT_CALLER) {
            DEFAULT_CALLER.to_owned()
        } else {
            callers[0].clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::replay_key;
    use crate::fixture::{Answer, Fixture, Turn};
    use crate::scenario::{Scenario, UiMode};
    use serde_json::json;

    /// The prompt of `docs/replay-and-fixtures.md` §2.2.
    const PROMPT: &str = "Using your own file tools directly, create the file /mnt/user-data/outputs/note.txt with exactly this content: hi from replay. Then read that same file back and reply with its exact contents. Do NOT delegate to a subagent and do NOT use the task tool — do it yourself. Do not ask any clarifying questions.";

    /// The T2 call of §4.9 as a gateway sends it over the wire: system prompt (with the date
    /// reminder merged in), the wrapped input with its name, the assistant tool call with its
    /// arguments as a JSON string and `content: null`, and a tool message with no name.
    fn t2_wire() -> Vec<Value> {
        vec![
            json!({"role": "system", "content": "You are DeerFlow.\n<system-reminder>Current date: 2026-05-17</system-reminder>"}),
            json!({"role": "user", "name": "user-input", "content": format!("--- BEGIN USER INPUT ---\n{PROMPT}\n--- END USER INPUT ---")}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_Wr1teF1le", "type": "function", "function": {"name": "write_file", "arguments": "{\"path\": \"/mnt/user-data/outputs/note.txt\", \"description\": \"Create the requested output file with exact content\", \"content\": \"hi from replay.\"}"}}]}),
            json!({"role": "tool", "tool_call_id": "call_Wr1teF1le", "content": "OK"}),
        ]
    }

    #[test]
    fn the_spec_vectors_hold_at_the_wire() {
        let cases = [
            (
                "T0",
                t2_wire()[..2].to_vec(),
                "27aeb4c11bff2c3ebc182fe52a06556823c21928620a400c7f26be9733c31f3f",
            ),
            (
                "T2",
                t2_wire(),
                "f7468603a43d301fcc0167c2f7cd10e53137bfc584f1b3d776614b7a612ed7a6",
            ),
        ];
        for (name, wire, expected) in cases {
            let key = replay_key("", &messages_from_chat_completions(&wire));
            assert_eq!(key.input_hash, expected, "{name}");
        }
    }

    #[test]
    fn conversion_rules() {
        let cases: Vec<(&str, Vec<Value>, &str)> = vec![
            (
                "the tool name comes from the call it answers, not from the message",
                vec![
                    json!({"role": "assistant", "content": "", "tool_calls": [
                        {"id": "a", "function": {"name": "ls", "arguments": "{}"}},
                        {"id": "b", "function": {"name": "read_file", "arguments": "{\"path\": \"/x\"}"}},
                    ]}),
                    json!({"role": "tool", "tool_call_id": "b", "content": "text", "name": "wrong"}),
                    json!({"role": "tool", "tool_call_id": "unknown", "content": "orphan", "name": "kept"}),
                ],
                r#"[{"content": "", "tool_calls": [{"args": {}, "name": "ls"}, {"args": {"path": "/x"}, "name": "read_file"}], "type": "ai"}, {"content": "text", "name": "read_file", "type": "tool"}, {"content": "orphan", "name": "kept", "type": "tool"}]"#,
            ),
            (
                "invalid arguments leave the call out; blank and object arguments are kept",
                vec![json!({"role": "assistant", "content": "x", "tool_calls": [
                    {"id": "a", "function": {"name": "bad", "arguments": "{\"path\": \"/a"}},
                    {"id": "b", "function": {"name": "list", "arguments": "[1]"}},
                    {"id": "c", "function": {"name": "blank", "arguments": " "}},
                    {"id": "d", "function": {"name": "object", "arguments": {"k": 1.0}}},
                ]})],
                r#"[{"content": "x", "tool_calls": [{"args": {}, "name": "blank"}, {"args": {"k": 1.0}, "name": "object"}], "type": "ai"}]"#,
            ),
            (
                "system and developer messages go; a user message that is only a reminder goes too",
                vec![
                    json!({"role": "developer", "content": "rules"}),
                    json!({"role": "user", "content": "<system-reminder>\n<current_date>2026-05-17</current_date>\n</system-reminder>"}),
                    json!({"role": "user", "content": [{"type": "text", "text": "hi"}]}),
                ],
                r#"[{"content": "hi", "type": "human"}]"#,
            ),
            (
                "names are kept on user and assistant messages",
                vec![
                    json!({"role": "user", "content": "q", "name": "user-input"}),
                    json!({"role": "assistant", "content": "a", "name": "lead"}),
                ],
                r#"[{"content": "q", "name": "user-input", "type": "human"}, {"content": "a", "name": "lead", "type": "ai"}]"#,
            ),
            (
                "unknown roles and non-objects",
                vec![
                    json!("text"),
                    json!({"role": "function", "content": "f", "name": "fn"}),
                ],
                r#"[{"content": "f", "name": "fn", "type": "function"}]"#,
            ),
        ];
        for (name, wire, expected) in cases {
            assert_eq!(
                canonical_conversation(&messages_from_chat_completions(&wire)),
                expected,
                "{name}"
            );
        }
    }

    fn human(text: &str) -> Value {
        json!({"role": "user", "content": text})
    }

    fn turn(caller: &str, wire: &[Value]) -> Turn {
        let key = replay_key(caller, &messages_from_chat_completions(wire));
        Turn {
            caller: Some(key.caller),
            conversation_hash: Some(key.conversation_hash),
            input_hash: key.input_hash,
            answer: Answer::Output(
                json!({"type": "ai", "data": {"content": caller, "type": "ai"}}),
            ),
            canonical: Some(key.canonical),
        }
    }

    fn engine(turns: Vec<Turn>) -> ReplayEngine {
        let fixture = Fixture {
            scenario: Scenario::new("s", UiMode::Flash, "p"),
            turns,
        };
        ReplayEngine::new(fixture, "fixtures/s.flash.json").expect("valid fixture")
    }

    #[test]
    fn the_caller_is_the_one_whose_key_is_recorded() {
        let engine = engine(vec![
            turn("lead_agent", &[human("q")]),
            turn("middleware:title", &[human("title prompt")]),
            turn("suggest_agent", &[human("suggest prompt")]),
        ]);
        assert_eq!(
            engine.callers(),
            ["lead_agent", "middleware:title", "suggest_agent"]
        );
        for (wire, served_turn) in [("title prompt", 1), ("q", 0), ("suggest prompt", 2)] {
            let messages = messages_from_chat_completions(&[human(wire)]);
            let served = engine.lookup_at_wire(None, &messages).expect(wire);
            assert_eq!(served.turn_index, served_turn, "{wire}");
        }
        assert!(engine.misses().is_empty());
    }

    #[test]
    fn a_named_caller_wins_and_can_miss() {
        let engine = engine(vec![turn("lead_agent", &[human("q")])]);
        let messages = messages_from_chat_completions(&[human("q")]);
        let error = engine
            .lookup_at_wire(Some("suggest_agent"), &messages)
            .expect_err("the key of another caller");
        let WireLookupError::Miss(miss) = error else {
            panic!("{error}")
        };
        assert_eq!(miss.caller, "suggest_agent");
        assert_eq!(engine.misses().len(), 1);
    }

    #[test]
    fn a_conversation_recorded_for_two_callers_is_ambiguous() {
        let engine = engine(vec![
            turn("lead_agent", &[human("same")]),
            turn("suggest_agent", &[human("same")]),
        ]);
        let messages = messages_from_chat_completions(&[human("same")]);
        let error = engine.lookup_at_wire(None, &messages).expect_err("two");
        let message = error.to_string();
        assert!(
            matches!(&error, WireLookupError::AmbiguousCaller { callers, .. } if callers == &["lead_agent", "suggest_agent"]),
            "{error:?}"
        );
        assert!(
            message.contains(
                "for 2 callers in 'fixtures/s.flash.json' ('lead_agent', 'suggest_agent')"
            ),
            "{message}"
        );
        assert!(
            engine.misses().is_empty(),
            "an ambiguity is not a miss: nothing was looked up"
        );
        // Naming the caller settles it.
        let served = engine
            .lookup_at_wire(Some("suggest_agent"), &messages)
            .expect("named");
        assert_eq!(served.turn_index, 1);
    }

    fn turn_answering(caller: &str, wire: &[Value], answer: &str) -> Turn {
        Turn {
            answer: Answer::Output(
                json!({"type": "ai", "data": {"content": answer, "type": "ai"}}),
            ),
            ..turn(caller, wire)
        }
    }

    #[test]
    fn one_key_with_two_answers_is_ambiguous_without_a_caller_and_served_with_one() {
        // Two parallel nodes recorded without a caller header: both under `lead_agent`.
        let engine = engine(vec![
            turn_answering("lead_agent", &[human("same")], "from node a"),
            turn_answering("lead_agent", &[human("same")], "from node b"),
        ]);
        let messages = messages_from_chat_completions(&[human("same")]);
        for _ in 0..2 {
            let error = engine
                .lookup_at_wire(None, &messages)
                .expect_err("ambiguous");
            let WireLookupError::AmbiguousAnswer(ambiguity) = &error else {
                panic!("{error:?}")
            };
            assert_eq!(ambiguity.turns, [0, 1]);
            assert!(error.to_string().contains(CALLER_HEADER), "{error}");
        }
        assert_eq!(engine.ambiguities().len(), 2);
        assert!(engine.misses().is_empty());
        let named = engine
            .lookup_at_wire(Some("lead_agent"), &messages)
            .expect("named");
        assert_eq!(named.turn_index, 0);
    }

    #[test]
    fn a_miss_is_reported_under_the_caller_of_the_nearest_turn() {
        let engine = engine(vec![
            turn("lead_agent", &[human("first question")]),
            turn(
                "suggest_agent",
                &[
                    human("suggest"),
                    json!({"role": "assistant", "content": "a"}),
                ],
            ),
        ]);
        let drifted = messages_from_chat_completions(&[
            human("suggest"),
            json!({"role": "assistant", "content": "b"}),
        ]);
        let WireLookupError::Miss(miss) = engine.lookup_at_wire(None, &drifted).unwrap_err() else {
            panic!("expected a miss")
        };
        assert_eq!(miss.caller, "suggest_agent");
        let text = miss.to_string();
        assert!(
            text.contains("first differing field: [1].content: recorded \"a\", incoming \"b\""),
            "{text}"
        );
        // Served turns stay known: asking again for a served key misses under its caller.
        let question = messages_from_chat_completions(&[human("first question")]);
        engine.lookup_at_wire(None, &question).expect("first time");
        let WireLookupError::Miss(again) = engine.lookup_at_wire(None, &question).unwrap_err()
        else {
            panic!("expected a miss")
        };
        assert_eq!(again.caller, "lead_agent");
        assert_eq!(engine.misses().len(), 2);
    }

    #[test]
    fn legacy_keys_serve_any_caller() {
        let key = replay_key("lead_agent", &messages_from_chat_completions(&[human("q")]));
        let legacy = Turn {
            caller: None,
            conversation_hash: None,
            input_hash: key.conversation_hash,
            answer: Answer::Output(json!({"type": "ai", "data": {"content": "x", "type": "ai"}})),
            canonical: None,
        };
        let engine = engine(vec![legacy]);
        let messages = messages_from_chat_completions(&[human("q")]);
        assert_eq!(
            engine
                .lookup_at_wire(None, &messages)
                .expect("legacy")
                .turn_index,
            0
        );
    }
}
