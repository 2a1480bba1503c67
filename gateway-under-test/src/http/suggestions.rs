//! Follow-up suggestions (`docs/gateway-contract.md` §10): one model call with caller
//! `suggest_agent`, and a forgiving parser; any failure answers `{"suggestions": []}`, as DeerFlow
//! does, but a failed model call is logged as a model failure, never as an empty answer (a replay
//! miss reaches the harness through the replay model's miss ledger, not through this route).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use regex::Regex;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::app::App;
use crate::config::SuggestionsConfig;
use crate::http::guard::CurrentUser;
use crate::http::{ApiError, ApiJson, owned_thread};
use crate::messages::Message;
use crate::models::{CallMetadata, CallOptions, ModelRequest};
use crate::runtime::agent::Agent;
use crate::store::Store;

pub(super) fn routes() -> Router<App> {
    Router::new()
        .route("/api/threads/{thread_id}/suggestions", post(suggest))
        .route("/api/suggestions/config", get(config))
}

/// The instructions sent as the system message (not part of any replay key).
const INSTRUCTIONS: &str = "You suggest follow-up questions the user might ask next. Answer with \
a JSON array of short questions (strings) only, in the language of the conversation, with no \
other text.";

#[derive(Debug, Deserialize)]
struct SuggestionMessage {
    role: String,
    content: String,
}

#[derive(Debug, Deserialize)]
struct SuggestBody {
    messages: Vec<SuggestionMessage>,
    n: Option<u32>,
    model_name: Option<String>,
}

/// The human message text: `Conversation Context:\n<conv>\n\nGenerate <n> follow-up questions`.
pub fn suggestion_input(messages: &[(String, String)], n: u32) -> String {
    let conversation: Vec<String> = messages
        .iter()
        .map(|(role, content)| {
            let speaker = if role == "user" { "User" } else { "Assistant" };
            format!("{speaker}: {}", content.trim())
        })
        .collect();
    format!(
        "Conversation Context:\n{}\n\nGenerate {n} follow-up questions",
        conversation.join("\n")
    )
}

/// Parses a model answer: think blocks and code fences removed, the text from the first `[` to
/// the last `]` read as a JSON array, non-empty strings kept with newlines turned into spaces,
/// at most `n`. Any failure gives an empty list.
pub fn parse_suggestions(answer: &str, n: usize) -> Vec<String> {
    let cleaned = Regex::new(r"(?s)<think>.*?</think>")
        .map(|re| re.replace_all(answer, "").into_owned())
        .unwrap_or_else(|_| answer.to_string())
        .replace("```json", "")
        .replace("```", "");
    let (Some(start), Some(end)) = (cleaned.find('['), cleaned.rfind(']')) else {
        return Vec::new();
    };
    if end < start {
        return Vec::new();
    }
    let Ok(Value::Array(items)) = serde_json::from_str::<Value>(&cleaned[start..=end]) else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(Value::as_str)
        .map(|text| text.replace(['\r', '\n'], " ").trim().to_string())
        .filter(|text| !text.is_empty())
        .take(n)
        .collect()
}

async fn suggest(
    State(store): State<Store>,
    State(agent): State<Arc<Agent>>,
    State(settings): State<Arc<SuggestionsConfig>>,
    user: CurrentUser,
    Path(thread_id): Path<String>,
    ApiJson(body): ApiJson<SuggestBody>,
) -> Result<Json<Value>, ApiError> {
    owned_thread(&store, &user, &thread_id).await?;
    let requested = body.n.unwrap_or(3);
    if !(1..=5).contains(&requested) {
        return Err(ApiError::validation("n", "n must be between 1 and 5"));
    }
    let n = requested.min(settings.max_suggestions);
    let empty = Json(json!({"suggestions": []}));
    if !settings.enabled {
        return Ok(empty);
    }
    let model_name = body
        .model_name
        .or_else(|| settings.model_name.clone())
        .or_else(|| agent.default_model_name().map(String::from));
    let Some(model) = model_name.as_deref().and_then(|name| agent.model(name)) else {
        return Ok(empty);
    };
    let messages: Vec<(String, String)> = body
        .messages
        .into_iter()
        .map(|m| (m.role, m.content))
        .collect();
    let request = ModelRequest {
        messages: vec![
            Message::system(INSTRUCTIONS).into(),
            Message::human(suggestion_input(&messages, n)).into(),
        ],
        tools: Vec::new(),
        metadata: CallMetadata {
            tags: Vec::new(),
            run_name: Some("suggest_agent".into()),
            run_id: None,
            thread_id: Some(thread_id.clone()),
        },
        options: CallOptions::default(),
    };
    match model.invoke(&request).await {
        Ok(answer) => Ok(Json(
            json!({"suggestions": parse_suggestions(&answer.text(), n as usize)}),
        )),
        Err(err) => {
            tracing::warn!(
                %thread_id, error_type = %err.error_type,
                "suggestions: the model call failed ({err}); answering an empty list, which is a model failure, not a model answer without suggestions"
            );
            Ok(empty)
        }
    }
}

async fn config(State(settings): State<Arc<SuggestionsConfig>>) -> Json<Value> {
    Json(json!({"enabled": settings.enabled, "max_suggestions": settings.max_suggestions}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fenced_thinking_prefixed_and_malformed_answers() {
        let cases: &[(&str, &[&str])] = &[
            ("[\"What next?\", \"Why?\"]", &["What next?", "Why?"]),
            ("```json\n[\"A\", \"B\"]\n```", &["A", "B"]),
            (
                "<think>[\"no\"]</think>Sure: [\"Line\\nbreak\", \"\", 3, \"C\"]",
                &["Line break", "C"],
            ),
            ("[\"1\", \"2\", \"3\", \"4\"]", &["1", "2", "3"]),
            ("no list here", &[]),
            ("[\"unterminated\"", &[]),
            ("] backwards [", &[]),
            ("{\"a\": 1}", &[]),
        ];
        for (answer, expected) in cases {
            assert_eq!(parse_suggestions(answer, 3), *expected, "{answer}");
        }
    }

    #[test]
    fn builds_the_contract_input_text() {
        let text = suggestion_input(
            &[
                ("user".into(), "  hi ".into()),
                ("assistant".into(), "hello\n".into()),
            ],
            3,
        );
        assert_eq!(
            text,
            "Conversation Context:\nUser: hi\nAssistant: hello\n\nGenerate 3 follow-up questions"
        );
    }
}
