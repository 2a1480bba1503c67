//! The web client's four-mode flow at the model's wire agrees with in-process replay: the
//! `gateway-under-test` binary, its one model a model server replaying every shipped fixture,
//! driven as DeerFlow's chat page drives it (`keyless_runner::run` with the page drive through
//! `AtUrl`: its page requests, its run request with four stream modes, suggestions with
//! `n = max_suggestions` after each run, the reload) gives the committed web golden of every
//! fixture, with no miss, no model-server problem and every recorded turn used (the suggestions
//! turns included). A run of streamed chunks is one golden entry (`docs/golden-format.md` §8), so
//! the model server's chunking and the replay model's give the same golden. It runs at the
//! gateway's five wires; a fixture whose recorded model error the gateway quotes (its fallback
//! message, then the suggestions prompt) misses at the Anthropic, Gemini and Converse wires,
//! whose error bodies differ from OpenAI's.

use std::time::Duration;

use gateway_under_test::models::wire_model::{Api, PROVIDER_APIS};
use harness::adapter::process::{GatewayProcess, workspace_gateway_binary};
use harness::in_process::web_options;
use harness::workspace::fixtures_dir;
use keyless_runner::AtUrl;
use keyless_runner::runtime;
use keyless_runner::{Mode, ModelServer, ServerOptions};
use replay_core::{Answer, Fixture, GoldenStatus};

/// A hung gateway or server fails the test instead of the build.
const BOUND: Duration = Duration::from_secs(300);

/// Whether a recorded model call of `fixture` failed with an HTTP error, whose text (OpenAI's
/// error body, as the fixtures were recorded over Chat Completions) the gateway puts in the
/// conversation as its fallback message.
fn quotes_an_openai_error(fixture: &Fixture) -> bool {
    fixture
        .turns
        .iter()
        .any(|turn| matches!(&turn.answer, Answer::Error(error) if !error.in_stream))
}

/// At each of the gateway's wires (Chat Completions, Responses, Anthropic Messages): the web
/// golden of every fixture, except where the wire words a recorded error differently.
#[test]
fn every_shipped_fixture_gives_its_web_golden_at_the_wire() {
    let mut fixtures: Vec<_> = std::fs::read_dir(fixtures_dir())
        .expect("fixtures/")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    fixtures.sort();
    assert!(!fixtures.is_empty(), "no shipped fixtures");
    let binary = workspace_gateway_binary().expect("the gateway binary");
    let work = async {
        let server = ModelServer::start(Mode::Fixtures(fixtures.clone()), ServerOptions::default())
            .await
            .expect("model server");
        for path in &fixtures {
            let fixture = Fixture::load(path).expect("fixture");
            for api in PROVIDER_APIS {
                let gateway = GatewayProcess::spawn_at_wire(
                    &binary,
                    &server.url(),
                    fixture.scenario.gateway_config.as_ref(),
                    api,
                )
                .await
                .expect("gateway process");
                let mut target = AtUrl::new(gateway.url(), &server.url())
                    .expect("target")
                    .with_reset_token(server.reset_token());
                let run = keyless_runner::run(&mut target, path, &web_options())
                    .await
                    .expect("the flow");
                let stem = fixture.scenario.stem();
                // The error body as each non-OpenAI wire words it (its Python repr).
                let worded = match api {
                    Api::ChatCompletions | Api::Responses => None,
                    Api::AnthropicMessages => Some("'type': 'error'"),
                    Api::Gemini => Some("'status': '"),
                    Api::BedrockConverse => Some("{'message': "),
                    Api::OllamaChat | Api::OllamaGenerate => {
                        unreachable!("no gateway provider speaks Ollama's native wire")
                    }
                };
                if let (true, Some(worded)) = (quotes_an_openai_error(&fixture), worded) {
                    // The gateway's fallback text quotes the provider's error as its client
                    // words it, so the suggestions prompt that quotes the fallback differs at
                    // a wire other than OpenAI's: a miss, named, never a silent pick.
                    assert!(
                        run.misses
                            .iter()
                            .any(|miss| miss.canonical.contains(worded)),
                        "{stem} at {api:?}: expected the suggestions call quoting the wire's error body to miss\n{}",
                        run.report(&run.verdict())
                    );
                    continue;
                }
                if let Err(report) = run.check() {
                    panic!("{stem} at the wire {api:?}:\n{report}");
                }
                assert_eq!(
                    run.golden_status(),
                    GoldenStatus::Ok,
                    "{stem}: the web golden at the wire {api:?} differs from golden/{stem}.web.snap\n{}\n\n{}",
                    run.golden_document(),
                    run.report(&run.verdict())
                );
            }
        }
        server.stop().await.expect("stops");
    };
    runtime()
        .expect("runtime")
        .block_on(async { tokio::time::timeout(BOUND, work).await })
        .unwrap_or_else(|_| panic!("the test did not finish within {BOUND:?}"));
}
