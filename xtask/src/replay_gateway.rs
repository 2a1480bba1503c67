//! `cargo xtask replay-gateway`: the gateway serving one fixture by replay on 127.0.0.1, for
//! frontend work and browser tests (DeerFlow's `run_replay_gateway.py`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use harness::adapter::boot::{Extensions, ModelWiring, boot_at};
use harness::golden::fixtures_dir;
use replay_core::{Fixture, ReplayEngine};

/// Arguments of `replay-gateway`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The port on 127.0.0.1.
    #[arg(long, default_value_t = 8011)]
    port: u16,
    /// The fixture to serve.
    #[arg(long, default_value_os_t = fixtures_dir().join("write_read_file.ultra.json"))]
    fixture: PathBuf,
    /// The browser origin allowed by CORS and the auth routes' Origin check.
    #[arg(long, default_value = "http://localhost:3000")]
    cors: String,
}

fn env_set(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let fixture = Fixture::load(&args.fixture)?;
    let engine = Arc::new(ReplayEngine::new(fixture.clone(), &args.fixture)?);
    let jwt_secret = env_set("AUTH_JWT_SECRET").unwrap_or_else(|| "ci-replay-secret".into());
    let auth_disabled = env_set("DEER_FLOW_AUTH_DISABLED").as_deref() == Some("1");
    let seed = env_set("DEERFLOW_ENABLE_TEST_SEED").as_deref() == Some("1");
    if seed && !cfg!(feature = "test-seed") {
        eprintln!(
            "warning: DEERFLOW_ENABLE_TEST_SEED=1, but this build has no seed route; run `cargo run -p xtask --features test-seed -- replay-gateway`"
        );
    }
    let cors = args.cors.clone();
    let extensions = Extensions {
        configure: Box::new(move |config| {
            config.auth.jwt_secret = Some(jwt_secret.into());
            config.auth.cors_origins = vec![cors];
            config.auth.disabled = auth_disabled;
        }),
        extend: Box::new(move |builder| builder.test_seed_route(seed)),
    };
    let runtime = crate::runtime()?;
    runtime.block_on(async {
        let booted = boot_at(
            args.port,
            ModelWiring::Replay(engine.clone()),
            fixture.scenario.gateway_config.as_ref(),
            extensions,
        )
        .await
        .with_context(|| format!("cannot start the replay gateway on port {}", args.port))?;
        println!(
            "replay gateway for {} on {} (ready when {}/health answers); Ctrl-C stops it",
            args.fixture.display(),
            booted.url(),
            booted.url()
        );
        tokio::signal::ctrl_c()
            .await
            .context("cannot wait for Ctrl-C")?;
        booted.shutdown().await.context("shutting down")?;
        for miss in engine.misses() {
            eprintln!("{miss}\n");
        }
        println!("unused turns: {:?}", engine.unused_turns());
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
