//! Record/replay activation at gateway start (`docs/recording-format.md` §9): the configured mode,
//! read once, decides which provider transform the gateway gets. Recording wraps every provider
//! around one shared sink; strict replay serves every model from one shared replayer; an unusable
//! configuration installs the fail-closed model, so the gateway stays up and every model call
//! fails with a message naming the recovery commands.

use std::path::Path;
use std::sync::Arc;

use gateway_under_test::AppBuilder;

use crate::adapter::recording_model::{
    blocked_provider, recording_provider, strict_replay_provider,
};
use keyless_runner::recordings::{Activation, BLOCKED_MESSAGE};
use replay_core::recording::{Access, RecordingSink, StrictReplayer};

/// What was installed, for the launcher to report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Installed {
    /// No transform: the configured providers as they are.
    Off,
    /// Every model call recorded to this file.
    Recording(String),
    /// Every model call served strictly from this file.
    Replaying(String),
    /// Every model call fails closed; the reason is logged.
    Blocked(String),
}

/// Applies `activation` to `builder`. A recording that cannot be opened at this point blocks
/// provider calls too, rather than falling back to live calls.
pub fn apply(
    builder: AppBuilder,
    activation: Activation,
    managed_root: &Path,
) -> (AppBuilder, Installed) {
    let blocked = |builder: AppBuilder, reason: String| {
        tracing::error!("record/replay activation failed; provider calls are blocked ({reason})");
        let provider = blocked_provider(BLOCKED_MESSAGE);
        (
            builder.map_providers(move |_, _| provider.clone()),
            Installed::Blocked(reason),
        )
    };
    match activation {
        Activation::Off => (builder, Installed::Off),
        Activation::Record { path } => match RecordingSink::open(&path) {
            Ok(sink) => {
                let sink = Arc::new(sink);
                let shown = path.display().to_string();
                (
                    builder.map_providers(move |_, provider| {
                        recording_provider(provider, sink.clone())
                    }),
                    Installed::Recording(shown),
                )
            }
            Err(err) => blocked(builder, err.to_string()),
        },
        Activation::Replay { path } => {
            let access = if path.parent() == Some(managed_root) {
                Access::Managed
            } else {
                Access::External
            };
            match StrictReplayer::load(&path, access) {
                Ok(replayer) => {
                    let provider = strict_replay_provider(Arc::new(replayer));
                    (
                        builder.map_providers(move |_, _| provider.clone()),
                        Installed::Replaying(path.display().to_string()),
                    )
                }
                Err(err) => blocked(builder, err.to_string()),
            }
        }
        Activation::Blocked { reason } => blocked(builder, reason),
    }
}
