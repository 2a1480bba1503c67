//! `keyless serve`: a replayed backend held up for a browser suite (Layer 2 for your own
//! frontend). It starts the model server on fixtures and the configured gateway command on a
//! given port, waits until the gateway is ready, prints one JSON line with the URLs, and holds
//! until SIGTERM or SIGINT (Playwright's `webServer` stops its command with a signal). Then it
//! stops the gateway's process group, prints what was served to stderr and exits 0 only if every
//! model call was answered as recorded.
//!
//! Drives nothing, so it works with every API dialect: the browser is the driver. The problems it
//! counts are every problem the model server reported since the start, whichever fixture was
//! active (a browser suite switches fixtures with `POST /_keyless/reset`), collected as they
//! happen, so a reset cannot hide an earlier miss from the exit status.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use keyless_runner::Launched;
use keyless_runner::goldens::stem_of;
use keyless_runner::server::ReplayLog;
use keyless_runner::suite::{error_chain, fixture_files};
use keyless_runner::{Mode, ModelServer, Problem, ServerOptions};
use parking_lot::Mutex;
use replay_core::{Ambiguity, Miss, ReplayObserver, Served};
use serde_json::json;

use crate::Folders;
use crate::config::ConfigError;
use crate::gateway::{Gateway, GatewayArgs};
use crate::output::{err, out};

/// How many problems the summary shows in full; the rest are counted (the replay log, when
/// asked for, has every one).
const SHOWN_PROBLEMS: usize = 20;

/// How often the gateway is checked for having exited on its own.
const EXIT_POLL: Duration = Duration::from_millis(200);

/// Arguments of `serve`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  keyless serve --port 3000                        # every fixture; the first is active
  keyless serve --fixture chat.chat --port 3000 --replay-log .keyless/replay.jsonl
  keyless serve --faults chat.chat@overloaded --port 3000   # a fault scenario, active first

Every fault scenario of the fixture folder (<scenario>.<mode>@<fault-name>.faults.toml) is served
too, selected by its name like a fixture; --faults NAME makes one active first.
  # playwright.config.ts:
  #   webServer: { command: 'keyless serve --port 3000', url: 'http://127.0.0.1:3000/health' }

Prints one JSON line on stdout once the gateway is ready:
  {\"gateway_url\": …, \"model_base_url\": …, \"model_server_url\": …, \"fixture\": …, …}
A suite selects another fixture with POST <model_server_url>/_keyless/reset {\"fixture\": NAME}
and the header x-keyless-reset-token: <reset_token>.

Exit status (after SIGTERM or SIGINT): 0 every model call was answered as recorded; 1 a miss or
another model-side problem, no model call at all, or a gateway that exited on its own; 2 a usage
or configuration error.")]
pub struct Args {
    #[command(flatten)]
    pub folders: Folders,
    #[command(flatten)]
    pub gateway: GatewayArgs,
    /// Serve only this fixture (its name, e.g. `chat.chat`, or its file) [default: every
    /// fixture in the fixture folder, the first active].
    #[arg(long, value_name = "NAME|FILE")]
    pub fixture: Option<String>,
    /// The gateway's port on 127.0.0.1 (0 picks a free one; the URL is printed).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// The model server's port on 127.0.0.1 (0 picks a free one).
    #[arg(long, value_name = "PORT", default_value_t = 0)]
    pub model_port: u16,
    /// Append every hit and miss to this file as JSON lines, as they happen (emptied first).
    #[arg(long, value_name = "FILE")]
    pub replay_log: Option<PathBuf>,
    /// Also write the model server's reset token (in the JSON line too; `POST
    /// /_keyless/reset` needs it in the `x-keyless-reset-token` header) to this file, mode
    /// 0600, for the browser suite. The gateway never gets it.
    #[arg(long, value_name = "FILE")]
    pub reset_token_file: Option<PathBuf>,
    /// Also serve this fault scenario (its name, `<scenario>.<mode>@<fault-name>`, or its
    /// `.faults.toml` file), active first: its fixture replayed with its faults (a browser
    /// suite selects it by name like any fixture).
    #[arg(long, value_name = "NAME|FILE")]
    pub faults: Option<String>,
}

/// What `serve` needs, settled before anything starts.
struct Settings {
    fixtures: Vec<PathBuf>,
    gateway: keyless_runner::GatewayCommand,
    /// The fault scenario asked for, by its name.
    faults: Vec<(String, keyless_runner::faults::FaultPlan)>,
}

fn settings(args: &Args) -> Result<Settings, ConfigError> {
    let resolved = args.folders.resolve()?;
    let gateway = match args.gateway.resolve(&resolved)? {
        Gateway::Command(command) => command,
        Gateway::Url(url) => {
            return Err(ConfigError(format!(
                "keyless serve starts the gateway itself, but {} names a running one ({url}); give --gateway-cmd or set gateway_cmd",
                resolved.loaded.describe()
            )));
        }
    };
    let listed = || {
        fixture_files(&resolved.fixtures).map_err(|err| {
            ConfigError(format!(
                "cannot list the fixture folder {}: {err}",
                resolved.fixtures.display()
            ))
        })
    };
    let fixtures = match &args.fixture {
        Some(given) if given.ends_with(".json") || given.contains('/') => {
            vec![PathBuf::from(given)]
        }
        Some(name) => {
            let all = listed()?;
            let Some(path) = all.iter().find(|path| &stem_of(path) == name) else {
                let names: Vec<String> = all.iter().map(|path| stem_of(path)).collect();
                return Err(ConfigError(format!(
                    "no fixture {name:?} in {} (fixtures: {})",
                    resolved.fixtures.display(),
                    names.join(", ")
                )));
            };
            vec![path.clone()]
        }
        None => listed()?,
    };
    if fixtures.is_empty() {
        return Err(ConfigError(format!(
            "no fixtures (*.json) in {} (keyless record makes one)",
            resolved.fixtures.display()
        )));
    }
    let mut fixtures = fixtures;
    let mut faults = Vec::new();
    if args.fixture.is_none() {
        // Every fault scenario of the folder too, after the fixtures: a browser suite selects one
        // by its name (`<scenario>.<mode>@<fault-name>`) like any fixture.
        let scenarios =
            keyless_runner::faults::fault_scenario_files(&resolved.fixtures).map_err(|err| {
                ConfigError(format!(
                    "cannot list the fixture folder {}: {err}",
                    resolved.fixtures.display()
                ))
            })?;
        for path in scenarios {
            let plan = keyless_runner::faults::FaultPlan::load(&path)
                .map_err(|err| ConfigError(error_chain(&err)))?;
            faults.push((stem_of(&path), plan));
            fixtures.push(path);
        }
    }
    if let Some(given) = &args.faults {
        let path = if given.ends_with(keyless_runner::faults::FAULTS_SUFFIX) || given.contains('/')
        {
            PathBuf::from(given)
        } else {
            resolved
                .fixtures
                .join(format!("{given}{}", keyless_runner::faults::FAULTS_SUFFIX))
        };
        let plan = keyless_runner::faults::FaultPlan::load(&path)
            .map_err(|err| ConfigError(error_chain(&err)))?;
        let name = stem_of(&path);
        // Listed with the folder's scenarios already: made active first, served once.
        fixtures.retain(|listed| stem_of(listed) != name);
        faults.retain(|(listed, _)| *listed != name);
        faults.push((name, plan));
        fixtures.insert(0, path);
    }
    Ok(Settings {
        fixtures,
        gateway,
        faults,
    })
}

/// What the model side did while serving: turns served, and every problem in order.
#[derive(Debug, Default)]
struct Tally {
    served: AtomicUsize,
    problems: Mutex<Vec<Problem>>,
    not_shown: AtomicUsize,
    log: Option<ReplayLog>,
}

impl Tally {
    fn problem(&self, problem: &Problem) {
        if let Some(log) = &self.log {
            log.problem(problem);
        }
        let mut problems = self.problems.lock();
        if problems.len() < SHOWN_PROBLEMS {
            problems.push(problem.clone());
        } else {
            self.not_shown.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl ReplayObserver for Tally {
    fn served(&self, served: &Served) {
        self.served.fetch_add(1, Ordering::Relaxed);
        if let Some(log) = &self.log {
            log.served(served);
        }
    }

    fn missed(&self, miss: &Miss) {
        // Counted through the model server's problem hook, which hears of it too.
        if let Some(log) = &self.log {
            log.missed(miss);
        }
    }

    fn ambiguous(&self, ambiguity: &Ambiguity) {
        if let Some(log) = &self.log {
            log.ambiguous(ambiguity);
        }
    }
}

/// Runs `serve` until SIGTERM or SIGINT (or until the gateway exits on its own).
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let settings = settings(&args)?;
    let log = match &args.replay_log {
        Some(path) => Some(
            ReplayLog::create("keyless serve", path)
                .map_err(|err| ConfigError(format!("--replay-log {}: {err}", path.display())))?,
        ),
        None => None,
    };
    let tally = Arc::new(Tally {
        log,
        ..Tally::default()
    });
    let on_problem = {
        let tally = tally.clone();
        Arc::new(move |problem: &Problem| tally.problem(problem))
    };
    let options = ServerOptions {
        port: args.model_port,
        on_problem: Some(on_problem),
        observer: Some(tally.clone()),
        faults: settings.faults.clone(),
        boundaries: settings.gateway.boundaries.clone(),
    };
    crate::runtime()?
        .block_on(async {
            let signals = crate::Signals::listen()?;
            let server = ModelServer::start(Mode::Fixtures(settings.fixtures.clone()), options)
                .await
                .map_err(|err| ConfigError(error_chain(&err)))?;
            if let Some(path) = &args.reset_token_file {
                crate::model_server::write_reset_token(path, server.reset_token())?;
            }
            let mut gateway = Launched::new(settings.gateway.clone(), &server.base_url())?
                .with_launcher_if(crate::launcher());
            let launched = async {
                match args.port {
                    0 => gateway.launch("serve").await,
                    port => gateway.launch_at("serve", port).await,
                }
            };
            let gateway_url = match signals.until_stopped(launched).await {
                Some(Ok(url)) => url,
                Some(Err(err)) => {
                    let _ = server.stop().await;
                    return Err(anyhow::Error::from(err).context("keyless serve"));
                }
                None => {
                    gateway.stop().await;
                    err("keyless serve: stopped before the gateway was ready");
                    return Ok(false);
                }
            };
            let names: Vec<String> = settings.fixtures.iter().map(|p| stem_of(p)).collect();
            out(format!(
                "{}",
                json!({
                    "gateway_url": gateway_url,
                    "model_base_url": server.base_url(),
                    "model_server_url": server.url(),
                    "fixture": names[0],
                    "fixtures": names,
                    "gateway_log": gateway.log().map(Path::display).map(|p| p.to_string()),
                    "gateway_process_group": gateway.process_group(),
                "reset_token": server.reset_token(),
                })
            ))?;
            let exited = signals
                .until_stopped(async {
                    loop {
                        if let Some(status) = gateway.exited() {
                            return status;
                        }
                        tokio::time::sleep(EXIT_POLL).await;
                    }
                })
                .await;
            gateway.stop().await;
            let active = server.active_fixture();
            let _ = server.stop().await;
            Ok(summarise(&tally, exited, active, gateway.log()))
        })
        .map(|clean| {
            if clean {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        })
}

/// Prints what was served on stderr and says whether it was a clean replay.
fn summarise(
    tally: &Tally,
    exited: Option<std::process::ExitStatus>,
    active: Option<(String, Vec<usize>)>,
    log: Option<&Path>,
) -> bool {
    let served = tally.served.load(Ordering::Relaxed);
    let problems = tally.problems.lock();
    let count = problems.len() + tally.not_shown.load(Ordering::Relaxed);
    let mut clean = count == 0;
    err(format!(
        "keyless serve: {served} model call(s) answered as recorded, {count} problem(s)"
    ));
    for (index, problem) in problems.iter().enumerate() {
        err(format!(
            "keyless serve: problem {} of {count}: {}: {}",
            index + 1,
            problem.kind(),
            problem.message()
        ));
    }
    if count > problems.len() {
        err(format!(
            "keyless serve: {} more problem(s) not shown",
            count - problems.len()
        ));
    }
    if let Some(status) = exited {
        clean = false;
        err(format!(
            "keyless serve: the gateway exited on its own ({status}) while serving{}",
            log.map(|log| format!("; its output is in {}", log.display()))
                .unwrap_or_default()
        ));
    }
    if served == 0 && count == 0 {
        // A backend whose model calls never reached the model server proves nothing.
        clean = false;
        err(
            "keyless serve: no model call reached the model server: is the gateway's model at {model_base_url}?",
        );
    }
    if let Some((fixture, unused)) = active
        && !unused.is_empty()
    {
        err(format!(
            "keyless serve: fixture {fixture}: turn(s) {unused:?} not asked for (information)"
        ));
    }
    clean
}
