//! Replay at the model's wire agrees with in-process replay. The `gateway-under-test` binary runs
//! as a separate process whose one `[[models]]` block is `use = "openai"` with its `base_url` at a
//! model server, exactly as any other gateway would be set up; Layer 1 drives it through
//! `target::AtUrl` and must get every committed golden with no miss, from the fixtures at each of
//! the gateway's five wires (Chat Completions, `api = "responses"`, `use = "anthropic"`,
//! `use = "gemini"`, `use = "bedrock"`) and
//! from a strict recording of each; a recording made through the proxy against a wiremock upstream
//! (tool-call arguments split mid-JSON) builds a fixture that replays both in-process and over
//! the wire. The rest proves the detectors: a drifted run misses with its nearest turn, a strict
//! mismatch through a gateway fails the run's verdict, an ambiguous caller and a strict mismatch
//! are named, parallel nodes sending one conversation are reported without the caller header
//! and served with it, a request to a route the server does not serve is an OpenAI error and a
//! problem, and a bad request or a provider-boundary recording is refused. The recording proxy's
//! reads of its upstream are bounded and linear, and stop when the gateway goes away (issue 21,
//! finding 4).

#[path = "support/providers.rs"]
mod providers;
mod support;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use gateway_under_test::models::wire_model::{Api, PROVIDER_APIS};
use harness::adapter::process::{GatewayProcess, workspace_gateway_binary};
use harness::in_process::{InProcess, options};
use harness::workspace::fixtures_dir;
use keyless_runner::AtUrl;
use keyless_runner::{DriveOptions, DriverError, RunTranscript, ScenarioRun, Session, runtime};
use keyless_runner::{
    Mode, ModelServer, Problem, ServerOptions,
    server::{CALLER_HEADER, ModelServerError, RecordConfig},
};
use model_wire::Event;
use model_wire::chat_completions::read_conversation as messages_from_chat_completions;
use replay_core::recording::{
    Access, RecordedEvent, RecordedRequest, RecordingSink, read_recording,
};
use replay_core::{
    Fixture, ModelProblem, ModelProblemKind, Scenario, UiMode, protocol, replay_key,
};
use serde_json::{Value, json};
use support::{scripted_upstream, write_read_file_streams};

/// Every test is bounded: a hung gateway or server fails the test instead of the build.
const BOUND: Duration = Duration::from_secs(240);

fn bounded<T>(work: impl Future<Output = T>) -> T {
    runtime()
        .expect("runtime")
        .block_on(async { tokio::time::timeout(BOUND, work).await })
        .unwrap_or_else(|_| panic!("the test did not finish within {BOUND:?}"))
}

/// The gateway binary, built once per test process.
fn gateway_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        workspace_gateway_binary().unwrap_or_else(|err| panic!("gateway binary: {err}"))
    })
}

/// The shipped fixtures, listed as every command lists a fixture folder.
fn shipped_fixtures() -> Vec<PathBuf> {
    let files = keyless_runner::suite::fixture_files(&fixtures_dir()).expect("fixtures/");
    assert!(!files.is_empty(), "no shipped fixtures");
    files
}

fn quiet() -> ServerOptions {
    ServerOptions::default()
}

async fn gateway_for(model_server: &ModelServer, fixture: &Fixture) -> GatewayProcess {
    GatewayProcess::spawn(
        gateway_binary(),
        &model_server.base_url(),
        fixture.scenario.gateway_config.as_ref(),
    )
    .await
    .unwrap_or_else(|err| panic!("gateway process: {err}"))
}

/// A gateway whose model block speaks `api` to `model_server`.
async fn gateway_at(model_server: &ModelServer, fixture: &Fixture, api: Api) -> GatewayProcess {
    GatewayProcess::spawn_at_wire(
        gateway_binary(),
        &model_server.url(),
        fixture.scenario.gateway_config.as_ref(),
        api,
    )
    .await
    .unwrap_or_else(|err| panic!("gateway process at {api:?}: {err}"))
}

/// The Layer 1 verdict: framing, no miss, no model-server problem, and the committed golden.
fn assert_green(run: &ScenarioRun, how: &str) {
    if let Err(report) = run.check() {
        panic!("{how}: {}\n{report}", run.stem());
    }
}

/// Issue 18's "done when": every shipped fixture, recorded over Chat Completions, replays with no
/// miss through the gateway at each of its wires, to the one committed golden (the wire is below
/// the gateway's stream, so the golden cannot depend on it).
#[test]
fn every_shipped_fixture_replays_over_each_wire_to_its_golden() {
    let fixtures = shipped_fixtures();
    // Built (or found up to date) before the clock starts.
    gateway_binary();
    bounded(async {
        let server = ModelServer::start(Mode::Fixtures(fixtures.clone()), quiet())
            .await
            .expect("model server");
        for api in PROVIDER_APIS {
            // Reported, not asserted: how long the shipped suite takes at each wire.
            let started = std::time::Instant::now();
            for path in &fixtures {
                let fixture = Fixture::load(path).expect("fixture");
                let gateway = gateway_at(&server, &fixture, api).await;
                let mut target = AtUrl::new(gateway.url(), &server.url())
                    .expect("target")
                    .with_reset_token(server.reset_token());
                let run = keyless_runner::run(&mut target, path, &options())
                    .await
                    .expect("the run");
                assert_green(&run, &format!("over the wire at {api:?}"));
                assert!(
                    server.problems().is_empty(),
                    "{api:?}: {:?}",
                    server.problems()
                );
            }
            eprintln!(
                "{} shipped fixtures at {api:?}: {:?}",
                fixtures.len(),
                started.elapsed()
            );
        }
        server.stop().await.expect("stops");
    });
}

/// Drives the gateway at `url` through `fixture`'s prompt and follow-ups in a DeerFlow session
/// with Layer 1's run request (a test that starts its gateway and model server itself).
async fn drive_prompts(url: &str, fixture: &Fixture) -> Result<Vec<RunTranscript>, DriverError> {
    let mut session = Session::open(url, &DriveOptions::default()).await?;
    session
        .run_scenario(&fixture.scenario, &fixture.turns)
        .await
}

/// Records `fixture` (read from `path`) at the wire into `folder`: gateway → proxy → a model
/// server replaying the fixture. Returns the recording and the fixture the proxy built.
async fn record_at_the_wire(path: &Path, fixture: &Fixture, folder: &Path) -> (PathBuf, Fixture) {
    let upstream = ModelServer::start(Mode::Fixtures(vec![path.to_path_buf()]), quiet())
        .await
        .expect("upstream");
    let recording = folder.join(format!("{}.jsonl", fixture.scenario.stem()));
    let proxy = recording_proxy(upstream.base_url(), &recording, fixture.scenario.clone()).await;
    let gateway = gateway_for(&proxy, fixture).await;
    drive_prompts(gateway.url(), fixture)
        .await
        .expect("recorded drive");
    drop(gateway);
    let built = proxy.stop().await.expect("stops").expect("a fixture");
    assert!(upstream.problems().is_empty(), "{:?}", upstream.problems());
    (recording, built.fixture)
}

#[test]
fn a_recording_made_at_the_wire_replays_strictly_to_the_same_golden() {
    let folder = tempfile::tempdir().expect("tempdir");
    bounded(async {
        for path in shipped_fixtures() {
            let fixture = Fixture::load(&path).expect("fixture");
            let (recording, built) = record_at_the_wire(&path, &fixture, folder.path()).await;
            // Keys are computed alike on both sides of the proxy: every recorded conversation is
            // one the fixture holds (callers differ: this gateway sends no caller header).
            for turn in &built.turns {
                assert!(
                    fixture
                        .turns
                        .iter()
                        .any(|t| t.conversation_hash == turn.conversation_hash),
                    "{}: recorded conversation {:?} is not in the fixture",
                    path.display(),
                    turn.canonical
                );
            }

            // Replay the recording strictly, through a fresh gateway.
            let strict = ModelServer::start(Mode::Recording(recording), quiet())
                .await
                .expect("strict server");
            let gateway = gateway_for(&strict, &fixture).await;
            let mut target = AtUrl::new(gateway.url(), &strict.url())
                .expect("target")
                .with_reset_token(strict.reset_token());
            let run = keyless_runner::run(&mut target, &path, &options())
                .await
                .expect("the run");
            assert_green(&run, "strict recording over the wire");
            let state = keyless_runner::server::ModelServerClient::new(&strict.url())
                .expect("client")
                .state()
                .await
                .expect("state");
            assert_eq!(
                Some(state.served_calls),
                state.recorded_calls,
                "{}: every recorded call is replayed",
                path.display()
            );
        }
    });
}

#[test]
fn a_strict_mismatch_over_the_wire_fails_the_verdict_and_the_report_names_it() {
    let folder = tempfile::tempdir().expect("tempdir");
    let path = fixtures_dir().join("write_read_file.flash.json");
    bounded(async {
        let fixture = Fixture::load(&path).expect("fixture");
        let (recording, _) = record_at_the_wire(&path, &fixture, folder.path()).await;
        let strict = ModelServer::start(Mode::Recording(recording), quiet())
            .await
            .expect("strict server");
        // Another prompt than the one recorded: the first call differs from the recording's.
        let mut drifted = fixture.clone();
        drifted.scenario.prompt = drifted
            .scenario
            .prompt
            .replace("hi from replay", "hi there");
        let drifted_path = folder.path().join("write_read_file.flash.json");
        std::fs::write(&drifted_path, drifted.to_pretty_json()).expect("write");
        let gateway = gateway_for(&strict, &drifted).await;
        let mut target = AtUrl::new(gateway.url(), &strict.url())
            .expect("target")
            .with_reset_token(strict.reset_token());
        let run = keyless_runner::run(&mut target, &drifted_path, &options())
            .await
            .expect("the run");
        let verdict = run.verdict();
        let report = run.report(&verdict);
        // Strict replay reports a mismatch, not a miss; the verdict fails on it all the same.
        assert!(verdict.misses.is_empty(), "{report}");
        assert!(
            verdict.model_errors.first().is_some_and(|e| matches!(
                e,
                ModelProblem::Reported {
                    kind: ModelProblemKind::Mismatch,
                    ..
                }
            )),
            "{report}"
        );
        assert!(!verdict.replayed_cleanly(), "{report}");
        assert!(
            report.contains("the model server reported") && report.contains("--- model server ---"),
            "{report}"
        );
    });
}

const UPSTREAM_KEY: &str = "sk-test-SECRETabcdefghijklmnop";

/// A recording proxy for `scenario` in front of `upstream` (an OpenAI base URL), writing
/// `recording` and sending [`UPSTREAM_KEY`], which no recording may contain.
async fn recording_proxy(upstream: String, recording: &Path, scenario: Scenario) -> ModelServer {
    ModelServer::start(
        Mode::Record(Box::new(RecordConfig {
            upstream,
            api_key: UPSTREAM_KEY.into(),
            recording: recording.to_path_buf(),
            scenario,
            allow_insecure_upstream: false,
            limits: Default::default(),
            aws: None,
        })),
        quiet(),
    )
    .await
    .expect("proxy")
}

#[test]
fn a_record_round_trip_through_the_proxy_replays_in_process_and_over_the_wire() {
    let folder = tempfile::tempdir().expect("tempdir");
    let recording = folder.path().join("recording.jsonl");
    let scenario = Scenario::new(
        "write_read_file",
        UiMode::Ultra,
        harness::scenarios::WRITE_READ_FILE_PROMPT,
    );
    bounded(async {
        let upstream = scripted_upstream(write_read_file_streams()).await;
        let proxy = recording_proxy(
            format!("{}/v1", upstream.uri()),
            &recording,
            scenario.clone(),
        )
        .await;
        let fixture_like = Fixture {
            scenario: scenario.clone(),
            turns: Vec::new(),
            provenance: None,
            exchanges: Vec::new(),
        };
        let gateway = gateway_for(&proxy, &fixture_like).await;
        let transcripts = drive_prompts(gateway.url(), &fixture_like)
            .await
            .expect("recorded drive");
        drop(gateway);
        assert_eq!(transcripts.len(), 1);
        let built = proxy.stop().await.expect("stops").expect("a fixture");

        // The key went upstream and nowhere else.
        let received = upstream
            .received_requests()
            .await
            .expect("recorded requests");
        assert_eq!(received.len(), 3, "three lead-agent calls");
        assert!(received.iter().all(|request| {
            request
                .headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                == Some(&format!("Bearer {UPSTREAM_KEY}"))
        }));
        let text = std::fs::read_to_string(&recording).expect("recording");
        assert!(!text.contains("SECRETabc"), "the key reached the recording");
        // The chunks were recorded as the upstream split them.
        let read = read_recording(&recording, Access::External).expect("valid recording");
        let deltas: Vec<&str> = read.calls[0]
            .events
            .iter()
            .filter_map(|e| match e {
                RecordedEvent::Delta(Event::ToolcallDelta { delta, .. }) => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(deltas.len(), 3, "{:?}", read.calls[0].events);
        assert!(
            serde_json::from_str::<Value>(deltas[0]).is_err(),
            "split mid-JSON"
        );
        assert_eq!(built.fixture.turns.len(), 3);
        assert_eq!(built.fixture.scenario.model, "scenario-model");

        // The fixture it built replays in-process …
        let fixture_path = folder.path().join("write_read_file.ultra.json");
        std::fs::write(&fixture_path, built.fixture.to_pretty_json()).expect("write fixture");
        let run = keyless_runner::run(&mut InProcess::default(), &fixture_path, &options())
            .await
            .expect("in-process run");
        assert_green(&run, "in-process, from the proxy's recording");

        // … and over the wire.
        let server = ModelServer::start(Mode::Fixtures(vec![fixture_path.clone()]), quiet())
            .await
            .expect("model server");
        let gateway = gateway_for(&server, &built.fixture).await;
        let mut target = AtUrl::new(gateway.url(), &server.url())
            .expect("target")
            .with_reset_token(server.reset_token());
        let run = keyless_runner::run(&mut target, &fixture_path, &options())
            .await
            .expect("the run");
        assert_green(&run, "over the wire, from the proxy's recording");
    });
}

#[test]
fn a_drifted_run_misses_over_the_wire_with_the_nearest_turn_and_first_differing_field() {
    let folder = tempfile::tempdir().expect("tempdir");
    let original = fixtures_dir().join("write_read_file.ultra.json");
    bounded(async {
        let server = ModelServer::start(Mode::Fixtures(vec![original.clone()]), quiet())
            .await
            .expect("model server");
        // The gateway is sent another prompt than the one recorded: its first call drifts.
        let mut fixture = Fixture::load(&original).expect("fixture");
        fixture.scenario.prompt = fixture
            .scenario
            .prompt
            .replace("hi from replay", "hi there");
        let drifted = folder.path().join("write_read_file.ultra.json");
        std::fs::write(&drifted, fixture.to_pretty_json()).expect("write");
        let gateway = gateway_for(&server, &fixture).await;
        let mut target = AtUrl::new(gateway.url(), &server.url())
            .expect("target")
            .with_reset_token(server.reset_token());
        let run = keyless_runner::run(&mut target, &drifted, &options())
            .await
            .expect("the run");
        let verdict = run.verdict();
        assert!(!verdict.replayed_cleanly(), "a miss fails the run");
        let report = run.report(&verdict);
        assert!(report.contains("replay miss (1)"), "{report}");
        assert_eq!(run.misses.len(), 1, "{report}");
        let miss = &run.misses[0];
        assert_eq!(miss.caller, "lead_agent");
        let nearest = miss.nearest.as_ref().expect("a nearest turn");
        assert_eq!(nearest.turn_index, 0);
        let text = miss.to_string();
        assert!(
            text.contains("first differing field: [0].content: recorded"),
            "{text}"
        );
        // The gateway's stream stays framed: the error middleware hid the miss.
        assert_eq!(
            run.shapes().last().and_then(|s| s.event.as_deref()),
            Some("end")
        );
        let kinds: Vec<_> = server.problems().iter().map(Problem::kind).collect();
        assert_eq!(kinds, [ModelProblemKind::Miss]);
        // A driver in another process reads the same ledger.
        let client =
            keyless_runner::server::ModelServerClient::new(&server.base_url()).expect("client");
        assert_eq!(client.problems().await.expect("misses"), server.problems());
    });
}

/// POSTs a Chat Completions body, optionally naming the caller.
async fn complete(server: &ModelServer, body: &Value, caller: Option<&str>) -> (u16, Value) {
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let mut request = client
        .post(format!("{}/chat/completions", server.base_url()))
        .json(body);
    if let Some(caller) = caller {
        request = request.header(CALLER_HEADER, caller);
    }
    let response = request.send().await.expect("answer");
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

/// A fixture `same.flash.json` with one turn per `(caller, answer)`, every one recorded for the
/// same conversation.
fn same_conversation_fixture(folder: &Path, turns: &[(&str, &str)]) -> PathBuf {
    let turns: Vec<Value> = turns
        .iter()
        .map(|(caller, answer)| {
            let key = replay_key(caller, &messages_from_chat_completions(&[user("same")]));
            json!({"caller": key.caller, "conversation_hash": key.conversation_hash,
                   "input_hash": key.input_hash,
                   "output": {"type": "ai", "data": {"content": answer, "type": "ai"}}})
        })
        .collect();
    let fixture = json!({"scenario": "same", "mode": "flash", "turns": turns});
    let path = folder.join("same.flash.json");
    std::fs::write(&path, fixture.to_string()).expect("write");
    path
}

#[test]
fn an_ambiguous_caller_is_named_and_the_caller_header_settles_it() {
    let folder = tempfile::tempdir().expect("tempdir");
    let fixture = same_conversation_fixture(
        folder.path(),
        &[
            ("lead_agent", "from the lead"),
            ("suggest_agent", "from suggestions"),
        ],
    );
    bounded(async {
        let server = ModelServer::start(Mode::Fixtures(vec![fixture]), quiet())
            .await
            .expect("model server");
        let body = json!({"model": "m", "messages": [user("same")]});
        let (status, error) = complete(&server, &body, None).await;
        assert_eq!(status, 400);
        assert_eq!(error["error"]["code"], "replay_caller_ambiguous");
        let message = error["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("('lead_agent', 'suggest_agent')") && message.contains(CALLER_HEADER),
            "{message}"
        );
        assert_eq!(
            server
                .problems()
                .iter()
                .map(Problem::kind)
                .collect::<Vec<_>>(),
            [ModelProblemKind::AmbiguousCaller]
        );
        let (status, answer) = complete(&server, &body, Some("suggest_agent")).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(
            answer["choices"][0]["message"]["content"],
            "from suggestions"
        );
    });
}

/// Every spelling of keyless's protocol names is served (`replay_core::protocol`): the caller
/// header under its `x-keyless-` name and its `x-harness-` alias settles an ambiguous caller, and
/// each of the server's routes answers under `/_keyless/` and its `/_harness/` alias.
#[test]
fn every_protocol_name_is_served_under_its_keyless_spelling_and_its_aliases() {
    let folder = tempfile::tempdir().expect("tempdir");
    let fixture = same_conversation_fixture(
        folder.path(),
        &[
            ("lead_agent", "from the lead"),
            ("suggest_agent", "from suggestions"),
        ],
    );
    bounded(async {
        let server = ModelServer::start(Mode::Fixtures(vec![fixture]), quiet())
            .await
            .expect("model server");
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("client");
        let body = json!({"model": "m", "messages": [user("same")]});
        for header in protocol::CALLER.spellings() {
            // A fresh replay for each spelling: the turn is served once per run.
            let reset = client
                .post(format!("{}{}", server.url(), protocol::RESET_ROUTE.name))
                .header(protocol::RESET_TOKEN_HEADER, server.reset_token())
                .send()
                .await
                .expect("reset");
            assert_eq!(reset.status().as_u16(), 200, "reset");
            let answer: Value = client
                .post(format!("{}/chat/completions", server.base_url()))
                .header(header, "suggest_agent")
                .json(&body)
                .send()
                .await
                .expect("answer")
                .json()
                .await
                .expect("json");
            assert_eq!(
                answer["choices"][0]["message"]["content"], "from suggestions",
                "{header}: {answer}"
            );
        }
        // (the route, the method it is served at)
        let routes = [
            (protocol::MISSES_ROUTE, reqwest::Method::GET),
            (protocol::STATE_ROUTE, reqwest::Method::GET),
            (protocol::RESET_ROUTE, reqwest::Method::POST),
        ];
        assert_eq!(routes.len(), protocol::ROUTES.len(), "every route is tried");
        for (route, method) in routes {
            for path in route.spellings() {
                let response = client
                    .request(method.clone(), format!("{}{path}", server.url()))
                    .header(protocol::RESET_TOKEN_HEADER, server.reset_token())
                    .send()
                    .await
                    .expect("answer");
                assert_eq!(response.status().as_u16(), 200, "{method} {path}");
            }
        }
    });
}

/// Two graph nodes call the model at once with the same conversation (their system prompts,
/// which the key leaves out, differ). Recorded without a caller header, both turns are
/// `lead_agent`'s under one key: replayed without the header, each concurrent call is reported as
/// ambiguous instead of being handed either answer. Recorded with `x-keyless-caller` per node,
/// each node that sends the header gets its own answer.
#[test]
fn parallel_nodes_are_reported_without_the_caller_header_and_served_with_it() {
    /// (name, the recorded callers of node a and node b, the headers the replay sends, what each
    /// node gets: its answer, or the error code)
    type Case = (
        &'static str,
        [&'static str; 2],
        [Option<&'static str>; 2],
        [&'static str; 2],
    );
    let cases: [Case; 3] = [
        (
            "recorded and replayed without the header",
            ["lead_agent", "lead_agent"],
            [None, None],
            ["replay_answer_ambiguous", "replay_answer_ambiguous"],
        ),
        (
            "recorded with the header, replayed without",
            ["node_a", "node_b"],
            [None, None],
            ["replay_caller_ambiguous", "replay_caller_ambiguous"],
        ),
        (
            "recorded and replayed with the header",
            ["node_a", "node_b"],
            [Some("node_a"), Some("node_b")],
            ["from node a", "from node b"],
        ),
    ];
    for (name, recorded, headers, expected) in cases {
        let folder = tempfile::tempdir().expect("tempdir");
        let fixture = same_conversation_fixture(
            folder.path(),
            &[(recorded[0], "from node a"), (recorded[1], "from node b")],
        );
        bounded(async {
            let server = ModelServer::start(Mode::Fixtures(vec![fixture]), quiet())
                .await
                .expect("model server");
            let node = |prompt: &str| {
                json!({"model": "m", "messages": [
                    {"role": "system", "content": prompt}, user("same")
                ]})
            };
            let (a, b) = (node("You are node a."), node("You are node b."));
            let ((status_a, answer_a), (status_b, answer_b)) = tokio::join!(
                complete(&server, &a, headers[0]),
                complete(&server, &b, headers[1])
            );
            let got = |status: u16, answer: &Value| match status {
                200 => answer["choices"][0]["message"]["content"].clone(),
                _ => answer["error"]["code"].clone(),
            };
            assert_eq!(
                [got(status_a, &answer_a), got(status_b, &answer_b)],
                expected.map(Value::from),
                "{name}"
            );
            let problems = server.problems();
            let served = expected.iter().all(|e| e.starts_with("from"));
            assert_eq!(
                problems.len(),
                if served { 0 } else { 2 },
                "{name}: {problems:?}"
            );
            if let Some(Problem::AmbiguousAnswer { ambiguity, message }) = problems.first() {
                assert_eq!(ambiguity.turns, [0, 1], "{name}");
                assert!(message.contains("x-keyless-caller"), "{name}: {message}");
            }
        });
    }
}

/// Every request the model server does not serve answers an OpenAI error naming the route and is
/// a problem, so a driver that checks the problems fails the run: LangChain's `ChatOpenAI`
/// switches to the Responses API for some models, and a bare 404 was invisible.
#[test]
fn an_unserved_route_is_an_openai_error_and_a_problem() {
    let folder = tempfile::tempdir().expect("tempdir");
    let fixture = same_conversation_fixture(folder.path(), &[("lead_agent", "from the lead")]);
    // (method, path, status)
    let cases = [
        ("POST", "/v1/audio/speech", 404),
        ("POST", "/v1/embeddings", 404),
        ("POST", "/v1/completions", 404),
        ("GET", "/v1/chat/completions", 405),
        ("DELETE", "/_keyless/misses", 405),
        ("POST", "/v1/complete?key=sk-not-in-the-message", 404),
    ];
    bounded(async {
        let server = ModelServer::start(Mode::Fixtures(vec![fixture]), quiet())
            .await
            .expect("model server");
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("client");
        for (method, path, status) in cases {
            let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
            let response = client
                .request(method.clone(), format!("{}{path}", server.url()))
                .json(&json!({"model": "m", "input": "hi"}))
                .send()
                .await
                .expect("answer");
            assert_eq!(response.status().as_u16(), status, "{method} {path}");
            let body: Value = response.json().await.expect("an OpenAI error body");
            let route = format!("{method} {}", path.split('?').next().unwrap_or(path));
            let message = body["error"]["message"].as_str().unwrap_or_default();
            assert_eq!(body["error"]["code"], "unserved_route", "{route}: {body}");
            assert!(message.starts_with(&route), "{route}: {message}");
            assert!(
                !message.contains("sk-not"),
                "the query stays out: {message}"
            );
            let problems = server.problems();
            let Some(Problem::UnservedRoute {
                method: m, path: p, ..
            }) = problems.last()
            else {
                panic!("{route}: {problems:?}")
            };
            assert_eq!(format!("{m} {p}"), route);
        }
        // A reset that discards problems nobody read says so.
        let (status, _) = complete(
            &server,
            &json!({"model": "m", "messages": [user("other")]}),
            None,
        )
        .await;
        assert_eq!(status, 400, "a miss");
        let reply: Value = client
            .post(format!("{}/_keyless/reset", server.url()))
            .header(
                keyless_runner::server::RESET_TOKEN_HEADER,
                server.reset_token(),
            )
            .send()
            .await
            .expect("reset")
            .json()
            .await
            .expect("json");
        assert_eq!(reply["discarded_unread_problems"], 1, "{reply}");
        let again: Value = client
            .post(format!("{}/_keyless/reset", server.url()))
            .header(
                keyless_runner::server::RESET_TOKEN_HEADER,
                server.reset_token(),
            )
            .send()
            .await
            .expect("reset")
            .json()
            .await
            .expect("json");
        assert!(again.get("discarded_unread_problems").is_none(), "{again}");
    });
}

#[test]
fn a_strict_mismatch_names_the_call_and_field_and_bad_requests_are_refused() {
    let folder = tempfile::tempdir().expect("tempdir");
    let fixture = same_conversation_fixture(folder.path(), &[("lead_agent", "from the lead")]);
    let recording = folder.path().join("strict.jsonl");
    bounded(async {
        // Record one call through the proxy, in front of a fixture server.
        let upstream = ModelServer::start(Mode::Fixtures(vec![fixture]), quiet())
            .await
            .expect("upstream");
        let proxy = recording_proxy(
            upstream.base_url(),
            &recording,
            Scenario::new("same", UiMode::Flash, "same"),
        )
        .await;
        let body = json!({"model": "m", "stream": true, "messages": [user("same")]});
        let (status, _) = complete(&proxy, &body, Some("lead_agent")).await;
        assert_eq!(status, 200);
        proxy.stop().await.expect("stops");

        let strict = ModelServer::start(Mode::Recording(recording), quiet())
            .await
            .expect("strict");
        let drifted = json!({"model": "m", "messages": [user("other")]});
        let (status, error) = complete(&strict, &drifted, Some("lead_agent")).await;
        assert_eq!(status, 400);
        assert_eq!(error["error"]["code"], "replay_mismatch");
        let problems = strict.problems();
        let Some(Problem::Mismatch {
            call_index,
            field_path,
            ..
        }) = problems.first()
        else {
            panic!("{problems:?}")
        };
        assert_eq!(*call_index, 0);
        assert!(field_path.starts_with("context."), "{field_path}");
        // The recorded request still matches, and is answered as recorded, chunk by chunk.
        let (status, answer) = complete(&strict, &body, Some("lead_agent")).await;
        assert_eq!(status, 200);
        let text = answer.as_str().unwrap_or_default();
        assert!(
            text.contains("from the lead") && text.ends_with("data: [DONE]\n\n"),
            "{text}"
        );

        let (status, error) = complete(&strict, &json!({"model": "m"}), None).await;
        assert_eq!(status, 400);
        assert_eq!(error["error"]["code"], "invalid_request");
        assert_eq!(
            strict.problems().last().map(Problem::kind),
            Some(ModelProblemKind::BadRequest)
        );
    });
}

#[test]
fn a_provider_boundary_recording_is_refused_with_the_command_that_makes_a_wire_one() {
    let folder = tempfile::tempdir().expect("tempdir");
    let path = folder.path().join("boundary.jsonl");
    let sink = RecordingSink::open(&path).expect("sink");
    let call = sink
        .begin_call(&RecordedRequest::new(
            json!({"name": "scenario-model"}),
            json!({"messages": []}),
            Value::Null,
        ))
        .expect("call");
    call.end(replay_core::recording::Outcome::Complete)
        .expect("end");
    let error = bounded(ModelServer::start(Mode::Recording(path), quiet())).expect_err("refused");
    assert!(
        matches!(error, ModelServerError::NotAWireRecording(_)),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("cargo xtask model-server --record"),
        "{error}"
    );
}

/// The gateway's provider at each wire (Chat Completions, Responses, Anthropic Messages, Gemini,
/// Bedrock Converse) reads
/// the model server's answer, streamed and whole, as the recorded message: the codec that writes
/// each wire and the one that reads it agree.
#[test]
fn the_gateway_s_client_at_each_wire_reads_the_streamed_and_the_whole_answer_as_recorded() {
    use futures::StreamExt;
    use gateway_under_test::config::ModelConfig;
    use gateway_under_test::messages::Message;
    use gateway_under_test::models::wire_model::WireChatModel;
    use gateway_under_test::models::{ChatModel, ModelRequest, StreamEvent, collect_stream};
    use harness::adapter::process::{base_url_at_wire, model_block_at};

    let path = fixtures_dir().join("write_read_file.ultra.json");
    let fixture = Fixture::load(&path).expect("fixture");
    let recorded = fixture.turns[0].clone();
    let replay_core::Answer::Output(output) = &recorded.answer else {
        panic!("turn 0 answers a message")
    };
    let recorded_calls = output["data"]["tool_calls"].clone();
    bounded(async {
        let server = ModelServer::start(Mode::Fixtures(vec![path.clone()]), quiet())
            .await
            .expect("model server");
        let mut input = Message::human(fixture.scenario.prompt.clone());
        input.name = Some("user-input".into());
        let request = ModelRequest {
            messages: vec![Message::system("any system prompt").into(), input.into()],
            tools: Vec::new(),
            metadata: Default::default(),
            options: Default::default(),
        };
        for (api, streamed) in PROVIDER_APIS
            .into_iter()
            .flat_map(|api| [(api, true), (api, false)])
        {
            let mut entry = ModelConfig::new("scenario-model", "openai");
            entry.api_key = Some("any-key".into());
            entry.base_url = Some(base_url_at_wire(&server.url(), api));
            entry
                .settings
                .insert("send_message_names".into(), Value::Bool(true));
            model_block_at(&mut entry, api);
            let model = WireChatModel::new(&entry, api).expect("client");
            let client = keyless_runner::server::ModelServerClient::new(&server.url())
                .unwrap()
                .with_reset_token(server.reset_token());
            client.reset(None).await.expect("a fresh replay");
            let message = if streamed {
                let events: Vec<_> = model
                    .stream(&request)
                    .await
                    .expect("stream")
                    .collect()
                    .await;
                let deltas = events
                    .iter()
                    .filter(|e| matches!(e, Ok(StreamEvent::Delta(Event::ToolcallDelta { .. }))))
                    .count();
                assert_eq!(deltas, 1, "{api:?}: the arguments as one delta: {events:?}");
                collect_stream(Box::pin(futures::stream::iter(events)))
                    .await
                    .expect("message")
            } else {
                model.invoke(&request).await.expect("completion")
            };
            let calls: Vec<Value> = message
                .tool_calls
                .iter()
                .map(|call| json!({"name": call.name, "args": call.args, "id": call.id, "type": "tool_call"}))
                .collect();
            assert_eq!(
                Value::Array(calls),
                recorded_calls,
                "{api:?}, streamed: {streamed}"
            );
            assert!(server.problems().is_empty(), "{:?}", server.problems());
        }
    });
}

/// A recorded call's answer, for comparing the two recording paths: the `done` message without
/// its fresh id, or the `error` event; and the text the events streamed.
fn recorded_answer(recording: &Path, call: usize) -> (Value, String) {
    let read = read_recording(recording, Access::External).expect("a valid recording");
    let events = &read.calls[call].events;
    let streamed: String = events
        .iter()
        .filter_map(|e| match e {
            RecordedEvent::Delta(Event::TextDelta { delta }) => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    let last = events.last().map_or(Value::Null, RecordedEvent::to_value);
    let answer = match last["type"].as_str() {
        Some("done") => {
            let mut message = last["message"].clone();
            message["id"] = Value::Null;
            message
        }
        _ => json!({"error": last["message"], "error_type": last["error_type"],
                    "in_stream": last["in_stream"], "status": last["status"]}),
    };
    (answer, streamed)
}

/// What a run's final state says the model answered: each AI message's text, reasoning,
/// refusal, tool calls (id, name, arguments) and error fallback, and each tool message's result.
fn answers(transcripts: &[keyless_runner::RunTranscript]) -> Vec<Value> {
    transcripts
        .iter()
        .filter_map(|transcript| transcript.final_values())
        .flat_map(|values| values["messages"].as_array().cloned().unwrap_or_default())
        .filter_map(|message| match message["type"].as_str() {
            Some("ai") => Some(json!({
                "content": message["content"],
                "reasoning": message["additional_kwargs"]["reasoning_content"],
                "refusal": message["additional_kwargs"]["refusal"],
                "fallback": message["additional_kwargs"]["deerflow_error_fallback"],
                "calls": message["tool_calls"].as_array().map(|calls| calls.iter()
                    .map(|c| json!([c["id"], c["name"], c["args"]])).collect::<Vec<_>>()),
            })),
            Some("tool") => {
                Some(json!({"tool": message["tool_call_id"], "content": message["content"]}))
            }
            _ => None,
        })
        .collect()
}

/// The recorded answer must be what the provider sent.
fn assert_recorded_as_sent(
    case: &providers::ProviderCase,
    how: &str,
    answer: &Value,
    streamed: &str,
) {
    let expected = &case.expected;
    let what = format!("{} through {how}: {answer}", case.name);
    if let Some(error) = expected.in_stream_error {
        assert_eq!(answer["error"], error, "{what}");
        assert_eq!(answer["in_stream"], true, "{what}");
        assert_eq!(streamed, expected.text, "{what}");
        return;
    }
    assert_eq!(answer["content"], expected.text, "{what}");
    let kwargs = &answer["additional_kwargs"];
    assert_eq!(
        kwargs["reasoning_content"].as_str(),
        expected.reasoning,
        "{what}"
    );
    assert_eq!(kwargs["refusal"].as_str(), expected.refusal, "{what}");
    let calls = answer["tool_calls"].as_array().cloned().unwrap_or_default();
    assert_eq!(calls.len(), expected.calls.len(), "{what}");
    assert_eq!(answer["invalid_tool_calls"], json!([]), "{what}");
    for (call, (id, name, args)) in calls.iter().zip(&expected.calls) {
        assert_eq!(&call["name"], name, "{what}");
        assert_eq!(&call["args"], args, "{what}");
        let recorded_id = call["id"].as_str().unwrap_or_default();
        match *id {
            "" => assert!(recorded_id.starts_with("call_"), "a filled id: {what}"),
            id => assert_eq!(recorded_id, id, "{what}"),
        }
    }
}

/// `cargo xtask record`'s path: the recording model around the gateway's real OpenAI provider,
/// driven as the web client drives it. Returns the first call's answer and streamed text, the
/// live run's answers and the replay's (the fixture it built, in-process, keyless).
async fn through_xtask_record(
    case: &providers::ProviderCase,
    folder: &Path,
) -> ((Value, String), Vec<Value>, Vec<Value>) {
    let suggestions = support::text_stream(&["[\"Next?\"]"]);
    let upstream = providers::scripted_bodies(case.bodies(&[suggestions])).await;
    let recording = folder.join("xtask.jsonl");
    let scenario = Scenario {
        model: "wiremock-model".into(),
        ..Scenario::new(case.name, UiMode::Ultra, "Go ahead.")
    };
    let block = harness::adapter::hermetic::ModelBlock::Record {
        model: "wiremock-model".into(),
        api_key: UPSTREAM_KEY.into(),
        base_url: format!("{}/v1", upstream.uri()),
    };
    let recorded = harness::record_run::record_scenario(
        &scenario,
        block,
        &recording,
        harness::adapter::Extensions::default(),
    )
    .await
    .unwrap_or_else(|err| panic!("{}: recording: {err}", case.name));
    let fixture_path = folder.join(format!("{}.ultra.json", case.name));
    std::fs::write(&fixture_path, recorded.fixture.to_pretty_json()).expect("write fixture");
    let replay = keyless_runner::run(&mut InProcess::default(), &fixture_path, &options())
        .await
        .expect("in-process replay");
    assert_replayed(&replay, case.name, "xtask record's fixture, in-process");
    (
        recorded_answer(&recording, 0),
        answers(&recorded.transcripts),
        answers(&replay.transcripts),
    )
}

/// The events a run streamed, by name (`llm_retry` custom events included), per run.
fn event_names(transcripts: &[keyless_runner::RunTranscript]) -> Vec<Vec<String>> {
    transcripts
        .iter()
        .map(|t| t.events.iter().map(|e| e.event.clone()).collect())
        .collect()
}

/// What the proxy's path gives: the first call's answer and streamed text; the live run's
/// answers, the in-process replay's, the wire replay's and the strict wire replay's (of the
/// recording itself); the live run's, the wire replay's and the strict replay's event names
/// (the same request, so the same stream is expected).
type ProxyRun = ((Value, String), [Vec<Value>; 4], [Vec<Vec<String>>; 3]);

/// The recording proxy's path: `model-server --record` in front of the gateway binary, then the
/// fixture it built replayed in-process and over the wire.
async fn through_the_proxy(
    case: &providers::ProviderCase,
    replies: Vec<providers::Reply>,
    folder: &Path,
) -> ProxyRun {
    let upstream = providers::scripted_bodies(replies).await;
    let recording = folder.join("proxy.jsonl");
    let scenario = Scenario::new(case.name, UiMode::Ultra, "Go ahead.");
    let proxy = recording_proxy(
        format!("{}/v1", upstream.uri()),
        &recording,
        scenario.clone(),
    )
    .await;
    let fixture_like = Fixture {
        scenario,
        turns: Vec::new(),
        provenance: None,
        exchanges: Vec::new(),
    };
    let gateway = gateway_for(&proxy, &fixture_like).await;
    let live = drive_prompts(gateway.url(), &fixture_like)
        .await
        .expect("recorded drive");
    drop(gateway);
    let built = proxy.stop().await.expect("stops").expect("a fixture");
    let fixture_path = folder.join(format!("{}.ultra.json", case.name));
    std::fs::write(&fixture_path, built.fixture.to_pretty_json()).expect("write fixture");
    let in_process = keyless_runner::run(&mut InProcess::default(), &fixture_path, &options())
        .await
        .expect("in-process replay");
    assert_replayed(&in_process, case.name, "the proxy's fixture, in-process");
    let server = ModelServer::start(Mode::Fixtures(vec![fixture_path.clone()]), quiet())
        .await
        .expect("model server");
    let gateway = gateway_for(&server, &built.fixture).await;
    let mut target = AtUrl::new(gateway.url(), &server.url())
        .expect("target")
        .with_reset_token(server.reset_token());
    let over_wire = keyless_runner::run(&mut target, &fixture_path, &options())
        .await
        .expect("the wire replay");
    assert_replayed(&over_wire, case.name, "the proxy's fixture, over the wire");
    drop(gateway);
    let strict = ModelServer::start(Mode::Recording(recording.clone()), quiet())
        .await
        .expect("strict server");
    let gateway = gateway_for(&strict, &built.fixture).await;
    let mut target = AtUrl::new(gateway.url(), &strict.url())
        .expect("target")
        .with_reset_token(strict.reset_token());
    let strictly = keyless_runner::run(&mut target, &fixture_path, &options())
        .await
        .expect("the strict replay");
    assert_replayed(
        &strictly,
        case.name,
        "the proxy's recording, strictly over the wire",
    );
    (
        recorded_answer(&recording, 0),
        [
            answers(&live),
            answers(&in_process.transcripts),
            answers(&over_wire.transcripts),
            answers(&strictly.transcripts),
        ],
        [
            event_names(&live),
            event_names(&over_wire.transcripts),
            event_names(&strictly.transcripts),
        ],
    )
}

/// Replayed keyless with no miss and no model-side problem (these scenarios have no golden).
fn assert_replayed(run: &ScenarioRun, case: &str, how: &str) {
    let verdict = run.verdict();
    assert!(
        verdict.passes(replay_core::MissingGolden::Allowed),
        "{case}, {how}:\n{}",
        run.report(&verdict)
    );
}

/// One provider case through both recording paths: recorded as sent, the same answer both
/// ways, and every replay equal to the live run it came from.
fn check_provider_case(case: &providers::ProviderCase) {
    let folder = tempfile::tempdir().expect("tempdir");
    let (xtask_folder, proxy_folder) = (folder.path().join("a"), folder.path().join("b"));
    std::fs::create_dir_all(&xtask_folder).expect("folder");
    std::fs::create_dir_all(&proxy_folder).expect("folder");
    let ((xtask, xtask_text), xtask_live, xtask_replay) =
        bounded(through_xtask_record(case, &xtask_folder));
    let (
        (proxy, proxy_text),
        [proxy_live, in_process, over_wire, strictly],
        [live_events, wire_events, strict_events],
    ) = bounded(through_the_proxy(case, case.bodies(&[]), &proxy_folder));
    assert_recorded_as_sent(case, "xtask record", &xtask, &xtask_text);
    assert_recorded_as_sent(case, "the proxy", &proxy, &proxy_text);
    let name = case.name;
    assert_eq!(xtask, proxy, "{name}: both paths record the same answer");
    assert_eq!(
        xtask_live, xtask_replay,
        "{name}: xtask record's live run vs its replay"
    );
    assert_eq!(
        proxy_live, in_process,
        "{name}: the proxy's live run vs in-process"
    );
    assert_eq!(
        proxy_live, over_wire,
        "{name}: the proxy's live run vs over the wire"
    );
    assert_eq!(
        proxy_live, strictly,
        "{name}: the proxy's live run vs its strict replay"
    );
    assert_eq!(
        live_events, wire_events,
        "{name}: the proxy's live stream vs over the wire"
    );
    assert_eq!(
        live_events, strict_events,
        "{name}: the proxy's live stream vs its strict replay"
    );
}

#[test]
fn every_provider_stream_is_recorded_as_sent_through_both_paths_and_replays_as_lived() {
    // Every case runs, so that one report names all the behaviours a change broke.
    let failed: Vec<&str> = providers::provider_cases()
        .iter()
        .filter(|case| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check_provider_case(case)))
                .is_err()
        })
        .map(|case| case.name)
        .collect();
    assert!(
        failed.is_empty(),
        "provider cases that failed (their panics above): {failed:?}"
    );
}

#[test]
fn a_recorded_http_error_keeps_its_status_and_is_not_retried_at_replay() {
    // A 400 is not transient: the gateway does not retry it. Replayed as anything else (a 502),
    // the gateway would retry, use up the one recorded turn, and miss.
    let detail = "This model's maximum context length is 8192 tokens";
    let case = providers::ProviderCase {
        name: "openai_http_400",
        body: String::new(),
        json: true,
        expected: providers::Expected::text(""),
    };
    let replies = vec![providers::Reply {
        body: json!({"error": {"message": detail, "type": "invalid_request_error",
                               "param": "messages", "code": "context_length_exceeded"}})
        .to_string(),
        json: true,
        status: 400,
    }];
    let folder = tempfile::tempdir().expect("tempdir");
    let ((recorded, _), [live, _, over_wire, strictly], [live_events, wire_events, _]) =
        bounded(through_the_proxy(&case, replies, folder.path()));
    let calls = read_recording(&folder.path().join("proxy.jsonl"), Access::External)
        .expect("recording")
        .calls;
    assert_eq!(
        calls.len(),
        1,
        "the gateway did not retry the 400 while recording"
    );
    assert_eq!(recorded["status"], 400, "{recorded}");
    assert_eq!(recorded["error_type"], "BadRequestError", "{recorded}");
    assert!(
        recorded["error"]
            .as_str()
            .unwrap_or_default()
            .contains(detail),
        "{recorded}"
    );
    assert_eq!(live, over_wire, "the live run vs over the wire");
    assert_eq!(live, strictly, "the live run vs its strict replay");
    assert_eq!(
        live_events, wire_events,
        "the same stream over the wire: no llm_retry the live run did not have"
    );
}

/// A streamed answer as the gateway reads it: each `data:` payload's text fragment, error
/// message or `[DONE]`, in order.
fn stream_outline(answer: &Value) -> Vec<String> {
    answer
        .as_str()
        .unwrap_or_default()
        .split("\n\n")
        .filter_map(|frame| frame.strip_prefix("data: "))
        .filter_map(|data| {
            let chunk: Value = serde_json::from_str(data).unwrap_or(json!(data));
            let text = &chunk["choices"][0]["delta"]["content"];
            match (&chunk["error"]["message"], text) {
                (Value::String(error), _) => Some(format!("error: {error}")),
                (_, Value::String(text)) if !text.is_empty() => Some(text.clone()),
                _ if chunk == json!("[DONE]") => Some("[DONE]".to_owned()),
                _ => None,
            }
        })
        .collect()
}

#[test]
fn an_error_inside_a_stream_replays_inside_a_200_stream_as_it_came() {
    let case = providers::provider_cases()
        .into_iter()
        .find(|case| case.name == "openrouter_error_chunk_after_length")
        .expect("the case");
    let message = case.expected.in_stream_error.expect("an in-stream error");
    let folder = tempfile::tempdir().expect("tempdir");
    let recording = folder.path().join("in-stream.jsonl");
    bounded(async {
        let upstream = providers::scripted_bodies(case.bodies(&[])).await;
        let proxy = recording_proxy(
            format!("{}/v1", upstream.uri()),
            &recording,
            Scenario::new("same", UiMode::Flash, "same"),
        )
        .await;
        let body = json!({"model": "m", "stream": true, "messages": [user("same")]});
        let lived = complete(&proxy, &body, Some("lead_agent")).await;
        let built = proxy.stop().await.expect("stops").expect("a fixture");
        let expected = vec!["A long answer".to_owned(), format!("error: {message}")];
        assert_eq!((lived.0, stream_outline(&lived.1)), (200, expected.clone()));

        let strict = ModelServer::start(Mode::Recording(recording), quiet())
            .await
            .expect("strict");
        let (status, answer) = complete(&strict, &body, Some("lead_agent")).await;
        assert_eq!(
            (status, stream_outline(&answer)),
            (200, expected),
            "strictly: the recorded chunks, then the error"
        );

        let fixture_path = folder.path().join("same.flash.json");
        std::fs::write(&fixture_path, built.fixture.to_pretty_json()).expect("write");
        let whole = json!({"model": "m", "messages": [user("same")]});
        // Streamed, then not: each from a fresh server (a turn is served once).
        for (request, streamed) in [(&body, true), (&whole, false)] {
            let server = ModelServer::start(Mode::Fixtures(vec![fixture_path.clone()]), quiet())
                .await
                .expect("fixture server");
            let (status, answer) = complete(&server, request, Some("lead_agent")).await;
            assert_eq!(status, 200, "{answer}");
            if streamed {
                assert_eq!(
                    stream_outline(&answer),
                    [format!("error: {message}")],
                    "from the fixture: the error inside a 200 stream (it keeps no chunks)"
                );
            } else {
                assert_eq!(answer["error"]["message"], message, "a 200 error body");
            }
            assert!(server.problems().is_empty(), "{:?}", server.problems());
        }
    });
}

/// An upstream that answers one call with `head` (status line and headers, no length: the body
/// ends when the connection closes) and then `pieces`, each written and flushed on its own
/// after `pause`. The task ends with how many pieces were written before a write failed (the
/// proxy closed the connection), or all of them.
async fn piecewise_upstream(
    head: &'static str,
    pieces: Vec<Vec<u8>>,
    pause: Duration,
) -> (String, tokio::task::JoinHandle<usize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("address"));
    let task = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.expect("accept");
        // The request: its headers, then as many body bytes as they announce.
        let mut request = Vec::new();
        let mut buffer = [0u8; 8192];
        loop {
            let read = socket.read(&mut buffer).await.expect("read");
            request.extend_from_slice(&buffer[..read]);
            let text = String::from_utf8_lossy(&request).to_lowercase();
            if let Some(end) = text.find("\r\n\r\n") {
                let length: usize = text
                    .lines()
                    .find_map(|line| line.strip_prefix("content-length:"))
                    .and_then(|value| value.trim().parse().ok())
                    .unwrap_or(0);
                if request.len() >= end + 4 + length || read == 0 {
                    break;
                }
            }
        }
        if socket.write_all(head.as_bytes()).await.is_err() {
            return 0;
        }
        for (written, piece) in pieces.iter().enumerate() {
            if socket.write_all(piece).await.is_err() || socket.flush().await.is_err() {
                return written;
            }
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
        }
        let _ = socket.shutdown().await;
        pieces.len()
    });
    (url, task)
}

const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

fn in_pieces(bytes: &[u8], size: usize) -> Vec<Vec<u8>> {
    bytes.chunks(size).map(<[u8]>::to_vec).collect()
}

fn sse_chunk(delta: Value, finish: Value) -> String {
    let chunk = json!({"id": "c", "model": "up", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {chunk}\n\n")
}

/// Issue 21, finding 4, for the recording proxy: its reads of the upstream are bounded and
/// linear. A 1 MiB `data:` line arriving in 1 KiB pieces is parsed once (the time is reported,
/// not asserted); a line past the cap, a whole answer past its cap and an error body past its
/// cap are each recorded as the failure that says so, never read whole into memory.
#[test]
fn the_recording_proxy_s_upstream_reads_are_bounded_and_a_long_line_is_parsed_once() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let long_text = "x".repeat(1024 * 1024);
    let long_answer = format!(
        "{}{}data: [DONE]\n\n",
        sse_chunk(
            json!({"role": "assistant", "content": long_text}),
            Value::Null
        ),
        sse_chunk(json!({}), json!("stop"))
    );
    let mut past_the_line_cap = b"data: {\"choices\": [{\"delta\": {\"content\": \"".to_vec();
    past_the_line_cap.extend(std::iter::repeat_n(b'x', 8 * 1024 * 1024 + 1));
    let huge_answer = format!(
        "{{\"choices\": [], \"pad\": \"{}\"}}",
        "y".repeat(33 * 1024 * 1024)
    );
    let huge_error =
        json!({"error": {"message": format!("bad request {}", "z".repeat(2 * 1024 * 1024))}});
    enum Upstream {
        Pieces(Vec<Vec<u8>>),
        Body(u16, String),
    }
    /// The recorded text, or the recorded failure's type and the start of its message.
    type Expected<'a> = Result<&'a str, (&'a str, &'a str)>;
    let cases: Vec<(&str, Upstream, Expected)> = vec![
        (
            "a 1 MiB line in 1 KiB pieces",
            Upstream::Pieces(in_pieces(long_answer.as_bytes(), 1024)),
            Ok(long_text.as_str()),
        ),
        (
            "a line past the cap",
            Upstream::Pieces(in_pieces(&past_the_line_cap, 64 * 1024)),
            Err((
                "RemoteProtocolError",
                "a stream line is longer than 8388608 bytes",
            )),
        ),
        (
            "a whole answer past the cap",
            Upstream::Body(200, huge_answer),
            Err((
                "APIResponseValidationError",
                "the provider's answer is larger than 33554432 bytes",
            )),
        ),
        (
            "an error body past the cap",
            Upstream::Body(400, huge_error.to_string()),
            Err((
                "BadRequestError",
                "Error code: 400 - {\"error\":{\"message\":\"bad request zzz",
            )),
        ),
    ];
    bounded(async {
        for (case, upstream, expected) in cases {
            let folder = tempfile::tempdir().expect("tempdir");
            let recording = folder.path().join("bounded.jsonl");
            let mock = MockServer::start().await;
            let (url, pieces) = match upstream {
                Upstream::Pieces(pieces) => {
                    let (url, task) = piecewise_upstream(SSE_HEAD, pieces, Duration::ZERO).await;
                    (url, Some(task))
                }
                Upstream::Body(status, body) => {
                    Mock::given(method("POST"))
                        .respond_with(
                            ResponseTemplate::new(status).set_body_raw(body, "application/json"),
                        )
                        .mount(&mock)
                        .await;
                    (format!("{}/v1", mock.uri()), None)
                }
            };
            let proxy =
                recording_proxy(url, &recording, Scenario::new("b", UiMode::Flash, "b")).await;
            let started = std::time::Instant::now();
            let body = json!({"model": "m", "stream": pieces.is_some(), "messages": [user("hi")]});
            complete(&proxy, &body, Some("lead_agent")).await;
            eprintln!("{case}: {:?} through the proxy", started.elapsed());
            proxy.stop().await.expect("stops");
            if let Some(task) = pieces {
                task.await.expect("upstream");
            }
            let (answer, _) = recorded_answer(&recording, 0);
            match expected {
                Ok(text) => assert_eq!(answer["content"], text, "{case}"),
                Err((error_type, start)) => {
                    assert_eq!(answer["error_type"], error_type, "{case}: {answer}");
                    let message = answer["error"].as_str().unwrap_or_default();
                    assert!(
                        message.starts_with(start),
                        "{case}: {}",
                        &message[..message.len().min(300)]
                    );
                    assert!(
                        message.len() <= 65 * 1024,
                        "{case}: a {} byte message",
                        message.len()
                    );
                }
            }
        }
    });
}

/// Issue 21, finding 4, for the recording proxy: a gateway that stops reading its stream stops
/// the proxy's read of the upstream at once, even in the middle of a line that never ends.
#[test]
fn a_gateway_that_goes_away_stops_the_proxy_s_read_of_the_upstream() {
    let mut pieces =
        vec![sse_chunk(json!({"role": "assistant", "content": "Hel"}), Value::Null).into_bytes()];
    pieces.push(b"data: {\"choices\": [{\"delta\": {\"content\": \"".to_vec());
    // A line that trickles on for ten minutes, one byte every 20 ms.
    pieces.extend(std::iter::repeat_n(b"x".to_vec(), 30_000));
    let folder = tempfile::tempdir().expect("tempdir");
    let recording = folder.path().join("gone.jsonl");
    bounded(async {
        let (url, upstream) = piecewise_upstream(SSE_HEAD, pieces, Duration::from_millis(20)).await;
        let proxy = recording_proxy(url, &recording, Scenario::new("g", UiMode::Flash, "g")).await;
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("client");
        let mut answer = client
            .post(format!("{}/chat/completions", proxy.base_url()))
            .json(&json!({"model": "m", "stream": true, "messages": [user("hi")]}))
            .send()
            .await
            .expect("answer");
        let mut seen = String::new();
        while !seen.contains("Hel") {
            let chunk = answer
                .chunk()
                .await
                .expect("a chunk")
                .expect("the first chunks");
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
        drop(answer);
        let gone = std::time::Instant::now();
        let written = tokio::time::timeout(Duration::from_secs(30), upstream)
            .await
            .expect("the proxy went on reading the upstream after the gateway went away")
            .expect("upstream");
        eprintln!(
            "the upstream's connection closed {:?} after the gateway's ({written} pieces written)",
            gone.elapsed()
        );
        assert!(written < 30_002, "every piece was read");
        proxy.stop().await.expect("stops");
        let read = read_recording(&recording, Access::External).expect("a valid recording");
        assert_eq!(
            read.calls[0].outcome,
            replay_core::recording::Outcome::Abandoned
        );
    });
}

/// Issue 21, finding 4, for the recording proxy: a gateway that gives up on a whole
/// (non-streamed) answer stops the proxy's read of the upstream too: the whole answer is read in
/// the call's own handler (never a task of its own that would outlive it), which is dropped with
/// the connection, and the read with it. A guard: this held before the streamed case was fixed.
#[test]
fn a_gateway_that_gives_up_on_a_whole_answer_stops_the_proxy_s_read_of_the_upstream() {
    let mut pieces = vec![b"{\"choices\": [], \"pad\": \"".to_vec()];
    pieces.extend(std::iter::repeat_n(b"x".to_vec(), 30_000));
    let folder = tempfile::tempdir().expect("tempdir");
    let recording = folder.path().join("gone.jsonl");
    bounded(async {
        let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n";
        let (url, upstream) = piecewise_upstream(head, pieces, Duration::from_millis(20)).await;
        let proxy = recording_proxy(url, &recording, Scenario::new("g", UiMode::Flash, "g")).await;
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("client");
        let call = client
            .post(format!("{}/chat/completions", proxy.base_url()))
            .json(&json!({"model": "m", "messages": [user("hi")]}))
            .send();
        assert!(
            tokio::time::timeout(Duration::from_millis(500), call)
                .await
                .is_err(),
            "the answer never completes"
        );
        let gone = std::time::Instant::now();
        let written = tokio::time::timeout(Duration::from_secs(30), upstream)
            .await
            .expect("the proxy went on reading the upstream after the gateway gave up")
            .expect("upstream");
        eprintln!(
            "the upstream's connection closed {:?} after the gateway's ({written} pieces written)",
            gone.elapsed()
        );
        proxy.stop().await.expect("stops");
        let read = read_recording(&recording, Access::External).expect("a valid recording");
        assert_eq!(
            read.calls[0].outcome,
            replay_core::recording::Outcome::Abandoned
        );
    });
}
