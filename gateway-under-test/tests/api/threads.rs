//! Threads: create (idempotent, id rules), get, state, history, search, patch, delete and
//! ownership (`docs/gateway-contract.md` §3, §2.11).

use serde_json::json;

use crate::vocabulary::*;

#[tokio::test]
async fn create_is_idempotent_and_strips_owner_keys() {
    let gateway = spawn_gateway().await;
    let client = gateway.registered_client().await;
    let body = json!({"thread_id": "my-thread_1", "metadata": {"owner_id": "x", "user_id": "y", "topic": "t"}});
    let (status, first) = client.post("/api/threads", body.clone()).await;
    assert_eq!(status, 200);
    let keys: Vec<&String> = first.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "thread_id",
            "status",
            "created_at",
            "updated_at",
            "metadata",
            "values",
            "interrupts"
        ]
    );
    assert_eq!(first["status"], "idle");
    assert_eq!(first["metadata"], json!({"topic": "t"}));
    assert_eq!(first["values"], json!({}));
    let (status, second) = client.post("/api/threads", body).await;
    assert_eq!(status, 200);
    assert_eq!(second["created_at"], first["created_at"]);
    let (status, generated) = client.post("/api/threads", json!({"metadata": {}})).await;
    assert_eq!(status, 200);
    assert_eq!(
        generated["thread_id"].as_str().unwrap().len(),
        36,
        "a UUID when omitted"
    );
    gateway.stop().await;
}

#[tokio::test]
async fn bad_thread_ids_are_422() {
    let gateway = spawn_gateway().await;
    let client = gateway.registered_client().await;
    for bad in ["has space", "slash/es", &"x".repeat(65), ""] {
        let (status, _) = client
            .post("/api/threads", json!({"thread_id": bad, "metadata": {}}))
            .await;
        assert_eq!(status, 422, "{bad:?}");
    }
    let (status, body) = client
        .post(
            "/api/threads/bad%20id/runs/stream",
            run_body("hi", json!({})),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(
        body["detail"],
        "Invalid thread_id: expected 1-64 ASCII letters, digits, hyphens, or underscores"
    );
    gateway.stop().await;
}

#[tokio::test]
async fn another_users_thread_is_a_404_everywhere() {
    let gateway = spawn_gateway().await;
    let (alice, thread_id) = gateway.client_with_thread().await;
    let bob = gateway.registered_client().await;
    let not_found = json!({"detail": format!("Thread {thread_id} not found")});
    for path in [
        format!("/api/threads/{thread_id}"),
        format!("/api/threads/{thread_id}/state"),
    ] {
        assert_eq!(bob.get(&path).await, (404, not_found.clone()), "{path}");
    }
    let (status, body) = bob
        .post(&format!("/api/threads/{thread_id}/history"), json!({}))
        .await;
    assert_eq!((status, body), (404, not_found.clone()));
    let (status, body) = bob
        .post(
            &format!("/api/threads/{thread_id}/runs/stream"),
            run_body("hi", json!({})),
        )
        .await;
    assert_eq!((status, body), (404, not_found.clone()));
    let status = bob
        .request(
            reqwest::Method::DELETE,
            &format!("/api/threads/{thread_id}"),
        )
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 404);
    let (_, found) = bob.post("/api/threads/search", json!({})).await;
    assert_eq!(found, json!([]), "search lists only the caller's threads");
    assert_eq!(alice.get(&format!("/api/threads/{thread_id}")).await.0, 200);
    gateway.stop().await;
}

#[tokio::test]
async fn a_missing_thread_is_404_for_runs() {
    let gateway = spawn_gateway().await;
    let client = gateway.registered_client().await;
    let (status, body) = client
        .post("/api/threads/nope/runs/stream", run_body("hi", json!({})))
        .await;
    assert_eq!(
        (status, body),
        (404, json!({"detail": "Thread nope not found"}))
    );
    gateway.stop().await;
}

#[tokio::test]
async fn state_before_any_run_and_state_updates() {
    let gateway = spawn_gateway().await;
    let (client, thread_id) = gateway.client_with_thread().await;
    let (status, state) = client.get(&format!("/api/threads/{thread_id}/state")).await;
    assert_eq!(status, 200);
    let keys: Vec<&String> = state.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "values",
            "next",
            "metadata",
            "checkpoint",
            "checkpoint_id",
            "parent_checkpoint_id",
            "created_at",
            "tasks"
        ]
    );
    assert_eq!(state["metadata"]["step"], -1);
    let (status, updated) = client
        .post(
            &format!("/api/threads/{thread_id}/state"),
            json!({"values": {"title": "Renamed"}}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(updated["values"]["title"], "Renamed");
    assert_eq!(updated["parent_checkpoint_id"], state["checkpoint_id"]);
    for (body, expected) in [
        (json!({"bogus": 1}), 422),
        (
            json!({"checkpoint_id": "c-1", "checkpoint": {"any": "shape"}}),
            200,
        ),
        (json!({"checkpoint_id": 7}), 422),
    ] {
        let (status, answer) = client
            .post(&format!("/api/threads/{thread_id}/state"), body.clone())
            .await;
        assert_eq!(status, expected, "{body}\n→ {answer}");
    }
    gateway.stop().await;
}

#[tokio::test]
async fn history_validates_its_limit_and_pages_with_before() {
    let gateway = spawn_gateway().await;
    gateway.model.answer_always("done");
    let (client, thread_id) = gateway.client_with_thread().await;
    client
        .run_stream(&thread_id, "hello", json!({"mode": "flash"}))
        .await;
    let path = format!("/api/threads/{thread_id}/history");
    assert_eq!(client.post(&path, json!({"limit": 0})).await.0, 422);
    assert_eq!(client.post(&path, json!({"limit": 101})).await.0, 422);
    let (_, page) = client.post(&path, json!({"limit": 2})).await;
    let page = page.as_array().unwrap().clone();
    assert_eq!(page.len(), 2);
    let entry_keys: Vec<&String> = page[0].as_object().unwrap().keys().collect();
    assert_eq!(
        entry_keys,
        [
            "checkpoint_id",
            "parent_checkpoint_id",
            "metadata",
            "values",
            "created_at",
            "next"
        ]
    );
    assert!(page[0]["metadata"].get("writes").is_none() && page[0]["metadata"]["step"].is_number());
    let (_, older) = client
        .post(
            &path,
            json!({"limit": 2, "before": page[1]["checkpoint_id"]}),
        )
        .await;
    assert_ne!(older[0]["checkpoint_id"], page[1]["checkpoint_id"]);
    assert_eq!(older[0]["checkpoint_id"], page[1]["parent_checkpoint_id"]);
    gateway.stop().await;
}

#[tokio::test]
async fn search_patch_and_delete() {
    let gateway = spawn_gateway().await;
    let client = gateway.registered_client().await;
    let a = client.create_thread().await;
    let (_, _) = client
        .post(
            "/api/threads",
            json!({"thread_id": "tagged", "metadata": {"project": "x"}}),
        )
        .await;
    let (_, found) = client
        .post("/api/threads/search", json!({"metadata": {"project": "x"}}))
        .await;
    assert_eq!(found.as_array().unwrap().len(), 1);
    assert_eq!(found[0]["thread_id"], "tagged");
    let (_, all) = client
        .post("/api/threads/search", json!({"limit": 10}))
        .await;
    assert_eq!(all.as_array().unwrap().len(), 2);
    assert_eq!(
        client
            .post("/api/threads/search", json!({"limit": 1001}))
            .await
            .0,
        422
    );

    let response = client
        .request(reqwest::Method::PATCH, &format!("/api/threads/{a}"))
        .json(&json!({"metadata": {"project": "x"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let (_, found) = client
        .post("/api/threads/search", json!({"metadata": {"project": "x"}}))
        .await;
    assert_eq!(found.as_array().unwrap().len(), 2);

    let response = client
        .request(reqwest::Method::DELETE, &format!("/api/threads/{a}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(client.get(&format!("/api/threads/{a}")).await.0, 404);
    gateway.stop().await;
}
