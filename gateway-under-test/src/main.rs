//! The gateway binary: `gateway-under-test --config FILE [--port N]`.
//!
//! Serves on 127.0.0.1 (or `server.host`), logs with `tracing` to stderr (`RUST_LOG` overrides the
//! config's `log_level`), prints its address on stdout, and shuts down cleanly on Ctrl-C.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use gateway_under_test::{AppBuilder, Config};
use tracing_subscriber::EnvFilter;

/// A DeerFlow-compatible agent gateway.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// The TOML configuration file (default: $DEER_FLOW_CONFIG_PATH).
    #[arg(long, env = "DEER_FLOW_CONFIG_PATH")]
    config: PathBuf,
    /// The port to listen on (overrides `server.port`; 0 picks a free one).
    #[arg(long)]
    port: Option<u16>,
    /// The address to bind (overrides `server.host`).
    #[arg(long)]
    host: Option<String>,
}

fn tracing_filter(log_level: &str) -> EnvFilter {
    let level = match log_level {
        "warning" => "warn",
        other => other,
    };
    EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let env = |name: &str| std::env::var(name).ok();
    let mut config = Config::load(&args.config, &env)?;
    if let Some(port) = args.port {
        config.server.port = port;
    }
    if let Some(host) = args.host {
        config.server.host = host;
    }
    // Logs go to stderr, so that stdout carries only the address line (start-up may log, e.g.
    // runs finished after a crash, before the address is known).
    tracing_subscriber::fmt()
        .with_env_filter(tracing_filter(&config.log_level))
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal, never into a pipe, a file or a CI log.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let address = format!("{}:{}", config.server.host, config.server.port);
    let app = AppBuilder::new(config)
        .test_seed_route_from_env(&env)
        .build()?;
    let listener = tokio::net::TcpListener::bind(&address)
        .await
        .with_context(|| format!("cannot listen on {address}"))?;
    let gateway = app.serve(listener)?;
    println!("gateway-under-test listening on {}", gateway.url());
    tokio::signal::ctrl_c()
        .await
        .context("cannot install the Ctrl-C handler")?;
    tracing::info!("shutting down");
    gateway.shutdown().await?;
    Ok(())
}
