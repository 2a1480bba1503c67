//! `cargo bench -p harness --bench phases`: where one fixture's time goes, phase by phase
//! (issue 46). Printed as tables of medians, never asserted: these machines are noisy.
//!
//! - `layer1`: one Layer 1 fixture (`write_read_file.ultra`) as the golden test runs it. First
//!   as a whole process: the golden test binary of the same build, filtered to that fixture,
//!   against the same binary filtered to nothing (process start to `main`, datatest's listing,
//!   exit). Then one round per fresh process (this benchmark started again as a child), phase
//!   by phase from process start to `main`: what the whole process is made of, first page faults
//!   and lazy statics included. Then in this process, phase by phase: the Tokio runtime, the
//!   fixture's load, the gateway's boot, register, thread, run, the gateway's shutdown, the
//!   shape reduction, the verdict (which reads the golden) and insta's assertion.
//! - `keyless`: one `keyless test` fixture on `examples/python-gateway` under `--reuse-gateway`
//!   (a gateway started once, the model server switched per fixture), phase by phase: the model
//!   server's reset, the drive, the verdict (the model server's ledger and the golden) and the
//!   report (the JSON and table lines, the stale pending golden removed). Interleaved with the
//!   gateway's own time: the same requests sent straight to the same gateway by a bare HTTP
//!   client, nothing of keyless in between (no reset, no SSE parsing, no verdict; the model
//!   server still answers the gateway's model calls, as it must). With `KEYLESS` set to a
//!   `keyless` binary, also `keyless test --reuse-gateway --jobs 1` itself on 1 and on 17 copies
//!   of the fixture: the cost of an extra fixture as the user sees it.
//!
//! ```sh
//! CARGO_TARGET_DIR=target-release cargo test --release --test golden --no-run  # the process rows
//! CARGO_TARGET_DIR=target-release cargo bench -p harness --bench phases -- layer1
//! PYTHON=target/ci-venv/bin/python KEYLESS=target-release/release/keyless \
//!   CARGO_TARGET_DIR=target-release cargo bench -p harness --bench phases -- keyless
//! ```
//!
//! `keyless` needs `PYTHON`, a Python with `examples/python-gateway/requirements.txt`; without
//! it that part is skipped with a notice. No argument runs both. `layer1-warm` runs only the
//! in-process Layer 1 rounds, for a profiler (`perf record -g`) to see them alone.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness::in_process::{InProcess, options};
use harness::workspace::{fixtures_dir, golden_dir, workspace_root};
use keyless_runner::{
    Drive, DriveOptions, GatewayCommand, GatewayTarget, Mode, ModelLedger, ModelServer, Reused,
    ScenarioRun, ServerOptions, Session, Transcripts,
    goldens::pending_path,
    runtime,
    suite::{json_line, table_line},
};
use replay_core::{LoadedFixture, UnusedTurns};
use serde_json::{Value, json};

const LAYER1_FIXTURE: &str = "write_read_file.ultra";
const LAYER1_ROUNDS: usize = 60;
const PROCESS_ROUNDS: usize = 40;
const KEYLESS_ROUNDS: usize = 60;
const WARMUP: usize = 5;
/// `keyless test` itself: rounds of (1 fixture, `COPIES` fixtures), interleaved.
const END_TO_END_ROUNDS: usize = 5;
const COPIES: usize = 17;

/// Samples per phase, in the order the phases were first recorded.
#[derive(Default)]
struct Phases {
    rows: Vec<(String, Vec<Duration>)>,
}

impl Phases {
    fn add(&mut self, phase: &str, took: Duration) {
        match self.rows.iter_mut().find(|(name, _)| name == phase) {
            Some((_, samples)) => samples.push(took),
            None => self.rows.push((phase.to_owned(), vec![took])),
        }
    }

    /// Times `work` as `phase`.
    fn time<T>(&mut self, phase: &'static str, work: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let value = work();
        self.add(phase, started.elapsed());
        value
    }

    fn median(&self, phase: &str) -> Duration {
        let (_, samples) = (self.rows.iter())
            .find(|(name, _)| name == phase)
            .unwrap_or_else(|| panic!("no phase {phase}"));
        percentile(samples, 0.5)
    }

    /// One line per phase: median, p90, share of the sum of medians; then that sum.
    fn print(&self, title: &str) {
        let total: Duration = self.rows.iter().map(|(_, s)| percentile(s, 0.5)).sum();
        println!("\n{title}");
        println!(
            "| {:<48} | {:>10} | {:>10} | {:>6} |",
            "phase", "median ms", "p90 ms", "share"
        );
        println!("|{:-<50}|{:-<12}|{:-<12}|{:-<8}|", "", "", "", "");
        for (name, samples) in &self.rows {
            let median = percentile(samples, 0.5);
            println!(
                "| {name:<48} | {:>10.3} | {:>10.3} | {:>5.1}% |",
                ms(median),
                ms(percentile(samples, 0.9)),
                100.0 * median.as_secs_f64() / total.as_secs_f64().max(1e-12),
            );
        }
        println!(
            "| {:<48} | {:>10.3} | {:>10} | {:>6} |",
            "sum of medians",
            ms(total),
            "",
            ""
        );
    }
}

fn percentile(samples: &[Duration], fraction: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted[((sorted.len() as f64 * fraction) as usize).min(sorted.len() - 1)]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// The golden test binary of this build (`target/<profile>/deps/golden-<hash>`, the newest), if
/// `cargo test --test golden --no-run` built it.
fn golden_binary() -> Option<PathBuf> {
    let deps = std::env::current_exe().ok()?.parent()?.to_path_buf();
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(deps)
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let binary = name.starts_with("golden-") && !name.contains('.');
            Some((entry.metadata().ok()?.modified().ok()?, entry.path())).filter(|_| binary)
        })
        .collect();
    found.sort();
    found.pop().map(|(_, path)| path)
}

/// The golden test binary run as a whole process with `--exact <test>`: its wall time.
fn process_run(binary: &Path, test: &str) -> Duration {
    let started = Instant::now();
    let status = Command::new(binary)
        .args(["--exact", test])
        .current_dir(workspace_root())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("the golden test binary starts");
    let took = started.elapsed();
    assert!(
        status.success(),
        "{} --exact {test}: {status}",
        binary.display()
    );
    took
}

fn layer1_process() {
    let Some(binary) = golden_binary() else {
        println!(
            "\nlayer1 as a process: skipped, no golden test binary beside this benchmark (build it with `cargo test --release --test golden --no-run` in the same target folder)"
        );
        return;
    };
    let test = format!("golden::{LAYER1_FIXTURE}.json");
    let mut phases = Phases::default();
    for round in 0..PROCESS_ROUNDS + WARMUP {
        let empty = process_run(&binary, "golden::no-such-fixture.json");
        let whole = process_run(&binary, &test);
        if round >= WARMUP {
            phases.add("process, no test (start to main, listing, exit)", empty);
            phases.add("process, one fixture (whole)", whole);
        }
    }
    println!("\n{} (n={PROCESS_ROUNDS}, interleaved)", binary.display());
    for (name, samples) in &phases.rows {
        println!(
            "  {name}: median {:.2} ms, p10 {:.2} ms, p90 {:.2} ms",
            ms(percentile(samples, 0.5)),
            ms(percentile(samples, 0.1)),
            ms(percentile(samples, 0.9))
        );
    }
    let inside = phases
        .median("process, one fixture (whole)")
        .saturating_sub(phases.median("process, no test (start to main, listing, exit)"));
    println!(
        "  the fixture's test inside the process: {:.2} ms (whole minus no test)",
        ms(inside)
    );
}

/// Asserts `document` against `golden/<stem>.snap` as `tests/golden.rs` does.
fn insta_assert(stem: &str, document: String) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(golden_dir());
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.set_description(format!("fixture: fixtures/{stem}.json"));
    settings.bind(|| insta::assert_snapshot!(stem, document));
}

/// One Layer 1 fixture in this process, as `tests/golden.rs`'s `golden` runs it, phase by phase.
fn layer1_round(fixture: &Path, phases: &mut Phases) {
    let runtime = phases.time("tokio runtime (build)", || runtime().expect("runtime"));
    let run = runtime.block_on(async {
        let loaded = phases.time("fixture load (read, validate)", || {
            LoadedFixture::load(fixture).expect("the fixture loads")
        });
        let mut target = InProcess::default();
        let started = Instant::now();
        let url = target.start(&loaded).await.expect("the gateway boots");
        phases.add(
            "gateway boot (tempdir, config, app, db, listen)",
            started.elapsed(),
        );
        let started = Instant::now();
        let mut session = Session::open(&url, &DriveOptions::default())
            .await
            .expect("register");
        phases.add("register (client, register, csrf)", started.elapsed());
        let scenario = &loaded.fixture().scenario;
        let started = Instant::now();
        session.begin(scenario).await.expect("thread");
        phases.add("thread", started.elapsed());
        let started = Instant::now();
        let transcripts =
            (session.runs(scenario, &loaded.fixture().turns).await).expect("the run streams");
        phases.add("run (runs/stream, SSE read)", started.elapsed());
        let started = Instant::now();
        drop(session);
        let ledger = target.finish().await.expect("the ledger");
        phases.add(
            "gateway shutdown, tempdir removed, ledger",
            started.elapsed(),
        );
        scenario_run(&loaded, transcripts, ledger)
    });
    phases.time("tokio runtime (shutdown)", || drop(runtime));
    let document = phases.time("shape reduction (golden document)", || {
        run.golden_document()
    });
    let verdict = phases.time("verdict (framing, misses, golden read)", || run.verdict());
    assert!(verdict.replayed_cleanly(), "{}", run.report(&verdict));
    phases.time("golden compare (insta assert)", || {
        insta_assert(&run.stem(), document)
    });
}

/// The run `keyless_runner::run` would return for these parts.
fn scenario_run(
    loaded: &LoadedFixture,
    transcripts: Vec<keyless_runner::RunTranscript>,
    ledger: ModelLedger,
) -> ScenarioRun {
    let options = options();
    ScenarioRun {
        fixture_path: loaded.path().to_path_buf(),
        fixture: loaded.fixture().clone(),
        drive: Drive::Session(DriveOptions::default()),
        transcripts,
        exchanges: Vec::new(),
        misses: ledger.misses,
        ambiguities: ledger.ambiguities,
        model_errors: ledger.other_problems,
        unused_turns: ledger.unused_turns,
        faults_fired: ledger.faults_fired,
        boundaries: ledger.boundaries,
        elapsed: Duration::ZERO,
        golden_dir: options.golden_dir,
        transcripts_shown: Transcripts::Cut,
        voice: replay_core::Voice::default(),
        ignored: keyless_runner::IgnoredEvents::default(),
    }
}

/// Set in a child process of [`layer1_cold`]: the parent's wall clock at the spawn, in
/// nanoseconds since the epoch; the child runs one round and prints its phases.
const COLD_ROUND: &str = "PHASES_COLD_ROUND_SPAWNED_AT";

/// One Layer 1 fixture in a fresh process each time (this benchmark run as a child), phase by
/// phase: what the whole-process figure is made of, cold caches, lazy statics and first page
/// faults included, which the warm rounds in one process do not see.
fn layer1_cold() {
    let mut phases = Phases::default();
    for round in 0..PROCESS_ROUNDS + WARMUP {
        let spawned_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("the clock is after 1970");
        let started = Instant::now();
        let output = Command::new(std::env::current_exe().expect("this benchmark's path"))
            .env(COLD_ROUND, spawned_at.as_nanos().to_string())
            .current_dir(workspace_root())
            .stderr(Stdio::inherit())
            .output()
            .expect("the benchmark starts as a child");
        let whole = started.elapsed();
        assert!(output.status.success(), "the cold round failed");
        if round < WARMUP {
            continue;
        }
        for line in String::from_utf8_lossy(&output.stdout).lines() {
            let (name, nanos) = line
                .rsplit_once('\t')
                .expect("a phase line: name, tab, nanos");
            phases.add(name, Duration::from_nanos(nanos.parse().expect("nanos")));
        }
        phases.add("the child process, spawn to exit (whole)", whole);
    }
    phases.print(&format!(
        "Layer 1, {LAYER1_FIXTURE}, one round per fresh process (n={PROCESS_ROUNDS}; the last row is the whole, not a phase)"
    ));
}

/// The child's side of [`layer1_cold`]: one round, its phases printed as `name<TAB>nanos`.
fn layer1_cold_child(spawned_at: &str) {
    let spawned_at = Duration::from_nanos(spawned_at.parse().expect("nanos since the epoch"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("the clock is after 1970");
    let mut phases = Phases::default();
    phases.add(
        "process start to main (exec, loader, std)",
        now.saturating_sub(spawned_at),
    );
    let fixture = fixtures_dir().join(format!("{LAYER1_FIXTURE}.json"));
    layer1_round(&fixture, &mut phases);
    for (name, samples) in &phases.rows {
        println!("{name}\t{}", samples[0].as_nanos());
    }
}

/// `layer1`: the process rows, the fresh-process rounds, then the rounds in this process.
/// `warm_only` (the `layer1-warm` argument) runs only the last, for a profiler to see the
/// phases without process start-up.
fn layer1(warm_only: bool) {
    if !warm_only {
        layer1_process();
        layer1_cold();
    }
    let fixture = fixtures_dir().join(format!("{LAYER1_FIXTURE}.json"));
    let mut phases = Phases::default();
    for _ in 0..WARMUP {
        layer1_round(&fixture, &mut Phases::default());
    }
    for _ in 0..LAYER1_ROUNDS {
        layer1_round(&fixture, &mut phases);
    }
    phases.print(&format!(
        "Layer 1, {LAYER1_FIXTURE} in this process (n={LAYER1_ROUNDS})"
    ));
}

/// The Python example's gateway command, as its `keyless.toml` says.
fn python_gateway(logs: &Path) -> GatewayCommand {
    GatewayCommand {
        command: "exec ${PYTHON:-python3} gateway.py".into(),
        working_dir: workspace_root().join("examples/python-gateway"),
        ready_path: "/health".into(),
        ready_timeout: Duration::from_secs(60),
        log_dir: logs.to_path_buf(),
        boundaries: Default::default(),
    }
}

/// The drive's requests sent straight to the gateway at `url` by a bare client: register, a
/// thread, each run request as the driver sent it (`bodies`), each stream read whole as bytes.
/// This is the gateway's own time for the drive: no keyless code between the client and the
/// gateway. DeerFlow's routes are written here on purpose, once, as the baseline's: the driver's
/// dialect (`driver/deerflow.rs`) is what the baseline must not go through.
async fn bare_drive(url: &str, bodies: &[Value]) {
    let http = reqwest::Client::builder()
        .cookie_store(true)
        .no_proxy()
        .tls_certs_only(Vec::new())
        .build()
        .expect("client");
    let api = format!("{url}/api");
    let email = format!(
        "bare-{}@example.com",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let response = (http.post(format!("{api}/v1/auth/register")))
        .json(&json!({"email": email, "password": "very-strong-password-123"}))
        .send()
        .await
        .expect("register");
    assert_eq!(response.status().as_u16(), 201, "register");
    let csrf = (response.cookies())
        .find(|cookie| cookie.name() == "csrf_token")
        .map(|cookie| cookie.value().to_owned())
        .expect("the csrf cookie");
    let thread = uuid::Uuid::new_v4().to_string();
    let response = (http.post(format!("{api}/threads")))
        .header("X-CSRF-Token", &csrf)
        .json(&json!({"thread_id": thread, "metadata": {}}))
        .send()
        .await
        .expect("thread");
    assert_eq!(response.status().as_u16(), 200, "thread");
    for body in bodies {
        let response = (http.post(format!("{api}/threads/{thread}/runs/stream")))
            .header("X-CSRF-Token", &csrf)
            .json(body)
            .send()
            .await
            .expect("run");
        assert_eq!(response.status().as_u16(), 200, "run");
        let bytes = response.bytes().await.expect("the stream");
        assert!(!bytes.is_empty());
    }
}

async fn keyless_rounds(python_fixture: &Path) {
    let logs = tempfile::tempdir().expect("tempdir");
    let loaded = LoadedFixture::load(python_fixture).expect("the example's fixture");
    let stem = keyless_runner::goldens::stem_of(python_fixture);
    let golden = workspace_root().join("examples/python-gateway/golden");
    let server = ModelServer::start(
        Mode::LoadedFixtures(vec![loaded.clone()]),
        ServerOptions::default(),
    )
    .await
    .expect("model server");
    // keyless test's own target under --reuse-gateway: the gateway started with the first
    // fixture and kept, the model server reset per fixture.
    let mut reused = Reused::new(python_gateway(logs.path()), &server.base_url(), "bench")
        .expect("the target")
        .with_reset_token(server.reset_token());
    let fixture = loaded.fixture();
    let mut keyless = Phases::default();
    let mut alone = Phases::default();
    let mut bodies = Vec::new();
    reused
        .start(&loaded)
        .await
        .expect("the Python gateway starts");
    reused.finish().await.expect("the ledger");
    for round in 0..KEYLESS_ROUNDS + WARMUP {
        let mut phases = Phases::default();
        // keyless test's work per fixture (`keyless_runner::run` over `Reused`, then `judge`).
        // The model server's reset: the target's start (the shared gateway is kept) and the
        // replay's opening when the run begins (`POST /_keyless/reset`).
        let started = Instant::now();
        let url = reused.start(&loaded).await.expect("reset");
        let mut reset = started.elapsed();
        let started = Instant::now();
        let mut session = Session::open(&url, &DriveOptions::default())
            .await
            .expect("open");
        // As `keyless_runner::run` drives: the thread, then the replay opens, then the runs.
        session.begin(&fixture.scenario).await.expect("thread");
        let mut drive = started.elapsed();
        let started = Instant::now();
        reused.run_begins().await;
        reset += started.elapsed();
        let started = Instant::now();
        let transcripts = (session.runs(&fixture.scenario, &fixture.turns).await).expect("drive");
        drop(session);
        drive += started.elapsed();
        phases.add("model server reset", reset);
        phases.add("drive (register, thread, runs, SSE parsed)", drive);
        let started = Instant::now();
        let ledger = reused.finish().await.expect("the model server's ledger");
        let mut run = scenario_run(&loaded, transcripts, ledger);
        run.golden_dir = golden.clone();
        let verdict = run.verdict_with(UnusedTurns::Lenient);
        phases.add("verdict (ledger, shapes, golden read)", started.elapsed());
        assert!(
            verdict.passes(replay_core::MissingGolden::Fails),
            "{}",
            run.report(&verdict)
        );
        let started = Instant::now();
        let mut line = json_line(&run, &verdict);
        line["pending_golden"] = Value::Null;
        let _ = std::fs::remove_file(pending_path(&golden, &run.stem()));
        let printed = format!("{}\n{line}\n", table_line(&run, &verdict));
        std::hint::black_box(printed);
        phases.add("report (lines, stale pending removed)", started.elapsed());
        if bodies.is_empty() {
            bodies = run.transcripts.iter().map(|t| t.request.clone()).collect();
        }
        // The same drive with nothing of keyless in between (the reset and the ledger are
        // untimed: the gateway's model calls must hit, and that is checked).
        let url = reused.start(&loaded).await.expect("reset");
        reused.run_begins().await;
        let started = Instant::now();
        bare_drive(&url, &bodies).await;
        let bare = started.elapsed();
        let ledger = reused.finish().await.expect("the model server's ledger");
        assert!(
            ledger.misses.is_empty() && ledger.other_problems.is_empty(),
            "{ledger:?}"
        );
        if round >= WARMUP {
            for (name, samples) in phases.rows {
                keyless.add(&name, samples[0]);
            }
            alone.add("the gateway alone: the same requests, bare client", bare);
        }
    }
    reused.stop().await;
    keyless.print(&format!(
        "keyless test per fixture under --reuse-gateway, {stem} on examples/python-gateway (n={KEYLESS_ROUNDS})"
    ));
    alone.print("the gateway's own time for the same drive (interleaved with the rows above)");
    let drive = keyless.median("drive (register, thread, runs, SSE parsed)");
    let own = keyless.median("model server reset")
        + keyless.median("verdict (ledger, shapes, golden read)")
        + keyless.median("report (lines, stale pending removed)")
        + drive.saturating_sub(alone.median("the gateway alone: the same requests, bare client"));
    println!(
        "keyless's own per fixture: {:.3} ms (reset + verdict + report + drive beyond the bare client's)",
        ms(own)
    );
}

/// `keyless test --reuse-gateway --jobs 1` on `count` copies of the example's fixture in
/// `folder`: its wall time.
fn keyless_test(keyless: &Path, folder: &Path, count: usize) -> Duration {
    let fixtures = folder.join(format!("fixtures-{count}"));
    let golden = folder.join(format!("golden-{count}"));
    let started = Instant::now();
    let output = Command::new(keyless)
        .args([
            "test",
            "--reuse-gateway",
            "--jobs",
            "1",
            "--json",
            "--fixtures",
        ])
        .arg(&fixtures)
        .arg("--golden")
        .arg(&golden)
        .current_dir(folder)
        .stderr(Stdio::null())
        .output()
        .expect("keyless starts");
    let took = started.elapsed();
    assert!(
        output.status.success(),
        "keyless test on {count}: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).lines().count(),
        count
    );
    took
}

fn keyless_end_to_end(keyless: &Path) {
    let example = workspace_root().join("examples/python-gateway");
    let folder = tempfile::tempdir().expect("tempdir");
    for file in ["gateway.py", "keyless.toml"] {
        std::fs::copy(example.join(file), folder.path().join(file)).expect("copy");
    }
    for count in [1, COPIES] {
        let (fixtures, golden) = (
            folder.path().join(format!("fixtures-{count}")),
            folder.path().join(format!("golden-{count}")),
        );
        std::fs::create_dir_all(&fixtures).expect("fixtures");
        std::fs::create_dir_all(&golden).expect("golden");
        for i in 0..count {
            let stem = format!("word_count_{i:02}.flash");
            std::fs::copy(
                example.join("fixtures/word_count.flash.json"),
                fixtures.join(format!("{stem}.json")),
            )
            .expect("copy the fixture");
            std::fs::copy(
                example.join("golden/word_count.flash.snap"),
                golden.join(format!("{stem}.snap")),
            )
            .expect("copy the golden");
        }
    }
    let mut one = Vec::new();
    let mut many = Vec::new();
    keyless_test(keyless, folder.path(), 1);
    for _ in 0..END_TO_END_ROUNDS {
        one.push(keyless_test(keyless, folder.path(), 1));
        many.push(keyless_test(keyless, folder.path(), COPIES));
    }
    let (one, many) = (percentile(&one, 0.5), percentile(&many, 0.5));
    println!(
        "\n`keyless test --reuse-gateway --jobs 1` ({}): 1 fixture median {:.1} ms, {COPIES} fixtures median {:.1} ms: {:.2} ms per extra fixture (n={END_TO_END_ROUNDS}, interleaved)",
        keyless.display(),
        ms(one),
        ms(many),
        ms(many.saturating_sub(one)) / (COPIES - 1) as f64,
    );
}

fn keyless_part() {
    if std::env::var_os("PYTHON").is_none() {
        println!(
            "\nkeyless: skipped, PYTHON is not set (a Python with examples/python-gateway/requirements.txt)"
        );
        return;
    }
    let fixture = workspace_root().join("examples/python-gateway/fixtures/word_count.flash.json");
    runtime()
        .expect("runtime")
        .block_on(keyless_rounds(&fixture));
    match std::env::var_os("KEYLESS") {
        Some(keyless) => keyless_end_to_end(&std::fs::canonicalize(keyless).expect("KEYLESS")),
        None => println!("\nkeyless test end to end: skipped, KEYLESS is not set"),
    }
}

fn main() {
    if let Some(spawned_at) = std::env::var_os(COLD_ROUND) {
        layer1_cold_child(&spawned_at.to_string_lossy());
        return;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let picked = |part: &str| {
        !args
            .iter()
            .any(|a| a.starts_with("layer1") || a == "keyless")
            || args.iter().any(|a| a == part)
    };
    if picked("layer1") {
        layer1(false);
    } else if picked("layer1-warm") {
        layer1(true);
    }
    if picked("keyless") {
        keyless_part();
    }
}
