//! The web client's four-mode flow at the model's wire agrees with in-process replay: the
//! `gateway-under-test` binary, its one model a model server replaying every shipped fixture,
//! driven as DeerFlow's chat page drives it (`harness::web_flow::run_web_flow_on` through
//! `target::AtUrl`: its page requests, its run request with four stream modes, suggestions with
//! `n = max_suggestions` after each run, the reload) gives the committed web golden of every
//! fixture, with no miss, no model-server problem and every recorded turn used (the suggestions
//! turns included). A run of streamed chunks is one golden entry (`docs/golden-format.md` §8), so
//! the model server's chunking and the replay model's give the same golden.

use std::time::Duration;

use harness::adapter::process::{GatewayProcess, workspace_gateway_binary};
use harness::golden::fixtures_dir;
use harness::layer1::runtime;
use harness::model_server::{Mode, ModelServer, ServerOptions};
use harness::target::AtUrl;
use harness::web_flow::{run_web_flow_on, web_golden_status};
use replay_core::{Fixture, GoldenStatus};

/// A hung gateway or server fails the test instead of the build.
const BOUND: Duration = Duration::from_secs(300);

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
            let gateway = GatewayProcess::spawn(
                &binary,
                &server.base_url(),
                fixture.scenario.gateway_config.as_ref(),
            )
            .await
            .expect("gateway process");
            let mut target = AtUrl::new(gateway.url(), &server.url()).expect("target");
            let run = run_web_flow_on(&mut target, path).await.expect("the flow");
            let stem = fixture.scenario.stem();
            if let Err(report) = run.check() {
                panic!("{stem} at the wire:\n{report}");
            }
            assert_eq!(
                web_golden_status(&run),
                GoldenStatus::Ok,
                "{stem}: the web golden at the wire differs from golden/{stem}.web.snap\n{}\n\n{}",
                run.golden_document(),
                run.report()
            );
        }
        server.stop().await.expect("stops");
    };
    runtime()
        .expect("runtime")
        .block_on(async { tokio::time::timeout(BOUND, work).await })
        .unwrap_or_else(|_| panic!("the test did not finish within {BOUND:?}"));
}
