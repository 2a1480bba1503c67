//! `cargo xtask replay-gateway`: the real gateway replaying fixtures on 127.0.0.1 with the built
//! web client at `/`, for a person with a browser (one gateway, port 8011) or for the Layer 2
//! browser suite (`--manifest`: one gateway per fixture plus the suite's named extras, each on a
//! free port, described in a manifest). DeerFlow's `run_replay_gateway.py`, grown up.
//!
//! Every hit and miss is logged as it happens (a miss on stderr with its diagnostic); at SIGINT or
//! SIGTERM the gateways stop, their unused turns are listed, and the exit status is 1 when any
//! call missed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use harness::replay_gateway::{
    Auth, GatewayReport, GatewaySpec, HostSettings, ReplayGateway, manifest, suite,
};
use harness::workspace::{fixtures_dir, workspace_root};
use replay_core::{SHARED_FILE_MODE, write_atomically};

/// Arguments of `replay-gateway`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The port on 127.0.0.1 (one gateway; with --manifest every gateway takes a free port).
    #[arg(long, default_value_t = 8011, conflicts_with = "manifest")]
    port: u16,
    /// The fixture to replay; with --manifest, the one the named extras (reload, signed-in,
    /// multi-run, auth-disabled) replay.
    #[arg(long, default_value_os_t = fixtures_dir().join("write_read_file.ultra.json"))]
    fixture: PathBuf,
    /// The built web client to serve at `/` [default: gateway-under-test/web/dist when it holds
    /// an index.html; without one, only the API is served].
    #[arg(long, value_name = "DIR")]
    web_dir: Option<PathBuf>,
    /// Append every replay hit and miss to this file as JSON lines (one gateway; with
    /// --manifest each gateway logs to gateways/NAME.replay.jsonl beside the manifest).
    #[arg(long, value_name = "FILE", conflicts_with = "manifest")]
    replay_log: Option<PathBuf>,
    /// Start the Layer 2 browser suite's gateways (one per fixture in fixtures/, named by its
    /// stem, then reload, signed-in, multi-run and auth-disabled) and write their manifest
    /// (E2E_GATEWAYS) here once every one of them is listening.
    #[arg(long, value_name = "FILE")]
    manifest: Option<PathBuf>,
    /// A browser origin to allow besides the gateway's own (CORS and the auth routes' Origin
    /// check), for a client served from elsewhere.
    #[arg(long, default_value = "http://localhost:3000")]
    cors: String,
}

fn env_set(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

/// The client folder: `--web-dir` as given (the gateway refuses one without index.html), else
/// the client's build output when there is one.
fn web_dir(requested: Option<&Path>) -> anyhow::Result<Option<PathBuf>> {
    if let Some(dir) = requested {
        return Ok(Some(
            std::path::absolute(dir).with_context(|| format!("--web-dir {}", dir.display()))?,
        ));
    }
    let built = workspace_root().join("gateway-under-test/web/dist");
    Ok(built.join("index.html").is_file().then_some(built))
}

fn describe_client(web_dir: Option<&Path>) -> String {
    match web_dir {
        Some(dir) => format!("the web client from {}", dir.display()),
        None => "no web client (build it: cd gateway-under-test/web && npm ci && npm run build; \
                 or pass --web-dir), the API only"
            .to_owned(),
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let seed_requested = env_set("DEERFLOW_ENABLE_TEST_SEED").as_deref() == Some("1");
    if seed_requested && !cfg!(feature = "test-seed") {
        eprintln!(
            "warning: DEERFLOW_ENABLE_TEST_SEED=1, but this build has no seed route; run \
             `cargo run -p xtask --features test-seed -- replay-gateway`"
        );
    }
    let settings = HostSettings {
        web_dir: web_dir(args.web_dir.as_deref())?,
        jwt_secret: env_set("AUTH_JWT_SECRET")
            .unwrap_or_else(|| "ci-replay-secret".into())
            .into(),
        cors_origins: vec![args.cors.clone()],
    };
    let runtime = crate::runtime()?;
    let reports = runtime.block_on(async {
        let gateways = match &args.manifest {
            Some(path) => start_suite(path, &args.fixture, seed_requested, &settings).await?,
            None => vec![start_one(&args, seed_requested, &settings).await?],
        };
        let signal = stop_signal().await?;
        println!("{signal}: stopping the replay gateways");
        let reports =
            futures::future::join_all(gateways.into_iter().map(ReplayGateway::shutdown)).await;
        anyhow::Ok(reports)
    })?;
    Ok(report_and_exit_code(&reports))
}

async fn start_one(
    args: &Args,
    seed_route: bool,
    settings: &HostSettings,
) -> anyhow::Result<ReplayGateway> {
    let name = args
        .fixture
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| "replay".into());
    let auth = match env_set("DEER_FLOW_AUTH_DISABLED").as_deref() {
        Some("1") => Auth::Disabled,
        _ => Auth::Enabled,
    };
    let spec = GatewaySpec {
        name,
        fixture: args.fixture.clone(),
        auth,
        seed_route,
        replay_log: args.replay_log.clone(),
    };
    let gateway = ReplayGateway::start(spec, args.port, settings)
        .await
        .with_context(|| format!("cannot start the replay gateway on port {}", args.port))?;
    let url = gateway.url();
    println!(
        "replay gateway for {} on {url}, with {} (auth {}{}); ready when {url}/health answers; \
         open {url}/ in a browser; Ctrl-C stops it",
        args.fixture.display(),
        describe_client(settings.web_dir.as_deref()),
        auth.as_str(),
        if gateway.seed_route() {
            ", seed route mounted"
        } else {
            ""
        },
    );
    Ok(gateway)
}

async fn start_suite(
    manifest_path: &Path,
    extras_fixture: &Path,
    seed_route: bool,
    settings: &HostSettings,
) -> anyhow::Result<Vec<ReplayGateway>> {
    let manifest_path = std::path::absolute(manifest_path)
        .with_context(|| format!("--manifest {}", manifest_path.display()))?;
    let folder = manifest_path
        .parent()
        .context("the manifest needs a folder")?;
    let log_dir = folder.join("gateways");
    std::fs::create_dir_all(&log_dir)
        .with_context(|| format!("cannot create {}", log_dir.display()))?;
    // A manifest left from an earlier launch would name ports nobody listens on any more.
    match std::fs::remove_file(&manifest_path) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
            return Err(err).with_context(|| format!("cannot remove {}", manifest_path.display()));
        }
        _ => {}
    }
    let specs = suite(&fixtures_dir(), extras_fixture, &log_dir, seed_route)?;
    let gateways = futures::future::try_join_all(
        specs
            .into_iter()
            .map(|spec| ReplayGateway::start(spec, 0, settings)),
    )
    .await?;
    println!(
        "{} replay gateways on 127.0.0.1 with {}:",
        gateways.len(),
        describe_client(settings.web_dir.as_deref())
    );
    let width = gateways
        .iter()
        .map(|gateway| gateway.spec().name.len())
        .max()
        .unwrap_or(0);
    for gateway in &gateways {
        let spec = gateway.spec();
        let mut notes = vec![format!("auth {}", spec.auth.as_str())];
        if gateway.seed_route() {
            notes.push("seed route".into());
        }
        println!(
            "  {:width$}  {}  {}  ({})",
            spec.name,
            gateway.url(),
            spec.fixture
                .file_name()
                .unwrap_or_default()
                .to_string_lossy(),
            notes.join(", ")
        );
    }
    if seed_route && !gateways.iter().any(ReplayGateway::seed_route) {
        eprintln!("warning: no gateway has the seed route; the multi-run spec will fail");
    }
    let text = serde_json::to_string_pretty(&manifest(&gateways, folder))? + "\n";
    write_atomically(&manifest_path, text.as_bytes(), SHARED_FILE_MODE)
        .with_context(|| format!("cannot write {}", manifest_path.display()))?;
    println!(
        "manifest {} (every gateway is listening); SIGINT or SIGTERM stops them",
        manifest_path.display()
    );
    Ok(gateways)
}

/// Waits for SIGINT (Ctrl-C) or SIGTERM and names it.
async fn stop_signal() -> anyhow::Result<&'static str> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut terminate = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
        tokio::select! {
            interrupted = tokio::signal::ctrl_c() => {
                interrupted.context("cannot listen for SIGINT")?;
                Ok("SIGINT")
            }
            _ = terminate.recv() => Ok("SIGTERM"),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c()
            .await
            .context("cannot listen for Ctrl-C")?;
        Ok("Ctrl-C")
    }
}

/// Prints a line per gateway (hits, misses, unused turns) and the verdict; 1 when a call missed
/// or a gateway did not stop cleanly.
fn report_and_exit_code(reports: &[GatewayReport]) -> ExitCode {
    for report in reports {
        println!("  {}", report.summary());
        if let Some(error) = &report.shutdown_error {
            eprintln!(
                "error: gateway {} did not stop cleanly: {error}",
                report.name
            );
        }
    }
    let missed: Vec<String> = reports
        .iter()
        .filter(|report| !report.misses.is_empty() || !report.ambiguities.is_empty())
        .map(|report| {
            let count = report.misses.len() + report.ambiguities.len();
            format!("{} ({count})", report.name)
        })
        .collect();
    if !missed.is_empty() {
        eprintln!(
            "error: replay missed in {}; the diagnostics are above and in the replay logs",
            missed.join(", ")
        );
    }
    let unclean = reports.iter().any(|report| report.shutdown_error.is_some());
    if missed.is_empty() && !unclean {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
