//! The in-process side of Layer 1: [`InProcess`], the [`GatewayTarget`] that boots
//! `gateway-under-test` in this process with the replay model over the fixture, and this
//! workspace's [`RunOptions`] for the one run API ([`keyless_runner::run`]): its `golden/`
//! folder, and DeerFlow's chat page picking the hermetic scenario model ([`web_options`]). The
//! runner itself never names a gateway type; this is where this workspace's gateway is bound to
//! it.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use keyless_runner::{
    Drive, GatewayTarget, HarnessError, ModelLedger, RunOptions, ScenarioRun, Transcripts,
    session::WebClient,
};
use replay_core::{LoadedFixture, ReplayEngine};

use crate::adapter::boot::{BootedGateway, Extensions, ModelWiring, boot};
use crate::adapter::hermetic::SCENARIO_MODEL;
use crate::workspace::golden_dir;

/// Layer 1's options in this workspace: judged against its `golden/`, transcripts shown in full
/// when `KEYLESS_FULL_TRANSCRIPT` is set.
pub fn options() -> RunOptions {
    RunOptions::new(golden_dir()).transcripts(Transcripts::from_env())
}

/// [`options`] driving DeerFlow's chat page as its web client does, with the model the hermetic
/// configuration names picked: judged against `golden/<stem>.web.snap`.
pub fn web_options() -> RunOptions {
    options().drive(Drive::Page(WebClient::new(Some(SCENARIO_MODEL))))
}

/// Runs a fixture file through the gateway in-process with [`options`]: the one convenience the
/// golden tests and benchmarks share.
pub async fn run(path: &Path) -> Result<ScenarioRun, HarnessError> {
    keyless_runner::run(&mut InProcess::default(), path, &options()).await
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
    async fn start(&mut self, loaded: &LoadedFixture) -> Result<String, HarnessError> {
        let (path, fixture) = (loaded.path(), loaded.fixture());
        let engine = Arc::new(ReplayEngine::over(loaded));
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
            faults_fired: Vec::new(),
            boundaries: Default::default(),
        })
    }
}
