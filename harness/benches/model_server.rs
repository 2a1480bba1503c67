//! `cargo bench -p harness --bench model_server`: the model server's figures on loopback (printed,
//! never asserted — these machines are noisy).
//!
//! - a replayed completion's latency (p50, p99) and requests per second, streamed and not: one
//!   request at a time for latency, 16 in flight for throughput. The request is a lead-agent call
//!   of realistic size (a 6 KB system prompt, the three file tools, the user input, a tool call
//!   and its result); the fixture holds enough copies of its turn for every request to hit;
//! - the whole Layer 1 run of one fixture through the `gateway-under-test` binary (already
//!   running) and the model server, against the same run in-process (boot included, as
//!   `cargo xtask replay` does it);
//! - a streamed answer at each of the five wires (the same conversation and recorded answer as
//!   Chat Completions, Messages, Responses, Gemini and Converse carry them): p50 and p99 per
//!   answer, read whole, one request at a time, the replay started afresh (untimed) before each. `cargo bench -p harness --bench model_server --
//!   wires` runs only this part;
//! - one replayed call of a recorded HTTP API (a Tavily search with its JSON body and a 1 KB
//!   answer): p50 and p99, one request at a time, in base-URL mode (`{http_url:tavily}`) and in
//!   the forward-proxy mode (`https://api.tavily.com` through `CONNECT` and the run's CA, one
//!   kept-alive tunnel) (`-- http` runs only this part);
//! - one replayed embeddings call (`POST /v1/embeddings`, one document, a 1536-dimension vector
//!   recorded as a compact vector) answered as floats and as base64: p50 and p99, one request at
//!   a time, and the bytes one such vector takes in a fixture (`-- embeddings` runs only this
//!   part).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use harness::adapter::process::{GatewayProcess, workspace_gateway_binary};
use harness::in_process::{options, run as run_fixture};
use harness::workspace::fixtures_dir;
use keyless_runner::AtUrl;
use keyless_runner::ModelLedger;
use keyless_runner::boundary::{Boundaries, BoundaryName, HttpUpstream, ProxyMode};
use keyless_runner::run_ca::RunCa;
use keyless_runner::{Mode, ModelServer, ServerOptions};
use keyless_runner::{ScenarioRun, runtime};
use model_wire::chat_completions::read_conversation as messages_from_chat_completions;
use replay_core::{
    Answer, BoundaryKind, ExchangeCall, Fixture, Scenario, Turn, UiMode, replay_key,
};
use serde_json::{Value, json};

const LATENCY_REQUESTS: usize = 2_000;
const THROUGHPUT_REQUESTS: usize = 20_000;
const IN_FLIGHT: usize = 16;

/// A lead-agent request of realistic size.
fn request_body(stream: bool) -> Value {
    let system = "You are a helpful agent. Follow the rules below carefully. ".repeat(100);
    let tool = |name: &str| {
        json!({"type": "function", "function": {"name": name, "description": format!("The {name} tool: reads or writes files in the sandbox."),
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "description": {"type": "string"}, "content": {"type": "string"}}, "required": ["path"]}}})
    };
    json!({
        "model": "scenario-model",
        "messages": [
            {"role": "system", "content": format!("{system}\n<system-reminder>today is 2026-05-17</system-reminder>")},
            {"role": "user", "name": "user-input", "content": "--- BEGIN USER INPUT ---\nCreate /mnt/user-data/outputs/note.txt with hi, then read it back.\n--- END USER INPUT ---"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "write_file", "arguments": "{\"path\": \"/mnt/user-data/outputs/note.txt\", \"content\": \"hi\", \"description\": \"write it\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "OK"},
        ],
        "tools": [tool("ls"), tool("read_file"), tool("write_file")],
        "stream": stream,
    })
}

/// A fixture answering `copies` calls of the request with a read_file tool call.
fn bench_fixture(folder: &Path, copies: usize) -> std::path::PathBuf {
    let body = request_body(false);
    let messages = messages_from_chat_completions(body["messages"].as_array().expect("messages"));
    let key = replay_key("lead_agent", &messages);
    let output = json!({"type": "ai", "data": {"content": "", "type": "ai", "id": "lc_run--1",
        "response_metadata": {"finish_reason": "tool_calls", "model_name": "m"},
        "tool_calls": [{"name": "read_file", "args": {"path": "/mnt/user-data/outputs/note.txt", "description": "read it back"}, "id": "call_2", "type": "tool_call"}],
        "usage_metadata": {"input_tokens": 900, "output_tokens": 30, "total_tokens": 930}}});
    let turn = Turn {
        caller: Some(key.caller.clone()),
        conversation_hash: Some(key.conversation_hash.clone()),
        input_hash: key.input_hash.clone(),
        answer: Answer::Output(output),
        canonical: Some(key.canonical.clone()),
    };
    let fixture = Fixture {
        scenario: Scenario::new("bench", UiMode::Flash, "p"),
        turns: vec![turn; copies],
        provenance: None,
        exchanges: Vec::new(),
    };
    let path = folder.join("bench.flash.json");
    std::fs::write(&path, fixture.to_pretty_json()).expect("write the fixture");
    path
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    sorted[((sorted.len() as f64 * fraction) as usize).min(sorted.len() - 1)]
}

async fn one_request(client: &reqwest::Client, url: &str, body: &Value) {
    let response = client.post(url).json(body).send().await.expect("sent");
    assert!(response.status().is_success(), "{}", response.status());
    let bytes = response.bytes().await.expect("body");
    assert!(!bytes.is_empty());
}

async fn bench_completions(stream: bool) {
    let folder = tempfile::tempdir().expect("tempdir");
    let fixture = bench_fixture(folder.path(), LATENCY_REQUESTS + THROUGHPUT_REQUESTS + 100);
    let server = ModelServer::start(Mode::Fixtures(vec![fixture]), ServerOptions::default())
        .await
        .expect("model server");
    let url = format!("{}/chat/completions", server.base_url());
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let body = request_body(stream);
    for _ in 0..100 {
        one_request(&client, &url, &body).await;
    }
    let mut samples = Vec::with_capacity(LATENCY_REQUESTS);
    for _ in 0..LATENCY_REQUESTS {
        let started = Instant::now();
        one_request(&client, &url, &body).await;
        samples.push(started.elapsed());
    }
    samples.sort();
    let started = Instant::now();
    futures::stream::iter(0..THROUGHPUT_REQUESTS)
        .for_each_concurrent(IN_FLIGHT, |_| one_request(&client, &url, &body))
        .await;
    let elapsed = started.elapsed();
    assert!(server.problems().is_empty(), "{:?}", server.problems());
    println!(
        "replayed completion, {}: p50 {:.3} ms, p99 {:.3} ms (n={LATENCY_REQUESTS}, one at a time); {:.0} requests/s ({THROUGHPUT_REQUESTS} requests, {IN_FLIGHT} in flight)",
        if stream { "streamed" } else { "not streamed" },
        percentile(&samples, 0.5).as_secs_f64() * 1e3,
        percentile(&samples, 0.99).as_secs_f64() * 1e3,
        THROUGHPUT_REQUESTS as f64 / elapsed.as_secs_f64(),
    );
}

/// One replayed call of a recorded HTTP API: a Tavily search, its canonical form as the model
/// server reads it, answered from a fixture holding enough copies for every call.
async fn bench_http_boundary() {
    let folder = tempfile::tempdir().expect("tempdir");
    let search =
        json!({"api_key": "tvly-bench-0123456789", "query": "weather in Paris", "max_results": 5});
    let canonical = json!({"method": "POST", "path": "/search", "body": {"json": {
        "api_key": "[secret removed]", "query": "weather in Paris", "max_results": 5}}});
    let results: Vec<Value> = (0..5)
        .map(|i| json!({"title": format!("Result {i}"), "url": format!("https://example.com/{i}"), "content": "Sunny, 21 °C. ".repeat(8), "score": 0.9}))
        .collect();
    let answer = json!({"status": 200, "headers": {"content-type": "application/json"},
        "body": [json!({"query": "weather in Paris", "results": results}).to_string()]});
    let exchange =
        ExchangeCall::new(BoundaryKind::Http, "tavily", "POST /search", canonical).answered(answer);
    let mut fixture = Fixture::load(&fixtures_dir().join("write_read_file.flash.json"))
        .expect("a shipped fixture");
    // Both modes' calls, warm-up included.
    fixture.exchanges = vec![exchange; 2 * (LATENCY_REQUESTS + 100)];
    let path = folder.path().join("http.flash.json");
    std::fs::write(&path, fixture.to_pretty_json()).expect("write the fixture");
    let tavily = HttpUpstream::new("https://api.tavily.com", &[], &[]).expect("upstream");
    let http = [(BoundaryName::parse("tavily").expect("name"), tavily)].into();
    let ca = Arc::new(RunCa::generate().expect("run CA"));
    let proxy = ProxyMode::new(&["api.tavily.com".to_owned()], &http, ca.clone()).expect("proxy");
    let options = ServerOptions {
        boundaries: Arc::new(Boundaries {
            http,
            proxy: Some(proxy),
            configured_in: "bench".into(),
            ..Boundaries::default()
        }),
        ..ServerOptions::default()
    };
    let server = ModelServer::start(Mode::Fixtures(vec![path]), options)
        .await
        .expect("model server");
    let base_url = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let proxied = reqwest::Client::builder()
        .proxy(reqwest::Proxy::all(server.url()).expect("proxy"))
        .tls_certs_only([reqwest::Certificate::from_pem(ca.pem().as_bytes()).expect("pem")])
        .build()
        .expect("client");
    let modes = [
        (
            "base URL mode",
            &base_url,
            format!("{}/_keyless/http/tavily/search", server.url()),
        ),
        (
            "forward-proxy mode",
            &proxied,
            "https://api.tavily.com/search".to_owned(),
        ),
    ];
    for (mode, client, url) in modes {
        for _ in 0..100 {
            one_request(client, &url, &search).await;
        }
        let mut samples = Vec::with_capacity(LATENCY_REQUESTS);
        for _ in 0..LATENCY_REQUESTS {
            let started = Instant::now();
            one_request(client, &url, &search).await;
            samples.push(started.elapsed());
        }
        samples.sort();
        println!(
            "replayed HTTP call ({mode}): p50 {:.3} ms, p99 {:.3} ms (n={LATENCY_REQUESTS}, one at a time)",
            percentile(&samples, 0.5).as_secs_f64() * 1e3,
            percentile(&samples, 0.99).as_secs_f64() * 1e3,
        );
    }
    let state = server
        .client()
        .expect("client")
        .state()
        .await
        .expect("state");
    assert!(
        ModelLedger::from_state(state).boundaries.misses.is_empty(),
        "every call replayed"
    );
}

/// How many embeddings calls are timed per answer form.
const EMBEDDINGS_REQUESTS: usize = 500;

/// One replayed embeddings call of a 1536-dimension vector over HTTP, floats and base64, and
/// the bytes that vector takes in the fixture.
async fn bench_embeddings() {
    use model_wire::embeddings::{
        CompactVector, Embedded, EmbeddingsRequest, EmbeddingsRoute, recorded_answer,
    };
    let folder = tempfile::tempdir().expect("tempdir");
    let document =
        "Keyless records a model run once and replays it through the real gateway. ".repeat(3);
    let body = |encoding: &str| json!({"model": "text-embedding-3-small", "input": [document], "encoding_format": encoding});
    let request =
        EmbeddingsRequest::parse(EmbeddingsRoute::OpenAi, None, &body("float")).expect("parsed");
    // Gaussian-like values of a real embedding's spread, no short decimal among them.
    let vector: Vec<f32> = (0..1536u32)
        .map(|i| ((i.wrapping_mul(2_654_435_761) >> 8) as f32 / (1u32 << 24) as f32 - 0.5) * 0.08)
        .collect();
    let stored = serde_json::to_string(&CompactVector::new(&vector)).expect("json");
    let answer = recorded_answer(&Embedded {
        vectors: vec![vector],
        prompt_tokens: Some(40),
    });
    let exchange = ExchangeCall::new(
        BoundaryKind::Embeddings,
        "lead_agent",
        "OpenAI embeddings text-embedding-3-small",
        request.canonical(),
    )
    .answered(answer);
    let mut fixture = Fixture::load(&fixtures_dir().join("write_read_file.flash.json"))
        .expect("a shipped fixture");
    fixture.exchanges = vec![exchange; 2 * EMBEDDINGS_REQUESTS + 40];
    let path = folder.path().join("embeddings.flash.json");
    std::fs::write(&path, fixture.to_pretty_json()).expect("write the fixture");
    let server = ModelServer::start(Mode::Fixtures(vec![path]), ServerOptions::default())
        .await
        .expect("model server");
    let url = format!("{}/v1/embeddings", server.url());
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    println!(
        "one 1536-dimension vector in a fixture: {} bytes ({{\"dims\", \"f32le\"}})",
        stored.len()
    );
    for encoding in ["float", "base64"] {
        let body = body(encoding);
        for _ in 0..20 {
            one_request(&client, &url, &body).await;
        }
        let mut samples = Vec::with_capacity(EMBEDDINGS_REQUESTS);
        for _ in 0..EMBEDDINGS_REQUESTS {
            let started = Instant::now();
            one_request(&client, &url, &body).await;
            samples.push(started.elapsed());
        }
        samples.sort();
        println!(
            "replayed embeddings call ({encoding}, 1536 dims): p50 {:.3} ms, p99 {:.3} ms (n={EMBEDDINGS_REQUESTS}, one at a time)",
            percentile(&samples, 0.5).as_secs_f64() * 1e3,
            percentile(&samples, 0.99).as_secs_f64() * 1e3,
        );
    }
    let state = server
        .client()
        .expect("client")
        .state()
        .await
        .expect("state");
    assert!(
        ModelLedger::from_state(state).boundaries.misses.is_empty(),
        "every call replayed"
    );
}

/// Every measured run must be green: timing a broken replay would measure the wrong thing.
fn assert_green(run: &ScenarioRun) {
    if let Err(report) = run.check() {
        panic!("{report}");
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

async fn bench_layer1(fixture: &Path) {
    let server = ModelServer::start(
        Mode::Fixtures(vec![fixture.to_path_buf()]),
        ServerOptions::default(),
    )
    .await
    .expect("model server");
    let binary = workspace_gateway_binary().expect("gateway binary");
    let gateway = GatewayProcess::spawn(&binary, &server.base_url(), None)
        .await
        .expect("gateway process");
    let mut target = AtUrl::new(gateway.url(), &server.url())
        .expect("target")
        .with_reset_token(server.reset_token());
    let mut external = Vec::new();
    let mut in_process = Vec::new();
    for round in 0..45 {
        let started = Instant::now();
        let run = keyless_runner::run(&mut target, fixture, &options())
            .await
            .expect("external run");
        let external_time = started.elapsed();
        assert_green(&run);
        let started = Instant::now();
        let run = run_fixture(fixture).await.expect("in-process run");
        let in_process_time = started.elapsed();
        assert_green(&run);
        if round >= 5 {
            external.push(external_time);
            in_process.push(in_process_time);
        }
    }
    let (external, in_process) = (median(external), median(in_process));
    println!(
        "Layer 1 run of {}: external gateway (already up) median {:.2} ms; in-process (boot included) median {:.2} ms; ratio {:.2}",
        fixture.file_name().unwrap_or_default().to_string_lossy(),
        external.as_secs_f64() * 1e3,
        in_process.as_secs_f64() * 1e3,
        external.as_secs_f64() / in_process.as_secs_f64(),
    );
}

/// The bench conversation (system prompt, user input, a `write_file` call and its result) as
/// each wire carries it, streamed: the route and the body.
fn streamed_request_at(wire: &str) -> (&'static str, Value) {
    let chat = request_body(true);
    let messages = chat["messages"].as_array().expect("messages");
    let system = messages[0]["content"].clone();
    let user = messages[1]["content"].clone();
    let args: Value = serde_json::from_str(
        messages[2]["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .expect("arguments"),
    )
    .expect("JSON arguments");
    let schema = chat["tools"][0]["function"]["parameters"].clone();
    let names = ["ls", "read_file", "write_file"];
    match wire {
        "anthropic" => (
            "/v1/messages",
            json!({"model": "m", "max_tokens": 1024, "stream": true,
            "system": system,
            "tools": names.map(|n| json!({"name": n, "description": n, "input_schema": schema})),
            "messages": [{"role": "user", "content": user},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1", "name": "write_file", "input": args}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "OK"}]}]}),
        ),
        "responses" => (
            "/v1/responses",
            json!({"model": "m", "stream": true, "instructions": system,
            "tools": names.map(|n| json!({"type": "function", "name": n, "description": n, "parameters": schema})),
            "input": [{"role": "user", "content": user},
                {"type": "function_call", "call_id": "call_1", "name": "write_file", "arguments": args.to_string()},
                {"type": "function_call_output", "call_id": "call_1", "output": "OK"}]}),
        ),
        "gemini" => (
            "/v1beta/models/m:streamGenerateContent?alt=sse",
            json!({
            "systemInstruction": {"parts": [{"text": system}]},
            "tools": [{"functionDeclarations": names.map(|n| json!({"name": n, "description": n, "parametersJsonSchema": schema}))}],
            "contents": [{"role": "user", "parts": [{"text": user}]},
                {"role": "model", "parts": [{"functionCall": {"name": "write_file", "args": args}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "write_file", "response": {"result": "OK"}}}]}]}),
        ),
        "converse" => (
            "/model/m/converse-stream",
            json!({
            "system": [{"text": system}], "inferenceConfig": {"maxTokens": 1024},
            "toolConfig": {"tools": names.map(|n| json!({"toolSpec": {"name": n, "description": n, "inputSchema": {"json": schema}}}))},
            "messages": [{"role": "user", "content": [{"text": user}]},
                {"role": "assistant", "content": [{"toolUse": {"toolUseId": "call_1", "name": "write_file", "input": args}}]},
                {"role": "user", "content": [{"toolResult": {"toolUseId": "call_1", "content": [{"text": "OK"}]}}]}]}),
        ),
        _ => ("/v1/chat/completions", chat),
    }
}

const WIRE_REQUESTS: usize = 1_000;
const WIRE_WARMUP: usize = 50;

async fn bench_streamed_answer_per_wire() {
    let wires = [
        "chat_completions",
        "anthropic",
        "responses",
        "gemini",
        "converse",
    ];
    let folder = tempfile::tempdir().expect("tempdir");
    // One turn, the replay started afresh (untimed) before each request: the wires without
    // message names look a call up by its name-free key over every turn, so a fixture of
    // thousands of copies would time that walk, not the answer.
    let fixture = bench_fixture(folder.path(), 1);
    let server = ModelServer::start(Mode::Fixtures(vec![fixture]), ServerOptions::default())
        .await
        .expect("model server");
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    // A reset needs the server's token (finding 3): its own client holds it.
    let owner = server.client().expect("the model server's client");
    let fresh = || async {
        owner.reset(None).await.expect("reset");
    };
    for wire in wires {
        let (route, body) = streamed_request_at(wire);
        let url = format!("{}{route}", server.url());
        for _ in 0..WIRE_WARMUP {
            fresh().await;
            one_request(&client, &url, &body).await;
        }
        let mut samples = Vec::with_capacity(WIRE_REQUESTS);
        for _ in 0..WIRE_REQUESTS {
            fresh().await;
            let started = Instant::now();
            one_request(&client, &url, &body).await;
            samples.push(started.elapsed());
        }
        samples.sort();
        assert!(
            server.problems().is_empty(),
            "{wire}: {:?}",
            server.problems()
        );
        println!(
            "streamed answer at {wire}: p50 {:.3} ms, p99 {:.3} ms (n={WIRE_REQUESTS}, one at a time)",
            percentile(&samples, 0.5).as_secs_f64() * 1e3,
            percentile(&samples, 0.99).as_secs_f64() * 1e3,
        );
    }
}

fn main() {
    let runtime = runtime().expect("runtime");
    runtime.block_on(bench_embeddings());
    if std::env::args().any(|arg| arg == "embeddings") {
        return;
    }
    runtime.block_on(bench_http_boundary());
    if std::env::args().any(|arg| arg == "http") {
        return;
    }
    runtime.block_on(bench_streamed_answer_per_wire());
    if std::env::args().any(|arg| arg == "wires") {
        return;
    }
    runtime.block_on(bench_completions(false));
    runtime.block_on(bench_completions(true));
    runtime.block_on(bench_layer1(
        &fixtures_dir().join("write_read_file.ultra.json"),
    ));
}
