//! Many runs at once across two gateway instances, and a restart on the same home: every
//! instance owns its state, and nothing lives only in memory that a restart needs.

use std::sync::Arc;

use serde_json::json;

use crate::vocabulary::*;

/// One user on one gateway runs `runs` scenario runs on `threads` threads, in parallel.
async fn busy_user(url: String, threads: usize) -> Vec<(String, String)> {
    let mut client = TestClient::new(url);
    client.register().await;
    let client = Arc::new(client);
    let mut tasks = Vec::new();
    for index in 0..threads {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            let thread_id = client.create_thread().await;
            let transcript = client
                .run_stream(&thread_id, &format!("question {index}"), json!({}))
                .await;
            assert_eq!(
                transcript.events().first(),
                Some(&"metadata"),
                "{}",
                transcript.raw
            );
            assert_eq!(
                transcript.events().last(),
                Some(&"end"),
                "{}",
                transcript.raw
            );
            (thread_id, transcript.run_id().to_string())
        }));
    }
    let mut done = Vec::new();
    for task in tasks {
        done.push(task.await.expect("run task"));
    }
    done
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_runs_on_two_gateways_keep_complete_journals_and_stay_apart() {
    let first = spawn_gateway().await;
    let second = spawn_gateway().await;
    first.model.answer_always("from the first gateway");
    second.model.answer_always("from the second gateway");
    let (a, b, c) = tokio::join!(
        busy_user(first.url(), 8),
        busy_user(first.url(), 8),
        busy_user(second.url(), 8),
    );
    assert_eq!(first.model.requests().len(), 16);
    assert_eq!(second.model.requests().len(), 8);

    for (gateway, runs, expected) in [
        (&first, &a, "from the first gateway"),
        (&first, &b, "from the first gateway"),
        (&second, &c, "from the second gateway"),
    ] {
        let store = gateway.gateway.app().store();
        for (thread_id, run_id) in runs {
            let rows = store
                .query_events(thread_id, Default::default())
                .await
                .expect("journal");
            let types: Vec<&str> = rows.iter().map(|r| r.event.event_type.as_str()).collect();
            assert_eq!(
                types,
                ["run.start", "llm.human.input", "llm.ai.response", "run.end"],
                "{thread_id}"
            );
            assert!(rows.iter().all(|r| &r.event.run_id == run_id));
            let seqs: Vec<i64> = rows.iter().map(|r| r.seq).collect();
            assert_eq!(seqs, [1, 2, 3, 4], "seq is per thread and gap-free");
            assert_eq!(rows[2].event.content["content"], expected);
        }
    }
    let foreign = &c[0].0;
    assert!(
        first
            .gateway
            .app()
            .store()
            .get_thread(foreign)
            .await
            .unwrap()
            .is_none(),
        "instances share nothing"
    );
    let mut stranger = TestClient::new(first.url());
    stranger.register().await;
    assert_eq!(
        stranger
            .get(&format!("/api/threads/{}/runs", a[0].0))
            .await
            .0,
        404
    );
    first.stop().await;
    second.stop().await;
}

#[tokio::test]
async fn a_restarted_gateway_on_the_same_home_serves_what_the_first_one_wrote() {
    let gateway = spawn_gateway().await;
    gateway.model.push(write_read_script());
    let home = gateway.home.clone();
    let (client, thread_id) = gateway.client_with_thread().await;
    let transcript = client.run_scenario(&thread_id).await;
    let run_id = transcript.run_id().to_string();
    gateway.stop().await;

    let restarted = spawn_gateway_with(GatewayOptions {
        home: Some(home),
        ..Default::default()
    })
    .await;
    let mut client = TestClient {
        url: restarted.url(),
        ..client
    };
    client.url = restarted.url();
    let (status, _) = client.get("/api/v1/auth/me").await;
    assert_eq!(
        status, 200,
        "the session cookie stays valid: the user and JWT secret persisted"
    );
    let (_, thread) = client.get(&format!("/api/threads/{thread_id}")).await;
    assert_eq!(&thread["values"], transcript.last_values());
    let (_, runs) = client.get(&format!("/api/threads/{thread_id}/runs")).await;
    assert_eq!(runs[0]["run_id"], run_id.as_str());
    assert_eq!(runs[0]["status"], "success");
    let (_, messages) = client
        .get(&format!("/api/threads/{thread_id}/runs/{run_id}/messages"))
        .await;
    assert_eq!(messages["data"].as_array().unwrap().len(), 6);
    let (_, found) = client.post("/api/threads/search", json!({})).await;
    assert_eq!(found[0]["thread_id"], thread_id.as_str());
    restarted.model.answer_always("after restart");
    let transcript = client.run_stream(&thread_id, "and now?", json!({})).await;
    assert_eq!(*transcript.events().last().unwrap(), "end");
    restarted.stop().await;
}
