//! The recording pipeline without a key: wiremock stands in for the OpenAI-compatible endpoint
//! and streams its answers in several chunks. Record the write/read-file scenario through the
//! real gateway and its real OpenAI provider, build the fixture from the versioned recording,
//! replay it through Layer 1, and get the committed golden; the same recording also replays
//! strictly, chunk by chunk; planted secrets never reach the file.

mod support;

use std::path::Path;

use gateway_under_test::AppBuilder;
use harness::adapter::Extensions;
use harness::adapter::activation::{Installed, apply};
use harness::adapter::hermetic::{ModelBlock, SCENARIO_MODEL, hermetic_config, prepare_home};
use harness::in_process::run as run_fixture;
use harness::record_run::{Recorded, record_scenario};
use harness::scenarios::WRITE_READ_FILE_PROMPT;
use keyless_runner::recordings::Activation;
use model_wire::Event;
use replay_core::recording::{Access, Outcome, RecordedEvent, read_recording};
use replay_core::{MissingGolden, Scenario, UiMode};
use serde_json::Value;
use support::{scripted_upstream, text_stream, write_read_file_streams};
use wiremock::MockServer;

const API_KEY: &str = "sk-test-SECRETabcdefghijklmnop";

/// The write/read-file run's answers, then the suggestions the web client asks for after it.
fn scenario_bodies() -> Vec<String> {
    let mut bodies = write_read_file_streams();
    bodies.push(text_stream(&[
        "[\"Append a line?\", ",
        "\"Delete the note?\"]",
    ]));
    bodies
}

fn record_block(server: &MockServer) -> ModelBlock {
    ModelBlock::Record {
        model: "wiremock-model".into(),
        api_key: API_KEY.into(),
        base_url: format!("{}/v1", server.uri()),
    }
}

fn ultra_scenario(prompt: &str) -> Scenario {
    Scenario {
        model: "wiremock-model".into(),
        ..Scenario::new("write_read_file", UiMode::Ultra, prompt)
    }
}

/// Records `prompt` in the ultra mode into `recording`, with `server` as the provider.
async fn record_ultra(server: &MockServer, prompt: &str, recording: &Path) -> Recorded {
    record_scenario(
        &ultra_scenario(prompt),
        record_block(server),
        recording,
        Extensions::default(),
    )
    .await
    .expect("the recording run")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_run_builds_a_fixture_that_replays_to_the_committed_golden() {
    let server = scripted_upstream(scenario_bodies()).await;
    let folder = tempfile::tempdir().unwrap();
    let recording = folder.path().join("recording.jsonl");
    let recorded = record_ultra(&server, WRITE_READ_FILE_PROMPT, &recording).await;

    let file = read_recording(&recording, Access::External).expect("the recording reads strictly");
    assert_eq!(
        file.calls.len(),
        4,
        "three lead-agent calls and the suggestions call"
    );
    assert!(
        file.calls
            .iter()
            .all(|call| call.outcome == Outcome::Complete)
    );
    let deltas = file.calls[0]
        .events
        .iter()
        .filter(|e| matches!(e, RecordedEvent::Delta(Event::ToolcallDelta { .. })))
        .count();
    assert_eq!(
        deltas, 3,
        "the argument fragments are recorded as they were streamed"
    );
    let callers: Vec<&str> = file
        .calls
        .iter()
        .map(|c| c.request.context["caller"].as_str().unwrap())
        .collect();
    assert_eq!(
        callers,
        ["lead_agent", "lead_agent", "lead_agent", "suggest_agent"]
    );
    assert_eq!(
        file.calls[0].request.context["input_hash"],
        "27aeb4c11bff2c3ebc182fe52a06556823c21928620a400c7f26be9733c31f3f",
        "the recorder hashes with the replay key function (the spec's T0 vector)"
    );
    assert!(recorded.meta_path.is_file());
    assert_eq!(
        recorded.suggestions.len(),
        1,
        "one suggestions call after the one run"
    );
    assert_eq!(recorded.suggestions[0]["suggestions"][0], "Append a line?");

    let fixture_path = folder.path().join("write_read_file.ultra.json");
    std::fs::write(&fixture_path, recorded.fixture.to_pretty_json()).unwrap();
    let run = run_fixture(&fixture_path).await.expect("the replay");
    // The stem is `write_read_file.ultra`: the verdict compares with the committed golden.
    let verdict = run.verdict();
    assert!(
        verdict.passes(MissingGolden::Fails),
        "{}",
        run.report(&verdict)
    );
    assert_eq!(
        verdict.unused_turns,
        [3],
        "only the suggestions turn is left for Layer 2"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_recording_replays_strictly_with_the_recorded_chunks() {
    let server = scripted_upstream(scenario_bodies()).await;
    let folder = tempfile::tempdir().unwrap();
    let recording = folder.path().join("recording.jsonl");
    record_ultra(&server, WRITE_READ_FILE_PROMPT, &recording).await;
    let requests_while_recording = server.received_requests().await.unwrap().len();

    let home_root = tempfile::tempdir().unwrap();
    let home = prepare_home(home_root.path()).unwrap();
    // The same configuration as the recording; only the provider transform differs.
    let config = hermetic_config(&home, &record_block(&server), None).unwrap();
    let (builder, installed) = apply(
        AppBuilder::new(config),
        Activation::Replay {
            path: recording.clone(),
        },
        &folder.path().join("not-managed"),
    );
    assert!(
        matches!(installed, Installed::Replaying(_)),
        "{installed:?}"
    );
    let app = builder.build().unwrap();
    let gateway = app
        .serve(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap())
        .unwrap();
    // The web client's page, as the recording was made with: strict replay compares the
    // model's input field by field, content blocks included.
    let runs = keyless_runner::session::WebClient::new(Some(SCENARIO_MODEL))
        .drive(&gateway.url(), &ultra_scenario(WRITE_READ_FILE_PROMPT))
        .await
        .unwrap();
    let transcript = &runs.transcripts[0];
    let values = transcript
        .events
        .iter()
        .filter(|e| e.event == "values")
        .count();
    assert_eq!(values, 13, "{}", transcript.raw());
    let text_chunks: Vec<Value> = transcript
        .events
        .iter()
        .filter(|e| e.event == "messages")
        .map(|e| e.json().expect("a messages frame is JSON")[0].clone())
        .filter(|chunk| chunk["type"] == "AIMessageChunk" && chunk["content"] != "")
        .collect();
    let chunks: Vec<&str> = text_chunks
        .iter()
        .map(|chunk| chunk["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        chunks,
        ["hi ", "from ", "replay."],
        "a streaming client sees the recorded chunk boundaries"
    );
    let last = transcript.final_values().unwrap()["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        text_chunks.iter().all(|chunk| chunk["id"] == last["id"]),
        "every chunk carries the id of the message the state keeps: {text_chunks:?} vs {}",
        last["id"]
    );
    assert_eq!(last["content"], "hi from replay.");
    assert!(
        last["additional_kwargs"]
            .get("deerflow_error_fallback")
            .is_none(),
        "no mismatch: {last}"
    );
    gateway.shutdown().await.unwrap();
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        requests_while_recording,
        "strict replay opens no socket to the model"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_planted_in_the_request_never_reach_the_recording() {
    let prompt = "Use my key sk-live-abcdefghijklmnop with header Authorization: Bearer abc.def.ghi123456 \
                  against https://alice:hunter2@example.com/x?api_key=QWERTY123456 and \
                  https://gemini.example.com/v1?key=AIzaSyGEMINI98765 and say done.";
    let server = scripted_upstream(vec![text_stream(&["done"]), text_stream(&["[]"])]).await;
    let folder = tempfile::tempdir().unwrap();
    let recording = folder.path().join("recording.jsonl");
    let recorded = record_ultra(&server, prompt, &recording).await;
    let meta = std::fs::read_to_string(harness::record_run::meta_path_for(&recording)).unwrap();
    let files = [
        (
            "the recording",
            std::fs::read_to_string(&recording).unwrap(),
        ),
        ("the metadata file", meta),
        ("the fixture", recorded.fixture.to_pretty_json()),
    ];
    for secret in [
        "sk-live-abcdefghijklmnop",
        "abc.def.ghi123456",
        "hunter2",
        "QWERTY123456",
        "AIzaSyGEMINI98765",
        API_KEY,
    ] {
        for (file, bytes) in &files {
            assert!(!bytes.contains(secret), "{secret} leaked into {file}");
        }
    }
    let bytes = &files[0].1;
    assert!(bytes.contains("[secret removed]"));
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&recording).unwrap().permissions(),
    ) & 0o777;
    assert_eq!(mode, 0o600);
    let sent = server.received_requests().await.unwrap();
    let auth = sent[0]
        .headers
        .get("authorization")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    assert_eq!(
        auth,
        format!("Bearer {API_KEY}"),
        "the real key did reach the provider"
    );
}
