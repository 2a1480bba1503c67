//! The test-only seed route (`docs/gateway-contract.md` §13): absent from a default build; with the
//! `test-seed` feature, mounted only when `DEERFLOW_ENABLE_TEST_SEED=1`.

use serde_json::{Value, json};

use crate::vocabulary::*;

fn seed_body(thread_id: &str) -> Value {
    json!({"thread_id": thread_id, "runs": [
        {"run_id": format!("{thread_id}-r1"), "created_at": "2026-01-01T00:00:00+00:00", "messages": [
            {"role": "human", "content": "ALPHA-FIRST-QUESTION-7f3a2c", "id": "h1"},
            {"role": "ai", "content": "answer ALPHA-FIRST-QUESTION-7f3a2c", "id": "a1"}]},
        {"run_id": format!("{thread_id}-r2"), "created_at": "2026-01-01T00:01:00+00:00", "messages": [
            {"role": "human", "content": "OMEGA-SECOND-QUESTION-9b21d4", "id": "h2"},
            {"role": "ai", "content": "answer OMEGA-SECOND-QUESTION-9b21d4", "id": "a2"}]},
    ]})
}

async fn seed_status(gateway: &TestGateway) -> u16 {
    let client = gateway.registered_client().await;
    client
        .post("/api/test-only/seed-runs", seed_body("e2e-multi-run-x"))
        .await
        .0
}

#[tokio::test]
async fn the_seed_route_is_absent_unless_asked_for() {
    let gateway = spawn_gateway().await;
    assert_eq!(
        seed_status(&gateway).await,
        404,
        "authenticated, CSRF passed, and still no route"
    );
    gateway.stop().await;
}

#[test]
fn only_the_variable_set_to_1_asks_for_the_route() {
    let cases = [
        (None, false),
        (Some("0"), false),
        (Some("true"), false),
        (Some("1"), true),
    ];
    for (value, expected) in cases {
        let env = move |name: &str| {
            (name == "DEERFLOW_ENABLE_TEST_SEED")
                .then(|| value.map(String::from))
                .flatten()
        };
        let home = tempfile::tempdir().unwrap();
        let app = gateway_under_test::AppBuilder::new(test_config(home.path()))
            .provider("scripted", |_: &_, _: &_| {
                Ok(std::sync::Arc::new(ScriptedModel::default()) as _)
            })
            .test_seed_route_from_env(&env)
            .build()
            .unwrap();
        assert_eq!(
            app.test_seed_route(),
            expected && cfg!(feature = "test-seed"),
            "{value:?}"
        );
    }
}

/// A gateway with the seed route mounted, as the launcher mounts it.
#[cfg(feature = "test-seed")]
async fn gateway_with_the_seed_route() -> TestGateway {
    spawn_gateway_with(GatewayOptions {
        extend: Box::new(|builder| builder.test_seed_route(true)),
        ..Default::default()
    })
    .await
}

#[cfg(feature = "test-seed")]
#[tokio::test]
async fn seeded_runs_are_listed_newest_first_with_their_messages_and_no_checkpoint() {
    let gateway = gateway_with_the_seed_route().await;
    let client = gateway.registered_client().await;
    let thread_id = "e2e-multi-run-1";
    let (status, body) = client
        .post("/api/test-only/seed-runs", seed_body(thread_id))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, json!({"ok": true, "thread_id": thread_id, "runs": 2}));
    let (status, runs) = client.get(&format!("/api/threads/{thread_id}/runs")).await;
    assert_eq!(
        status, 200,
        "no metadata row, and the run routes still answer"
    );
    let ids: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [format!("{thread_id}-r2"), format!("{thread_id}-r1")]);
    let (_, first) = client
        .get(&format!(
            "/api/threads/{thread_id}/runs/{thread_id}-r1/messages"
        ))
        .await;
    let first = first["data"].as_array().unwrap().clone();
    let (_, second) = client
        .get(&format!(
            "/api/threads/{thread_id}/runs/{thread_id}-r2/messages"
        ))
        .await;
    let second = second["data"].as_array().unwrap().clone();
    assert_eq!(
        first[0]["content"]["content"],
        "ALPHA-FIRST-QUESTION-7f3a2c"
    );
    assert_eq!(first[1]["event_type"], "llm.ai.response");
    assert!(
        first.last().unwrap()["seq"].as_i64() < second[0]["seq"].as_i64(),
        "run 1's rows come first"
    );
    assert_eq!(
        client
            .get(&format!("/api/threads/{thread_id}/state"))
            .await
            .0,
        404,
        "no checkpoint, no thread row"
    );
    let stranger = gateway.registered_client().await;
    let (_, theirs) = stranger
        .get(&format!("/api/threads/{thread_id}/runs"))
        .await;
    assert_eq!(theirs, json!([]), "runs keep their owner");
    gateway.stop().await;
}

#[cfg(feature = "test-seed")]
#[tokio::test]
async fn a_seeded_thread_has_a_message_page_and_an_empty_history() {
    let gateway = gateway_with_the_seed_route().await;
    let client = gateway.registered_client().await;
    let thread_id = "e2e-multi-run-page";
    assert_eq!(
        client
            .post("/api/test-only/seed-runs", seed_body(thread_id))
            .await
            .0,
        200
    );
    let (status, page) = client
        .get(&format!("/api/threads/{thread_id}/messages/page"))
        .await;
    assert_eq!(status, 200, "{page}");
    let texts: Vec<&str> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["content"]["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        [
            "ALPHA-FIRST-QUESTION-7f3a2c",
            "answer ALPHA-FIRST-QUESTION-7f3a2c",
            "OMEGA-SECOND-QUESTION-9b21d4",
            "answer OMEGA-SECOND-QUESTION-9b21d4"
        ]
    );
    assert_eq!(
        page["data"][1]["content"]["additional_kwargs"]["turn_duration"],
        0
    );
    assert_eq!(
        client
            .post(&format!("/api/threads/{thread_id}/history"), json!({}))
            .await,
        (200, json!([]))
    );
    let stranger = gateway.registered_client().await;
    assert_eq!(
        stranger
            .get(&format!("/api/threads/{thread_id}/messages/page"))
            .await
            .0,
        404,
        "runs keep their owner"
    );
    gateway.stop().await;
}
