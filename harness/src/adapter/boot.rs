//! Boots `gateway-under-test` in-process for one scenario: a fresh temporary folder holding the
//! hermetic home and config, the replay (or recording) provider registered by name, and the
//! server on 127.0.0.1:0.

use std::sync::Arc;

use gateway_under_test::config::Config;
use gateway_under_test::{AppBuilder, AppError, RunningGateway};
use serde_json::Value;
use tempfile::TempDir;

use crate::adapter::hermetic::{
    HermeticError, ModelBlock, REPLAY_PROVIDER, hermetic_config, prepare_home,
};
use crate::adapter::replay_model::replay_provider;
use replay_core::ReplayEngine;

/// Why a gateway could not be booted.
#[derive(Debug, thiserror::Error)]
pub enum BootError {
    /// The temporary folder could not be made.
    #[error("temporary folder: {0}")]
    TempDir(std::io::Error),
    /// The hermetic home or config failed.
    #[error(transparent)]
    Hermetic(#[from] HermeticError),
    /// The gateway refused the configuration.
    #[error("gateway: {0}")]
    App(#[from] AppError),
    /// The listener could not bind 127.0.0.1.
    #[error("listen on 127.0.0.1: {0}")]
    Listen(std::io::Error),
}

/// Changes a test may make through the gateway's real extension points (configuration,
/// registered tools, middlewares, providers).
pub struct Extensions {
    /// Adjusts the configuration after the hermetic settings are applied.
    pub configure: Box<dyn FnOnce(&mut Config) + Send>,
    /// Adjusts the app builder.
    pub extend: Box<dyn FnOnce(AppBuilder) -> AppBuilder + Send>,
}

impl Default for Extensions {
    fn default() -> Self {
        Extensions {
            configure: Box::new(|_| {}),
            extend: Box::new(|builder| builder),
        }
    }
}

impl std::fmt::Debug for Extensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Extensions { .. }")
    }
}

/// A gateway serving one scenario. Its temporary folder lives as long as it does.
#[derive(Debug)]
pub(crate) struct BootedGateway {
    /// The running server.
    pub(crate) gateway: RunningGateway,
    /// The hermetic home, removed when the gateway is dropped.
    _folder: TempDir,
}

impl BootedGateway {
    /// `http://127.0.0.1:<port>`.
    pub(crate) fn url(&self) -> String {
        self.gateway.url()
    }

    /// Stops the server; the temporary folder is removed when this value is dropped.
    pub(crate) async fn shutdown(self) -> std::io::Result<()> {
        self.gateway.shutdown().await
    }
}

/// Where a booted gateway's model calls go.
pub(crate) enum ModelWiring {
    /// Replay from an engine (Layer 1).
    Replay(Arc<ReplayEngine>),
    /// A real OpenAI-compatible endpoint, every call recorded at the provider boundary.
    Record {
        /// The model block with the endpoint and key.
        block: ModelBlock,
        /// The recording every model writes to.
        sink: replay_core::recording::RecordingSink,
    },
}

/// Boots a gateway with the hermetic configuration, `gateway_config` overrides from the fixture,
/// and optional test extensions, on 127.0.0.1 port 0.
pub(crate) async fn boot(
    wiring: ModelWiring,
    overrides: Option<&Value>,
    extensions: Extensions,
) -> Result<BootedGateway, BootError> {
    boot_at(0, wiring, overrides, extensions).await
}

/// [`boot`] on 127.0.0.1:`port` (0 picks a free one).
pub(crate) async fn boot_at(
    port: u16,
    wiring: ModelWiring,
    overrides: Option<&Value>,
    extensions: Extensions,
) -> Result<BootedGateway, BootError> {
    let folder = tempfile::Builder::new()
        .prefix("replay-gw-")
        .tempdir()
        .map_err(BootError::TempDir)?;
    let home = prepare_home(folder.path())?;
    let block = match &wiring {
        ModelWiring::Replay(_) => ModelBlock::Replay,
        ModelWiring::Record { block, .. } => block.clone(),
    };
    let mut config = hermetic_config(&home, &block, overrides)?;
    (extensions.configure)(&mut config);
    let builder = match wiring {
        ModelWiring::Replay(engine) => {
            AppBuilder::new(config).provider(REPLAY_PROVIDER, replay_provider(engine))
        }
        ModelWiring::Record { sink, .. } => {
            let sink = Arc::new(sink);
            AppBuilder::new(config).map_providers(move |_, provider| {
                crate::adapter::recording_model::recording_provider(provider, sink.clone())
            })
        }
    };
    let app = (extensions.extend)(builder).build()?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(BootError::Listen)?;
    let gateway = app.serve(listener).map_err(BootError::Listen)?;
    Ok(BootedGateway {
        gateway,
        _folder: folder,
    })
}
