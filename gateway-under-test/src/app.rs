//! The [`App`] value: one gateway instance, made of the parts its routes and its runtime need —
//! the [`AuthState`], the lead [`Agent`], the [`Store`] and the [`RunManager`] — each an axum
//! substate ([`FromRef`]), so a handler takes only the parts it uses. Nothing is global, so
//! several apps with different homes run side by side in one process.
//!
//! Build one with [`AppBuilder`], register extra providers, tools or middlewares by name, then
//! serve it ([`App::serve`], in `server.rs`). This module knows nothing of HTTP routes: the
//! router is assembled in `http`.

use secrecy::ExposeSecret;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::FromRef;
use tokio_util::sync::CancellationToken;

use crate::auth::{HashGate, JwtKeys, LoginLockout, PasswordHasher};
use crate::config::{AuthConfig, Config, ConfigError, SuggestionsConfig, UploadsConfig};
use crate::models::{ModelProvider, ProviderContext, ProviderRegistry};
use crate::runtime::agent::{Agent, AgentParts};
use crate::runtime::middleware::Middleware;
use crate::runtime::middlewares::builtin_chain;
use crate::runtime::runs::RunManager;
use crate::serve::ServeLimits;
use crate::skills::SkillsCatalog;
use crate::store::{Store, StoreError};
use crate::tools::{Tool, ToolRegistry};

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
        let store = Store::open_with(&config.database_dir(), &config.database)?;
        crate::runtime::runs::finish_orphaned_runs(&store)?;
        let context = ProviderContext {
            home: config.home.clone(),
            aws_credentials: config.aws_credentials.clone(),
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
        let skills_dir = config.home.join(&config.skills.path);
        let agent = Arc::new(Agent::new(
            &config,
            AgentParts {
                models,
                tools: bound_tools,
                middlewares: builtin_chain()
                    .into_iter()
                    .chain(self.extra_middlewares)
                    .collect(),
                skills: list_skills(&skills_dir),
            },
        ));
        let jwt = JwtKeys::load_or_create(
            &config.home,
            config
                .auth
                .jwt_secret
                .as_ref()
                .map(ExposeSecret::expose_secret),
        )
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
        let shutdown = CancellationToken::new();
        let runs = RunManager::new(
            agent.clone(),
            store.clone(),
            config.runs.clone(),
            shutdown.clone(),
        );
        let web_client = Arc::new(WebClientSettings::from_config(&config));
        let skills_catalog = Arc::new(SkillsCatalog::new(
            web_client.skills_dir.clone(),
            web_client.extensions_config.clone(),
        ));
        let serve_limits = ServeLimits::from(&config);
        Ok(App {
            auth: Arc::new(AuthState {
                hashes: HashGate::new(
                    HashGate::concurrency_for(config.auth.max_concurrent_hashes),
                    config.auth.hash_queue,
                ),
                settings: config.auth,
                jwt,
                passwords,
                lockout,
            }),
            agent,
            store,
            runs: Arc::new(runs),
            web_client,
            skills_catalog,
            suggestions: Arc::new(config.suggestions),
            serve_limits,
            shutdown,
            test_seed_route: self.test_seed_route,
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

/// What the auth routes and the CSRF, auth and CORS layers need: the `[auth]` settings, the JWT
/// keys, the password hasher and the login lockout. Only the HTTP layer sees it; a run (and so a
/// registered middleware) never does.
pub struct AuthState {
    /// `[auth]`.
    pub settings: AuthConfig,
    /// Session token signing keys.
    pub jwt: JwtKeys,
    /// The password hasher.
    pub passwords: PasswordHasher,
    /// Failed-login tracking.
    pub lockout: LoginLockout,
    /// The bound on concurrent password hashes.
    pub hashes: HashGate,
}

impl std::fmt::Debug for AuthState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `settings` holds the JWT secret, when configured: never print it.
        f.debug_struct("AuthState").finish_non_exhaustive()
    }
}

/// What the web client's catalog routes read (`GET /api/models`, `/api/skills`, token usage,
/// upload limits): the public part of each model entry (never a key or an endpoint), the token
/// usage display switch, the upload limits and where the skills live; and where the built web
/// client lives, which the router serves beside the API.
#[derive(Debug, Clone, PartialEq)]
pub struct WebClientSettings {
    /// The configured models, in configuration order.
    pub models: Vec<ModelCatalogEntry>,
    /// `token_usage.enabled`.
    pub token_usage_enabled: bool,
    /// `[uploads]`.
    pub uploads: UploadsConfig,
    /// The host skills folder (`<home>/<skills.path>`).
    pub skills_dir: PathBuf,
    /// `<home>/extensions_config.json`, which switches skills on and off.
    pub extensions_config: PathBuf,
    /// `server.web_dir`: the built client the router serves beside the API, if any.
    pub web_dir: Option<PathBuf>,
}

/// One model as the model picker shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelCatalogEntry {
    /// `models[].name`.
    pub name: String,
    /// The provider's model id, or the name when none is configured.
    pub model: String,
    /// `models[].display_name`.
    pub display_name: Option<String>,
    /// `models[].description`.
    pub description: Option<String>,
    /// `models[].supports_thinking`.
    pub supports_thinking: bool,
    /// `models[].supports_reasoning_effort`.
    pub supports_reasoning_effort: bool,
    /// `models[].max_context_tokens`.
    pub max_context_tokens: Option<u64>,
}

impl WebClientSettings {
    fn from_config(config: &Config) -> WebClientSettings {
        WebClientSettings {
            models: config
                .models
                .iter()
                .map(|model| ModelCatalogEntry {
                    name: model.name.clone(),
                    model: model.model.clone().unwrap_or_else(|| model.name.clone()),
                    display_name: model.display_name.clone(),
                    description: model.description.clone(),
                    supports_thinking: model.supports_thinking,
                    supports_reasoning_effort: model.supports_reasoning_effort,
                    max_context_tokens: model.max_context_tokens,
                })
                .collect(),
            token_usage_enabled: config.token_usage.enabled,
            uploads: config.uploads.clone(),
            skills_dir: config.home.join(&config.skills.path),
            extensions_config: config.home.join("extensions_config.json"),
            web_dir: config.server.web_dir.clone(),
        }
    }

    /// The catalog entry of the model called `name`.
    pub fn model(&self, name: &str) -> Option<&ModelCatalogEntry> {
        self.models.iter().find(|model| model.name == name)
    }
}

/// One gateway instance. Cheap to clone: every part is shared.
#[derive(Clone)]
pub struct App {
    auth: Arc<AuthState>,
    agent: Arc<Agent>,
    store: Store,
    runs: Arc<RunManager>,
    suggestions: Arc<SuggestionsConfig>,
    web_client: Arc<WebClientSettings>,
    /// What `GET /api/skills` lists, re-read only when the skills folder changed.
    skills_catalog: Arc<SkillsCatalog>,
    /// `[server]`'s timeouts and connection bound, for [`App::serve`].
    serve_limits: ServeLimits,
    shutdown: CancellationToken,
    test_seed_route: bool,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("home", &self.agent.settings().home)
            .field("agent", &self.agent)
            .finish_non_exhaustive()
    }
}

impl App {
    /// The database.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The lead agent: models, bound tools, middleware chain.
    pub fn agent(&self) -> &Arc<Agent> {
        &self.agent
    }

    /// The active runs.
    pub fn runs(&self) -> &Arc<RunManager> {
        &self.runs
    }

    /// Cancelled when the server shuts down.
    pub fn shutdown_token(&self) -> &CancellationToken {
        &self.shutdown
    }

    /// The limits [`App::serve`] applies to connections (`[server]`).
    pub(crate) fn serve_limits(&self) -> ServeLimits {
        self.serve_limits.clone()
    }

    /// Whether the test-only seed route is mounted.
    pub fn test_seed_route(&self) -> bool {
        cfg!(feature = "test-seed") && self.test_seed_route
    }
}

impl FromRef<App> for Arc<AuthState> {
    fn from_ref(app: &App) -> Self {
        app.auth.clone()
    }
}

impl FromRef<App> for Arc<Agent> {
    fn from_ref(app: &App) -> Self {
        app.agent.clone()
    }
}

impl FromRef<App> for Store {
    fn from_ref(app: &App) -> Self {
        app.store.clone()
    }
}

impl FromRef<App> for Arc<RunManager> {
    fn from_ref(app: &App) -> Self {
        app.runs.clone()
    }
}

impl FromRef<App> for Arc<SuggestionsConfig> {
    fn from_ref(app: &App) -> Self {
        app.suggestions.clone()
    }
}

impl FromRef<App> for Arc<SkillsCatalog> {
    fn from_ref(app: &App) -> Self {
        app.skills_catalog.clone()
    }
}

impl FromRef<App> for Arc<WebClientSettings> {
    fn from_ref(app: &App) -> Self {
        app.web_client.clone()
    }
}
