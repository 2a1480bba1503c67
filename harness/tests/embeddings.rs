//! Issue 41, items 1 and 5: the official clients' embeddings calls (`openai` float, default and
//! base64, LangChain's `OpenAIEmbeddings`, the `ollama` client's `embed` and `embeddings`,
//! `google-genai`'s `embed_content`, boto3's `invoke_model` on Titan and Cohere), recorded
//! through the model server's proxy against a scripted upstream that answers vectors of real
//! dimension (deterministic from each text), then replayed from the fixture with the upstream
//! gone: each client gets the upstream's f32s back bit for bit, with no problem; a changed
//! document text is a miss each client sees in its wire's error, naming the call and the text.

use std::path::PathBuf;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::Uri;
use harness::workspace::fixtures_dir;
use keyless_runner::runtime;
use keyless_runner::server::RecordConfig;
use keyless_runner::{Mode, ModelServer, Problem, ServerOptions};
use model_wire::embeddings::{Embedded, EmbeddingsRequest, EmbeddingsRoute, render_answer};
use replay_core::{BoundaryKind, Fixture};
use serde_json::Value;

const BOUND: Duration = Duration::from_secs(240);

/// The dimension the scripted upstream answers when a request names none (OpenAI's
/// `text-embedding-3-small`).
const DIMS: usize = 1536;

fn bounded<T>(work: impl Future<Output = T>) -> T {
    runtime()
        .expect("runtime")
        .block_on(async { tokio::time::timeout(BOUND, work).await })
        .unwrap_or_else(|_| panic!("the test did not finish within {BOUND:?}"))
}

/// The vector the scripted upstream gives `text`: `dims` floats in [-1, 1), from an xorshift
/// seeded with the text's FNV-1a hash (each a multiple of 2^-23, so most have no short decimal).
fn vector_for(text: &str, dims: usize) -> Vec<f32> {
    let mut state = (text.bytes()).fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    }) | 1;
    (0..dims)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// The route a path under the scripted upstream's base is, and the model its path names.
fn route_of(path: &str) -> (EmbeddingsRoute, Option<String>) {
    // `/v1/models/{model}:{method}` and `/v1/model/{id}/invoke` (its `:` sent as `%3A`).
    let segments: Vec<String> = (path.split('/'))
        .map(|segment| segment.replace("%3A", ":").replace("%3a", ":"))
        .collect();
    let last = segments.last().cloned().unwrap_or_default();
    let gemini_model = || last.split(':').next().map(str::to_owned);
    if path.ends_with("/api/embeddings") {
        (EmbeddingsRoute::OllamaEmbeddings, None)
    } else if path.ends_with("/api/embed") {
        (EmbeddingsRoute::OllamaEmbed, None)
    } else if path.ends_with(":batchEmbedContents") {
        (EmbeddingsRoute::GeminiBatch, gemini_model())
    } else if path.ends_with(":embedContent") {
        (EmbeddingsRoute::GeminiEmbed, gemini_model())
    } else if path.ends_with("/invoke") {
        let model = segments[segments.len() - 2].clone();
        let route = EmbeddingsRoute::bedrock(&model).expect("an embeddings model");
        (route, Some(model))
    } else {
        (EmbeddingsRoute::OpenAi, None)
    }
}

/// A scripted provider at every embeddings route: each input's [`vector_for`], in the route's
/// own answer shape (base64 when an OpenAI request asks for it).
async fn scripted_upstream() -> String {
    let app = axum::Router::new().fallback(|uri: Uri, body: Bytes| async move {
        let (route, model) = route_of(uri.path());
        let body: Value = serde_json::from_slice(&body).expect("a JSON request");
        let request = EmbeddingsRequest::parse(route, model.as_deref(), &body).expect("parsed");
        let dims = request.dimensions.map_or(DIMS, |dims| dims as usize);
        let vectors = (request.inputs.iter())
            .map(|input| vector_for(input.as_str().expect("a text"), dims))
            .collect();
        let answer = Embedded {
            vectors,
            prompt_tokens: Some(7),
        };
        axum::Json(render_answer(&request, &answer))
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{address}")
}

/// The Python with the official clients installed (`WIRE_SDK_PYTHON`, which `.ci/run` sets to
/// its venv's); `None`, with a notice, when it is not set, except under `CI`.
fn sdk_python() -> Option<String> {
    match std::env::var("WIRE_SDK_PYTHON") {
        Ok(python) => Some(python),
        Err(_)
            if std::env::var("CI").is_ok_and(|ci| !ci.is_empty() && ci != "false" && ci != "0") =>
        {
            panic!(
                "CI must set WIRE_SDK_PYTHON to a Python with openai, langchain-openai, ollama, google-genai and boto3 installed (see .ci/run)"
            )
        }
        Err(_) => {
            eprintln!(
                "skipped: set WIRE_SDK_PYTHON to run the official clients' embeddings calls (.ci/run does)"
            );
            None
        }
    }
}

/// Runs `sdk/check_embeddings.py` against `url` in `mode`; its one JSON line.
async fn check_embeddings(python: String, url: String, mode: &str) -> Value {
    let script = format!(
        "{}/harness/tests/sdk/check_embeddings.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let mode = mode.to_owned();
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(python)
            .arg(script)
            .args([url, mode])
            .output()
    })
    .await
    .expect("join")
    .expect("the check's Python starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "check_embeddings.py failed ({})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    serde_json::from_str(stdout.trim()).expect("one JSON line")
}

/// Each call's vectors are the scripted upstream's for its inputs, bit for bit.
fn assert_upstream_vectors(got: &Value) {
    let calls = got.as_array().expect("a list");
    assert_eq!(calls.len(), 10, "{got}");
    for call in calls {
        let client = &call["client"];
        let inputs = call["inputs"].as_array().expect("inputs");
        let vectors = call["bits"].as_array().expect("bits");
        assert_eq!(inputs.len(), vectors.len(), "{client}");
        for (input, bits) in inputs.iter().zip(vectors) {
            let bits: Vec<u32> = serde_json::from_value(bits.clone()).expect("u32s");
            let expected: Vec<u32> = vector_for(input.as_str().expect("text"), bits.len())
                .iter()
                .map(|value| value.to_bits())
                .collect();
            assert!(
                matches!(bits.len(), DIMS | 1024),
                "{client}: {}",
                bits.len()
            );
            assert!(
                bits == expected,
                "{client}: {input} differs from the upstream's vector"
            );
        }
    }
}

/// Recorded through the proxy, replayed from the fixture: every client's vectors bit for bit,
/// no problem; one document changed is a miss at the openai and ollama clients naming the call
/// and the text.
#[test]
fn the_official_clients_get_the_recorded_vectors_bit_for_bit_and_a_changed_text_is_a_named_miss() {
    let Some(python) = sdk_python() else {
        return;
    };
    bounded(async {
        let folder = tempfile::tempdir().expect("tempdir");
        let upstream = scripted_upstream().await;
        let proxy = ModelServer::start(
            Mode::Record(Box::new(RecordConfig {
                upstream: format!("{upstream}/v1"),
                api_key: "sk-model-key-0123456789abcdef".into(),
                recording: folder.path().join("rag.jsonl"),
                scenario: replay_core::Scenario::new("rag", replay_core::UiMode::Flash, "q"),
                allow_insecure_upstream: false,
                limits: Default::default(),
                aws: keyless_runner::server::AwsCredentials::from_vars(|name| match name {
                    "AWS_ACCESS_KEY_ID" => Some("AKIDEXAMPLE".into()),
                    "AWS_SECRET_ACCESS_KEY" => Some("not-a-secret-either".into()),
                    _ => None,
                }),
            })),
            ServerOptions::default(),
        )
        .await
        .expect("proxy");
        let recorded = check_embeddings(python.clone(), proxy.url(), "all").await;
        assert_upstream_vectors(&recorded);
        let problems = proxy.problems();
        assert!(problems.is_empty(), "{problems:?}");
        let built = proxy.stop().await.expect("built").expect("a fixture");
        let exchanges = built.fixture.exchanges;
        assert_eq!(exchanges.len(), 10);
        assert!(
            exchanges
                .iter()
                .all(|e| e.boundary == BoundaryKind::Embeddings)
        );
        let shipped = fixtures_dir().join("write_read_file.flash.json");
        let mut fixture = Fixture::load(&shipped).expect("shipped");
        fixture.exchanges = exchanges;
        let path: PathBuf = folder.path().join("rag.flash.json");
        std::fs::write(&path, fixture.to_pretty_json()).expect("fixture written");
        // The upstream is not asked again: the replay has only the fixture.
        let server = ModelServer::start(Mode::Fixtures(vec![path]), ServerOptions::default())
            .await
            .expect("replay");
        let replayed = check_embeddings(python.clone(), server.url(), "all").await;
        assert_eq!(replayed, recorded);
        let problems = server.problems();
        assert!(problems.is_empty(), "{problems:?}");
        let missed = check_embeddings(python, server.url(), "miss").await;
        for miss in missed.as_array().expect("a list") {
            let message = miss["message"].as_str().expect("message");
            assert_eq!(miss["status"], 400, "{miss}");
            for wanted in [
                "embeddings miss",
                "A changed document text.",
                "from `lead_agent`",
            ] {
                assert!(message.contains(wanted), "{wanted} not in {message}");
            }
        }
        let kinds: Vec<&str> = (server.problems().iter())
            .map(|problem| match problem {
                Problem::ExchangeMiss { .. } => "exchange_miss",
                _ => "other",
            })
            .collect();
        assert_eq!(kinds, ["exchange_miss", "exchange_miss"]);
        server.stop().await.expect("stop");
    });
}
