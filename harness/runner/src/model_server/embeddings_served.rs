//! The embeddings boundary served by the model server, end to end at every route: recorded
//! through the proxy against a scripted upstream (the proxy's key or SigV4 signature sent, the
//! vectors written compact), replayed with the upstream stopped bit for bit (float and base64),
//! a changed input text answered as a miss naming the call and the text, and a fixture that
//! recorded no embeddings call answering one as an unserved route.

use std::path::Path;

use model_wire::embeddings::{EmbeddingsRoute, read_answer};
use replay_core::{BoundaryKind, Fixture, Scenario, UiMode};
use serde_json::{Value, json};
use wiremock::matchers::{header_regex, method, path_regex};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::{Mode, ModelServer, Problem, RecordConfig, RecordLimits, ServerOptions};
use crate::target::ModelLedger;

const MODEL_KEY: &str = "sk-model-key-0123456789abcdef";

/// One route's case: where the gateway calls, the upstream path it is forwarded to, the
/// request, the same request with one input text changed, and the upstream's answer.
struct Case {
    route: EmbeddingsRoute,
    path: &'static str,
    upstream_path: &'static str,
    auth: &'static str,
    request: Value,
    changed: Value,
    answer: Value,
}

/// Awkward floats: no short decimal in f64, a subnormal-ish tiny one, a negative.
const FLOATS: [[f32; 3]; 2] = [[0.1, -0.333_333_34, 1.0e-8], [0.707_106_77, -2.5, 3.0e-5]];

fn cases() -> Vec<Case> {
    let [a, b] = FLOATS;
    let bearer = "^Bearer sk-model-key-0123456789abcdef$";
    vec![
        Case {
            route: EmbeddingsRoute::OpenAi,
            path: "/v1/embeddings",
            upstream_path: "^/v1/embeddings$",
            auth: bearer,
            request: json!({"model": "text-embedding-3-small", "input": ["alpha doc", "beta doc"]}),
            changed: json!({"model": "text-embedding-3-small", "input": ["alpha doc", "gamma doc"]}),
            answer: json!({"object": "list", "model": "text-embedding-3-small",
                "data": [{"object": "embedding", "index": 1, "embedding": b},
                         {"object": "embedding", "index": 0, "embedding": a}],
                "usage": {"prompt_tokens": 4, "total_tokens": 4}}),
        },
        Case {
            route: EmbeddingsRoute::OllamaEmbed,
            path: "/api/embed",
            upstream_path: "^/v1/api/embed$",
            auth: bearer,
            request: json!({"model": "nomic-embed-text", "input": ["alpha doc", "beta doc"]}),
            changed: json!({"model": "nomic-embed-text", "input": ["alpha doc", "gamma doc"]}),
            answer: json!({"model": "nomic-embed-text", "embeddings": [a, b], "prompt_eval_count": 4}),
        },
        Case {
            route: EmbeddingsRoute::OllamaEmbeddings,
            path: "/api/embeddings",
            upstream_path: "^/v1/api/embeddings$",
            auth: bearer,
            request: json!({"model": "nomic-embed-text", "prompt": "beta doc"}),
            changed: json!({"model": "nomic-embed-text", "prompt": "gamma doc"}),
            answer: json!({"embedding": a}),
        },
        Case {
            route: EmbeddingsRoute::GeminiEmbed,
            path: "/v1beta/models/text-embedding-004:embedContent",
            upstream_path: "^/v1/models/text-embedding-004:embedContent$",
            auth: "^sk-model-key-0123456789abcdef$",
            request: json!({"content": {"parts": [{"text": "beta doc"}]}}),
            changed: json!({"content": {"parts": [{"text": "gamma doc"}]}}),
            answer: json!({"embedding": {"values": a}}),
        },
        Case {
            route: EmbeddingsRoute::GeminiBatch,
            path: "/v1beta/models/text-embedding-004:batchEmbedContents",
            upstream_path: "^/v1/models/text-embedding-004:batchEmbedContents$",
            auth: "^sk-model-key-0123456789abcdef$",
            request: json!({"requests": [
                {"model": "models/text-embedding-004", "content": {"parts": [{"text": "alpha doc"}]}},
                {"model": "models/text-embedding-004", "content": {"parts": [{"text": "beta doc"}]}}]}),
            changed: json!({"requests": [
                {"model": "models/text-embedding-004", "content": {"parts": [{"text": "alpha doc"}]}},
                {"model": "models/text-embedding-004", "content": {"parts": [{"text": "gamma doc"}]}}]}),
            answer: json!({"embeddings": [{"values": a}, {"values": b}]}),
        },
        Case {
            route: EmbeddingsRoute::BedrockTitan,
            path: "/model/amazon.titan-embed-text-v2:0/invoke",
            upstream_path: "^/v1/model/amazon.titan-embed-text-v2(:|%3A)0/invoke$",
            auth: "^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/",
            request: json!({"inputText": "beta doc", "dimensions": 3}),
            changed: json!({"inputText": "gamma doc", "dimensions": 3}),
            answer: json!({"embedding": a, "inputTextTokenCount": 2}),
        },
        Case {
            route: EmbeddingsRoute::BedrockCohere,
            path: "/model/cohere.embed-english-v3/invoke",
            upstream_path: "^/v1/model/cohere.embed-english-v3/invoke$",
            auth: "^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/",
            request: json!({"texts": ["alpha doc", "beta doc"], "input_type": "search_document"}),
            changed: json!({"texts": ["alpha doc", "gamma doc"], "input_type": "search_document"}),
            answer: json!({"id": "x", "embeddings": [a, b], "texts": ["alpha doc", "beta doc"],
                           "response_type": "embeddings_floats"}),
        },
    ]
}

async fn post(url: &str, body: &Value, caller: Option<&str>) -> (u16, String) {
    let mut request = reqwest::Client::new()
        .post(url)
        .bearer_auth("sk-gateway-own-key-never-forwarded")
        .json(body);
    if let Some(caller) = caller {
        request = request.header(super::CALLER_HEADER, caller);
    }
    let response = request.send().await.expect("answered");
    let status = response.status().as_u16();
    (status, response.text().await.expect("body"))
}

/// The vectors of an answer at `route`, as bits.
fn bits(route: EmbeddingsRoute, body: &str) -> Vec<Vec<u32>> {
    let parsed: Value = serde_json::from_str(body).expect("json");
    let read = read_answer(route, &parsed).unwrap_or_else(|err| panic!("{err}: {body}"));
    (read.vectors.iter())
        .map(|vector| vector.iter().map(|value| value.to_bits()).collect())
        .collect()
}

/// Every route records through the proxy (the proxy's key or signature sent, never the
/// gateway's), then replays from the fixture with the upstream gone: the same answer byte for
/// byte, the recorded f32s bit for bit; a changed input text is a miss naming the call and the
/// text, reaching the runner's ledger.
#[tokio::test]
async fn each_embeddings_route_records_then_replays_its_vectors_bit_for_bit_and_names_a_changed_text()
 {
    for case in cases() {
        let name = case.route.name();
        let folder = tempfile::tempdir().expect("tempdir");
        let upstream = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path_regex(case.upstream_path))
            .and(header_regex(
                match case.auth.starts_with("^AWS4") || case.auth.starts_with("^Bearer") {
                    true => "authorization",
                    false => "x-goog-api-key",
                },
                case.auth,
            ))
            .respond_with(ResponseTemplate::new(200).set_body_json(&case.answer))
            .expect(1)
            .mount(&upstream)
            .await;
        let config = RecordConfig {
            upstream: format!("{}/v1", upstream.uri()),
            api_key: MODEL_KEY.into(),
            recording: folder.path().join("recording.jsonl"),
            scenario: Scenario::new("s", UiMode::Flash, "p"),
            allow_insecure_upstream: false,
            limits: RecordLimits::default(),
            aws: aws_sign::AwsCredentials::from_vars(|name| match name {
                "AWS_ACCESS_KEY_ID" => Some("AKIDEXAMPLE".into()),
                "AWS_SECRET_ACCESS_KEY" => Some("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into()),
                "AWS_REGION" => Some("us-east-1".into()),
                _ => None,
            }),
        };
        let server = ModelServer::start(Mode::Record(Box::new(config)), ServerOptions::default())
            .await
            .expect("record");
        let url = format!("{}{}", server.url(), case.path);
        let (status, recorded) = post(&url, &case.request, Some("rag")).await;
        assert_eq!(status, 200, "{name}: {recorded}");
        let expected = bits(case.route, &case.answer.to_string());
        assert_eq!(bits(case.route, &recorded), expected, "{name}");
        let built = server.stop().await.expect("built").expect("a fixture");
        upstream.verify().await;
        let exchanges = built.fixture.exchanges;
        assert_eq!(exchanges.len(), 1, "{name}");
        assert_eq!(exchanges[0].boundary, BoundaryKind::Embeddings);
        assert_eq!(exchanges[0].caller, "rag");
        assert!(
            exchanges[0].answer["vectors"][0]["f32le"].is_string(),
            "{name}"
        );
        let text = std::fs::read_to_string(folder.path().join("recording.jsonl")).expect("read");
        assert!(
            !text.contains(MODEL_KEY) && !text.contains("AKIDEXAMPLE"),
            "{name}"
        );
        // A fixture with the exchange, replayed with the upstream gone.
        drop(upstream);
        let shipped =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/write_read_file.flash.json");
        let mut fixture = Fixture::load(&shipped).expect("shipped");
        fixture.exchanges = exchanges;
        let written = folder.path().join("rag.flash.json");
        std::fs::write(&written, fixture.to_pretty_json()).expect("fixture written");
        let server = ModelServer::start(Mode::Fixtures(vec![written]), ServerOptions::default())
            .await
            .expect("replay");
        let url = format!("{}{}", server.url(), case.path);
        let (status, replayed) = post(&url, &case.request, Some("rag")).await;
        assert_eq!((status, &replayed), (200, &recorded), "{name}");
        if case.route == EmbeddingsRoute::OpenAi {
            // The same call asking for base64 is the same key, answered as the f32 bytes.
            client_reset(&server).await;
            let mut base64 = case.request.clone();
            base64["encoding_format"] = json!("base64");
            let (status, text) = post(&url, &base64, Some("rag")).await;
            assert_eq!(status, 200, "{text}");
            assert_eq!(bits(case.route, &text), expected, "base64");
        }
        let (status, missed) = post(&url, &case.changed, Some("rag")).await;
        assert_eq!(status, 400, "{name}: {missed}");
        let label = format!("embeddings miss: `{name} ");
        for wanted in [
            label.as_str(),
            "from `rag`",
            "\\\"gamma doc\\\"",
            "\\\"beta doc\\\"",
        ] {
            assert!(missed.contains(wanted), "{name}: {wanted} not in {missed}");
        }
        let ledger = ModelLedger::from_state(
            (server.client().expect("client").state())
                .await
                .expect("state"),
        );
        assert_eq!(ledger.boundaries.misses.len(), 1, "{name}: {ledger:?}");
        let kinds: Vec<String> = (server.problems().iter())
            .map(|problem| problem.kind().to_string())
            .collect();
        assert_eq!(kinds, ["exchange_miss"], "{name}");
        server.stop().await.expect("stopped");
    }
}

/// Starts the active fixture's replay afresh.
async fn client_reset(server: &ModelServer) {
    server
        .client()
        .expect("client")
        .reset(None)
        .await
        .expect("reset");
}

/// A fixture that recorded no embeddings call answers one, at every route, as an unserved route
/// naming it, in the wire's error shape.
#[tokio::test]
async fn an_embeddings_route_never_recorded_is_an_unserved_route_naming_it() {
    let shipped =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/write_read_file.flash.json");
    let server = ModelServer::start(Mode::Fixtures(vec![shipped]), ServerOptions::default())
        .await
        .expect("replay");
    for case in cases() {
        client_reset(&server).await;
        let url = format!("{}{}", server.url(), case.path);
        let (status, text) = post(&url, &case.request, None).await;
        assert_eq!(status, 404, "{text}");
        assert!(
            text.contains("the fixture records no embeddings call"),
            "{text}"
        );
        let problems = server.problems();
        assert!(
            matches!(problems.as_slice(), [Problem::UnservedRoute { path, .. }] if path == case.path),
            "{problems:?}"
        );
    }
    server.stop().await.expect("stopped");
}

/// An upstream that cannot be reached while recording is recorded as a 502 in the wire's shape,
/// and replayed so: the replay fails the way the live run did.
#[tokio::test]
async fn an_unreachable_upstream_is_recorded_as_a_502_and_replayed_so() {
    let folder = tempfile::tempdir().expect("tempdir");
    let config = RecordConfig {
        upstream: "http://127.0.0.1:9/v1".into(),
        api_key: MODEL_KEY.into(),
        recording: folder.path().join("recording.jsonl"),
        scenario: Scenario::new("s", UiMode::Flash, "p"),
        allow_insecure_upstream: false,
        limits: RecordLimits::default(),
        aws: None,
    };
    let server = ModelServer::start(Mode::Record(Box::new(config)), ServerOptions::default())
        .await
        .expect("record");
    let case = &cases()[0];
    let url = format!("{}{}", server.url(), case.path);
    let (status, recorded) = post(&url, &case.request, None).await;
    assert_eq!(status, 502, "{recorded}");
    assert!(
        recorded.contains("OpenAI embeddings upstream: "),
        "{recorded}"
    );
    let exchanges = server
        .stop()
        .await
        .expect("built")
        .expect("fixture")
        .fixture
        .exchanges;
    assert_eq!(exchanges[0].answer["status"], 502, "{exchanges:?}");
    let shipped =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/write_read_file.flash.json");
    let mut fixture = Fixture::load(&shipped).expect("shipped");
    fixture.exchanges = exchanges;
    let written = folder.path().join("down.flash.json");
    std::fs::write(&written, fixture.to_pretty_json()).expect("fixture written");
    let server = ModelServer::start(Mode::Fixtures(vec![written]), ServerOptions::default())
        .await
        .expect("replay");
    let url = format!("{}{}", server.url(), case.path);
    assert_eq!(post(&url, &case.request, None).await, (502, recorded));
    server.stop().await.expect("stopped");
}
