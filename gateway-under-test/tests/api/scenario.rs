//! The write/read-file scenario of `docs/gateway-contract.md` §7: the exact 15-event shape
//! sequence, the tool results, the local title, and what the model was sent.

use serde_json::{Value, json};

use crate::vocabulary::*;

fn keys(list: &[&str]) -> Option<Vec<String>> {
    Some(list.iter().map(|k| k.to_string()).collect())
}

/// `docs/gateway-contract.md` §7.4, row by row.
fn contract_shapes() -> Vec<(String, Option<Vec<String>>)> {
    let base = [
        "artifacts",
        "delegations",
        "messages",
        "skill_context",
        "viewed_images",
    ];
    let with = |extra: &[&str]| {
        let mut all: Vec<&str> = base.iter().chain(extra).copied().collect();
        all.sort();
        keys(&all)
    };
    let mut shapes = vec![("metadata".to_string(), keys(&["run_id", "thread_id"]))];
    shapes.push(("values".into(), with(&[])));
    shapes.push(("values".into(), with(&["thread_data"])));
    for _ in 3..=5 {
        shapes.push(("values".into(), with(&["thread_data", "uploaded_files"])));
    }
    for _ in 6..=7 {
        shapes.push((
            "values".into(),
            with(&["thread_data", "title", "uploaded_files"]),
        ));
    }
    for _ in 8..=13 {
        shapes.push((
            "values".into(),
            with(&["sandbox", "thread_data", "title", "uploaded_files"]),
        ));
    }
    shapes.push(("end".into(), None));
    shapes
}

#[tokio::test]
async fn the_write_read_file_scenario_streams_exactly_the_contract_sequence() {
    let gateway = spawn_gateway().await;
    gateway.model.push(write_read_script());
    let (client, thread_id) = gateway.client_with_thread().await;

    let transcript = client.run_scenario(&thread_id).await;

    assert_eq!(transcript.status, 200, "{}", transcript.raw);
    assert_eq!(
        transcript.shapes(),
        contract_shapes(),
        "transcript:\n{}",
        transcript.raw
    );
    let values = transcript.last_values();
    let messages = values["messages"].as_array().unwrap();
    let tools: Vec<&Value> = messages.iter().filter(|m| m["type"] == "tool").collect();
    assert_eq!(tools[0]["content"], "OK");
    assert_eq!(tools[0]["name"], "write_file");
    assert_eq!(tools[1]["content"], "hi from replay.");
    assert_eq!(
        values["title"],
        "Using your own file tools directly, create the fil..."
    );
    let user = client.get("/api/v1/auth/me").await.1;
    assert_eq!(
        values["sandbox"],
        json!({"sandbox_id": format!("local:{}:{}", user["id"].as_str().unwrap(), thread_id)})
    );
    let note = std::path::Path::new(values["thread_data"]["outputs_path"].as_str().unwrap())
        .join("note.txt");
    assert_eq!(std::fs::read_to_string(note).unwrap(), "hi from replay.");
    gateway.stop().await;
}

#[tokio::test]
async fn the_model_sees_the_sanitised_user_input_named_user_input_after_the_hidden_reminder() {
    let gateway = spawn_gateway().await;
    gateway.model.push(write_read_script());
    let (client, thread_id) = gateway.client_with_thread().await;
    client.run_scenario(&thread_id).await;

    let requests = gateway.model.requests();
    assert_eq!(requests.len(), 3, "three lead-agent model calls");
    let first = &requests[0];
    assert_eq!(
        first.messages[0].kind.as_str(),
        "system",
        "the system prompt comes first"
    );
    let reminder = &first.messages[1];
    assert!(
        reminder.is_hidden()
            && reminder
                .text()
                .starts_with("<system-reminder>\n<current_date>")
    );
    let human = &first.messages[2];
    assert_eq!(human.name.as_deref(), Some("user-input"));
    assert_eq!(
        human.text(),
        format!("--- BEGIN USER INPUT ---\n{SCENARIO_PROMPT}\n--- END USER INPUT ---")
    );
    assert_eq!(
        human.additional_kwargs["original_user_content"],
        SCENARIO_PROMPT
    );
    assert!(
        first.metadata.tags.is_empty() && first.metadata.run_name.is_none(),
        "caller lead_agent"
    );
    let tool_names: Vec<&str> = first.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tool_names, ["ls", "read_file", "write_file"]);
    let third: Vec<&str> = requests[2]
        .messages
        .iter()
        .map(|m| m.kind.as_str())
        .collect();
    assert_eq!(
        third,
        ["system", "system", "human", "ai", "tool", "ai", "tool"]
    );
    gateway.stop().await;
}

#[tokio::test]
async fn state_is_stored_per_step_and_readable_after_the_run() {
    let gateway = spawn_gateway().await;
    gateway.model.push(write_read_script());
    let (client, thread_id) = gateway.client_with_thread().await;
    let transcript = client.run_scenario(&thread_id).await;

    let (status, state) = client.get(&format!("/api/threads/{thread_id}/state")).await;
    assert_eq!(status, 200);
    assert_eq!(&state["values"], transcript.last_values());
    let (_, history) = client
        .post(
            &format!("/api/threads/{thread_id}/history"),
            json!({"limit": 100}),
        )
        .await;
    let history = history.as_array().unwrap();
    assert_eq!(
        history.len(),
        14,
        "13 write steps plus the empty checkpoint of thread creation"
    );
    assert!(
        history[0]["values"]["messages"].is_array(),
        "only the newest entry holds messages"
    );
    assert!(history[1]["values"].get("messages").is_none());
    let (_, thread) = client.get(&format!("/api/threads/{thread_id}")).await;
    assert_eq!(thread["status"], "idle");
    gateway.stop().await;
}
