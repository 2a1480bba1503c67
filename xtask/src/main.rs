//! `cargo xtask`: developer commands for this workspace, thin clap wrappers over the harness.
//! `cargo xtask --help` lists them; each has its own `--help`.

mod dist;
mod e2e;
mod fixtures;
mod hash;
mod model_server;
mod record;
mod recordings;
mod replay;
mod replay_gateway;
mod serve;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// Developer commands for the replay workspace.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", about, long_about = None)]
struct Cli {
    /// Show the gateway's and the harness's log lines (`-v` info, `-vv` debug). Without it,
    /// commands whose output is a report (replay, fixtures, hash, record) show errors only, and
    /// servers show warnings. `RUST_LOG` overrides both.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Replay fixtures through the in-process gateway and compare each with its golden.
    ///
    /// Runs every fixture in fixtures/ (or the ones named) and prints a table: scenario, mode,
    /// events, turns used of recorded, misses, golden (ok, changed, missing) and milliseconds.
    /// Exits 1 when any fixture misses, breaks the metadata/end framing, or has a changed golden.
    /// With --gateway-url, drives a gateway that runs elsewhere against a model server instead.
    Replay(replay::Args),
    /// Serve OpenAI-compatible Chat Completions on 127.0.0.1 by replay at the model's wire.
    ///
    /// For a gateway in any language: point its OpenAI base URL at the printed address, then run
    /// `cargo xtask replay --gateway-url`. Replays fixtures (default: all of fixtures/), a
    /// recording strictly (--recording), or records through a proxy (--record --upstream).
    /// Misses are printed as they happen and served at GET /_keyless/misses.
    ModelServer(Box<model_server::Args>),
    /// Print the replay key of a message list: caller, conversation_hash, input_hash, canonical.
    ///
    /// The tool to reach for when a miss needs explaining: hash what the model was sent and
    /// compare with the fixture's turns.
    Hash(hash::Args),
    /// Fixture maintenance.
    #[command(subcommand)]
    Fixtures(fixtures::Command),
    /// Serve fixtures by replay on 127.0.0.1 with the web client at / (one on port 8011, or the
    /// browser suite's set with --manifest).
    ///
    /// Every replay hit and miss is logged as it happens, each miss on stderr with its
    /// diagnostic; SIGINT or SIGTERM stops the gateways, lists their unused turns, and exits 1
    /// when any call missed. Honours AUTH_JWT_SECRET (default ci-replay-secret),
    /// DEER_FLOW_AUTH_DISABLED=1 (one gateway) and, in a build with the test-seed feature,
    /// DEERFLOW_ENABLE_TEST_SEED=1.
    ReplayGateway(replay_gateway::Args),
    /// Layer 2: render every fixture's replayed run in the web client in Chromium (Playwright).
    ///
    /// Runs npm ci when the client's lockfile changed and its build when its sources changed,
    /// builds the replay gateway with the seed route (target/e2e/replay-gateway), starts the
    /// browser suite's gateways (DEERFLOW_ENABLE_TEST_SEED=1), then Playwright against Debian's
    /// chromium-headless-shell or chromium (CHROMIUM_PATH, else PATH, the headless shell first).
    /// A line per test, then a summary; the HTML report and the screenshots go to target/e2e/.
    /// Exits 1 when a test fails or a replay call missed.
    E2e(e2e::Args),
    /// Record one real model run (needs OPENAI_API_KEY and OPENAI_API_BASE; never in CI).
    ///
    /// Boots the gateway with the recording provider around the real OpenAI-compatible model,
    /// drives register, thread, stream (and follow-ups), then suggestions, and writes the raw
    /// recording, its scenario metadata, and the fixture. RECORD_MODEL picks the model.
    Record(record::RecordArgs),
    /// Build a fixture from a recording and its scenario metadata, printing a line per turn.
    BuildFixture(record::BuildArgs),
    /// Serve the gateway from a configuration file with the record/replay mode applied.
    ///
    /// The mode comes from `cargo xtask recordings` (read once at start). An invalid
    /// configuration keeps the gateway up and fails every model call closed.
    Serve(serve::Args),
    /// Manage provider-boundary recordings and the record/replay mode (next start).
    ///
    /// status, record, replay and off edit `record_replay` in `<state>/config.json`; list, show,
    /// delete and prune manage `<state>/recordings/`. The state directory is
    /// `$KEYLESS_STATE_DIR`, else `.harness-state/` at the repository root.
    #[command(subcommand, arg_required_else_help = true)]
    Recordings(recordings::Command),
    /// Build what a release publishes for one platform into target/dist/: the wheel, the npm
    /// packages, the binary, SHA256SUMS.
    ///
    /// The wheel is maturin's (pinned in dist/requirements.txt, installed into target/dist-tools),
    /// with the binary as its script; the npm main package `keyless` runs the binary of this
    /// platform's `@keyless/cli-*` package (dist/platforms.json). Every package carries
    /// harness/cli/Cargo.toml's version. Needs python3 and npm, no network but PyPI for maturin.
    Dist(dist::Args),
}

impl Command {
    /// Whether the command's output is a report that log lines would break up (a table, JSON
    /// lines, a per-turn listing); a server's log lines are its output.
    fn reports(&self) -> bool {
        !matches!(
            self,
            Command::ReplayGateway(_) | Command::Serve(_) | Command::ModelServer(_)
        )
    }
}

/// The default log filter: `-v`/`-vv` raise it; otherwise a report shows errors only and a
/// server warnings.
fn log_level(verbose: u8, reports: bool) -> &'static str {
    match (verbose, reports) {
        (0, true) => "error",
        (0, false) => "warn",
        (1, _) => "info",
        _ => "debug",
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let Some(command) = cli.command else {
        let _ = Cli::command().print_help();
        return ExitCode::from(2);
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(log_level(cli.verbose, command.reports()))
    });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal, never into a pipe or a file.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let result = match command {
        Command::Replay(args) => replay::run(args),
        Command::Hash(args) => hash::run(args),
        Command::ModelServer(args) => model_server::run(*args),
        Command::Fixtures(command) => fixtures::run(command),
        Command::ReplayGateway(args) => replay_gateway::run(args),
        Command::E2e(args) => e2e::run(args),
        Command::Record(args) => record::record(args),
        Command::BuildFixture(args) => record::build(args),
        Command::Serve(args) => serve::run(args),
        Command::Recordings(command) => recordings::run(command),
        Command::Dist(args) => dist::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// The runtime for commands that boot gateways (the harness's, as its tests use).
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(keyless_runner::runtime()?)
}
