//! `keyless record` as a user runs it, about what it keeps and what it refuses (issue 47, item 6;
//! issue 48): an existing fixture is replaced only with `--force`; a call that never reached the
//! upstream builds no fixture (exit 1, the fixture byte-identical, the raw recording kept and
//! named) unless `--keep-transport-errors`; a provider's own error answer builds its fixture; a
//! built fixture leaves no raw recording behind, in `.keyless/` or in a temporary folder.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use harness::adapter::process::placeholder_key;
use harness::workspace::fixtures_dir;
use replay_core::{Answer, Fixture};

use super::{FIXTURE, HUNG, Upstream, UserRepo, said};

/// The issue's upstream: nothing listens on port 9 (discard) on a test machine.
const UNREACHABLE: &str = "http://127.0.0.1:9/v1";

impl UserRepo {
    /// `keyless record --scenario write_read_file --mode flash <args>` in the user's folder,
    /// with its temporary folder (`TMPDIR`) in `tmp`, killed when it outlives [`HUNG`].
    fn record(&self, args: &[&str], tmp: &Path) -> Output {
        let (scenario, mode) = FIXTURE.split_once('.').unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_keyless"))
            .args(["record", "--scenario", scenario, "--mode", mode])
            .args(args)
            .current_dir(self.path())
            .env("OPENAI_API_KEY", placeholder_key())
            .env("TMPDIR", tmp)
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

    /// The committed fixture's bytes.
    fn fixture_bytes(&self) -> Vec<u8> {
        std::fs::read(self.path().join(format!("fixtures/{FIXTURE}.json"))).unwrap()
    }
}

/// Every file under `folder` (none when it does not exist).
fn files_under(folder: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut files = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// After a fixture was built: no raw recording left in `.keyless/recordings/` or in the
/// temporary folder keyless was given.
fn assert_no_recording_left(repo: &UserRepo, tmp: &Path, output: &Output) {
    let left: Vec<PathBuf> = files_under(&repo.path().join(".keyless/recordings"))
        .into_iter()
        .chain(
            files_under(tmp)
                .into_iter()
                .filter(|file| file.to_string_lossy().contains("recording")),
        )
        .collect();
    assert_eq!(left, Vec::<PathBuf>::new(), "{}", said(output));
}

/// The issue's reproduction: an upstream nobody listens on. Even with `--force`, the run exits
/// 1 naming the upstream, the transport's error and what to check, the committed fixture stays
/// byte-identical, and the raw recording it names is kept. `--keep-transport-errors` records the
/// failures anyway.
#[test]
fn a_call_that_never_reached_the_upstream_fails_the_recording_and_keeps_the_fixture() {
    let repo = UserRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let committed = repo.fixture_bytes();
    let output = repo.record(
        &["--prompt", "x", "--upstream", UNREACHABLE, "--force"],
        tmp.path(),
    );
    assert_eq!(output.status.code(), Some(1), "{}", said(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    for says in [
        "never got an answer from the upstream http://127.0.0.1:9/v1",
        "APIConnectionError",
        "Connection refused",
        "check the upstream URL",
        "--keep-transport-errors",
    ] {
        assert!(stderr.contains(says), "{says:?} in {}", said(&output));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("0 answered by the upstream, 0 answered with the provider's error"),
        "{}",
        said(&output)
    );
    assert_eq!(repo.fixture_bytes(), committed, "the fixture was replaced");
    let kept = stderr
        .split("the raw recording is kept: ")
        .nth(1)
        .and_then(|rest| rest.split(" (its scenario").next())
        .unwrap_or_else(|| panic!("no kept recording named: {}", said(&output)));
    assert!(
        Path::new(kept).is_file() && kept.contains(".keyless/recordings/"),
        "{kept}: {}",
        said(&output)
    );

    let kept_anyway = repo.record(
        &[
            "--prompt",
            "x",
            "--upstream",
            UNREACHABLE,
            "--force",
            "--keep-transport-errors",
        ],
        tmp.path(),
    );
    assert_eq!(kept_anyway.status.code(), Some(0), "{}", said(&kept_anyway));
    let built = Fixture::load(&repo.path().join(format!("fixtures/{FIXTURE}.json"))).unwrap();
    assert!(
        built.turns.iter().all(|turn| matches!(
            &turn.answer,
            Answer::Error(error) if error.error_type == "APIConnectionError"
        )),
        "{}",
        said(&kept_anyway)
    );
}

/// A scripted upstream that answers every request with a 429 and its body, as a provider
/// refusing a burst does. Its thread ends with the test process.
fn rate_limited_upstream() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            // The whole request is read before the answer, so the client never meets a reset.
            let mut reader = BufReader::new(stream);
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let answer = r#"{"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}}"#;
            let _ = write!(
                reader.get_mut(),
                "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n\
                 content-length: {}\r\nconnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    format!("http://{address}/v1")
}

/// A provider's own error answer is an answer: the 429 is recorded as the fixture's turns, the
/// run exits 0, the summary counts it as the provider's error, and no raw recording is left.
#[test]
fn a_provider_error_answer_builds_its_fixture() {
    let repo = UserRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let upstream = rate_limited_upstream();
    let output = repo.record(
        &[
            "--prompt",
            "x",
            "--upstream",
            &upstream,
            "--fixtures",
            "recorded",
        ],
        tmp.path(),
    );
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
    let built = Fixture::load(&repo.path().join(format!("recorded/{FIXTURE}.json")))
        .unwrap_or_else(|err| panic!("{err}\n{}", said(&output)));
    assert!(!built.turns.is_empty(), "{}", said(&output));
    // Issue 43: the fixture says when, where, at which wire and by which keyless it was recorded.
    let provenance = built
        .provenance
        .as_ref()
        .expect("a recorded fixture has its provenance");
    assert_eq!(provenance.upstream, upstream);
    assert_eq!(provenance.wires, ["openai.chat.completions"]);
    assert_eq!(provenance.models.len(), 1, "{provenance:?}");
    assert_eq!(provenance.keyless_version, env!("CARGO_PKG_VERSION"));
    let age = chrono::Utc::now() - provenance.recorded_at;
    assert!(age.num_seconds() < 600, "recorded {age} ago");
    for turn in &built.turns {
        let Answer::Error(error) = &turn.answer else {
            panic!("a turn that is not the 429: {}", said(&output));
        };
        assert_eq!(error.status, Some(429), "{}", said(&output));
    }
    let calls = built.turns.len();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let summary = format!(
        "{calls} model call(s): 0 answered by the upstream, {calls} answered with the \
         provider's error, 0 never reached it"
    );
    assert!(
        stdout.contains(&summary),
        "{summary:?} in {}",
        said(&output)
    );
    assert_no_recording_left(&repo, tmp.path(), &output);
}

/// An existing fixture is refused, naming it, before anything is recorded (exit 2); `--force`
/// records it again, and the raw recording goes once the fixture is built.
#[test]
fn an_existing_fixture_is_replaced_only_with_force_and_no_recording_is_left() {
    let repo = UserRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let shipped = Fixture::load(&fixtures_dir().join(format!("{FIXTURE}.json"))).unwrap();
    let upstream = Upstream::start(&repo);
    let upstream_url = format!("{}/v1", upstream.url);
    let committed = repo.fixture_bytes();
    let args = [
        "--prompt",
        &shipped.scenario.prompt,
        "--upstream",
        &upstream_url,
    ];
    let refused = repo.record(&args, tmp.path());
    assert_eq!(refused.status.code(), Some(2), "{}", said(&refused));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    let fixture = repo.path().join(format!("fixtures/{FIXTURE}.json"));
    for says in [&format!("{} exists", fixture.display()), "--force"] {
        assert!(stderr.contains(says), "{says:?} in {}", said(&refused));
    }
    assert_eq!(repo.fixture_bytes(), committed);
    assert!(
        !repo.path().join(".keyless/recordings").exists(),
        "a refused run recorded: {}",
        said(&refused)
    );

    let forced = repo.record(&[&args[..], &["--force"]].concat(), tmp.path());
    assert_eq!(forced.status.code(), Some(0), "{}", said(&forced));
    let built = Fixture::load(&fixture).unwrap();
    // The drive sends the prompt only (no suggestions call): the shipped fixture's first three.
    let keys: Vec<&str> = built.turns.iter().map(|t| t.input_hash.as_str()).collect();
    let shipped_keys: Vec<&str> = shipped.turns[..3]
        .iter()
        .map(|t| t.input_hash.as_str())
        .collect();
    assert_eq!(keys, shipped_keys, "{}", said(&forced));
    assert!(
        String::from_utf8_lossy(&forced.stdout).contains("3 answered by the upstream"),
        "{}",
        said(&forced)
    );
    assert_no_recording_left(&repo, tmp.path(), &forced);
    // The folder it used is git-ignored by its own .gitignore.
    let ignore = std::fs::read_to_string(repo.path().join(".keyless/.gitignore")).unwrap();
    assert!(ignore.lines().any(|line| line == "*"), "{ignore}");
}

/// An upstream that accepts each connection and closes it before any byte of an answer (a reset
/// before the status line). Its thread ends with the test process.
fn hanging_up_upstream() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            drop(stream);
        }
    });
    format!("http://{address}/v1")
}

/// `model-server --record` keeps the same rule at its stop: a call that never got an answer (no
/// listener, or one that hangs up before answering) builds no fixture (exit 1, naming the
/// upstream), and the committed fixture stays byte-identical even with `--force`.
#[test]
fn model_server_record_builds_no_fixture_from_a_call_that_never_reached_the_upstream() {
    let repo = UserRepo::new();
    let committed = repo.fixture_bytes();
    for upstream in [UNREACHABLE.to_owned(), hanging_up_upstream()] {
        let printed = record_one_call_through_model_server(&repo, &upstream);
        assert!(
            printed.contains(&format!("never got an answer from the upstream {upstream}"))
                && printed.contains("1 never reached it"),
            "{upstream}: {printed}"
        );
        assert_eq!(
            repo.fixture_bytes(),
            committed,
            "{upstream}: the fixture was replaced"
        );
    }
}

/// `keyless model-server --record --force` in front of `upstream`: one Chat Completions call,
/// then SIGTERM; what it printed, once it exited 1.
fn record_one_call_through_model_server(repo: &UserRepo, upstream: &str) -> String {
    let (scenario, mode) = FIXTURE.split_once('.').unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_keyless"))
        .args(["model-server", "--record", "--port", "0", "--force"])
        .args(["--upstream", upstream, "--scenario", scenario])
        .args(["--mode", mode, "--prompt", "x"])
        .current_dir(repo.path())
        .env("OPENAI_API_KEY", placeholder_key())
        .env_remove("CARGO_MANIFEST_DIR")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let address = first
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {first:?}"))
        .to_owned();
    let body = r#"{"model": "m", "messages": [{"role": "user", "content": "x"}]}"#;
    let status = super::status_of(
        &address,
        &format!(
            "POST /v1/chat/completions HTTP/1.1\r\nhost: {address}\r\ncontent-type: \
             application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        ),
    );
    assert_ne!(status, "200", "{upstream} answered");
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let mut printed = String::new();
    stdout.read_to_string(&mut printed).unwrap();
    let code = child.wait().unwrap().code();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut printed)
        .unwrap();
    assert_eq!(code, Some(1), "{upstream}: {printed}");
    printed
}

/// `record --serve` too: what a client drove against an unreachable upstream builds no fixture at
/// the stop (exit 1, naming the upstream), and the committed fixture stays byte-identical.
#[test]
fn record_serve_builds_no_fixture_from_a_call_that_never_reached_the_upstream() {
    let repo = UserRepo::new();
    let committed = repo.fixture_bytes();
    let shipped = Fixture::load(&fixtures_dir().join(format!("{FIXTURE}.json"))).unwrap();
    let (scenario, mode) = FIXTURE.split_once('.').unwrap();
    let recording = super::Serving::run(
        &repo,
        &[
            "record",
            "--serve",
            "--force",
            "--scenario",
            scenario,
            "--mode",
            mode,
            "--upstream",
            UNREACHABLE,
        ],
        &[],
    );
    keyless_runner::runtime().unwrap().block_on(async {
        let options = keyless_runner::DriveOptions::default();
        let mut session = keyless_runner::Session::open(&recording.url("gateway_url"), &options)
            .await
            .unwrap();
        // The gateway answers its fallback message or fails the run: either way the model call
        // never reached the upstream.
        let _ = session.run_scenario(&shipped.scenario, &[]).await;
    });
    let (code, printed) = recording.stop();
    assert_eq!(code, Some(1), "{printed}");
    assert!(
        printed.contains("never got an answer from the upstream http://127.0.0.1:9/v1"),
        "{printed}"
    );
    assert_eq!(repo.fixture_bytes(), committed, "the fixture was replaced");
}
