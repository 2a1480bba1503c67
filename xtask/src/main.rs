//! `cargo xtask`: developer commands for this workspace, thin clap wrappers over the harness.
//! `cargo xtask --help` lists them; each has its own `--help`.

mod fixtures;
mod hash;
mod recordings;
mod replay;
mod replay_gateway;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// Developer commands for the replay workspace.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", about, long_about = None)]
struct Cli {
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
    Replay(replay::Args),
    /// Print the replay key of a message list: caller, conversation_hash, input_hash, canonical.
    ///
    /// The tool to reach for when a miss needs explaining: hash what the model was sent and
    /// compare with the fixture's turns.
    Hash(hash::Args),
    /// Fixture maintenance.
    #[command(subcommand)]
    Fixtures(fixtures::Command),
    /// Serve one fixture by replay on 127.0.0.1 (default port 8011) for frontend and browser work.
    ///
    /// Honours AUTH_JWT_SECRET (default ci-replay-secret), DEER_FLOW_AUTH_DISABLED=1 and, in a
    /// build with the test-seed feature, DEERFLOW_ENABLE_TEST_SEED=1.
    ReplayGateway(replay_gateway::Args),
    /// Manage provider-boundary recordings and the record/replay mode (next start).
    ///
    /// status, record, replay and off edit `record_replay` in `<state>/config.json`; list, show,
    /// delete and prune manage `<state>/recordings/`. The state directory is
    /// `$HARNESS_STATE_DIR`, else `.harness-state/` at the repository root.
    #[command(subcommand, arg_required_else_help = true)]
    Recordings(recordings::Command),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let Some(command) = cli.command else {
        let _ = Cli::command().print_help();
        return ExitCode::from(2);
    };
    let result = match command {
        Command::Replay(args) => replay::run(args),
        Command::Hash(args) => hash::run(args),
        Command::Fixtures(command) => fixtures::run(command),
        Command::ReplayGateway(args) => replay_gateway::run(args),
        Command::Recordings(command) => recordings::run(command),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// A multi-thread runtime for commands that boot gateways.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}
