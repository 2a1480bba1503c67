//! `cargo bench -p harness`: the Layer 1 performance figures (medians on this machine, printed,
//! never asserted — these machines are noisy).
//!
//! - one full scenario in-process (boot, register, thread, stream, compare with the golden);
//! - canonicalising and hashing a 1,000-message conversation of about 1 MB;
//! - 32 scenarios replayed concurrently in one process.

use std::path::Path;
use std::time::{Duration, Instant};

use harness::golden::{GoldenStatus, fixtures_dir, golden_status};
use harness::layer1::run_fixture;
use replay_core::replay_key;
use serde_json::{Value, json};

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn one_scenario(runtime: &tokio::runtime::Runtime, fixture: &Path) {
    let run = runtime
        .block_on(run_fixture(fixture))
        .expect("the scenario runs");
    assert!(run.check().is_ok(), "{}", run.report());
    assert_eq!(
        golden_status(&run.stem(), &run.golden_document()),
        GoldenStatus::Ok
    );
}

fn bench_scenario(runtime: &tokio::runtime::Runtime, fixture: &Path) {
    for _ in 0..5 {
        one_scenario(runtime, fixture);
    }
    let samples: Vec<Duration> = (0..40)
        .map(|_| {
            let started = Instant::now();
            one_scenario(runtime, fixture);
            started.elapsed()
        })
        .collect();
    let min = *samples.iter().min().unwrap();
    println!(
        "scenario in-process (boot, register, thread, stream, compare): median {:.2} ms, min {:.2} ms (n={})",
        median(samples.clone()).as_secs_f64() * 1e3,
        min.as_secs_f64() * 1e3,
        samples.len()
    );
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

fn bench_hashing() {
    let conversation = big_conversation();
    let bytes = serde_json::to_string(&conversation).unwrap().len();
    for _ in 0..3 {
        std::hint::black_box(replay_key("lead_agent", &conversation));
    }
    let samples: Vec<Duration> = (0..20)
        .map(|_| {
            let started = Instant::now();
            std::hint::black_box(replay_key("lead_agent", &conversation));
            started.elapsed()
        })
        .collect();
    let median = median(samples);
    println!(
        "canonicalise + hash {} messages ({:.2} MB of JSON): median {:.2} ms = {:.0} MB/s",
        conversation.len(),
        bytes as f64 / 1e6,
        median.as_secs_f64() * 1e3,
        bytes as f64 / 1e6 / median.as_secs_f64()
    );
}

fn bench_concurrent(runtime: &tokio::runtime::Runtime, fixtures: &[std::path::PathBuf]) {
    let count = 32;
    let samples: Vec<Duration> = (0..5)
        .map(|_| {
            let started = Instant::now();
            runtime.block_on(async {
                let tasks: Vec<_> = (0..count)
                    .map(|i| {
                        let fixture = fixtures[i % fixtures.len()].clone();
                        tokio::spawn(async move { run_fixture(&fixture).await })
                    })
                    .collect();
                for task in tasks {
                    let run = task.await.expect("join").expect("the scenario runs");
                    assert!(run.check().is_ok(), "{}", run.report());
                    assert_eq!(
                        golden_status(&run.stem(), &run.golden_document()),
                        GoldenStatus::Ok
                    );
                }
            });
            started.elapsed()
        })
        .collect();
    let median = median(samples);
    println!(
        "{count} scenarios concurrently in one process: median {:.1} ms = {:.0} scenarios/s, all green",
        median.as_secs_f64() * 1e3,
        count as f64 / median.as_secs_f64()
    );
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not run this target.
    let runtime = runtime();
    let fixture = fixtures_dir().join("write_read_file.ultra.json");
    let mut fixtures: Vec<_> = std::fs::read_dir(fixtures_dir())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    fixtures.sort();
    bench_scenario(&runtime, &fixture);
    bench_hashing();
    bench_concurrent(&runtime, &fixtures);
}
