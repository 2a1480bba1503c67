//! Replay gateways for a browser (`harness::replay_gateway`, behind `cargo xtask replay-gateway`
//! and Layer 2): the suite's set of gateways, the built client served beside the API, the replay
//! log written as the web client's requests hit, a second run of the same fixture logged as
//! misses with their diagnostic, the shutdown report, and the manifest the browser suite reads.

use std::path::Path;

use harness::adapter::hermetic::SCENARIO_MODEL;
use harness::replay_gateway::{
    Auth, GatewaySpec, HostSettings, ReplayGateway, SUITE_EXTRAS, manifest, replay_log_name, suite,
};
use harness::workspace::fixtures_dir;
use keyless_runner::session::WebClient;
use replay_core::Fixture;
use serde_json::{Value, json};

const INDEX: &str = "<!doctype html><div id=\"root\"></div>";

fn settings(web_dir: &Path) -> HostSettings {
    std::fs::create_dir_all(web_dir).unwrap();
    std::fs::write(web_dir.join("index.html"), INDEX).unwrap();
    HostSettings {
        web_dir: Some(web_dir.to_path_buf()),
        jwt_secret: "test-replay-secret".to_owned().into(),
        cors_origins: Vec::new(),
    }
}

fn log_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

async fn get(url: &str) -> (u16, String) {
    let response = reqwest::get(url).await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[test]
fn the_suite_has_a_gateway_per_fixture_and_the_named_extras() {
    let extras = fixtures_dir().join("write_read_file.ultra.json");
    let logs = Path::new("/logs");
    let specs = suite(&fixtures_dir(), &extras, logs, true).unwrap();
    let mut fixture_stems: Vec<String> = std::fs::read_dir(fixtures_dir())
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            name.strip_suffix(".json").map(str::to_owned)
        })
        .collect();
    fixture_stems.sort();
    let expected: Vec<String> = fixture_stems
        .iter()
        .cloned()
        .chain(SUITE_EXTRAS.iter().map(|(name, ..)| name.to_string()))
        .collect();
    let names: Vec<String> = specs.iter().map(|spec| spec.name.clone()).collect();
    assert_eq!(names, expected);
    for spec in &specs {
        assert_eq!(
            spec.replay_log.as_deref(),
            Some(logs.join(replay_log_name(&spec.name)).as_path())
        );
        let extra = SUITE_EXTRAS.iter().find(|(name, ..)| *name == spec.name);
        let (auth, seed) = extra.map_or((Auth::Enabled, false), |(_, auth, seed)| (*auth, *seed));
        assert_eq!((spec.auth, spec.seed_route), (auth, seed), "{}", spec.name);
        if extra.is_some() {
            assert_eq!(spec.fixture, extras);
        }
    }
    let without_seed = suite(&fixtures_dir(), &extras, logs, false).unwrap();
    assert!(without_seed.iter().all(|spec| !spec.seed_route));
}

#[tokio::test]
async fn a_gateway_serves_the_client_logs_each_hit_and_then_each_miss_as_it_happens() {
    let folder = tempfile::tempdir().unwrap();
    let fixture_path = fixtures_dir().join("write_read_file.ultra.json");
    let fixture = Fixture::load(&fixture_path).unwrap();
    let log = folder
        .path()
        .join("gateways")
        .join(replay_log_name("ultra"));
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    let spec = GatewaySpec {
        name: "ultra".into(),
        fixture: fixture_path.clone(),
        auth: Auth::Enabled,
        seed_route: false,
        replay_log: Some(log.clone()),
    };
    let gateway = ReplayGateway::start(spec, 0, &settings(&folder.path().join("dist")))
        .await
        .unwrap();
    let url = gateway.url();
    assert_eq!(get(&format!("{url}/health")).await.0, 200);
    assert_eq!(get(&format!("{url}/")).await, (200, INDEX.to_owned()));
    assert_eq!(get(&format!("{url}/chats/some-thread")).await.1, INDEX);

    let document = manifest(std::slice::from_ref(&gateway), folder.path());
    assert_eq!(
        document,
        json!({"gateways": [{"name": "ultra", "base_url": url, "fixture": "write_read_file.ultra.json",
            "auth": "enabled", "seed_route": false, "replay_log": "gateways/ultra.replay.jsonl"}]})
    );

    WebClient::new(Some(SCENARIO_MODEL))
        .drive(&url, &fixture.scenario)
        .await
        .unwrap();
    let hits = log_lines(&log);
    let expected: Vec<Value> = fixture
        .turns
        .iter()
        .enumerate()
        .map(|(turn, recorded)| json!({"event": "hit", "turn": turn, "caller": recorded.caller}))
        .collect();
    assert_eq!(hits, expected, "one hit per recorded turn, in call order");

    // The same fixture again: every turn is used up, so the first model call misses, and the
    // log has the miss before the gateway stops.
    WebClient::new(Some(SCENARIO_MODEL))
        .drive(&url, &fixture.scenario)
        .await
        .unwrap();
    let lines = log_lines(&log);
    let misses: Vec<&Value> = lines[hits.len()..].iter().collect();
    assert!(!misses.is_empty(), "no miss logged: {lines:?}");
    for miss in &misses {
        assert_eq!(miss["event"], "miss", "{miss}");
        let diagnostic = miss["diagnostic"].as_str().unwrap_or_default();
        assert!(
            diagnostic.starts_with("replay miss: no recorded output for input hash")
                && diagnostic.contains("nearest recorded turn"),
            "{miss}"
        );
    }

    let report = gateway.shutdown().await;
    assert_eq!(report.hits, fixture.turns.len());
    assert!(report.unused_turns.is_empty(), "{:?}", report.unused_turns);
    assert_eq!(report.misses.len(), misses.len());
    assert!(
        report.shutdown_error.is_none(),
        "{:?}",
        report.shutdown_error
    );
    assert_eq!(
        report.summary(),
        format!(
            "ultra: {} hit(s), {} miss(es), unused turns: none",
            fixture.turns.len(),
            misses.len()
        )
    );
}

#[tokio::test]
async fn an_auth_disabled_gateway_answers_the_synthetic_user_and_lists_its_unused_turns() {
    let folder = tempfile::tempdir().unwrap();
    let fixture_path = fixtures_dir().join("model_title.flash.json");
    let turns = Fixture::load(&fixture_path).unwrap().turns;
    let spec = GatewaySpec {
        name: "auth-disabled".into(),
        fixture: fixture_path,
        auth: Auth::Disabled,
        seed_route: false,
        replay_log: None,
    };
    let gateway = ReplayGateway::start(spec, 0, &settings(&folder.path().join("dist")))
        .await
        .unwrap();
    let (status, me) = get(&format!("{}/api/v1/auth/me", gateway.url())).await;
    let me: Value = serde_json::from_str(&me).unwrap();
    assert_eq!((status, &me["id"]), (200, &json!("default")), "{me}");
    let report = gateway.shutdown().await;
    assert_eq!(report.summary(), "auth-disabled: no model call");
    let callers: Vec<&str> = turns
        .iter()
        .map(|turn| turn.caller.as_deref().unwrap())
        .collect();
    let unused: Vec<&str> = report
        .unused_turns
        .iter()
        .map(|(_, caller)| caller.as_str())
        .collect();
    assert_eq!(unused, callers);
}

#[tokio::test]
async fn a_missing_fixture_or_web_dir_names_the_gateway() {
    let folder = tempfile::tempdir().unwrap();
    let spec = GatewaySpec {
        name: "ghost".into(),
        fixture: folder.path().join("ghost.flash.json"),
        auth: Auth::Enabled,
        seed_route: false,
        replay_log: None,
    };
    let no_client = HostSettings {
        web_dir: Some(folder.path().join("no-build")),
        ..settings(&folder.path().join("dist"))
    };
    let error = ReplayGateway::start(spec.clone(), 0, &no_client)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("gateway ghost: fixture") && error.contains("ghost.flash.json"),
        "{error}"
    );
    let spec = GatewaySpec {
        fixture: fixtures_dir().join("model_title.flash.json"),
        ..spec
    };
    let error = ReplayGateway::start(spec, 0, &no_client)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("gateway ghost (fixture ") && error.contains("server.web_dir"),
        "{error}"
    );
}
