//! `cargo xtask serve`: the gateway from a configuration file, with the record/replay mode of
//! `cargo xtask recordings` applied at start (the next start after a `recordings` change).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use gateway_under_test::{AppBuilder, Config};
use harness::adapter::activation::{Installed, apply};
use keyless_runner::recordings::RecordingsHome;

/// Arguments of `serve`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The gateway's TOML configuration (default: $DEER_FLOW_CONFIG_PATH).
    #[arg(long, env = "DEER_FLOW_CONFIG_PATH")]
    config: PathBuf,
    /// The port on 127.0.0.1 (0 picks a free one; default: the config's `server.port`).
    #[arg(long)]
    port: Option<u16>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let env = |name: &str| std::env::var(name).ok();
    let mut config = Config::load(&args.config, &env)?;
    if let Some(port) = args.port {
        config.server.port = port;
    }
    let home =
        RecordingsHome::from_env(harness::workspace::workspace_root().join(".harness-state"));
    // Read once, at start: a later `recordings` change takes effect at the next start.
    let activation = home.activation();
    let (builder, installed) = apply(AppBuilder::new(config.clone()), activation, &home.root());
    let app = builder.test_seed_route_from_env(&env).build()?;
    let runtime = crate::runtime()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", config.server.port))
            .await
            .with_context(|| format!("cannot listen on 127.0.0.1:{}", config.server.port))?;
        let gateway = app.serve(listener)?;
        println!("gateway on {}", gateway.url());
        match &installed {
            Installed::Off => println!("record/replay: off"),
            Installed::Recording(path) => println!("record/replay: recording to {path}"),
            Installed::Replaying(path) => println!("record/replay: replaying {path}"),
            Installed::Blocked(reason) => {
                println!("record/replay: BLOCKED; every model call fails until `cargo xtask recordings off` (and a restart)");
                eprintln!("reason: {reason}");
            }
        }
        tokio::signal::ctrl_c().await.context("cannot wait for Ctrl-C")?;
        gateway.shutdown().await.context("shutting down")?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
