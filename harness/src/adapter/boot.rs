//! Boots `gateway-under-test` in-process for one scenario: a fresh temporary folder holding the
//! hermetic home and config, the replay (or recording) provider registered by name, and the
//! server on 127.0.0.1:0.

use std::path::Path;
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
    let folder = scratch_folder().map_err(BootError::TempDir)?;
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

/// The memory file system, where a booted gateway's home goes when it has room.
const MEMORY_FS: &str = "/dev/shm";

/// The room the memory file system must have left for a home to go there: a home holds the
/// threads' folders (the files a run's tools write) and the JWT secret; its database is in
/// memory, unless a fixture's `gateway_config` asks for a file.
const MEMORY_FS_ROOM: u64 = 256 * 1024 * 1024;

/// A fresh temporary folder for one booted gateway: in the memory file system when there is one
/// with room ([`MEMORY_FS_ROOM`]), else in the system's temporary folder. Every Layer 1 test
/// makes a home, writes into it and removes it; on a disk file system that journal work was
/// about half of one fixture's wall time (issue 46, when the database was still a file there),
/// and nothing in a home needs to outlive its test.
fn scratch_folder() -> std::io::Result<TempDir> {
    let builder = || {
        let mut builder = tempfile::Builder::new();
        builder.prefix("replay-gw-");
        builder
    };
    if has_room(Path::new(MEMORY_FS), MEMORY_FS_ROOM)
        && let Ok(folder) = builder().tempdir_in(MEMORY_FS)
    {
        return Ok(folder);
    }
    builder().tempdir()
}

/// Whether the file system holding `folder` has `room` bytes free for an unprivileged user (false
/// when `folder` is missing or cannot be asked).
fn has_room(folder: &Path, room: u64) -> bool {
    rustix::fs::statvfs(folder)
        .is_ok_and(|stats| stats.f_bavail.saturating_mul(stats.f_frsize) >= room)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A home goes to the memory file system only with room there; a missing folder has none.
    #[test]
    fn a_home_goes_to_the_memory_file_system_only_when_it_has_room() {
        let here = tempfile::tempdir().unwrap();
        assert!(
            has_room(here.path(), 1),
            "a folder with a byte free has room for a byte"
        );
        assert!(
            !has_room(here.path(), u64::MAX),
            "no file system has u64::MAX bytes free"
        );
        assert!(
            !has_room(&here.path().join("missing"), 1),
            "a missing folder has no room"
        );
        let folder = scratch_folder().unwrap();
        let expected = if has_room(Path::new(MEMORY_FS), MEMORY_FS_ROOM) {
            Path::new(MEMORY_FS).to_path_buf()
        } else {
            std::env::temp_dir()
        };
        assert_eq!(folder.path().parent(), Some(expected.as_path()));
    }
}
