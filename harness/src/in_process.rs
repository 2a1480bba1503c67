//! The in-process side of Layer 1: [`InProcess`], the [`GatewayTarget`] that boots
//! `gateway-under-test` in this process with the replay model over the fixture, and the
//! `run_fixture*` functions the golden tests, the benchmarks and `cargo xtask replay` call. The
//! runner itself (`keyless_runner::layer1`) never names a gateway type; this is where this
//! workspace's gateway is bound to it.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use keyless_runner::layer1::{HarnessError, ScenarioRun, run_on, run_on_within};
use keyless_runner::target::{GatewayTarget, ModelLedger};
use replay_core::{Fixture, ReplayEngine};

use crate::adapter::boot::{BootedGateway, Extensions, ModelWiring, boot};

/// Runs a fixture file.
pub async fn run_fixture(path: &Path) -> Result<ScenarioRun, HarnessError> {
    run_fixture_with(path, Extensions::default()).await
}

/// Runs a fixture file with test extensions (drift tests use the gateway's real extension
/// points through these).
pub async fn run_fixture_with(
    path: &Path,
    extensions: Extensions,
) -> Result<ScenarioRun, HarnessError> {
    let fixture = Fixture::load(path)?;
    run_loaded(path, fixture, extensions).await
}

/// Runs an already loaded fixture through an in-process gateway, judged against this
/// workspace's `golden/`.
pub async fn run_loaded(
    path: &Path,
    fixture: Fixture,
    extensions: Extensions,
) -> Result<ScenarioRun, HarnessError> {
    run_on(
        &mut InProcess::new(extensions),
        path,
        &crate::golden::golden_dir(),
        fixture,
    )
    .await
}

/// `gateway-under-test` booted in this process, with the replay model over the fixture and the
/// fixture's `gateway_config` applied.
#[derive(Debug, Default)]
pub struct InProcess {
    extensions: Option<Extensions>,
    running: Option<(BootedGateway, Arc<ReplayEngine>)>,
}

impl InProcess {
    /// A target whose gateway gets `extensions` (the drift tests' real extension points).
    pub fn new(extensions: Extensions) -> InProcess {
        InProcess {
            extensions: Some(extensions),
            running: None,
        }
    }
}

#[async_trait]
impl GatewayTarget for InProcess {
    async fn start(&mut self, path: &Path, fixture: &Arc<Fixture>) -> Result<String, HarnessError> {
        let engine = Arc::new(ReplayEngine::new(Arc::clone(fixture), path)?);
        let booted = boot(
            ModelWiring::Replay(engine.clone()),
            fixture.scenario.gateway_config.as_ref(),
            self.extensions.take().unwrap_or_default(),
        )
        .await
        .map_err(|source| HarnessError::Boot {
            fixture: path.to_path_buf(),
            source: Box::new(source),
        })?;
        let url = booted.url();
        self.running = Some((booted, engine));
        Ok(url)
    }

    async fn finish(&mut self) -> Result<ModelLedger, HarnessError> {
        let Some((booted, engine)) = self.running.take() else {
            return Ok(ModelLedger::default());
        };
        if let Err(err) = booted.shutdown().await {
            tracing::warn!("gateway shutdown: {err}");
        }
        Ok(ModelLedger {
            misses: engine.take_misses(),
            ambiguities: engine.take_ambiguities(),
            other_problems: Vec::new(),
            unused_turns: engine.unused_turns(),
        })
    }
}

/// Runs a fixture file through `target` (in-process or at a URL), judged against this
/// workspace's `golden/`.
pub async fn run_fixture_on(
    target: &mut dyn GatewayTarget,
    path: &Path,
) -> Result<ScenarioRun, HarnessError> {
    keyless_runner::layer1::run_fixture_on(target, path, &crate::golden::golden_dir()).await
}

/// [`run_fixture_on`] with a time limit for the drive.
pub async fn run_fixture_on_within(
    target: &mut dyn GatewayTarget,
    path: &Path,
    limit: std::time::Duration,
) -> Result<ScenarioRun, HarnessError> {
    keyless_runner::layer1::run_fixture_on_within(target, path, &crate::golden::golden_dir(), limit)
        .await
}

/// [`run_fixture`] through the in-process gateway with a time limit for the drive.
pub async fn run_fixture_within(
    path: &Path,
    limit: std::time::Duration,
) -> Result<ScenarioRun, HarnessError> {
    let fixture = Fixture::load(path)?;
    run_on_within(
        &mut InProcess::new(Extensions::default()),
        path,
        &crate::golden::golden_dir(),
        fixture,
        limit,
    )
    .await
}
