//! Title: after the first model call of a thread, writes `title`, from the local fallback rule or,
//! when `title.model_name` is set, from one model call with caller `middleware:title`.

use async_trait::async_trait;
use regex::Regex;
use serde_json::json;

use crate::messages::{Message, MessageType};
use crate::models::ModelRequest;
use crate::runtime::RunContext;
use crate::runtime::middleware::{Hook, HookResult, Middleware};
use crate::runtime::state::{AgentState, StateUpdate};

/// Writes the thread title (`docs/gateway-contract.md` §9).
#[derive(Debug, Default)]
pub struct TitleMiddleware;

/// The local fallback title: empty text gives `New Conversation`; text longer than
/// `min(max_chars, 50)` characters keeps its first `min(50, max_chars - 3)` characters, trailing
/// whitespace stripped, plus `...`.
pub fn local_title(text: &str, max_chars: usize) -> String {
    if text.is_empty() {
        return "New Conversation".into();
    }
    let limit = max_chars.min(50);
    if text.chars().count() > limit {
        let keep = 50.min(max_chars.saturating_sub(3));
        let head: String = text.chars().take(keep).collect();
        format!("{}...", head.trim_end())
    } else {
        text.to_string()
    }
}

/// The model-title prompt for a user and an assistant text.
pub fn title_prompt(max_words: usize, user_msg: &str, assistant_msg: &str) -> String {
    let user: String = user_msg.chars().take(500).collect();
    let assistant: String = strip_think(assistant_msg).chars().take(500).collect();
    format!(
        "Generate a concise title (max {max_words} words) for this conversation.\nUser: {user}\nAssistant: {assistant}\n\nReturn ONLY the title, no quotes, no explanation."
    )
}

fn strip_think(text: &str) -> String {
    // The pattern is a literal constant, so building it cannot fail at run time.
    Regex::new(r"(?s)<think>.*?</think>")
        .map(|re| re.replace_all(text, "").into_owned())
        .unwrap_or_else(|_| text.to_string())
}

fn clean_model_title(raw: &str, max_chars: usize) -> String {
    let trimmed = raw
        .trim()
        .trim_matches(|c: char| c == '"' || c == '\'' || c == '“' || c == '”')
        .trim();
    trimmed.chars().take(max_chars).collect()
}

fn visible_humans(state: &AgentState) -> Vec<&Message> {
    state
        .messages
        .iter()
        .filter(|m| m.kind == MessageType::Human && !m.is_hidden())
        .map(|m| &**m)
        .collect()
}

#[async_trait]
impl Middleware for TitleMiddleware {
    fn name(&self) -> &'static str {
        "TitleMiddleware"
    }

    fn hooks(&self) -> &'static [Hook] {
        &[Hook::AfterModel]
    }

    async fn after_model(&self, state: &AgentState, run: &RunContext) -> HookResult {
        let config = &run.agent.settings().title;
        // Decided before the conversation is scanned: once titled, a step costs nothing here.
        if !config.enabled || state.channel("title").is_some() {
            return Ok(None);
        }
        let humans = visible_humans(state);
        let has_ai = state.messages.iter().any(|m| m.kind == MessageType::Ai);
        if !config.enabled
            || state.channel("title").is_some()
            || state.messages.len() < 2
            || humans.len() != 1
            || !has_ai
        {
            return Ok(None);
        }
        let user_text = humans[0].text();
        let fallback = local_title(&user_text, config.max_chars);
        let title = match &config.model_name {
            None => fallback,
            Some(model_name) => {
                let assistant_text = state.last_ai().map(Message::text).unwrap_or_default();
                let prompt = title_prompt(config.max_words, &user_text, &assistant_text);
                match run.agent.model(model_name) {
                    Some(model) => {
                        let request = ModelRequest {
                            messages: vec![Message::human(prompt).into()],
                            tools: Vec::new(),
                            metadata: run.call_metadata(
                                &["middleware:title", "nostream"],
                                Some("title_agent"),
                            ),
                            options: Default::default(),
                        };
                        match run.call_model_raw(model.as_ref(), &request).await {
                            Ok(answer) => {
                                let title = clean_model_title(&answer.text(), config.max_chars);
                                if title.is_empty() { fallback } else { title }
                            }
                            Err(err) => {
                                tracing::warn!(run_id = %run.run_id, "title model failed: {err}");
                                fallback
                            }
                        }
                    }
                    None => fallback,
                }
            }
        };
        Ok(Some(StateUpdate::channel("title", json!(title))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROMPT: &str = "Using your own file tools directly, create the file /mnt/user-data/outputs/note.txt with exactly this content: hi from replay.";

    #[test]
    fn the_local_fallback_matches_the_contract_example() {
        assert_eq!(
            local_title(PROMPT, 60),
            "Using your own file tools directly, create the fil..."
        );
    }

    #[test]
    fn local_fallback_edge_cases() {
        assert_eq!(local_title("", 60), "New Conversation");
        let fifty = "x".repeat(50);
        assert_eq!(
            local_title(&fifty, 60),
            fifty,
            "50 characters are kept as they are"
        );
        assert_eq!(
            local_title(&"y".repeat(51), 60),
            format!("{}...", "y".repeat(50))
        );
        assert_eq!(local_title("abcdefghijkl", 10), "abcdefg...");
        assert_eq!(
            local_title(&format!("{}   tail", "a".repeat(47)), 60),
            format!("{}...", "a".repeat(47))
        );
    }

    #[test]
    fn the_model_prompt_cuts_inputs_and_drops_think_blocks() {
        let prompt = title_prompt(6, &"u".repeat(600), "<think>secret</think>Answer");
        assert!(prompt.contains(&format!("User: {}\n", "u".repeat(500))));
        assert!(prompt.contains("Assistant: Answer\n\nReturn ONLY the title"));
        assert!(!prompt.contains("secret"));
    }

    #[test]
    fn model_titles_lose_quotes_and_are_cut() {
        assert_eq!(clean_model_title("  \"Hello World\"\n", 60), "Hello World");
        assert_eq!(clean_model_title("abcdef", 3), "abc");
    }
}
