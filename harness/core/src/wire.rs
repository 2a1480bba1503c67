//! Replay keys computed at the model's wire (`docs/replay-and-fixtures.md` §11): a gateway that
//! runs in another process, in any language, sends its model calls as OpenAI Chat Completions
//! requests, and the key is rebuilt from the request body alone.
//!
//! The conversation itself is read by the request's wire (`model_wire::Wire::conversation`,
//! each wire's `read_conversation` in its own module: a wire is one module) into the
//! LangChain-style message dicts the canonical projection reads, so the key is computed by the
//! same [`replay_key`](crate::replay_key) as in-process replay; this module adds
//! [`name_free_key`] and the name-free entries, the key at a wire that carries no message names.
//!
//! It builds keys only: the lookups that use them (`ReplayEngine::lookup_at_wire`, which finds the
//! caller nothing on the wire names) live with the engine, in `replay`, so the engine depends on
//! this module and not the other way round.

use serde_json::Value;

use crate::canonical::{canonical_conversation, conversation_hash};
use crate::pyjson::to_python_json;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::replay_key;
    use model_wire::chat_completions::read_conversation as messages_from_chat_completions;
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
}

/// The conversation of each wire besides Chat Completions, read by its own module, keyed as
/// Chat Completions' is.
#[cfg(test)]
mod wire_format_tests {

    use model_wire::anthropic_messages::read_conversation as messages_from_anthropic;
    use model_wire::bedrock_converse::read_conversation as messages_from_converse;
    use model_wire::chat_completions::read_conversation as messages_from_chat_completions;
    use model_wire::gemini::read_conversation as messages_from_gemini;
    use model_wire::ollama::read_conversation as messages_from_ollama;
    use model_wire::ollama::read_prompt as messages_from_ollama_prompt;
    use model_wire::responses::read_conversation as messages_from_responses;
    use serde_json::{Value, json};

    use crate::canonical::replay_key;
    use crate::fixture::{Answer, Fixture, Turn};
    use crate::scenario::{Scenario, UiMode};
    use crate::{LookupError, ReplayEngine, name_free_key};

    const ARGS: &str = r#"{"path": "/mnt/user-data/outputs/note.txt", "content": "hi"}"#;

    /// One conversation (system prompt, named user input, a tool call, its result, the answer)
    /// as each wire carries it.
    fn chat_completions(named: bool) -> Vec<Value> {
        let mut user = json!({"role": "user", "content": "write it"});
        if named {
            user["name"] = json!("user-input");
        }
        vec![
            json!({"role": "system", "content": "You are DeerFlow."}),
            user,
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
                "type": "function", "function": {"name": "write_file", "arguments": ARGS}}]}),
            json!({"role": "tool", "tool_call_id": "call_1", "content": "OK"}),
            json!({"role": "assistant", "content": "Done."}),
            json!({"role": "user", "content": "thanks"}),
        ]
    }

    fn anthropic() -> Vec<Value> {
        let input: Value = serde_json::from_str(ARGS).unwrap_or_default();
        vec![
            json!({"role": "user", "content": [{"type": "text", "text": "write it"}]}),
            json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Hm.", "signature": "x"},
                {"type": "tool_use", "id": "call_1", "name": "write_file", "input": input}]}),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "OK"}]}),
            json!({"role": "assistant", "content": "Done."}),
            json!({"role": "user", "content": "thanks"}),
        ]
    }

    fn responses() -> Value {
        json!([
            {"role": "developer", "content": "You are DeerFlow."},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "write it"}]},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "call_id": "call_1", "name": "write_file", "arguments": ARGS},
            {"type": "function_call_output", "call_id": "call_1", "output": "OK"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]},
            {"role": "user", "content": "thanks"},
        ])
    }

    fn gemini() -> Vec<Value> {
        let args: Value = serde_json::from_str(ARGS).unwrap_or_default();
        vec![
            json!({"role": "user", "parts": [{"text": "write it"}]}),
            json!({"role": "model", "parts": [{"text": "Hm.", "thought": true},
                {"functionCall": {"name": "write_file", "args": args}, "thoughtSignature": "x"}]}),
            json!({"role": "user", "parts": [{"functionResponse": {"name": "write_file",
                "response": {"result": "OK"}}}]}),
            json!({"role": "model", "parts": [{"text": "Done."}]}),
            json!({"role": "user", "parts": [{"text": "thanks"}]}),
        ]
    }

    fn converse() -> Vec<Value> {
        let args: Value = serde_json::from_str(ARGS).unwrap_or_default();
        vec![
            json!({"role": "user", "content": [{"text": "write it"}]}),
            json!({"role": "assistant", "content": [
                {"reasoningContent": {"reasoningText": {"text": "Hm.", "signature": "x"}}},
                {"toolUse": {"toolUseId": "call_1", "name": "write_file", "input": args}}]}),
            json!({"role": "user", "content": [{"toolResult": {"toolUseId": "call_1",
                "content": [{"text": "OK"}]}}]}),
            json!({"role": "assistant", "content": [{"text": "Done."}]}),
            json!({"role": "user", "content": [{"text": "thanks"}]}),
        ]
    }

    /// As the `ollama` client sends it (no call ids, the result named by `tool_name`); LangChain's
    /// `ChatOllama` sends ids and `tool_call_id` instead, which the key does not read.
    fn ollama() -> Vec<Value> {
        let args: Value = serde_json::from_str(ARGS).unwrap_or_default();
        vec![
            json!({"role": "system", "content": "You are DeerFlow."}),
            json!({"role": "user", "content": "write it", "images": []}),
            json!({"role": "assistant", "content": "", "thinking": "Hm.",
                "tool_calls": [{"function": {"name": "write_file", "arguments": args}}]}),
            json!({"role": "tool", "content": "OK", "tool_name": "write_file"}),
            json!({"role": "assistant", "content": "Done."}),
            json!({"role": "user", "content": "thanks"}),
        ]
    }

    #[test]
    fn each_wire_gives_the_chat_completions_key_of_the_same_conversation() {
        let want = replay_key(
            "",
            &messages_from_chat_completions(&chat_completions(false)),
        );
        for (wire, messages) in [
            ("anthropic", messages_from_anthropic(&anthropic())),
            ("responses", messages_from_responses(&responses())),
            ("gemini", messages_from_gemini(&gemini())),
            ("converse", messages_from_converse(&converse())),
            ("ollama", messages_from_ollama(&ollama())),
        ] {
            let got = replay_key("", &messages);
            assert_eq!(got.canonical, want.canonical, "{wire}");
            assert_eq!(got.input_hash, want.input_hash, "{wire}");
        }
    }

    /// A tool result as each wire may carry it, and the tool message content it is.
    #[test]
    fn tool_results_are_their_text_or_their_canonical_json() {
        let gemini_cases = [
            (json!({"result": "OK"}), json!("OK")),
            (
                json!({"output": {"b": 1, "a": [true]}}),
                json!(r#"{"a": [true], "b": 1}"#),
            ),
            (
                json!({"status": "done", "n": 2}),
                json!(r#"{"n": 2, "status": "done"}"#),
            ),
            (json!({"result": 3}), json!("3")),
        ];
        for (response, want) in gemini_cases {
            let contents = [
                json!({"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}},
                    {"functionCall": {"id": "c2", "name": "ls", "args": {}}}]}),
                json!({"role": "user", "parts": [
                    {"functionResponse": {"name": "ls", "response": response.clone()}},
                    {"function_response": {"id": "c2", "name": "ls", "response": response}}]}),
            ];
            let messages = messages_from_gemini(&contents);
            let ids: Vec<&Value> = messages[1..].iter().map(|m| &m["tool_call_id"]).collect();
            assert_eq!(ids, [&json!("gemini_call_1"), &json!("c2")]);
            assert_eq!(messages[1]["content"], want, "{contents:?}");
            assert_eq!(messages[2]["content"], want, "{contents:?}");
            assert_eq!(messages[1]["name"], "ls");
        }
        let converse_cases = [
            (json!([{"text": "a"}, {"text": "b"}]), json!("ab")),
            (
                json!([{"json": {"z": 1, "a": null}}]),
                json!(r#"{"a": null, "z": 1}"#),
            ),
        ];
        for (content, want) in converse_cases {
            let messages = messages_from_converse(&[
                json!({"role": "assistant", "content": [{"toolUse": {"toolUseId": "t", "name": "ls", "input": {}}}]}),
                json!({"role": "user", "content": [{"toolResult": {"toolUseId": "t", "content": content}}]}),
            ]);
            assert_eq!(messages[1]["content"], want);
            assert_eq!(messages[1]["name"], "ls");
        }
    }

    #[test]
    fn a_string_input_is_one_user_message() {
        let one = replay_key("", &[json!({"type": "human", "content": "hi"})]).input_hash;
        assert_eq!(
            replay_key("", &messages_from_responses(&json!("hi"))).input_hash,
            one
        );
        assert_eq!(
            replay_key("", &messages_from_ollama_prompt("hi")).input_hash,
            one
        );
    }

    fn engine_recorded_with_names() -> ReplayEngine {
        let key = replay_key(
            "lead_agent",
            &messages_from_chat_completions(&chat_completions(true)),
        );
        let turn = Turn {
            caller: Some(key.caller),
            conversation_hash: Some(key.conversation_hash),
            input_hash: key.input_hash,
            answer: Answer::Output(json!({"type": "ai", "data": {"content": "ok", "type": "ai"}})),
            canonical: Some(key.canonical),
        };
        let fixture = Fixture {
            scenario: Scenario::new("s", UiMode::Flash, "p"),
            turns: vec![turn],
            provenance: None,
            exchanges: Vec::new(),
        };
        ReplayEngine::new(fixture, "fixtures/s.flash.json").expect("valid fixture")
    }

    #[test]
    fn a_turn_recorded_with_names_is_served_by_its_name_free_key_only_where_asked() {
        let engine = engine_recorded_with_names();
        let messages = messages_from_anthropic(&anthropic());
        // The named lookup misses: the recorded key has the input's name.
        assert!(matches!(
            engine.lookup_at_wire(None, &messages),
            Err(LookupError::Miss(_))
        ));
        for caller in [None, Some("lead_agent")] {
            let engine = engine_recorded_with_names();
            let served = engine.lookup_at_wire_without_names(caller, &messages);
            assert_eq!(served.map(|s| s.turn_index).ok(), Some(0), "{caller:?}");
        }
        // A different conversation still misses, and its name-free key is not the turn's.
        let mut other = anthropic();
        other[4] = json!({"role": "user", "content": "no thanks"});
        let other = messages_from_anthropic(&other);
        assert!(engine.lookup_at_wire_without_names(None, &other).is_err());
        assert_ne!(name_free_key(&other), name_free_key(&messages));
        assert_eq!(
            name_free_key(&messages),
            name_free_key(&messages_from_chat_completions(&chat_completions(true)))
        );
    }

    /// A miss at a wire without names is reported against the recorded turn as that wire sees
    /// it: the first difference is the drifted message, not the recorded input's `name` (which
    /// no such wire carries), and the nearest turn shares the messages before it.
    #[test]
    fn a_miss_without_names_reports_the_drift_not_the_missing_name() {
        let engine = engine_recorded_with_names();
        let mut drifted = anthropic();
        drifted[4] = json!({"role": "user", "content": "no thanks"});
        for caller in [None, Some("lead_agent")] {
            let Err(LookupError::Miss(miss)) =
                engine.lookup_at_wire_without_names(caller, &messages_from_anthropic(&drifted))
            else {
                panic!("{caller:?}: the drifted conversation must miss");
            };
            let nearest = miss.nearest.as_ref().expect("a nearest turn");
            let path = nearest.difference.as_ref().map(|d| d.path.as_str());
            assert_eq!(path, Some("[4].content"), "{caller:?}: {miss}");
            assert_eq!(nearest.common_prefix, Some(4), "{caller:?}");
        }
    }
}
