//! What a recording session (`keyless record`, `record --serve`, `model-server --record`) leaves
//! behind, and what it refuses to leave (issue 47, item 6; issue 48):
//!
//! - **A recorded fixture is replaced only on purpose**: an existing fixture is refused, naming
//!   it, before anything is recorded, unless `--force`.
//! - **No raw recording is left in a temporary folder**: without `--recording-out` it goes into
//!   a folder of its own under the repository's `.keyless/recordings/` (git-ignored, see
//!   [`crate::init::private_folder`]) and that folder is removed once the fixture is built; a
//!   session that builds nothing keeps it there and prints its path.
//! - **A call that never reached the upstream builds no fixture**: no connection, DNS, TLS, a
//!   reset before any answer (`keyless_runner::server::UpstreamReach`). The session fails naming the
//!   upstream, the transport's error and what to check, the existing fixture stays as it was,
//!   and the raw recording is kept; `--keep-transport-errors` builds the fixture anyway. A
//!   provider's own error answer (a 400, a 429) is an answer and builds its fixture.

use std::path::{Path, PathBuf};

use anyhow::Context;
use keyless_runner::{
    recordings::{create_parent, summary_lines, warning_lines, write_fixture, write_meta},
    server::RecordedFixture,
};
use replay_core::recording::redact_text;

use crate::config::ConfigError;
use crate::output::{err, out};

/// Where the default raw recordings go, under the repository's `.keyless/`.
const RECORDINGS_FOLDER: &str = "recordings";

/// How a recording session keeps what it records (shared by `record` and `model-server
/// --record`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Keeping {
    /// Record: keep the raw recording in FILE, which must not exist yet (a missing folder is
    /// created); the scenario metadata goes beside it [default: a folder of its own under
    /// .keyless/recordings/, removed once the fixture is built].
    #[arg(long, value_name = "FILE")]
    pub recording_out: Option<PathBuf>,
    /// Record: replace the fixture when it exists (without it, an existing fixture is refused
    /// before anything is recorded).
    #[arg(long)]
    pub force: bool,
    /// Record: build the fixture even when a call never got an HTTP answer from the upstream
    /// (no connection, DNS, TLS, a reset), recording those failures as its answers; without it
    /// such a session writes no fixture and exits 1.
    #[arg(long)]
    pub keep_transport_errors: bool,
}

/// Where one session's files go, settled before anything is recorded.
#[derive(Debug)]
pub struct Plan {
    /// The raw recording.
    pub recording: PathBuf,
    /// The folder of the default recording, removed once the fixture is built; `None` when
    /// `--recording-out` names where to keep it.
    scratch: Option<PathBuf>,
    /// The fixture to write.
    pub fixture: PathBuf,
    /// The upstream, for messages (redacted).
    upstream: String,
    force: bool,
    keep_transport_errors: bool,
}

impl Keeping {
    /// The session's files: the fixture `<fixtures>/<stem>.json` (refused when it exists,
    /// unless `--force`), and the raw recording (`--recording-out`, refused when it exists, or a
    /// new folder under `<root>/.keyless/recordings/`).
    pub fn plan(
        &self,
        root: &Path,
        fixtures: &Path,
        stem: &str,
        upstream: &str,
    ) -> anyhow::Result<Plan> {
        let fixture = fixtures.join(format!("{stem}.json"));
        if !self.force && std::fs::symlink_metadata(&fixture).is_ok() {
            return Err(ConfigError(format!(
                "{} exists: a recorded fixture is replaced only on purpose; pass --force to \
                 record it again, or record another --scenario or --mode (nothing was recorded)",
                fixture.display()
            ))
            .into());
        }
        let (recording, scratch) = match &self.recording_out {
            Some(path) => (kept_recording(path)?, None),
            None => {
                let folder = crate::init::private_folder(root)?.join(RECORDINGS_FOLDER);
                std::fs::create_dir_all(&folder)
                    .with_context(|| format!("cannot create {}", folder.display()))?;
                let session = tempfile::Builder::new()
                    .prefix(&format!("{stem}-"))
                    .tempdir_in(&folder)
                    .with_context(|| format!("cannot create a folder in {}", folder.display()))?
                    .keep();
                (session.join("recording.jsonl"), Some(session))
            }
        };
        Ok(Plan {
            recording,
            scratch,
            fixture,
            upstream: redact_text(upstream),
            force: self.force,
            keep_transport_errors: self.keep_transport_errors,
        })
    }
}

/// The `--recording-out` file, its folder created. An existing one is refused: a recording file
/// holds one session, and a second one appended to it would put the first session's calls into
/// the second fixture (issue 34, finding 13).
fn kept_recording(path: &Path) -> anyhow::Result<PathBuf> {
    if std::fs::symlink_metadata(path).is_ok() {
        return Err(ConfigError(format!(
            "--recording-out {}: the file exists, and a recording holds one session; remove it \
             or name a new file (nothing was recorded)",
            path.display()
        ))
        .into());
    }
    // On stderr: the first stdout line is the server's address, which scripts read.
    if let Some(created) = create_parent(path)? {
        err(format!("created folder {}", created.display()));
    }
    Ok(path.to_path_buf())
}

impl Plan {
    /// Removes the default recording's folder when nothing was recorded into it (the model
    /// server did not start), so a refused start leaves no empty folder behind.
    pub fn abandon(&self) {
        if let Some(folder) = &self.scratch
            && std::fs::symlink_metadata(&self.recording).is_err()
        {
            let _ = std::fs::remove_dir_all(folder);
        }
    }

    /// Writes what the session produced: prints a line per call and how the calls went at the
    /// upstream, then writes the fixture, unless a call never reached the upstream (without
    /// `--keep-transport-errors`) or the fixture appeared meanwhile (without `--force`): then
    /// it writes nothing but the scenario metadata beside the kept recording, and fails.
    pub fn save(&self, recorded: &RecordedFixture) -> anyhow::Result<PathBuf> {
        for line in summary_lines(&recorded.summary) {
            out(line)?;
        }
        out(recorded.reach.summary())?;
        for warning in warning_lines(&recorded.fixture) {
            err(warning);
        }
        if let Some(first) = &recorded.reach.first_unreached
            && !self.keep_transport_errors
        {
            let meta = write_meta(&self.recording, &recorded.fixture)?;
            anyhow::bail!(
                "{} of {} model call(s) never got an answer from the upstream {}, so no fixture \
                 was written ({} is as it was)\n  \
                 the first, call {}: {}\n  \
                 check the upstream URL (--upstream, or [record] upstream in keyless.toml), that \
                 this machine reaches it (the network, a VPN, a proxy in HTTPS_PROXY or \
                 HTTP_PROXY, a firewall) and, for https://, its certificate; then record again\n  \
                 the raw recording is kept: {} (its scenario: {})\n  \
                 --keep-transport-errors records such failures as the fixture's answers, on \
                 purpose",
                recorded.reach.unreached,
                recorded.reach.calls(),
                self.upstream,
                self.fixture.display(),
                first.call_index,
                first.failure,
                self.recording.display(),
                meta.display()
            );
        }
        if !self.force && std::fs::symlink_metadata(&self.fixture).is_ok() {
            let meta = write_meta(&self.recording, &recorded.fixture)?;
            anyhow::bail!(
                "{} appeared while recording and was left as it is (--force replaces it); the \
                 raw recording is kept: {} (its scenario: {})",
                self.fixture.display(),
                self.recording.display(),
                meta.display()
            );
        }
        write_fixture(&self.fixture, &recorded.fixture)?;
        match &self.scratch {
            Some(folder) => {
                std::fs::remove_dir_all(folder)
                    .with_context(|| format!("cannot remove {}", folder.display()))?;
                // The recordings folder itself goes when it holds nothing else.
                if let Some(parent) = folder.parent() {
                    let _ = std::fs::remove_dir(parent);
                }
                out(
                    "raw recording: removed once the fixture was built (--recording-out FILE keeps it)",
                )?;
            }
            None => {
                let meta = write_meta(&self.recording, &recorded.fixture)?;
                out(format!("raw recording: {}", self.recording.display()))?;
                out(format!("scenario metadata: {}", meta.display()))?;
            }
        }
        out(format!("fixture: {}", self.fixture.display()))?;
        Ok(self.fixture.clone())
    }
}
