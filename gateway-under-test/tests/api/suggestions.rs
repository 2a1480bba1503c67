//! Suggestions (`docs/gateway-contract.md` §10) and the model-title path (§9): each makes one model
//! call with its own caller identity.

use serde_json::json;

use crate::vocabulary::*;

#[tokio::test]
async fn suggestions_call_the_model_as_suggest_agent_and_parse_its_list() {
    let gateway = spawn_gateway().await;
    gateway.model.push([answer(
        "<think>hmm</think>```json\n[\"What else?\", \"Why?\", \"How?\", \"Four?\"]\n```",
    )]);
    let (client, thread_id) = gateway.client_with_thread().await;
    let body = json!({"messages": [
        {"role": "user", "content": " write a note "},
        {"role": "assistant", "content": "done"},
    ], "n": 3});
    let (status, answer) = client
        .post(&format!("/api/threads/{thread_id}/suggestions"), body)
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        answer,
        json!({"suggestions": ["What else?", "Why?", "How?"]})
    );
    let request = &gateway.model.requests()[0];
    assert_eq!(request.metadata.run_name.as_deref(), Some("suggest_agent"));
    assert_eq!(request.messages.len(), 2);
    assert_eq!(request.messages[0].kind.as_str(), "system");
    assert_eq!(
        request.messages[1].text(),
        "Conversation Context:\nUser: write a note\nAssistant: done\n\nGenerate 3 follow-up questions"
    );
    gateway.stop().await;
}

#[tokio::test]
async fn suggestions_degrade_to_an_empty_list() {
    let gateway = spawn_gateway().await;
    gateway.model.push([answer("no list at all")]);
    let (client, thread_id) = gateway.client_with_thread().await;
    let path = format!("/api/threads/{thread_id}/suggestions");
    let body = json!({"messages": [{"role": "user", "content": "hi"}]});
    assert_eq!(
        client.post(&path, body.clone()).await.1,
        json!({"suggestions": []})
    );
    // The script is now empty, so the model call itself fails.
    assert_eq!(
        client.post(&path, body.clone()).await.1,
        json!({"suggestions": []})
    );
    assert_eq!(
        client.post(&path, json!({"messages": [], "n": 9})).await.0,
        422
    );
    let (_, config) = client.get("/api/suggestions/config").await;
    assert_eq!(config, json!({"enabled": true, "max_suggestions": 3}));
    gateway.stop().await;
}

#[tokio::test]
async fn a_title_model_is_called_once_with_the_title_prompt_as_middleware_title() {
    let gateway =
        spawn_gateway_configured(|config| config.title.model_name = Some("scripted-model".into()))
            .await;
    gateway
        .model
        .push([answer("Hello there"), answer("  \"Greeting Chat\"\n")]);
    let (client, thread_id) = gateway.client_with_thread().await;
    let transcript = client.run_stream(&thread_id, "say hello", json!({})).await;
    assert_eq!(transcript.last_values()["title"], "Greeting Chat");
    let requests = gateway.model.requests();
    assert_eq!(requests.len(), 2);
    let title = &requests[1];
    assert_eq!(title.metadata.tags, ["middleware:title", "nostream"]);
    assert_eq!(title.metadata.run_name.as_deref(), Some("title_agent"));
    assert_eq!(
        title.messages[0].text(),
        "Generate a concise title (max 6 words) for this conversation.\nUser: say hello\nAssistant: Hello there\n\nReturn ONLY the title, no quotes, no explanation."
    );
    let (_, thread) = client.get(&format!("/api/threads/{thread_id}")).await;
    assert_eq!(thread["values"]["title"], "Greeting Chat");
    let run_id = transcript.run_id();
    let (_, rows) = client
        .get(&format!("/api/threads/{thread_id}/runs/{run_id}/messages"))
        .await;
    let callers: Vec<&str> = rows["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["event_type"] == "llm.ai.response")
        .map(|r| r["metadata"]["caller"].as_str().unwrap())
        .collect();
    assert_eq!(callers, ["lead_agent", "middleware:title"]);
    gateway.stop().await;
}

#[tokio::test]
async fn a_failing_title_model_falls_back_to_the_local_title() {
    let gateway =
        spawn_gateway_configured(|config| config.title.model_name = Some("scripted-model".into()))
            .await;
    gateway.model.push([answer("Hello there")]);
    let (client, thread_id) = gateway.client_with_thread().await;
    let transcript = client.run_stream(&thread_id, "say hello", json!({})).await;
    assert_eq!(transcript.last_values()["title"], "say hello");
    gateway.stop().await;
}
