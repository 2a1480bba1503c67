//! `cargo bench -p gateway-under-test --bench steps`: how a run's cost grows with its steps.
//!
//! One synthetic run of 1, 10, 100 and 1,000 tool steps (`write_file`, 200 B each), answered in
//! process by the test vocabulary's scripted model through the real gateway (HTTP, runtime,
//! store, SSE). Criterion reports each size's throughput in steps per second, so time per step is
//! its inverse, and flat growth shows as the same throughput at every size. Before timing, each
//! size prints its database bytes and SSE bytes per message byte.
//!
//! The runs stream `updates` and `messages-tuple`, not `values`: `values` sends the whole state at
//! every step by contract (`docs/gateway-contract.md` §7.2), so its cost per step grows with the
//! conversation whatever the gateway does; a client that wants flat cost asks for these modes.
//! Never asserted anywhere: these machines are noisy.

#[allow(dead_code)]
#[path = "../tests/api/vocabulary.rs"]
mod vocabulary;

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;

use vocabulary::{
    TestClient, TestGateway, answer, spawn_gateway_configured, tool_call, ultra_context,
};

/// Bytes each step writes.
const STEP_CONTENT_BYTES: usize = 200;

/// Queues a run of `steps` tool steps and its final answer, and streams it.
/// Returns the thread and the transcript.
async fn run(
    gateway: &TestGateway,
    client: &TestClient,
    steps: usize,
) -> (String, vocabulary::Transcript) {
    let thread_id = client.create_thread().await;
    let chunk = "x".repeat(STEP_CONTENT_BYTES);
    gateway.model.push((0..steps).map(|step| {
        tool_call(
            "write_file",
            json!({"description": "part", "path": format!("/mnt/user-data/outputs/{step}.txt"),
                   "content": chunk}),
            &format!("call_{step}"),
        )
    }));
    gateway.model.push([answer("done")]);
    let mut body = vocabulary::run_body("write the parts", ultra_context());
    body["config"]["recursion_limit"] = json!(30 * steps + 100);
    body["stream_mode"] = json!(["updates", "messages-tuple"]);
    let transcript = client.stream_run(&thread_id, body).await;
    assert_eq!(
        transcript.events().last(),
        Some(&"end"),
        "{}",
        transcript.raw
    );
    assert!(
        !transcript.events().contains(&"error"),
        "{steps} steps: the run failed: {:?}",
        transcript
            .frames
            .iter()
            .find(|frame| frame.event == "error")
    );
    (thread_id, transcript)
}

/// The database size with the write-ahead log folded in.
fn database_bytes(gateway: &TestGateway) -> u64 {
    let path = gateway.home.path().join("db").join("deerflow.db");
    let conn = rusqlite::Connection::open(&path).expect("open the database");
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("checkpoint the WAL");
    std::fs::metadata(&path).expect("database file").len()
}

/// The run's messages as the thread's state holds them, in bytes of JSON.
async fn message_bytes(client: &TestClient, thread_id: &str) -> f64 {
    let (status, state) = client.get(&format!("/api/threads/{thread_id}/state")).await;
    assert_eq!(status, 200, "{state}");
    state["values"]["messages"].to_string().len() as f64
}

fn steps(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let (gateway, client) = runtime.block_on(async {
        let gateway =
            spawn_gateway_configured(|config| config.runs.max_recursion_limit = 40_000).await;
        gateway.model.forget_requests();
        let client = gateway.registered_client().await;
        (gateway, client)
    });
    let mut group = c.benchmark_group("run of n tool steps");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    for steps in [1_usize, 10, 100, 1000] {
        runtime.block_on(async {
            let before = database_bytes(&gateway);
            let (thread_id, transcript) = run(&gateway, &client, steps).await;
            let database = (database_bytes(&gateway) - before) as f64;
            let messages = message_bytes(&client, &thread_id).await;
            let sse = transcript.raw.len() as f64;
            eprintln!(
                "{steps:>4} steps: messages {messages:>8} B, database +{database:>9} B \
                 ({:.2}×), SSE {sse:>10} B ({:.1}×)",
                database / messages,
                sse / messages,
            );
        });
        group.throughput(Throughput::Elements(steps as u64));
        group.bench_function(format!("{steps} steps"), |b| {
            b.iter(|| black_box(runtime.block_on(run(&gateway, &client, steps)).1.raw.len()))
        });
    }
    group.finish();
}

criterion_group!(benches, steps);
criterion_main!(benches);
