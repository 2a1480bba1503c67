//! The model server's side of every boundary besides the chat wire (`docs/replay-and-fixtures.md`
//! §12): what a boundary's route (`http`, and MCP's) reaches in the server's mode, as one value,
//! [`Exchanges`]. In fixture replay it is the active fixture's [`ExchangeReplay`] (made afresh
//! with the fixture's engine at every reset, so its ledger is the run's); while recording it is
//! the [`ExchangeRecorder`], which writes through the recording's own sink and keeps every
//! secret a boundary's request carried, so the recorder's last check
//! ([`KnownSecrets::first_in_exchanges`]) finds any form of it. The route renders the answer and
//! speaks its transport; the key, the ledger, the miss and the redaction are the engine's.

use std::sync::Arc;

use parking_lot::Mutex;
use replay_core::recording::{KnownSecrets, RecordingFileError, RecordingSink};
use replay_core::{Exchange, ExchangeReplay};
use secrecy::{ExposeSecret, SecretString};

use super::upstream::ModelUpstream;

/// What a boundary's route reaches in the server's mode.
#[derive(Debug, Clone)]
pub(super) enum Exchanges {
    /// Fixture replay: the active fixture's exchanges and their ledger.
    Replay(Arc<ExchangeReplay>),
    /// Recording: where exchanges are written.
    Record(Arc<ExchangeRecorder>),
    /// A mode that serves no boundary (strict replay of a recording); the name of the mode.
    Unserved(&'static str),
}

/// Writes the exchanges of every boundary to the recording, and holds the secrets their
/// requests carried (in memory only; `Debug` shows how many).
pub(crate) struct ExchangeRecorder {
    sink: RecordingSink,
    /// The model upstream, where an embeddings call is forwarded (`None`: no model proxy).
    upstream: Option<Arc<ModelUpstream>>,
    /// The model upstream's key and every secret a boundary's request carried.
    secrets: Mutex<Vec<SecretString>>,
}

impl std::fmt::Debug for ExchangeRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExchangeRecorder")
            .field("recording", &self.sink.path())
            .field("secrets", &self.secrets.lock().len())
            .finish()
    }
}

impl ExchangeRecorder {
    /// A recorder writing through `sink` that already knows `secrets` (the model's key);
    /// `upstream` is the model proxy's, where embeddings calls go.
    pub(super) fn new(
        sink: RecordingSink,
        secrets: Vec<SecretString>,
        upstream: Option<Arc<ModelUpstream>>,
    ) -> ExchangeRecorder {
        ExchangeRecorder {
            sink,
            upstream,
            secrets: Mutex::new(secrets),
        }
    }

    /// Remembers a secret a request carried (an API key in a header, the query or the body):
    /// every form of it is removed from what is written, and a form left anywhere fails the
    /// recording.
    pub(super) fn learn_secret(&self, secret: &str) {
        let secret = secret.trim();
        if secret.is_empty() {
            return;
        }
        let mut secrets = self.secrets.lock();
        if !secrets.iter().any(|known| known.expose_secret() == secret) {
            secrets.push(SecretString::from(secret.to_owned()));
        }
    }

    /// The model upstream an embeddings call is forwarded to.
    pub(super) fn upstream(&self) -> Option<&ModelUpstream> {
        self.upstream.as_deref()
    }

    /// Every secret known so far, in every encoding.
    pub(super) fn known_secrets(&self) -> KnownSecrets {
        let secrets = self.secrets.lock();
        KnownSecrets::new(secrets.iter().map(|secret| secret.expose_secret()))
    }

    /// Writes `exchange` rid of every known secret's forms, then redacted by the engine's pass
    /// ([`RecordingSink::write_exchange`]); returns it as written, which is what the boundary
    /// answers the gateway with (so a live run continues on what its replay will serve).
    pub(super) fn write(&self, exchange: Exchange) -> Result<Exchange, RecordingFileError> {
        let known = self.known_secrets();
        let cleaned = Exchange {
            label: known.redact_text(&exchange.label),
            request: known.redact(&exchange.request),
            answer: known.redact(&exchange.answer),
            ..exchange
        };
        self.sink.write_exchange(&cleaned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use replay_core::{BoundaryKind, ExchangeCall};
    use serde_json::json;

    /// A secret learned from a request leaves no form in what is written, a known one neither.
    #[test]
    fn a_learned_secret_is_removed_from_the_written_exchange_in_every_encoding() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("r.jsonl");
        let sink = RecordingSink::open_remembering(&path).expect("sink");
        let recorder =
            ExchangeRecorder::new(sink, vec![SecretString::from("model-key-0123456789")], None);
        let key = "tvly-9f8e7d6c5b4a3210";
        recorder.learn_secret(key);
        let percent = "tvly%2D9f8e7d6c5b4a3210";
        let exchange = ExchangeCall::new(
            BoundaryKind::Http,
            "tavily",
            "POST /search",
            json!({"body": {"note": format!("key {key} and {percent}")}}),
        )
        .answered(json!({"echo": "model-key-0123456789", "k": key}));
        let written = recorder.write(exchange).expect("written");
        let text = std::fs::read_to_string(&path).expect("read");
        for form in [key, percent, "model-key-0123456789"] {
            assert!(!text.contains(form), "{form} in {text}");
            assert!(!written.answer.to_string().contains(form), "{written:?}");
        }
        assert_eq!(
            recorder.known_secrets().first_in_exchanges(&[written]),
            None
        );
        assert!(format!("{recorder:?}").contains("secrets: 2"));
    }
}
