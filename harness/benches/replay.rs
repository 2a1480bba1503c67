//! `cargo bench -p harness --bench replay`: the Layer 1 performance figures, measured with
//! criterion, so each carries a confidence interval and a comparison with the previous run on the
//! same machine (`target/criterion/`). Never asserted in tests: these machines are noisy.
//!
//! - one full scenario in-process (boot, register, thread, stream, verdict with the golden);
//! - canonicalising and hashing a 1,000-message conversation of about 1 MB (throughput);
//! - 32 scenarios replayed concurrently in one process (scenarios per second);
//! - one embeddings replay (issue 41): an OpenAI `/v1/embeddings` body of one input read into its
//!   canonical call, keyed, looked up in the `embeddings` boundary's exchanges, its recorded
//!   1536-dimension vector decoded from its compact form and rendered as the float answer
//!   (in-process: the model server's routes for it are not wired yet).
//!
//! `cargo bench -p harness --bench replay -- --quick` gives a rough figure in seconds.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use harness::in_process::run as run_fixture;
use harness::workspace::fixtures_dir;
use keyless_runner::{ScenarioRun, runtime};
use replay_core::replay_key;
use serde_json::{Value, json};

/// Every measured scenario must be green: timing a broken replay would measure the wrong thing.
fn assert_green(run: &ScenarioRun) {
    if let Err(report) = run.check() {
        panic!("{report}");
    }
}

fn one_scenario(runtime: &tokio::runtime::Runtime, fixture: &Path) -> ScenarioRun {
    let run = runtime
        .block_on(run_fixture(fixture))
        .expect("the scenario runs");
    assert_green(&run);
    run
}

fn scenario(c: &mut Criterion) {
    let runtime = runtime().expect("runtime");
    let fixture = fixtures_dir().join("write_read_file.ultra.json");
    c.bench_function("scenario in-process (write_read_file.ultra)", |b| {
        b.iter(|| black_box(one_scenario(&runtime, &fixture)))
    });
}

/// A conversation of 1,000 messages, about 1 MB: tool calls with nested args, tool results with
/// UUIDs, dates and temp paths (so every normalisation rule works), and human text.
fn big_conversation() -> Vec<Value> {
    let filler =
        "The quick brown fox — jumps over the lazy dog; ünïcödé text and \"quotes\". ".repeat(12);
    (0..1000)
        .map(|i| match i % 4 {
            0 => json!({"type": "human", "name": "user-input", "content": format!("--- BEGIN USER INPUT ---\n{i} {filler}\n--- END USER INPUT ---")}),
            1 => json!({"type": "ai", "content": "", "tool_calls": [{"name": "write_file", "id": format!("call_{i}"), "args": {"path": format!("/mnt/user-data/outputs/f{i}.txt"), "content": filler, "nested": {"n": i, "ratio": 0.000012345, "list": [1, 2.5, "x"]}}}]}),
            2 => json!({"type": "tool", "name": "write_file", "tool_call_id": format!("call_{i}"), "content": format!("OK 123e4567-e89b-12d3-a456-426614174000 at 2026-11-29T20:21:55.123456+00:00 in /tmp/run-{i}/out {filler}")}),
            _ => json!({"type": "ai", "content": format!("Done with step {i}. {filler}")}),
        })
        .collect()
}

fn hashing(c: &mut Criterion) {
    let conversation = big_conversation();
    let bytes = serde_json::to_string(&conversation).unwrap().len();
    let mut group = c.benchmark_group("replay key");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.sample_size(30);
    group.bench_function("canonicalise + hash 1,000 messages", |b| {
        b.iter(|| black_box(replay_key("lead_agent", black_box(&conversation))))
    });
    group.finish();
}

fn concurrent(c: &mut Criterion) {
    const COUNT: usize = 32;
    let runtime = runtime().expect("runtime");
    let mut fixtures: Vec<PathBuf> = std::fs::read_dir(fixtures_dir())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    fixtures.sort();
    let mut group = c.benchmark_group("concurrent");
    group.throughput(Throughput::Elements(COUNT as u64));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("32 scenarios in one process", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let tasks: Vec<_> = (0..COUNT)
                    .map(|i| {
                        let fixture = fixtures[i % fixtures.len()].clone();
                        tokio::spawn(async move { run_fixture(&fixture).await })
                    })
                    .collect();
                for task in tasks {
                    let run = task.await.expect("join").expect("the scenario runs");
                    assert_green(&run);
                }
            })
        })
    });
    group.finish();
}

fn embeddings(c: &mut Criterion) {
    use model_wire::embeddings::{
        Embedded, EmbeddingsRequest, EmbeddingsRoute, answer_from_recorded, recorded_answer,
        render_answer,
    };
    use replay_core::{BoundaryKind, ExchangeCall, ExchangeReplay};
    let body =
        json!({"model": "text-embedding-3-small", "input": "What is the capital of France?"});
    let call = |body: &Value| {
        let request = EmbeddingsRequest::parse(EmbeddingsRoute::OpenAi, None, body).unwrap();
        let call = ExchangeCall::new(
            BoundaryKind::Embeddings,
            "lead_agent",
            "POST /v1/embeddings",
            request.canonical(),
        );
        (request, call)
    };
    let vector: Vec<f32> = (0..1536).map(|i| (i as f32 * 0.37).sin() / 7.0).collect();
    let recorded = recorded_answer(&Embedded {
        vectors: vec![vector],
        prompt_tokens: Some(7),
    });
    // Enough copies of the exchange for every iteration (replay is sequential per key).
    let exchanges: Vec<_> = (0..200_000)
        .map(|_| call(&body).1.answered(recorded.clone()))
        .collect();
    let replay = ExchangeReplay::new(Path::new("bench.json"), exchanges);
    c.bench_function(
        "one embeddings replay (1536 dims, OpenAI float answer)",
        |b| {
            b.iter(|| {
                let (request, call) = call(black_box(&body));
                let served = replay.lookup(&call).expect("recorded");
                let answer = answer_from_recorded(&served.exchange.answer).unwrap();
                black_box(render_answer(&request, &answer).to_string())
            })
        },
    );
}

criterion_group!(benches, scenario, hashing, concurrent, embeddings);
criterion_main!(benches);
