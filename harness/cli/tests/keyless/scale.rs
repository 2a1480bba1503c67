//! `keyless test` at scale, as a user runs it: fixtures at once (`--jobs`), one CI machine's
//! shard (`--partition`), the JUnit report (`--junit`) and a gateway kept for several fixtures
//! (`--reuse-gateway`), each against this workspace's gateway binary.

use std::collections::BTreeSet;
use std::path::Path;

use harness::workspace::{fixtures_dir, golden_dir, workspace_root};
use serde_json::Value;

use super::{FIXTURE, UserRepo, said, toml_string};

impl UserRepo {
    /// Replaces the user's fixtures with copies of `FIXTURE` named `names`, each with the
    /// workspace's golden of `FIXTURE` under its name (a copy passes as the original does).
    fn copies(&self, names: &[&str]) {
        let fixtures = self.path().join("fixtures");
        let golden = self.path().join("golden");
        std::fs::remove_dir_all(&fixtures).unwrap();
        std::fs::create_dir_all(&fixtures).unwrap();
        std::fs::create_dir_all(&golden).unwrap();
        for name in names {
            std::fs::copy(
                fixtures_dir().join(format!("{FIXTURE}.json")),
                fixtures.join(format!("{name}.json")),
            )
            .unwrap();
            std::fs::copy(
                golden_dir().join(format!("{FIXTURE}.snap")),
                golden.join(format!("{name}.snap")),
            )
            .unwrap();
        }
    }

    /// Replaces the user's fixtures with copies of a one-turn chat fixture named `names`, run
    /// through `scripted_gateway.py` (LangGraph's dialect; its environment says how it
    /// misbehaves), and accepts the goldens of a clean run.
    fn scripted(&self, names: &[&str]) {
        let fixtures = self.path().join("fixtures");
        std::fs::remove_dir_all(&fixtures).unwrap();
        std::fs::create_dir_all(&fixtures).unwrap();
        let hello = workspace_root().join("examples/ai-sdk-chat/web/fixtures/hello.chat.json");
        for name in names {
            std::fs::copy(&hello, fixtures.join(format!("{name}.json"))).unwrap();
        }
        let gateway = workspace_root().join("harness/cli/tests/keyless/scripted_gateway.py");
        let command = format!("exec python3 '{}'", gateway.display());
        std::fs::write(
            self.path().join("keyless.toml"),
            format!(
                "gateway_cmd = {}\nready = \"/\"\napi = \"langgraph\"\n",
                toml_string(&command)
            ),
        )
        .unwrap();
        let first = self.keyless(&["test", "--jobs", "1"]);
        assert_eq!(first.status.code(), Some(1), "{}", said(&first));
        let accepted = self.keyless(&["accept"]);
        assert!(accepted.status.success(), "{}", said(&accepted));
        let clean = self.keyless(&["test", "--jobs", "1", "--reuse-gateway"]);
        assert!(clean.status.success(), "{}", said(&clean));
    }

    /// `keyless args…` with `env` set (the scripted gateway inherits it).
    fn keyless_with(&self, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
        std::process::Command::new(env!("CARGO_BIN_EXE_keyless"))
            .args(args)
            .current_dir(self.path())
            .envs(env.iter().copied())
            .env_remove("CARGO_MANIFEST_DIR")
            .output()
            .unwrap()
    }

    /// The configured gateway command with `before` run first.
    fn gateway_cmd_after(&self, before: &str) -> String {
        let text = std::fs::read_to_string(self.path().join("keyless.toml")).unwrap();
        let file: toml::Table = toml::from_str(&text).unwrap();
        let command = file["gateway_cmd"].as_str().unwrap();
        format!("{before}; {command}")
    }
}

/// `--json`'s objects, by fixture name.
fn json_lines(stdout: &[u8]) -> Vec<(String, Value)> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|line| {
            let value: Value =
                serde_json::from_str(line).unwrap_or_else(|err| panic!("{err}: {line}"));
            let fixture = value["fixture"].as_str().unwrap_or_default();
            let name = Path::new(fixture)
                .file_name()
                .and_then(|name| name.to_str())
                .unwrap_or_default()
                .trim_end_matches(".json")
                .to_owned();
            (name, value)
        })
        .collect()
}

/// Two fixtures with the same conversation, run at once (each gateway waits until both have
/// started, so with one job they never get ready): `whole` has every recorded answer, `short`
/// lacks the final answer. Each is answered from its own recording: `whole` passes with no miss (it would
/// miss if it were answered from `short`'s) and the miss is `short`'s alone (it would have none if
/// answered from `whole`'s). The report is in name order.
#[test]
fn fixtures_at_once_are_each_answered_from_their_own_and_a_miss_is_the_one_that_missed() {
    let repo = UserRepo::new();
    repo.copies(&["a_whole.flash", "b_short.flash"]);
    let short = repo.path().join("fixtures/b_short.flash.json");
    let mut fixture: Value =
        serde_json::from_str(&std::fs::read_to_string(&short).unwrap()).unwrap();
    // Turn 2 is the lead agent's final answer (turn 3, the suggestions, is never asked for).
    fixture["turns"].as_array_mut().unwrap().remove(2);
    std::fs::write(&short, fixture.to_string()).unwrap();
    let barrier = repo.path().join("started");
    std::fs::create_dir(&barrier).unwrap();
    let command = repo.gateway_cmd_after(&format!(
        "touch '{dir}'/$KEYLESS_GATEWAY_PORT; while [ $(ls '{dir}' | wc -l) -lt 2 ]; do sleep 0.05; done",
        dir = barrier.display()
    ));
    let output = repo.keyless(&[
        "test",
        "--jobs",
        "2",
        "--json",
        "--ready-timeout-secs",
        "30",
        "--gateway-cmd",
        &command,
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", said(&output));
    let lines = json_lines(&output.stdout);
    let names: Vec<&str> = lines.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        ["a_whole.flash", "b_short.flash"],
        "{}",
        said(&output)
    );
    let misses = |index: usize| lines[index].1["misses"].as_array().map_or(0, Vec::len);
    assert_eq!(
        (misses(0), lines[0].1["golden"].as_str()),
        (0, Some("ok")),
        "the whole fixture: {}",
        said(&output)
    );
    assert!(
        misses(1) >= 1,
        "the short fixture did not miss: {}",
        said(&output)
    );
    let logs: BTreeSet<_> = lines
        .iter()
        .map(|(_, line)| line["gateway_log"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(logs.len(), 2, "each its own gateway log: {logs:?}");
}

/// `--partition` K/N over the fixtures: the shards are disjoint and together run every fixture,
/// for both kinds; a shard with nothing in it exits 0 and says so.
#[test]
fn partitions_run_disjoint_shards_that_cover_every_fixture() {
    let repo = UserRepo::new();
    let all = ["p1.flash", "p2.flash", "p3.flash", "p4.flash", "p5.flash"];
    repo.copies(&all);
    for kind in ["", "count:", "hash:"] {
        let mut seen: Vec<String> = Vec::new();
        for shard in 1..=2 {
            let partition = format!("{kind}{shard}/2");
            let output = repo.keyless(&["test", "--json", "--partition", &partition]);
            let ran: Vec<String> = json_lines(&output.stdout)
                .into_iter()
                .map(|(name, _)| name)
                .collect();
            // A shard may be empty (hash); then it exits 0 with nothing on stdout.
            assert_eq!(
                output.status.code(),
                Some(0),
                "{partition}: {}",
                said(&output)
            );
            if !ran.is_empty() {
                // Nothing else on stderr: no progress line when stderr is not a terminal.
                assert!(output.stderr.is_empty(), "{partition}: {}", said(&output));
            }
            assert!(
                ran.iter().all(|name| !seen.contains(name)),
                "{partition} ran a fixture another shard ran: {ran:?} after {seen:?}"
            );
            seen.extend(ran);
        }
        seen.sort();
        assert_eq!(seen, all, "{kind}K/2 together");
    }
    repo.copies(&["only.flash"]);
    let empty = repo.keyless(&["test", "--partition", "count:2/2"]);
    assert_eq!(empty.status.code(), Some(0), "{}", said(&empty));
    assert!(
        String::from_utf8_lossy(&empty.stderr).contains("count:2/2 holds none of the 1 fixtures"),
        "{}",
        said(&empty)
    );
}

/// `--junit`: one testcase per fixture; with one golden broken, exactly one failure, naming it,
/// with the golden's diff and the gateway log; the XML parses with a standard parser.
#[test]
fn junit_lists_each_fixture_and_the_one_whose_golden_broke() {
    let repo = UserRepo::new();
    repo.copies(&["j1.flash", "j2.flash", "j3.flash"]);
    let broken = repo.path().join("golden/j2.flash.snap");
    let text = std::fs::read_to_string(&broken).unwrap();
    std::fs::write(
        &broken,
        text.replacen("\"metadata\"", "\"metadata-broken\"", 1),
    )
    .unwrap();
    let output = repo.keyless(&["test", "--jobs", "2", "--junit", "reports/keyless.xml"]);
    assert_eq!(output.status.code(), Some(1), "{}", said(&output));
    let xml = std::fs::read_to_string(repo.path().join("reports/keyless.xml")).unwrap();
    let document = roxmltree::Document::parse(&xml).unwrap_or_else(|err| panic!("{err}\n{xml}"));
    let cases: Vec<roxmltree::Node> = document
        .descendants()
        .filter(|node| node.has_tag_name("testcase"))
        .collect();
    let names: Vec<&str> = cases
        .iter()
        .filter_map(|case| case.attribute("name"))
        .collect();
    assert_eq!(names, ["j1.flash", "j2.flash", "j3.flash"], "{xml}");
    let failed: Vec<(&str, roxmltree::Node)> = cases
        .iter()
        .filter_map(|case| {
            let failure = case
                .children()
                .find(|node| node.has_tag_name("failure") || node.has_tag_name("error"))?;
            Some((case.attribute("name")?, failure))
        })
        .collect();
    assert_eq!(failed.len(), 1, "{xml}");
    let (name, failure) = &failed[0];
    assert_eq!(*name, "j2.flash", "{xml}");
    assert!(failure.has_tag_name("failure"), "{xml}");
    let text = failure.text().unwrap_or_default();
    assert!(
        text.contains("-      \"event\": \"metadata-broken\"")
            && text.contains("+      \"event\": \"metadata\"")
            && text.contains(".keyless/logs/j2.flash.gateway.log"),
        "{xml}"
    );
    assert!(
        cases
            .iter()
            .all(|case| case.attribute("classname") == Some("fixtures")),
        "the folder, relative to where keyless ran: {xml}"
    );
}

/// `--reuse-gateway`: the fixtures without gateway settings of their own run through one gateway
/// (started once), and the one with `gateway_config` gets a gateway of its own.
#[test]
fn a_reused_gateway_starts_once_and_a_fixture_with_its_own_settings_gets_its_own() {
    let repo = UserRepo::new();
    repo.copies(&["r1.flash", "r2.flash", "r3.flash"]);
    std::fs::copy(
        fixtures_dir().join("model_title.flash.json"),
        repo.path().join("fixtures/model_title.flash.json"),
    )
    .unwrap();
    let starts = repo.path().join("starts");
    let command = repo.gateway_cmd_after(&format!("echo started >> '{}'", starts.display()));
    let config = format!(
        "gateway_cmd = {}\nreuse_gateway = true\n",
        toml_string(&command)
    );
    std::fs::write(repo.path().join("keyless.toml"), config).unwrap();
    let output = repo.keyless(&["test", "--jobs", "1", "--json"]);
    let lines = json_lines(&output.stdout);
    let log = |name: &str| {
        let line = &lines.iter().find(|(fixture, _)| fixture == name).unwrap().1;
        let log = line["gateway_log"].as_str().unwrap_or_default();
        Path::new(log)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    };
    for name in ["r1.flash", "r2.flash", "r3.flash"] {
        let line = &lines.iter().find(|(fixture, _)| fixture == name).unwrap().1;
        assert_eq!(line["golden"], "ok", "{name}: {}", said(&output));
        assert_eq!(log(name), "job-1.gateway.log", "{}", said(&output));
    }
    assert_eq!(log("model_title.flash"), "model_title.flash.gateway.log");
    let started = std::fs::read_to_string(&starts).unwrap_or_default();
    assert_eq!(
        started.lines().count(),
        2,
        "one shared gateway and model_title's own: {}",
        said(&output)
    );

    let fresh = repo.keyless(&["test", "--jobs", "1", "--reuse-gateway=false", "--json"]);
    let started = std::fs::read_to_string(&starts).unwrap_or_default();
    assert_eq!(
        started.lines().count(),
        2 + 4,
        "a gateway per fixture: {}",
        said(&fresh)
    );
}

/// Usage errors of the new flags exit 2 and say why.
#[test]
fn jobs_a_single_model_server_cannot_serve_and_bad_partitions_exit_2() {
    let repo = UserRepo::new();
    let cases: [(&[&str], &[&str]); 3] = [
        (
            &["test", "--jobs", "2", "--gateway-url", "http://127.0.0.1:9"],
            &["--jobs 2", "gateway_url"],
        ),
        (
            &["test", "--jobs", "2", "--model-port", "8091"],
            &["--jobs 2", "model_port"],
        ),
        (
            &["test", "--partition", "hash:3/2"],
            &["hash:3/2", "between 1 and 2"],
        ),
    ];
    for (args, mentions) in cases {
        let output = repo.keyless(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", said(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        for mention in mentions {
            assert!(
                stderr.contains(mention),
                "{args:?}: {mention:?} not in {}",
                said(&output)
            );
        }
    }
}

/// Issue 45, finding 8: a gateway that exits (with 0 or not) right after it closed its run's
/// response fails that fixture, with or without `--reuse-gateway`, every time: its exit is told
/// from the stop by the reaped status and the kernel's exiting flag at the signal, not by a poll
/// that races it. Under reuse the exit is charged to the fixture that ran last, and the next
/// fixture starts the gateway again with a log of its own.
#[test]
fn finding_8_a_gateway_that_exits_right_after_its_run_fails_that_fixture() {
    let repo = UserRepo::new();
    let names = ["a.chat", "b.chat", "c.chat"];
    repo.scripted(&names);
    for (code, reuse) in [("0", "false"), ("3", "false"), ("0", "true"), ("3", "true")] {
        let reused = format!("--reuse-gateway={reuse}");
        let output = repo.keyless_with(
            &["test", "--jobs", "1", "--json", &reused],
            &[("GW_EXIT", code)],
        );
        let case = format!("GW_EXIT={code} {reused}: {}", said(&output));
        assert_eq!(output.status.code(), Some(1), "{case}");
        let lines = json_lines(&output.stdout);
        assert_eq!(lines.len(), names.len(), "{case}");
        for (index, (name, line)) in lines.iter().enumerate() {
            let errors = line["model_errors"].to_string();
            let says = format!("exited (exit status: {code}) before it was stopped");
            assert!(
                errors.contains("gateway_exited") && errors.contains(&says),
                "{name}: {errors}\n{case}"
            );
            let log = line["gateway_log"].as_str().unwrap_or_default();
            let expected = match (reuse, index) {
                ("true", 0) => "job-1.gateway.log".to_owned(),
                ("true", n) => format!("job-1.{}.gateway.log", n + 1),
                _ => format!("{name}.gateway.log"),
            };
            assert!(
                log.ends_with(&expected) && errors.contains(log),
                "{name}: {log} {errors}\n{case}"
            );
        }
    }
}

/// Issue 45, finding 9: under `--reuse-gateway` the first run's gateway repeats its model call
/// 0.2 s after its run, while the next fixture's thread is being created (1 s), and answers the
/// next run from a cache without calling the model. The late call is refused and charged to
/// the first fixture (`call_between_runs`), and the next fixture, which never reached the
/// model, is not credited with it: it fails for using none of its turns.
#[test]
fn finding_9_a_late_call_under_reuse_is_charged_to_the_run_before_never_credited_to_the_next() {
    let repo = UserRepo::new();
    repo.scripted(&["a.chat", "b.chat"]);
    let output = repo.keyless_with(
        &["test", "--jobs", "1", "--json", "--reuse-gateway"],
        &[("GW_LATE", "0.2"), ("GW_SLOW_THREAD", "1")],
    );
    assert_eq!(output.status.code(), Some(1), "{}", said(&output));
    let lines = json_lines(&output.stdout);
    let (first, next) = (&lines[0].1, &lines[1].1);
    // Under a heavy load the late call can come before the harness has read the first run's
    // ledger: then it is that run's own call, a miss (its turn was served already).
    let first_errors = first["model_errors"].to_string();
    assert!(
        first_errors.contains("call_between_runs: ")
            || first["misses"]
                .as_array()
                .is_some_and(|misses| !misses.is_empty()),
        "{}",
        said(&output)
    );
    assert_eq!(
        next["unused_turns"],
        serde_json::json!([0]),
        "{}",
        said(&output)
    );
    assert_eq!(
        next["model_errors"],
        serde_json::json!([]),
        "{}",
        said(&output)
    );
    assert_eq!(
        next["unused_failure"]
            .as_str()
            .map(|text| text.contains("no recorded turn was used")),
        Some(true),
        "{}",
        said(&output)
    );
}
