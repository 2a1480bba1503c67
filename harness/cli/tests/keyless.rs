//! The built `keyless` binary as a user runs it: from a temporary folder outside the workspace
//! (no `Cargo.toml` there) with its own `keyless.toml`, fixture and golden folders, against this
//! workspace's gateway binary started by `gateway_cmd` for each fixture.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use harness::adapter::process::{placeholder_key, workspace_gateway_binary, write_wire_config};
use harness::workspace::{fixtures_dir, read_golden};
use replay_core::Fixture;
use serde_json::Value;

#[path = "keyless/age.rs"]
mod age;
#[path = "keyless/drift.rs"]
mod drift;
#[path = "keyless/embeddings.rs"]
mod embeddings;
#[path = "keyless/http.rs"]
mod http;
#[path = "keyless/mcp.rs"]
mod mcp;
#[path = "keyless/mcp_stateless.rs"]
mod mcp_stateless;
#[path = "keyless/record.rs"]
mod record;
#[path = "keyless/report.rs"]
mod report;
#[path = "keyless/scale.rs"]
mod scale;

/// The shipped fixture the user's folder gets a copy of.
const FIXTURE: &str = "write_read_file.flash";

/// How the gateway command hands the model server's base URL to the gateway.
#[derive(Clone, Copy)]
enum BaseUrl {
    Placeholder,
    Env,
}

/// A user's repository: a temporary folder with `fixtures/<FIXTURE>.json`, a gateway
/// configuration template whose model is `$KEYLESS_MODEL_BASE_URL`, and `keyless.toml`.
struct UserRepo {
    dir: tempfile::TempDir,
    gateway: PathBuf,
}

impl UserRepo {
    fn new() -> UserRepo {
        let dir = tempfile::Builder::new()
            .prefix("keyless-user-")
            .tempdir()
            .unwrap();
        assert!(
            dir.path()
                .ancestors()
                .all(|a| !a.join("Cargo.toml").exists()),
            "the user's folder must be outside any cargo workspace"
        );
        let fixtures = dir.path().join("fixtures");
        std::fs::create_dir(&fixtures).unwrap();
        std::fs::copy(
            fixtures_dir().join(format!("{FIXTURE}.json")),
            fixtures.join(format!("{FIXTURE}.json")),
        )
        .unwrap();
        let gateway = workspace_gateway_binary().expect("the gateway binary");
        let repo = UserRepo { dir, gateway };
        let command = repo.gateway_cmd("gateway", true, BaseUrl::Placeholder);
        std::fs::write(
            repo.path().join("keyless.toml"),
            format!(
                "gateway_cmd = {}\nready = \"/health\"\n",
                toml_string(&command)
            ),
        )
        .unwrap();
        repo
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a gateway configuration into `<name>/` and returns the command that starts the
    /// gateway with it on `{port}`. The model's base URL reaches the gateway the two ways
    /// `keyless` offers: `Placeholder` substitutes `{model_base_url}` in the command (which fills
    /// in a configuration template), `Env` leaves `$KEYLESS_MODEL_BASE_URL` in the configuration
    /// for the gateway to expand.
    fn gateway_cmd(&self, name: &str, send_message_names: bool, base_url: BaseUrl) -> String {
        let folder = self.path().join(name);
        std::fs::create_dir_all(&folder).unwrap();
        let fixture = Fixture::load(&self.path().join(format!("fixtures/{FIXTURE}.json"))).unwrap();
        let written = match base_url {
            BaseUrl::Placeholder => "@MODEL_BASE_URL@",
            BaseUrl::Env => "$KEYLESS_MODEL_BASE_URL",
        };
        let config = write_wire_config(
            &folder,
            written,
            fixture.scenario.gateway_config.as_ref(),
            send_message_names,
        )
        .unwrap();
        let gateway = self.gateway.display();
        match base_url {
            BaseUrl::Placeholder => {
                // A configuration and a home per gateway (its port), so gateways run at once
                // (`--jobs`) never read each other's model URL or share a database.
                let run = folder.join("run-{port}.toml");
                let home = folder.join("home");
                format!(
                    "cp -r '{home}' '{home}-{{port}}' && sed -e 's#@MODEL_BASE_URL@#{{model_base_url}}#' -e 's#{home}#{home}-{{port}}#g' '{}' > '{}' && exec '{gateway}' --config '{}' --port {{port}}",
                    config.display(),
                    run.display(),
                    run.display(),
                    home = home.display(),
                )
            }
            BaseUrl::Env => format!(
                "exec '{gateway}' --config '{}' --port {{port}}",
                config.display()
            ),
        }
    }

    /// Runs the built binary in the user's folder.
    fn keyless(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_keyless"))
            .args(args)
            .current_dir(self.path())
            .env("OPENAI_API_KEY", placeholder_key())
            .env_remove("CARGO_MANIFEST_DIR")
            .output()
            .unwrap()
    }
}

fn toml_string(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

/// stdout and stderr, for assertions and failure messages.
fn said(output: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn a_user_repository_goes_from_a_missing_golden_to_a_passing_test_and_a_drift_fails() {
    let repo = UserRepo::new();
    let golden = repo.path().join("golden");

    // The workspace ships a golden of the same name; the user's folder has none, so it is
    // missing (a fixture's golden is looked up in the configured folder, never in golden/).
    let first = repo.keyless(&["test"]);
    assert_eq!(first.status.code(), Some(1), "{}", said(&first));
    let table = String::from_utf8_lossy(&first.stdout);
    assert!(
        table.contains("write_read_file") && table.contains("missing"),
        "{}",
        said(&first)
    );
    assert!(
        golden.join(format!("{FIXTURE}.snap.new")).is_file(),
        "{}",
        said(&first)
    );

    let accepted = repo.keyless(&["accept"]);
    assert_eq!(accepted.status.code(), Some(0), "{}", said(&accepted));
    // Over the wire the gateway streams what it streams in-process: the same golden.
    assert_eq!(
        keyless_runner::goldens::read_golden(&golden, FIXTURE).unwrap(),
        read_golden(FIXTURE).unwrap()
    );

    let second = repo.keyless(&["test"]);
    assert_eq!(second.status.code(), Some(0), "{}", said(&second));

    // Message names off: the conversation the gateway sends differs from the recorded one.
    let drifted = repo.gateway_cmd("drifted", false, BaseUrl::Env);
    let table_run = repo.keyless(&["test", "--gateway-cmd", &drifted]);
    assert_eq!(table_run.status.code(), Some(1), "{}", said(&table_run));
    assert!(
        String::from_utf8_lossy(&table_run.stderr).contains("replay miss: no recorded output"),
        "{}",
        said(&table_run)
    );
    let json_run = repo.keyless(&["test", "--json", "--gateway-cmd", &drifted]);
    assert_eq!(json_run.status.code(), Some(1), "{}", said(&json_run));
    let line: Value = serde_json::from_slice(&json_run.stdout).expect("one JSON object");
    let diagnostic = line["misses"][0]["diagnostic"].as_str().unwrap_or_default();
    assert!(
        diagnostic.contains("replay miss: no recorded output"),
        "{line:#}"
    );
    assert!(
        line["gateway_log"]
            .as_str()
            .is_some_and(|log| Path::new(log).is_file()),
        "{line:#}"
    );
}

#[test]
fn usage_and_configuration_errors_exit_2_and_say_where() {
    let repo = UserRepo::new();
    std::fs::write(
        repo.path().join("bad.toml"),
        "fixtures = \"fixtures\"\ngatway_cmd = \"x\"\n",
    )
    .unwrap();
    std::fs::write(repo.path().join("empty.toml"), "").unwrap();
    std::fs::create_dir(repo.path().join("other")).unwrap();
    std::fs::copy(
        repo.path().join(format!("fixtures/{FIXTURE}.json")),
        repo.path().join(format!("other/{FIXTURE}.json")),
    )
    .unwrap();
    let one = format!("fixtures/{FIXTURE}.json");
    let two = format!("other/{FIXTURE}.json");
    let cases: [(&str, Vec<&str>, &[&str]); 7] = [
        (
            "an auth header whose variable is unset",
            vec![
                "test",
                "--api",
                "langgraph",
                "--auth-header",
                "x-api-key",
                "--auth-env",
                "KEYLESS_TEST_UNSET_AUTH_VALUE",
            ],
            &["x-api-key", "set KEYLESS_TEST_UNSET_AUTH_VALUE"],
        ),
        (
            "an unknown dialect",
            vec!["test", "--api", "langchain"],
            &["langchain", "deerflow", "langgraph"],
        ),
        (
            "an unknown key",
            vec!["test", "--config", "bad.toml"],
            &["bad.toml", "line 2", "gatway_cmd"],
        ),
        (
            "no gateway",
            vec!["test", "--config", "empty.toml"],
            &["empty.toml", "--gateway-cmd"],
        ),
        (
            "an unknown flag",
            vec!["test", "--gateway-command", "x"],
            &["--gateway-command"],
        ),
        (
            "an unknown fixture",
            vec!["test", "no_such.flash"],
            &["no_such.flash", FIXTURE],
        ),
        (
            "two fixtures with one name",
            vec![
                "model-server",
                "--port",
                "0",
                "--fixture",
                &one,
                "--fixture",
                &two,
            ],
            &[&one, &two],
        ),
    ];
    for (name, args, mentions) in cases {
        let output = repo.keyless(&args);
        assert_eq!(output.status.code(), Some(2), "{name}: {}", said(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        for mention in mentions {
            assert!(
                stderr.contains(mention),
                "{name}: {mention:?} not in\n{}",
                said(&output)
            );
        }
    }
    let init = repo.keyless(&["init"]);
    assert_eq!(
        init.status.code(),
        Some(2),
        "init over an existing file: {}",
        said(&init)
    );
}

#[test]
fn review_accepts_rejects_or_skips_each_pending_golden_as_answered() {
    let repo = UserRepo::new();
    let golden = repo.path().join("golden");
    let document = read_golden(FIXTURE).unwrap();
    // (answers, whether the golden exists after, whether the pending file is left)
    let cases = [
        ("s\n", false, true),
        ("n\n", false, false),
        ("maybe\ny\n", true, false),
    ];
    for (answers, accepted, left) in cases {
        keyless_runner::goldens::write_pending(&golden, FIXTURE, "fixtures/x.json", &document)
            .unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_keyless"))
            .arg("review")
            .current_dir(repo.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), answers.as_bytes()).unwrap();
        let output = child.wait_with_output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{answers:?}: {}",
            said(&output)
        );
        let snap = golden.join(format!("{FIXTURE}.snap"));
        assert_eq!(snap.is_file(), accepted, "{answers:?}: {}", said(&output));
        let pending = golden.join(format!("{FIXTURE}.snap.new"));
        assert_eq!(pending.is_file(), left, "{answers:?}: {}", said(&output));
        let _ = std::fs::remove_file(pending);
    }
}

/// A `keyless model-server` child replaying the user's fixture: the "real" upstream a recording
/// proxies to, and its stdout, kept open so its later lines never meet a closed pipe. Killed on
/// drop.
struct Upstream {
    child: std::process::Child,
    url: String,
    _stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl Upstream {
    fn start(repo: &UserRepo) -> Upstream {
        let mut child = Command::new(env!("CARGO_BIN_EXE_keyless"))
            .args(["model-server", "--port", "0"])
            .current_dir(repo.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        std::io::BufRead::read_line(&mut stdout, &mut first).unwrap();
        let url = first
            .split_whitespace()
            .find(|word| word.starts_with("http://"))
            .unwrap_or_else(|| panic!("no address in {first:?}"))
            .to_owned();
        Upstream {
            child,
            url,
            _stdout: stdout,
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn record_drives_the_configured_gateway_through_the_proxy_and_builds_the_fixture() {
    let repo = UserRepo::new();
    let shipped = Fixture::load(&fixtures_dir().join(format!("{FIXTURE}.json"))).unwrap();
    let upstream = Upstream::start(&repo);
    let output = Command::new(env!("CARGO_BIN_EXE_keyless"))
        .args([
            "record",
            "--fixtures",
            "recorded",
            "--scenario",
            "write_read_file",
        ])
        .args(["--mode", "flash", "--prompt", &shipped.scenario.prompt])
        .args(["--upstream", &format!("{}/v1", upstream.url)])
        .args(["--key-env", "UPSTREAM_KEY"])
        .current_dir(repo.path())
        .env("OPENAI_API_KEY", placeholder_key())
        .env("UPSTREAM_KEY", "sk-upstream-SECRET-0123456789")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
    let built = Fixture::load(&repo.path().join(format!("recorded/{FIXTURE}.json")))
        .unwrap_or_else(|err| panic!("{err}\n{}", said(&output)));
    let keys = |fixture: &Fixture, n: usize| -> Vec<String> {
        fixture.turns[..n]
            .iter()
            .map(|t| t.input_hash.clone())
            .collect()
    };
    // The drive sends the prompt only (no suggestions call): the shipped fixture's first three.
    assert_eq!(
        keys(&built, built.turns.len()),
        keys(&shipped, 3),
        "{}",
        said(&output)
    );
    let fixture_text =
        std::fs::read_to_string(repo.path().join(format!("recorded/{FIXTURE}.json")));
    assert!(
        !fixture_text.unwrap().contains("SECRET"),
        "the key reached the fixture"
    );
}

/// Whether the process `pid_file` names is gone (reaped, or never started).
fn gone(pid_file: &Path) -> bool {
    let pid = std::fs::read_to_string(pid_file).unwrap_or_default();
    let pid = pid.trim();
    !pid.is_empty()
        && (0..50).any(|_| {
            let alive = Path::new("/proc").join(pid).exists();
            if alive {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            !alive
        })
}

#[test]
fn a_gateway_that_is_not_ready_fails_naming_its_log_and_is_stopped() {
    let repo = UserRepo::new();
    let pid_file = repo.path().join("gw.pid");
    let never_ready = format!("echo $$ > '{}'; exec sleep 300", pid_file.display());
    // (command, what stderr says)
    let cases = [
        ("echo started; exit 3", "exited (exit status: 3)"),
        (never_ready.as_str(), "was not ready within 1s"),
    ];
    for (command, says) in cases {
        let output = repo.keyless(&[
            "test",
            "--gateway-cmd",
            command,
            "--ready-timeout-secs",
            "1",
        ]);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{command}: {}",
            said(&output)
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        let log = repo
            .path()
            .join(format!(".keyless/logs/{FIXTURE}.gateway.log"));
        assert!(
            stderr.contains(says) && stderr.contains(&log.display().to_string()),
            "{command}: {}",
            said(&output)
        );
    }
    assert!(
        gone(&pid_file),
        "the gateway that never got ready is still running"
    );
    let log = std::fs::read_to_string(
        repo.path()
            .join(format!(".keyless/logs/{FIXTURE}.gateway.log")),
    );
    assert_eq!(
        log.unwrap_or_default(),
        "",
        "the log is the last gateway's, which printed nothing"
    );
}

#[test]
fn sigterm_stops_keyless_and_the_gateway_it_started() {
    let repo = UserRepo::new();
    let pid_file = repo.path().join("gw.pid");
    let command = format!("echo $$ > '{}'; exec sleep 300", pid_file.display());
    let mut child = Command::new(env!("CARGO_BIN_EXE_keyless"))
        .args(["test", "--gateway-cmd", &command])
        .current_dir(repo.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_pid(&pid_file);
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(gone(&pid_file), "the gateway outlived keyless: {stderr}");
}

/// `keyless serve` (or `record --serve`) running in the user's folder, its JSON line read.
struct Serving {
    child: std::process::Child,
    line: Value,
    /// Kept open: the command prints more when it stops.
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl Serving {
    fn start(repo: &UserRepo, extra: &[&str]) -> Serving {
        Serving::run(repo, &[&["serve"], extra].concat(), &[])
    }

    fn run(repo: &UserRepo, args: &[&str], env: &[(&str, &str)]) -> Serving {
        let mut child = Command::new(env!("CARGO_BIN_EXE_keyless"))
            .args(args)
            .envs(env.iter().copied())
            .current_dir(repo.path())
            .env("OPENAI_API_KEY", placeholder_key())
            .env_remove("CARGO_MANIFEST_DIR")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        std::io::BufRead::read_line(&mut stdout, &mut first).unwrap();
        let line = serde_json::from_str(&first).unwrap_or_else(|err| {
            let _ = child.kill();
            let mut stderr = String::new();
            let _ = std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr);
            panic!("serve's first line {first:?} is not JSON ({err}); stderr:\n{stderr}")
        });
        Serving {
            child,
            line,
            stdout,
        }
    }

    fn url(&self, key: &str) -> String {
        self.line[key].as_str().unwrap_or_default().to_owned()
    }

    /// SIGTERM, as Playwright's `webServer` stops its command; the exit code, and the rest of
    /// stdout then stderr.
    fn stop(mut self) -> (Option<i32>, String) {
        let pid = rustix::process::Pid::from_child(&self.child);
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut self.stdout, &mut stderr).unwrap();
        let status = self.child.wait().unwrap();
        std::io::Read::read_to_string(&mut self.child.stderr.take().unwrap(), &mut stderr).unwrap();
        (status.code(), stderr)
    }
}

/// Whether no process of the group `pgid` is left.
fn group_gone(pgid: u64) -> bool {
    let pgid = rustix::process::Pid::from_raw(pgid as i32).expect("a process group id");
    rustix::process::test_kill_process_group(pgid).is_err()
}

#[test]
fn serve_holds_a_replayed_gateway_up_and_exits_0_after_a_clean_replay() {
    let repo = UserRepo::new();
    let log = repo.path().join("replay.jsonl");
    let serving = Serving::start(&repo, &["--replay-log", &log.display().to_string()]);
    assert_eq!(serving.line["fixture"], FIXTURE, "{}", serving.line);
    let pgid = serving.line["gateway_process_group"].as_u64().unwrap();

    // A driver nobody configured for serve: Layer 1's, at the served URLs (the browser's stand-in).
    let path = repo.path().join(format!("fixtures/{FIXTURE}.json"));
    let run = keyless_runner::runtime().unwrap().block_on(async {
        let mut target = keyless_runner::AtUrl::new(
            &serving.url("gateway_url"),
            &serving.url("model_server_url"),
        )
        .unwrap()
        .with_reset_token(&serving.url("reset_token"));
        let options = keyless_runner::RunOptions::new(repo.path().join("golden"));
        keyless_runner::run(&mut target, &path, &options)
            .await
            .unwrap()
    });
    assert!(
        run.verdict().replayed_cleanly(),
        "{}",
        run.report(&run.verdict())
    );

    let (code, stderr) = serving.stop();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("answered as recorded, 0 problem(s)"),
        "{stderr}"
    );
    assert!(
        group_gone(pgid),
        "the gateway's process group outlived serve"
    );
    let hits = std::fs::read_to_string(&log).unwrap();
    assert!(
        hits.lines().count() >= 1 && hits.lines().all(|l| l.contains(r#""event":"hit""#)),
        "{hits}"
    );
}

#[test]
fn serve_exits_1_naming_the_miss_after_an_unrecorded_call() {
    let repo = UserRepo::new();
    let log = repo.path().join("replay.jsonl");
    let serving = Serving::start(&repo, &["--replay-log", &log.display().to_string()]);
    let pgid = serving.line["gateway_process_group"].as_u64().unwrap();
    let url = format!("{}/chat/completions", serving.url("model_base_url"));
    let answered = keyless_runner::runtime().unwrap().block_on(async {
        reqwest::Client::new()
            .post(&url)
            .json(&serde_json::json!({
                "model": "m",
                "messages": [{"role": "user", "content": "a prompt nobody recorded"}],
            }))
            .send()
            .await
            .unwrap()
            .status()
    });
    assert!(!answered.is_success(), "an unrecorded call was answered");

    let (code, stderr) = serving.stop();
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("problem 1 of 1: miss: replay miss: no recorded output"),
        "{stderr}"
    );
    assert!(
        group_gone(pgid),
        "the gateway's process group outlived serve"
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains(r#""event":"miss""#), "{logged}");
}

#[test]
fn serve_exits_1_when_the_gateway_dies_or_no_model_call_came() {
    let repo = UserRepo::new();
    // Ready once it answers, then gone a second later (however slow the machine is to start it).
    let dies = "python3 -m http.server --bind 127.0.0.1 {port} & \
        until python3 -c 'import urllib.request as u; u.urlopen(\"http://127.0.0.1:{port}/\")' \
        2>/dev/null; do sleep 0.1; done; sleep 1; exit 0";
    // (gateway command, how long to serve, what stderr says)
    let cases = [
        (dies, 4000, "the gateway exited on its own"),
        (
            "exec python3 -m http.server --bind 127.0.0.1 {port}",
            500,
            "no model call reached the model server",
        ),
    ];
    for (command, millis, says) in cases {
        let serving = Serving::start(&repo, &["--gateway-cmd", command, "--ready", "/"]);
        std::thread::sleep(std::time::Duration::from_millis(millis));
        let (code, stderr) = serving.stop();
        assert_eq!(code, Some(1), "{command}: {stderr}");
        assert!(stderr.contains(says), "{command}: {stderr}");
    }
}

/// Layer 1's driver at a served gateway (a browser's stand-in): the fixture's prompt, no
/// suggestions call, then the verdict's problems (empty for a clean replay).
fn drive_served(serving: &Serving, path: &Path, golden: &Path) -> Vec<String> {
    keyless_runner::runtime().unwrap().block_on(async {
        let mut target = keyless_runner::AtUrl::new(
            &serving.url("gateway_url"),
            &serving.url("model_server_url"),
        )
        .unwrap()
        .with_reset_token(&serving.url("reset_token"));
        let options = keyless_runner::RunOptions::new(golden);
        let run = keyless_runner::run(&mut target, path, &options)
            .await
            .unwrap();
        if run.verdict().replayed_cleanly() {
            Vec::new()
        } else {
            vec![run.report(&run.verdict())]
        }
    })
}

#[test]
fn record_serve_builds_from_what_a_client_drove_a_fixture_that_serve_replays_cleanly() {
    let repo = UserRepo::new();
    let shipped = Fixture::load(&fixtures_dir().join(format!("{FIXTURE}.json"))).unwrap();
    let upstream = Upstream::start(&repo);
    let (scenario, mode) = FIXTURE.split_once('.').unwrap();
    let upstream_url = format!("{}/v1", upstream.url);
    // The gateway on the port a browser suite's URL names (`--port`).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .unwrap()
        .port()
        .to_string();
    let recording = Serving::run(
        &repo,
        &[
            "record",
            "--serve",
            "--fixtures",
            "recorded",
            "--scenario",
            scenario,
            "--mode",
            mode,
            "--upstream",
            &upstream_url,
            "--key-env",
            "UPSTREAM_KEY",
            "--port",
            &port,
        ],
        &[("UPSTREAM_KEY", "sk-upstream-SECRET-0123456789")],
    );
    assert_eq!(
        recording.url("gateway_url"),
        format!("http://127.0.0.1:{port}")
    );
    // A client (the browser's stand-in) sends the prompt the shipped fixture was recorded with.
    keyless_runner::runtime().unwrap().block_on(async {
        let options = keyless_runner::DriveOptions::default();
        let mut session = keyless_runner::Session::open(&recording.url("gateway_url"), &options)
            .await
            .unwrap();
        session.run_scenario(&shipped.scenario, &[]).await.unwrap();
    });
    let (code, stderr) = recording.stop();
    assert_eq!(code, Some(0), "{stderr}");
    let path = repo.path().join(format!("recorded/{FIXTURE}.json"));
    let built = Fixture::load(&path).unwrap_or_else(|err| panic!("{err}\n{stderr}"));
    assert_eq!(built.scenario.prompt, shipped.scenario.prompt, "{stderr}");
    assert!(
        built.scenario.followups.is_empty(),
        "{:?}",
        built.scenario.followups
    );
    assert!(!std::fs::read_to_string(&path).unwrap().contains("SECRET"));

    let serving = Serving::start(&repo, &["--fixtures", "recorded", "--fixture", FIXTURE]);
    let problems = drive_served(&serving, &path, &repo.path().join("golden"));
    let (code, stderr) = serving.stop();
    assert_eq!(problems, Vec::<String>::new());
    assert_eq!(code, Some(0), "{stderr}");
}

/// Waits until `file` holds a pid.
fn wait_for_pid(file: &Path) {
    for _ in 0..200 {
        if std::fs::read_to_string(file).is_ok_and(|pid| !pid.trim().is_empty()) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("{} was never written", file.display());
}

#[test]
fn finding_5_processes_that_leave_the_gateways_group_are_stopped_too() {
    let repo = UserRepo::new();
    let pid = |name: &str| repo.path().join(name);
    // A `setsid` child, a double-forked `setsid` daemon (its parent shell exits at once), and the
    // shell itself, which never gets ready.
    let command = format!(
        "setsid sleep 301 & echo $! > '{}'; sh -c \"setsid sleep 302 & echo \\$! > '{}'\"; echo $$ > '{}'; exec sleep 300",
        pid("setsid.pid").display(),
        pid("daemon.pid").display(),
        pid("gateway.pid").display()
    );
    // And a shell that exits before it is ready, leaving a `setsid` child behind.
    let exits = format!(
        "setsid sleep 303 & echo $! > '{}'; exit 3",
        pid("early.pid").display()
    );
    for command in [command, exits] {
        let output = repo.keyless(&[
            "test",
            "--gateway-cmd",
            &command,
            "--ready-timeout-secs",
            "1",
        ]);
        assert_eq!(output.status.code(), Some(1), "{}", said(&output));
    }
    for name in ["gateway.pid", "setsid.pid", "daemon.pid", "early.pid"] {
        assert!(gone(&pid(name)), "{name} outlived keyless");
    }
}

#[test]
fn finding_5_a_sigkilled_keyless_takes_its_gateway_with_it() {
    let repo = UserRepo::new();
    let pid_file = repo.path().join("gw.pid");
    let command = format!("echo $$ > '{}'; exec sleep 300", pid_file.display());
    let mut child = Command::new(env!("CARGO_BIN_EXE_keyless"))
        .args(["test", "--gateway-cmd", &command])
        .current_dir(repo.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for_pid(&pid_file);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(gone(&pid_file), "the gateway outlived a SIGKILLed keyless");
}

#[test]
fn finding_4_a_second_signal_exits_at_once() {
    let repo = UserRepo::new();
    let pid_file = repo.path().join("gw.pid");
    // A gateway deaf to SIGTERM holds the first stop for its whole grace period (5 s).
    let command = format!(
        "trap '' TERM; echo $$ > '{}'; exec sleep 300",
        pid_file.display()
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_keyless"))
        .args(["test", "--gateway-cmd", &command])
        .current_dir(repo.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_pid(&pid_file);
    let signal = |name: &str| {
        let sent = Command::new("kill")
            .args([name, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    };
    signal("-INT");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let started = std::time::Instant::now();
    signal("-TERM");
    let status = child.wait().unwrap();
    let elapsed = started.elapsed();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(
        elapsed < std::time::Duration::from_secs(2),
        "exited {elapsed:?} after the second signal: {stderr}"
    );
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(gone(&pid_file), "the gateway outlived keyless: {stderr}");
}

/// How long a command may take before a test calls it hung (a FIFO opened for reading, a
/// quadratic parse).
const HUNG: std::time::Duration = std::time::Duration::from_secs(90);

impl UserRepo {
    /// Runs the built binary in the user's folder, its standard input empty, killing it (and
    /// saying so in its output) when it outlives [`HUNG`].
    fn keyless_within(&self, args: &[&str]) -> Output {
        let mut child = Command::new(env!("CARGO_BIN_EXE_keyless"))
            .args(args)
            .current_dir(self.path())
            .env("OPENAI_API_KEY", placeholder_key())
            .env_remove("CARGO_MANIFEST_DIR")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > HUNG {
                let _ = child.kill();
                let mut output = child.wait_with_output().unwrap();
                output
                    .stderr
                    .extend_from_slice(b"\n[the test killed keyless: it hung]");
                return output;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        child.wait_with_output().unwrap()
    }

    /// Accepts the shipped golden into the user's folder, so `keyless test` passes.
    fn with_golden(self) -> UserRepo {
        keyless_runner::goldens::write_pending(
            &self.path().join("golden"),
            FIXTURE,
            "fixtures/x.json",
            &read_golden(FIXTURE).unwrap(),
        )
        .unwrap();
        let accepted = self.keyless(&["accept"]);
        assert_eq!(accepted.status.code(), Some(0), "{}", said(&accepted));
        self
    }
}

/// Issue 34, finding 1: a gateway whose model is another server than the one keyless started
/// answers every call, streams the golden's shapes, and used to pass with `0/4` turns used. It
/// fails, naming the turns; with every turn used but the suggestions turn it passes, unless
/// `--strict-unused`.
#[test]
fn a_run_that_used_none_of_the_recorded_turns_fails_naming_them() {
    let repo = UserRepo::new().with_golden();
    let elsewhere = Upstream::start(&repo);
    let command = repo
        .gateway_cmd("elsewhere", true, BaseUrl::Placeholder)
        .replace("{model_base_url}", &format!("{}/v1", elsewhere.url));
    // (name, arguments, exit status, what stderr says)
    let cases: [(&str, Vec<&str>, i32, &str); 3] = [
        (
            "the model is another server",
            vec!["test", "--gateway-cmd", &command],
            1,
            "no recorded turn was used (turns [0, 1, 2, 3])",
        ),
        ("the model is keyless's", vec!["test"], 0, ""),
        (
            "strict: the suggestions turn is unused",
            vec!["test", "--strict-unused"],
            1,
            "recorded turns [3] were not used",
        ),
    ];
    for (name, args, status, says) in cases {
        let output = repo.keyless(&args);
        assert_eq!(
            output.status.code(),
            Some(status),
            "{name}: {}",
            said(&output)
        );
        assert!(
            String::from_utf8_lossy(&output.stderr).contains(says),
            "{name}: {}",
            said(&output)
        );
    }
}

/// What a hostile golden or log folder holds for one case of
/// [`links_fifos_and_binary_snapshots_in_the_golden_and_log_folders_are_refused`].
#[derive(Clone, Copy)]
enum Planted {
    /// A symbolic link to a file outside the repository holding a secret.
    Link,
    /// A FIFO nobody writes to.
    Fifo,
    /// An insta binary snapshot whose `extension` holds a `/`.
    Binary,
}

/// Issue 34, findings 2, 11 and 19: a link in `golden/` or the log folder is never written or
/// read through (the secret it points at is neither changed, nor printed, nor copied into
/// `golden/`), a FIFO is never opened for a blocking read, and a binary snapshot is refused
/// without a panic; each is an error naming the file.
#[test]
fn links_fifos_and_binary_snapshots_in_the_golden_and_log_folders_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("credentials");
    let secret_text = "---\nsource: keyless\n---\nsk-live-SECRETSECRET\n";
    let golden = format!("golden/{FIXTURE}.snap");
    let pending = format!("golden/{FIXTURE}.snap.new");
    let log = format!(".keyless/logs/{FIXTURE}.gateway.log");
    // (what is planted, where, the command, whether a real pending golden is there first, what
    // stderr says)
    let cases: [(Planted, &str, &str, bool, &str); 11] = [
        (Planted::Link, &pending, "test", false, "is a symbolic link"),
        (Planted::Link, &golden, "test", false, "is a symbolic link"),
        (Planted::Link, &golden, "accept", true, "is a symbolic link"),
        (
            Planted::Link,
            &pending,
            "review",
            false,
            "is a symbolic link",
        ),
        (
            Planted::Link,
            &pending,
            "accept",
            false,
            "is a symbolic link",
        ),
        (Planted::Link, &log, "test", false, "is a symbolic link"),
        (Planted::Fifo, &golden, "test", false, "is a FIFO"),
        (Planted::Fifo, &pending, "accept", false, "is a FIFO"),
        (Planted::Fifo, &pending, "review", false, "is a FIFO"),
        (Planted::Binary, &golden, "test", false, "goldens are text"),
        (
            Planted::Binary,
            &pending,
            "review",
            false,
            "goldens are text",
        ),
    ];
    for (planted, at, command, real_pending, says) in cases {
        let repo = UserRepo::new();
        let name = format!("{command} with {at} planted");
        std::fs::create_dir_all(repo.path().join("golden")).unwrap();
        std::fs::create_dir_all(repo.path().join(".keyless/logs")).unwrap();
        std::fs::write(&secret, secret_text).unwrap();
        if real_pending {
            keyless_runner::goldens::write_pending(
                &repo.path().join("golden"),
                FIXTURE,
                "fixtures/x.json",
                &read_golden(FIXTURE).unwrap(),
            )
            .unwrap();
        }
        let path = repo.path().join(at);
        match planted {
            Planted::Link => std::os::unix::fs::symlink(&secret, &path).unwrap(),
            Planted::Fifo => assert!(
                Command::new("mkfifo")
                    .arg(&path)
                    .status()
                    .unwrap()
                    .success(),
                "mkfifo"
            ),
            Planted::Binary => std::fs::write(
                &path,
                "---\nsource: keyless\nsnapshot_kind: binary\nextension: ../../x/y\n---\n",
            )
            .unwrap(),
        }
        let output = repo.keyless_within(&[command]);
        let everything = said(&output);
        assert!(
            matches!(output.status.code(), Some(1 | 2)),
            "{name}: {everything}"
        );
        assert!(
            String::from_utf8_lossy(&output.stderr).contains(says)
                && everything.contains(&path.display().to_string()),
            "{name}: {everything}"
        );
        assert_eq!(
            std::fs::read_to_string(&secret).unwrap(),
            secret_text,
            "{name}: the file the link points at changed"
        );
        assert!(
            !everything.contains("SECRETSECRET"),
            "{name}: the secret was printed: {everything}"
        );
        // The golden as a regular file (a planted link is no copy).
        let golden_path = repo.path().join(&golden);
        let accepted = match std::fs::symlink_metadata(&golden_path) {
            Ok(metadata) if metadata.is_file() => std::fs::read_to_string(&golden_path).unwrap(),
            _ => String::new(),
        };
        assert!(
            !accepted.contains("SECRETSECRET"),
            "{name}: the secret was copied into golden/"
        );
    }
}

/// Issue 34, finding 13 and 18: `record` refuses an existing `--recording-out` (a second
/// session would be appended to the first) and a scenario id that names a path, before anything
/// is recorded or written.
#[test]
fn record_refuses_an_existing_recording_and_a_scenario_id_that_is_a_path() {
    let repo = UserRepo::new();
    let upstream = Upstream::start(&repo);
    let earlier = repo.path().join("earlier.jsonl");
    std::fs::write(&earlier, "an earlier session\n").unwrap();
    // A recording's own mode: keyless refused the file for its mode, never for being there.
    std::fs::set_permissions(
        &earlier,
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o600),
    )
    .unwrap();
    let upstream_url = format!("{}/v1", upstream.url);
    // (name, scenario id, --recording-out, what stderr says); a scenario without a fixture, so
    // the recording is what is refused.
    let cases = [
        (
            "an existing recording",
            "not_recorded_yet",
            "earlier.jsonl",
            "the file exists",
        ),
        (
            "a scenario id with ../",
            "../../escaped",
            "new.jsonl",
            "path separator",
        ),
    ];
    for (name, scenario, recording, says) in cases {
        let output = repo.keyless_within(&[
            "record",
            "--scenario",
            scenario,
            "--mode",
            "flash",
            "--prompt",
            "hi",
            "--upstream",
            &upstream_url,
            "--recording-out",
            recording,
        ]);
        assert_eq!(output.status.code(), Some(2), "{name}: {}", said(&output));
        assert!(
            String::from_utf8_lossy(&output.stderr).contains(says),
            "{name}: {}",
            said(&output)
        );
    }
    assert_eq!(
        std::fs::read_to_string(repo.path().join("earlier.jsonl")).unwrap(),
        "an earlier session\n"
    );
    assert!(!repo.path().join("new.jsonl").exists());
    assert!(!repo.path().join("../escaped.flash.json").exists());
}

/// Issue 34, findings 14, 15 and 20: a fixture's control characters (in its file name or its
/// id) are printed escaped; a fixture with a duplicate key is refused naming it; the time
/// limit's flag exists and is named. Issue 45, finding 12: two fixtures whose names are not
/// UTF-8 (and were once refused, their lossy names one) both run, each with its own golden
/// named with its bytes escaped (`%FF.flash.snap`).
#[test]
fn fixtures_are_reported_escaped_refused_with_duplicate_keys_and_run_with_non_utf8_names() {
    let repo = UserRepo::new();
    let fixtures = repo.path().join("fixtures");
    let text = std::fs::read_to_string(fixtures.join(format!("{FIXTURE}.json"))).unwrap();
    std::fs::write(fixtures.join("e\u{1b}[31mvil.flash.json"), &text).unwrap();
    let escaped_id = text.replacen("\"write_read_file\"", "\"evil\\u001b[2Jid\"", 1);
    let duplicate = text.replacen('{', "{\n  \"mode\": \"flash\",", 1);
    /// (name, the fixture added: its file and text, the arguments, exit status, what the
    /// output says)
    type Case<'a> = (
        &'a str,
        Option<(&'a str, &'a str)>,
        &'a [&'a str],
        i32,
        &'a [&'a str],
    );
    let cases: [Case; 4] = [
        (
            "a file name with an escape sequence",
            None,
            &["test"],
            1,
            &["e\\u{1b}[31mvil"],
        ),
        (
            "an id with an escape sequence",
            Some(("evil_id.flash.json", &escaped_id)),
            &["test"],
            2,
            &["evil_id.flash.json", "control character"],
        ),
        (
            "a duplicate key",
            Some(("duplicate.flash.json", &duplicate)),
            &["test"],
            2,
            &["duplicate.flash.json", "duplicate key \"mode\"", "line 4"],
        ),
        (
            "a time limit",
            None,
            &["test", FIXTURE, "--fixture-time-limit", "0"],
            1,
            &["--fixture-time-limit SECS"],
        ),
    ];
    for (name, added, args, status, says) in cases {
        if let Some((file, text)) = added {
            std::fs::write(fixtures.join(file), text).unwrap();
        }
        let output = repo.keyless_within(args);
        let everything = said(&output);
        assert_eq!(output.status.code(), Some(status), "{name}: {everything}");
        assert!(
            !everything.contains('\u{1b}'),
            "{name}: a raw ESC: {everything}"
        );
        for mention in says {
            assert!(
                everything.contains(mention),
                "{name}: {mention:?} not in {everything}"
            );
        }
        if let Some((file, _)) = added {
            std::fs::remove_file(fixtures.join(file)).unwrap();
        }
    }

    for name in [b"\xff.flash.json", b"\xfe.flash.json"] {
        let name = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name);
        std::fs::write(fixtures.join(name), &text).unwrap();
    }
    let golden = repo.path().join("golden");
    let both = ["test", "%FF.flash", "%FE.flash"];
    let first = repo.keyless_within(&both);
    assert_eq!(first.status.code(), Some(1), "{}", said(&first));
    for stem in ["%FF.flash", "%FE.flash"] {
        let pending = golden.join(format!("{stem}.snap.new"));
        assert!(
            pending.is_file(),
            "no {}: {}",
            pending.display(),
            said(&first)
        );
    }
    let accepted = repo.keyless_within(&["accept"]);
    assert_eq!(accepted.status.code(), Some(0), "{}", said(&accepted));
    let second = repo.keyless_within(&both);
    assert_eq!(second.status.code(), Some(0), "{}", said(&second));
}

/// Issue 34, finding 21: `keyless test --json | head -1` ends quietly when its reader closes
/// standard output, instead of panicking on the closed pipe.
#[test]
fn a_closed_standard_output_ends_the_run_quietly() {
    let repo = UserRepo::new();
    let fixtures = repo.path().join("fixtures");
    std::fs::copy(
        fixtures.join(format!("{FIXTURE}.json")),
        fixtures.join("write_read_file.pro.json"),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_keyless"))
        .args(["test", "--json"])
        .current_dir(repo.path())
        .env("OPENAI_API_KEY", placeholder_key())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut first,
    )
    .unwrap();
    assert!(first.starts_with('{'), "{first}");
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.code() != Some(101) && !stderr.contains("panicked"),
        "{}",
        said(&output)
    );
}

/// One request as raw bytes to `address`; the status line's code.
fn status_of(address: &str, request: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.split(' ').nth(1).unwrap_or("").to_owned()
}

#[test]
fn finding_3_and_4_a_standalone_model_server_resets_only_with_its_token_and_stops_promptly() {
    use std::io::{BufRead, Write};
    let repo = UserRepo::new();
    let token_file = repo.path().join("token");
    let mut child = Command::new(env!("CARGO_BIN_EXE_keyless"))
        .args(["model-server", "--port", "0", "--reset-token-file"])
        .arg(&token_file)
        .current_dir(repo.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let address = first
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .to_owned();
    let printed: Vec<String> = lines.by_ref().take(3).map(Result::unwrap).collect();
    let token = std::fs::read_to_string(&token_file).unwrap();
    let token = token.trim();
    assert_eq!(token.len(), 64, "{token}");
    assert!(
        printed
            .iter()
            .any(|line| line.contains("reset token") && line.ends_with(token)),
        "{printed:?}"
    );
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&token_file).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
    let reset = |header: &str| {
        status_of(
            &address,
            &format!(
                "POST /_keyless/reset HTTP/1.1\r\nhost: {address}\r\n{header}content-length: 2\r\nconnection: close\r\n\r\n{{}}"
            ),
        )
    };
    assert_eq!(reset(""), "403");
    assert_eq!(reset(&format!("x-keyless-reset-token: {token}\r\n")), "200");
    // A client holding half a request does not hold the stop.
    let mut held = std::net::TcpStream::connect(&address).unwrap();
    held.write_all(
        format!(
            "POST /v1/chat/completions HTTP/1.1\r\nhost: {address}\r\ncontent-length: 100\r\n\r\n{{"
        )
        .as_bytes(),
    )
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let started = std::time::Instant::now();
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = child.wait().unwrap();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "stopped after {:?}",
        started.elapsed()
    );
    assert!(status.success(), "{status:?}");
}
