//! The [`App`] value: one gateway instance with its configuration, database, models, tools,
//! middlewares, auth state and active runs. Nothing is global, so several apps with different
//! homes run side by side in one process.
//!
//! Build one with [`AppBuilder`], register extra providers, tools or middlewares by name, then
//! [`App::serve`] it on a listener.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::auth::{JwtKeys, LoginLockout, PasswordHasher};
use crate::config::{Config, ConfigError};
use crate::models::{ChatModel, ModelProvider, ProviderContext, ProviderRegistry, ToolSpec};
use crate::runtime::middleware::Middleware;
use crate::runtime::middlewares::builtin_chain;
use crate::runtime::runs::RunManager;
use crate::store::{Store, StoreError};
use crate::tools::{ReadTracker, Tool, ToolRegistry};

/// Why an app could not be built.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The database could not be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A configured model could not be built.
    #[error("config key `{key}`: {problem}")]
    Model {
        /// e.g. `models[0].use`.
        key: String,
        /// What went wrong.
        problem: String,
    },
    /// A configured tool is not registered.
    #[error("config key `{key}`: {problem}")]
    Tool {
        /// e.g. `tools[2].name`.
        key: String,
        /// What went wrong.
        problem: String,
    },
    /// A file under the home folder could not be prepared.
    #[error("{what}: {source}")]
    Io {
        /// What was being prepared.
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// Password hashing parameters were refused.
    #[error("config key `auth.password_hash`: {0}")]
    PasswordHash(String),
}

/// Builds an [`App`] from a [`Config`], with extension points for embedding crates.
pub struct AppBuilder {
    config: Config,
    providers: ProviderRegistry,
    tools: ToolRegistry,
    extra_middlewares: Vec<Arc<dyn Middleware>>,
    test_seed_route: bool,
}

impl AppBuilder {
    /// A builder with the built-in providers and tools.
    pub fn new(config: Config) -> AppBuilder {
        AppBuilder {
            config,
            providers: ProviderRegistry::with_builtins(),
            tools: ToolRegistry::with_builtins(),
            extra_middlewares: Vec::new(),
            test_seed_route: false,
        }
    }

    /// Registers a model provider under a `use` name.
    pub fn provider(mut self, use_name: &str, provider: impl ModelProvider + 'static) -> Self {
        self.providers.register(use_name, provider);
        self
    }

    /// Rewrites every registered provider (a provider transform): `transform` receives each
    /// `use` name and provider and returns its replacement. Embedding crates use it to wrap all
    /// models at once, e.g. to record them or to block them; the gateway does not know why.
    pub fn map_providers(
        mut self,
        transform: impl Fn(&str, Arc<dyn ModelProvider>) -> Arc<dyn ModelProvider>,
    ) -> Self {
        for name in self.providers.names() {
            if let Some(provider) = self.providers.get(&name) {
                let replaced = transform(&name, provider);
                self.providers.register_arc(&name, replaced);
            }
        }
        self
    }

    /// Registers a tool; the configuration binds it by name in `[[tools]]`.
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.register(tool);
        self
    }

    /// Appends a middleware after the built-in chain.
    pub fn middleware(mut self, middleware: Arc<dyn Middleware>) -> Self {
        self.extra_middlewares.push(middleware);
        self
    }

    /// Mounts `POST /api/test-only/seed-runs`. Has an effect only when the crate is built with
    /// the `test-seed` feature.
    pub fn test_seed_route(mut self, enabled: bool) -> Self {
        self.test_seed_route = enabled;
        self
    }

    /// Mounts the seed route when `DEERFLOW_ENABLE_TEST_SEED=1` in `env` (and the crate has the
    /// `test-seed` feature).
    pub fn test_seed_route_from_env(self, env: crate::config::EnvLookup<'_>) -> Self {
        let requested = env("DEERFLOW_ENABLE_TEST_SEED").as_deref() == Some("1");
        self.test_seed_route(requested)
    }

    /// Validates the configuration, opens the database, builds the models and binds the tools.
    pub fn build(self) -> Result<App, AppError> {
        let config = self.config;
        config.validate()?;
        std::fs::create_dir_all(&config.home).map_err(|source| AppError::Io {
            what: format!("home folder {}", config.home.display()),
            source,
        })?;
        let store = Store::open(&config.database_dir())?;
        crate::runtime::runs::finish_orphaned_runs(&store)?;
        let context = ProviderContext {
            home: config.home.clone(),
        };
        let mut models = BTreeMap::new();
        for (index, entry) in config.models.iter().enumerate() {
            let provider = self
                .providers
                .get(&entry.use_)
                .ok_or_else(|| AppError::Model {
                    key: format!("models[{index}].use"),
                    problem: format!(
                        "no provider is registered as '{}' (registered: {})",
                        entry.use_,
                        self.providers.names().join(", ")
                    ),
                })?;
            let model = provider
                .build(entry, &context)
                .map_err(|err| AppError::Model {
                    key: format!("models[{index}]"),
                    problem: err.message,
                })?;
            models.insert(entry.name.clone(), model);
        }
        let mut bound_tools = Vec::new();
        for (index, entry) in config.tools.iter().enumerate() {
            let tool = self.tools.get(&entry.name).ok_or_else(|| AppError::Tool {
                key: format!("tools[{index}].name"),
                problem: format!("no tool is registered as '{}'", entry.name),
            })?;
            bound_tools.push(tool);
        }
        // Specs are fixed once the app is built; every model call sends them.
        let tool_specs = bound_tools.iter().map(|tool| tool.spec()).collect();
        let skills_dir = config.home.join(&config.skills.path);
        let skill_names = list_skills(&skills_dir);
        let jwt = JwtKeys::load_or_create(&config.home, config.auth.jwt_secret.as_deref())
            .map_err(|source| AppError::Io {
                what: "JWT secret".into(),
                source,
            })?;
        let passwords = PasswordHasher::new(&config.auth.password_hash)
            .map_err(|err| AppError::PasswordHash(err.to_string()))?;
        let lockout = LoginLockout::new(
            config.auth.login_max_failures,
            config.auth.login_max_failures_per_account,
            Duration::from_secs(config.auth.lockout_seconds),
        );
        let mut middlewares = builtin_chain();
        middlewares.extend(self.extra_middlewares);
        Ok(App {
            inner: Arc::new(AppInner {
                config,
                store,
                models,
                bound_tools,
                tool_specs,
                middlewares,
                skill_names,
                reads: ReadTracker::default(),
                runs: RunManager::default(),
                jwt,
                passwords,
                lockout,
                shutdown: CancellationToken::new(),
                test_seed_route: self.test_seed_route,
            }),
        })
    }
}

fn list_skills(dir: &std::path::Path) -> Vec<String> {
    let mut names = Vec::new();
    for group in ["public", "custom"] {
        if let Ok(entries) = std::fs::read_dir(dir.join(group)) {
            for entry in entries.flatten() {
                if entry.path().join("SKILL.md").is_file() {
                    names.push(entry.file_name().to_string_lossy().into_owned());
                }
            }
        }
    }
    names.sort();
    names
}

struct AppInner {
    config: Config,
    store: Store,
    models: BTreeMap<String, Arc<dyn ChatModel>>,
    bound_tools: Vec<Arc<dyn Tool>>,
    tool_specs: Vec<ToolSpec>,
    middlewares: Vec<Arc<dyn Middleware>>,
    skill_names: Vec<String>,
    reads: ReadTracker,
    runs: RunManager,
    jwt: JwtKeys,
    passwords: PasswordHasher,
    lockout: LoginLockout,
    shutdown: CancellationToken,
    test_seed_route: bool,
}

/// One gateway instance. Cheap to clone.
#[derive(Clone)]
pub struct App {
    inner: Arc<AppInner>,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("home", &self.inner.config.home)
            .field("models", &self.inner.models.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl App {
    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The database.
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The configured model called `name`.
    pub fn model(&self, name: &str) -> Option<Arc<dyn ChatModel>> {
        self.inner.models.get(name).cloned()
    }

    /// The first configured model's name (the default for runs).
    pub fn default_model_name(&self) -> Option<&str> {
        self.inner.config.models.first().map(|m| m.name.as_str())
    }

    /// The tools bound to the lead agent, in configuration order.
    pub fn bound_tools(&self) -> &[Arc<dyn Tool>] {
        &self.inner.bound_tools
    }

    /// The bound tools' specs, in configuration order (computed once at build).
    pub fn bound_tool_specs(&self) -> &[ToolSpec] {
        &self.inner.tool_specs
    }

    /// The bound tool called `name`.
    pub fn bound_tool(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.inner
            .tool_specs
            .iter()
            .position(|spec| spec.name == name)
            .map(|index| self.inner.bound_tools[index].clone())
    }

    /// The middleware chain: built-ins, then registered ones.
    pub fn middlewares(&self) -> Vec<Arc<dyn Middleware>> {
        self.inner.middlewares.clone()
    }

    /// Skill names found at start-up.
    pub fn skill_names(&self) -> Vec<String> {
        self.inner.skill_names.clone()
    }

    /// The read-before-write memory of the file tools.
    pub fn read_tracker(&self) -> &ReadTracker {
        &self.inner.reads
    }

    /// The active runs.
    pub fn runs(&self) -> &RunManager {
        &self.inner.runs
    }

    /// JWT signing keys.
    pub fn jwt(&self) -> &JwtKeys {
        &self.inner.jwt
    }

    /// The password hasher.
    pub fn passwords(&self) -> &PasswordHasher {
        &self.inner.passwords
    }

    /// The login lockout tracker.
    pub fn lockout(&self) -> &LoginLockout {
        &self.inner.lockout
    }

    /// Cancelled when the server shuts down.
    pub fn shutdown_token(&self) -> &CancellationToken {
        &self.inner.shutdown
    }

    /// Whether the test-only seed route is mounted.
    pub fn test_seed_route(&self) -> bool {
        cfg!(feature = "test-seed") && self.inner.test_seed_route
    }

    /// Serves the HTTP API on `listener` until [`RunningGateway::shutdown`].
    pub fn serve(self, listener: TcpListener) -> std::io::Result<RunningGateway> {
        let addr = listener.local_addr()?;
        let shutdown = self.inner.shutdown.clone();
        let router = crate::http::router(self.clone());
        let limits = crate::serve::ServeLimits::from(&self.inner.config.server);
        let join = tokio::spawn(crate::serve::serve(listener, router, limits, shutdown));
        Ok(RunningGateway {
            app: self,
            addr,
            join,
        })
    }
}

/// A gateway serving on a socket.
#[derive(Debug)]
pub struct RunningGateway {
    app: App,
    addr: SocketAddr,
    join: JoinHandle<std::io::Result<()>>,
}

impl RunningGateway {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The served app.
    pub fn app(&self) -> &App {
        &self.app
    }

    /// Stops accepting, cancels active runs, ends open streams and waits (at most 5 s) for the
    /// server to finish.
    pub async fn shutdown(self) -> std::io::Result<()> {
        self.app.runs().cancel_all();
        self.app.shutdown_token().cancel();
        match tokio::time::timeout(Duration::from_secs(5), self.join).await {
            Ok(Ok(result)) => result,
            Ok(Err(join_error)) => Err(std::io::Error::other(join_error)),
            Err(_) => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "server did not stop within 5 s",
            )),
        }
    }
}
