//! Replay gateways for a browser: the real gateway replaying a fixture on 127.0.0.1, serving the
//! built web client beside its API, and logging every hit and miss as it happens
//! (`ReplayLog`). `cargo xtask replay-gateway` runs one for a person with a browser, or the
//! whole set the Layer 2 browser suite needs ([`suite`]) with a manifest describing them
//! ([`manifest`]).
//!
//! A replay serves each recorded turn once, so every browser test that replays a run needs a
//! gateway of its own; they share a process, each with its own engine, home and log.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use secrecy::SecretString;
use serde_json::{Value, json};

use crate::adapter::boot::{BootError, BootedGateway, Extensions, ModelWiring, boot_at};
use replay_core::{Ambiguity, FixtureError, LoadedFixture, Miss, ReplayEngine};

pub(crate) use keyless_runner::server::ReplayLog;

/// Whether a gateway asks for a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// Cookie session and CSRF, as deployed.
    Enabled,
    /// Auth-disabled mode: the synthetic user, no session.
    Disabled,
}

impl Auth {
    /// The manifest's spelling: `enabled` or `disabled`.
    pub fn as_str(self) -> &'static str {
        match self {
            Auth::Enabled => "enabled",
            Auth::Disabled => "disabled",
        }
    }
}

/// One replay gateway to start.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewaySpec {
    /// The name the browser suite looks it up by.
    pub name: String,
    /// The fixture it replays.
    pub fixture: PathBuf,
    /// Session or auth-disabled mode.
    pub auth: Auth,
    /// Whether it mounts the test-only seed route (only a `test-seed` build can).
    pub seed_route: bool,
    /// Where it logs hits and misses; without one, misses go to stderr only.
    pub replay_log: Option<PathBuf>,
}

/// The gateways the browser suite asks for by name besides one per fixture, with their auth
/// and whether they need the seed route: `reload` and `signed-in` replay a run, `multi-run`
/// seeds its thread, `auth-disabled` checks the synthetic user.
pub const SUITE_EXTRAS: [(&str, Auth, bool); 4] = [
    ("reload", Auth::Enabled, false),
    ("signed-in", Auth::Enabled, false),
    ("multi-run", Auth::Enabled, true),
    ("auth-disabled", Auth::Disabled, false),
];

/// The file name of a gateway's replay log in the suite's log folder.
pub fn replay_log_name(gateway: &str) -> String {
    format!("{gateway}.replay.jsonl")
}

/// The browser suite's gateways: one per fixture in `fixtures_dir` (named by its stem, auth on,
/// no seed route), then the [`SUITE_EXTRAS`] replaying `extras_fixture` (the seed route where
/// an extra needs it and `seed_route` allows it), each logging to `log_dir`.
pub fn suite(
    fixtures_dir: &Path,
    extras_fixture: &Path,
    log_dir: &Path,
    seed_route: bool,
) -> Result<Vec<GatewaySpec>, ReplayGatewayError> {
    let listing = std::fs::read_dir(fixtures_dir).map_err(|source| ReplayGatewayError::Io {
        what: format!("fixture folder {}", fixtures_dir.display()),
        source,
    })?;
    let mut fixtures: Vec<PathBuf> = listing
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    fixtures.sort();
    if fixtures.is_empty() {
        return Err(ReplayGatewayError::NoFixtures(fixtures_dir.to_path_buf()));
    }
    let spec = |name: &str, fixture: &Path, auth: Auth, seed: bool| GatewaySpec {
        name: name.to_owned(),
        fixture: fixture.to_path_buf(),
        auth,
        seed_route: seed,
        replay_log: Some(log_dir.join(replay_log_name(name))),
    };
    let mut specs: Vec<GatewaySpec> = fixtures
        .iter()
        .map(|fixture| {
            let stem = fixture.file_stem().unwrap_or_default().to_string_lossy();
            spec(&stem, fixture, Auth::Enabled, false)
        })
        .collect();
    for (name, auth, needs_seed) in SUITE_EXTRAS {
        specs.push(spec(name, extras_fixture, auth, needs_seed && seed_route));
    }
    Ok(specs)
}

/// What every gateway of one launch shares.
#[derive(Debug, Clone)]
pub struct HostSettings {
    /// The built web client, served at `/` (`server.web_dir`).
    pub web_dir: Option<PathBuf>,
    /// The session signing secret (its `Debug` never shows it).
    pub jwt_secret: SecretString,
    /// Browser origins allowed besides the gateway's own (CORS and the auth routes' Origin check).
    pub cors_origins: Vec<String>,
}

/// Why a replay gateway did not start.
#[derive(Debug, thiserror::Error)]
pub enum ReplayGatewayError {
    /// The fixture did not load.
    #[error("gateway {gateway}: {source}")]
    Fixture {
        /// The gateway.
        gateway: String,
        /// Why.
        source: FixtureError,
    },
    /// The gateway did not boot (a port in use, a bad `web_dir`, …).
    #[error("gateway {gateway} (fixture {}): {source}", .fixture.display())]
    Boot {
        /// The gateway.
        gateway: String,
        /// Its fixture.
        fixture: PathBuf,
        /// Why.
        source: BootError,
    },
    /// A file or folder could not be read or written.
    #[error("{what}: {source}")]
    Io {
        /// What was being read or written.
        what: String,
        /// Why.
        source: std::io::Error,
    },
    /// The fixture folder holds no fixture.
    #[error("no fixture (*.json) in {}", .0.display())]
    NoFixtures(PathBuf),
}

/// A running replay gateway.
#[derive(Debug)]
pub struct ReplayGateway {
    spec: GatewaySpec,
    engine: Arc<ReplayEngine>,
    booted: BootedGateway,
}

impl ReplayGateway {
    /// Starts `spec` on 127.0.0.1:`port` (0 picks a free port). Its replay log starts empty.
    pub async fn start(
        spec: GatewaySpec,
        port: u16,
        settings: &HostSettings,
    ) -> Result<ReplayGateway, ReplayGatewayError> {
        let fixture_error = |source| ReplayGatewayError::Fixture {
            gateway: spec.name.clone(),
            source,
        };
        // Read and validated once: the engine over it validates nothing again.
        let loaded = LoadedFixture::load(&spec.fixture).map_err(fixture_error)?;
        let fixture = Arc::clone(loaded.fixture());
        let log = match &spec.replay_log {
            Some(path) => ReplayLog::create(&format!("replay gateway {}", spec.name), path)
                .map_err(|source| ReplayGatewayError::Io {
                    what: format!("replay log {}", path.display()),
                    source,
                })?,
            None => ReplayLog::stderr_only(&format!("replay gateway {}", spec.name)),
        };
        let engine = ReplayEngine::over(&loaded).with_observer(Arc::new(log));
        let engine = Arc::new(engine);
        let (settings, auth, seed_route) = (settings.clone(), spec.auth, spec.seed_route);
        let extensions = Extensions {
            configure: Box::new(move |config| {
                config.auth.jwt_secret = Some(settings.jwt_secret);
                config.auth.cors_origins = settings.cors_origins;
                config.auth.disabled = auth == Auth::Disabled;
                config.server.web_dir = settings.web_dir;
            }),
            extend: Box::new(move |builder| builder.test_seed_route(seed_route)),
        };
        let booted = boot_at(
            port,
            ModelWiring::Replay(engine.clone()),
            fixture.scenario.gateway_config.as_ref(),
            extensions,
        )
        .await
        .map_err(|source| ReplayGatewayError::Boot {
            gateway: spec.name.clone(),
            fixture: spec.fixture.clone(),
            source,
        })?;
        Ok(ReplayGateway {
            spec,
            engine,
            booted,
        })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        self.booted.url()
    }

    /// What it was started as.
    pub fn spec(&self) -> &GatewaySpec {
        &self.spec
    }

    /// Whether the seed route is really mounted (the spec asked and the build has it).
    pub fn seed_route(&self) -> bool {
        self.booted.gateway.app().test_seed_route()
    }

    /// Stops the gateway and says what its replay did.
    pub async fn shutdown(self) -> GatewayReport {
        let shutdown_error = self
            .booted
            .shutdown()
            .await
            .err()
            .map(|err| err.to_string());
        let turns = &self.engine.fixture().turns;
        let unused_turns: Vec<(usize, String)> = self
            .engine
            .unused_turns()
            .into_iter()
            .map(|index| {
                let caller = turns[index].caller.as_deref().unwrap_or("(legacy)");
                (index, caller.to_owned())
            })
            .collect();
        GatewayReport {
            name: self.spec.name,
            hits: turns.len() - unused_turns.len(),
            unused_turns,
            misses: self.engine.misses(),
            ambiguities: self.engine.ambiguities(),
            shutdown_error,
        }
    }
}

/// What one gateway's replay did, at shutdown.
#[derive(Debug)]
pub struct GatewayReport {
    /// The gateway.
    pub name: String,
    /// Recorded turns served.
    pub hits: usize,
    /// Recorded turns never served, with their callers.
    pub unused_turns: Vec<(usize, String)>,
    /// Every miss, with its diagnostic.
    pub misses: Vec<Miss>,
    /// Every call that named no caller and met a key with several different answers.
    pub ambiguities: Vec<Ambiguity>,
    /// Why the server did not stop cleanly, if it did not.
    pub shutdown_error: Option<String>,
}

impl GatewayReport {
    /// One line: hits, misses and the unused turns (`#3 suggest_agent`), or that no model call
    /// reached it.
    pub fn summary(&self) -> String {
        if self.hits == 0 && self.misses.is_empty() && self.ambiguities.is_empty() {
            return format!("{}: no model call", self.name);
        }
        let unused: Vec<String> = self
            .unused_turns
            .iter()
            .map(|(index, caller)| format!("#{index} {caller}"))
            .collect();
        let ambiguous = match self.ambiguities.len() {
            0 => String::new(),
            count => format!(", {count} ambiguous"),
        };
        format!(
            "{}: {} hit(s), {} miss(es){ambiguous}, unused turns: {}",
            self.name,
            self.hits,
            self.misses.len(),
            if unused.is_empty() {
                "none".to_owned()
            } else {
                unused.join(", ")
            }
        )
    }
}

/// The manifest the browser suite reads (`E2E_GATEWAYS`): `{"gateways": [{"name", "base_url",
/// "fixture", "auth", "seed_route", "replay_log"}]}`. `fixture` is the file name (the suite
/// reads it from `fixtures/`); a replay log below `manifest_dir` is given relative to it.
pub fn manifest(gateways: &[ReplayGateway], manifest_dir: &Path) -> Value {
    let entries: Vec<Value> = gateways
        .iter()
        .map(|gateway| {
            let spec = gateway.spec();
            let log = spec.replay_log.as_ref().map(|path| {
                let shown = path.strip_prefix(manifest_dir).unwrap_or(path);
                shown.display().to_string()
            });
            json!({
                "name": spec.name,
                "base_url": gateway.url(),
                "fixture": spec.fixture.file_name().map(|name| name.to_string_lossy()),
                "auth": spec.auth.as_str(),
                "seed_route": gateway.seed_route(),
                "replay_log": log,
            })
        })
        .collect();
    json!({ "gateways": entries })
}
