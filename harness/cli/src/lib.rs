//! `keyless`: keyless contract tests for agent gateways, as one installable command
//! (`cargo install --path harness/cli --locked`) that lives in your repository beside your
//! fixtures and goldens. It compiles no gateway: everything it runs is `keyless_runner`'s.
//!
//! - [`config`]: `keyless.toml`, parsed once into typed values, merged with the flags;
//!   [`init`]: the commented file `keyless init` writes.
//! - [`gateway`]: the gateway a command starts for each fixture, or the one running.
//! - [`test_run`]: `keyless test`, every fixture through a gateway it starts (or one that runs),
//!   several at once (`--jobs`); [`partition`]: one CI machine's shard of them (`--partition`);
//!   [`junit`]: the run as a JUnit XML report (`--junit`); [`reporter`]: the table, JSON
//!   lines, JUnit cases and progress bar over the runner's events.
//! - [`goldens`]: `keyless accept` and `keyless review`, pending goldens in insta's format.
//! - [`record`]: `keyless record`, a real model run through the gateway recorded into a fixture;
//!   [`recorded`]: what a recording session keeps, and when it refuses to write its fixture.
//! - [`drift`]: `keyless drift`, each fixture recorded again and compared with the committed one
//!   (identical, benign or breaking).
//! - [`serve`]: `keyless serve`, the model server and the gateway held up for a browser suite.
//! - [`model_server`]: `keyless model-server`, the model server on its own (also behind
//!   `cargo xtask model-server`).
//! - [`output`]: everything printed, control characters escaped, a closed stdout a quiet end.

pub mod age;
pub mod config;
pub mod drift;
pub mod gateway;
pub mod goldens;
pub mod init;
pub mod junit;
pub mod model_server;
pub mod output;
pub mod partition;
pub mod record;
pub mod recorded;
pub mod reporter;
pub mod serve;
pub mod test_run;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::config::{ConfigError, Loaded};

/// keyless: keyless contract tests for agent gateways.
///
/// Record one real model run once (`keyless record`); from then on `keyless test` replays it
/// through your gateway, keyless and deterministic: a model server answers the gateway's model
/// calls from the recording, on any of five wires (OpenAI Chat Completions, OpenAI Responses,
/// Anthropic Messages, Gemini, Bedrock Converse), and the gateway's Server-Sent Events are
/// compared with a golden snapshot. The driver speaks six API dialects (`--api`): deerflow,
/// langgraph, ai-sdk, ag-ui, openai-chat and openai-responses.
#[derive(Debug, Parser)]
#[command(
    name = "keyless",
    version,
    after_help = "Examples:
  keyless init                  # write a commented keyless.toml here
  keyless test                  # every fixture through the gateway keyless.toml starts
  keyless review                # look at each new or changed golden, accept or reject it
  keyless accept                # accept every pending golden
  keyless serve --port 3000     # the replayed gateway, held up for your browser suite
  keyless drift --report drift.md   # record every fixture again: has the provider moved?
  pytest                        # the `keyless` pytest fixture (pip install keyless pytest)

Exit status: 0 success; 1 a fixture failed (or a command's work failed); 2 a usage or
configuration error."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Write a commented keyless.toml in the current folder (never over an existing one).
    #[command(after_help = "Example:\n  keyless init && $EDITOR keyless.toml")]
    Init,
    /// Replay every fixture through the gateway and compare each with its golden.
    Test(test_run::Args),
    /// Accept pending goldens (`<name>.snap.new`): all of them, or the one named.
    Accept(goldens::AcceptArgs),
    /// Show each pending golden's diff and ask whether to accept it.
    Review(goldens::ReviewArgs),
    /// Record a real model run through the gateway into a fixture.
    Record(record::Args),
    /// Record every fixture again against the real upstream and say what changed: identical,
    /// benign (only text) or breaking.
    Drift(drift::Args),
    /// Hold the replayed gateway up for a browser suite until SIGTERM or SIGINT; exit 0 only if
    /// every model call was answered as recorded.
    Serve(serve::Args),
    /// Serve fixtures (or a recording) as an OpenAI-compatible model on 127.0.0.1, for a gateway
    /// you start yourself.
    ModelServer(model_server::Args),
    /// Internal: become the gateway command, killed by the kernel when keyless dies (Linux).
    #[command(name = LAUNCH_COMMAND, hide = true)]
    Launch(LaunchArgs),
    /// Internal: the stdio stand-in for a recorded MCP server (what `{mcp_cmd:<name>}` runs):
    /// one JSON-RPC message per line on stdin, POSTed to the model server's MCP route.
    #[command(
        name = "mcp-stdio",
        hide = true,
        after_help = "Example:\n  keyless mcp-stdio --url http://127.0.0.1:8123/_keyless/mcp/time"
    )]
    McpStdio(McpStdioArgs),
}

/// Arguments of the stdio stand-in.
#[derive(Debug, clap::Args)]
struct McpStdioArgs {
    /// The model server's `/_keyless/mcp/<name>` URL.
    #[arg(long)]
    url: String,
}

/// Bridges stdin and stdout to the MCP route until stdin closes.
fn mcp_stdio(args: McpStdioArgs) -> anyhow::Result<ExitCode> {
    keyless_runner::runtime()?.block_on(keyless_runner::mcp::bridge_stdio(
        &args.url,
        tokio::io::BufReader::new(tokio::io::stdin()),
        tokio::io::stdout(),
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// The hidden subcommand `keyless` starts a gateway command through ([`launcher`]).
const LAUNCH_COMMAND: &str = "__launch";

/// Arguments of the hidden launcher.
#[derive(Debug, clap::Args)]
struct LaunchArgs {
    /// The keyless process the command must die with.
    #[arg(long)]
    parent: i32,
    /// The program and its arguments.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

/// The launcher `keyless test` and `keyless record` start gateway commands through: this same
/// binary's hidden subcommand, which ties the command's life to this process and then becomes
/// it (`keyless_runner::process::exec_tied_to_parent`). None when the binary cannot be found.
pub(crate) fn launcher() -> Option<(PathBuf, Vec<String>)> {
    let program = std::env::current_exe().ok()?;
    let parent = std::process::id().to_string();
    Some((
        program,
        vec![
            LAUNCH_COMMAND.to_owned(),
            "--parent".to_owned(),
            parent,
            "--".to_owned(),
        ],
    ))
}

/// The folders every command shares: the configuration file and the fixture and golden
/// folders.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Folders {
    /// The configuration file [default: keyless.toml in the current folder, if any].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The fixture folder [default: fixtures/ beside the configuration file].
    #[arg(long, value_name = "DIR")]
    pub fixtures: Option<PathBuf>,
    /// The golden folder [default: golden/ beside the configuration file].
    #[arg(long, value_name = "DIR")]
    pub golden: Option<PathBuf>,
}

/// [`Folders`] resolved.
#[derive(Debug)]
pub struct Resolved {
    /// The configuration.
    pub loaded: Loaded,
    /// The fixture folder.
    pub fixtures: PathBuf,
    /// The golden folder.
    pub golden: PathBuf,
}

impl Folders {
    /// Reads the configuration file and settles the folders.
    pub fn resolve(&self) -> Result<Resolved, ConfigError> {
        let loaded = Loaded::find(self.config.as_deref())?;
        Ok(Resolved {
            fixtures: loaded.folder(
                self.fixtures.as_deref(),
                loaded.file.fixtures.as_ref(),
                "fixtures",
            ),
            golden: loaded.folder(
                self.golden.as_deref(),
                loaded.file.golden.as_ref(),
                "golden",
            ),
            loaded,
        })
    }
}

/// The Tokio runtime the commands run on (two workers: the model server serves on it while the
/// driver streams).
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
}

/// The runtime `keyless test` runs `jobs` fixtures at once on: one thread for one job, so the
/// model server's answers and the driver's reads wake no other core (each such wake cost about
/// 0.1 ms on a small virtual machine, dozens per fixture: issue 46); [`runtime`]'s two workers
/// for more, where jobs also compute in parallel.
pub(crate) fn runtime_for_jobs(jobs: usize) -> std::io::Result<tokio::runtime::Runtime> {
    if jobs > 1 {
        return runtime();
    }
    keyless_runner::runtime()
}

/// Ctrl-C and SIGTERM for the whole of a command (issue 34, finding 4): the first asks the work
/// to stop ([`Signals::stopped`]), and the command stops what it started, within bounds; a second
/// exits at once, after SIGKILL to every process this one started (its descendants, which
/// the subreaper keeps below it). Listening from the start means no signal is ever swallowed
/// by a handler nobody awaits.
pub(crate) struct Signals {
    first: tokio::sync::watch::Receiver<bool>,
}

impl Signals {
    /// Starts listening (inside the runtime).
    pub(crate) fn listen() -> anyhow::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        let (sender, first) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
            let _ = sender.send(true);
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
            eprintln!("keyless: a second signal: exiting now");
            let me = std::process::id() as i32;
            let started = keyless_runner::process::descendants_of(me);
            keyless_runner::process::signal_all(&started, keyless_runner::process::Signal::KILL);
            std::process::exit(130);
        });
        Ok(Signals { first })
    }

    /// Resolves at the first Ctrl-C or SIGTERM.
    pub(crate) async fn stopped(&self) {
        let mut first = self.first.clone();
        // The sender lives as long as the listening task, which never ends before exiting.
        let _ = first.wait_for(|signalled| *signalled).await;
    }

    /// `work`'s result, or `None` when Ctrl-C or SIGTERM came first (`work` is then dropped,
    /// and the caller stops what it started).
    pub(crate) async fn until_stopped<T>(
        &self,
        work: impl std::future::Future<Output = T>,
    ) -> Option<T> {
        tokio::select! {
            done = work => Some(done),
            () = self.stopped() => None,
        }
    }
}

/// Runs a command; an error is printed with its causes once each, and a usage or configuration
/// error exits 2.
pub fn run(cli: Cli) -> ExitCode {
    // Processes a gateway command leaves behind are re-parented here, not to init, so they
    // can be found and stopped (Linux; `keyless_runner::process::descendants_of`).
    if !matches!(
        cli.command,
        Command::Init | Command::Launch(_) | Command::McpStdio(_)
    ) {
        keyless_runner::process::become_subreaper();
    }
    let result = match cli.command {
        Command::Init => std::env::current_dir()
            .map_err(anyhow::Error::from)
            .and_then(|cwd| init::run(&cwd).map_err(anyhow::Error::from)),
        Command::Test(args) => test_run::run(args),
        Command::Accept(args) => goldens::accept(args),
        Command::Review(args) => goldens::review(args),
        Command::Record(args) => record::run(args),
        Command::Drift(args) => drift::run(args),
        Command::Serve(args) => serve::run(args),
        Command::ModelServer(args) => model_server::run(args),
        Command::McpStdio(args) => mcp_stdio(args),
        Command::Launch(args) => match args.command.split_first() {
            Some((program, rest)) => {
                let err = keyless_runner::process::exec_tied_to_parent(args.parent, program, rest);
                Err(anyhow::Error::new(err).context(format!("cannot start {program}")))
            }
            None => Err(ConfigError("no command to launch".into()).into()),
        },
    };
    exit_code(result)
}

/// The exit code of a command's result, printing its error.
pub fn exit_code(result: anyhow::Result<ExitCode>) -> ExitCode {
    match result {
        Ok(code) => code,
        // Nobody reads on (`keyless test --json | head -1`): a quiet end, as ripgrep's.
        Err(err) if err.downcast_ref::<output::StdoutClosed>().is_some() => ExitCode::SUCCESS,
        Err(err) => {
            let message = keyless_runner::suite::error_chain(err.as_ref());
            output::err(format!("keyless: error: {message}"));
            if err.downcast_ref::<ConfigError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
