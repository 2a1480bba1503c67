//! The gateway configuration: one TOML file, `$ENV` expansion, and validation that names the key.
//!
//! Every key is documented on its field below and in `gateway-under-test/README.md`. Environment
//! variables are read only through an explicit [`EnvLookup`] passed to [`Config::load`], never from
//! inside the running app, so several gateways with different settings can share one process.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Reads an environment variable. The binary passes `std::env::var`; tests pass a map.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// A configuration problem, naming the file and key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The TOML did not parse or a key had the wrong type (toml's message names the key).
    #[error("config file {path}: {message}")]
    Parse {
        /// The file, or `<inline>`.
        path: PathBuf,
        /// toml's message, with line and column.
        message: String,
    },
    /// A key has a value the gateway cannot use.
    #[error("config key `{key}`: {problem}")]
    Invalid {
        /// Dotted key path, e.g. `models[0].use`.
        key: String,
        /// What is wrong with it.
        problem: String,
    },
}

fn invalid(key: impl Into<String>, problem: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.into(),
        problem: problem.into(),
    }
}

/// The whole configuration file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Home folder for the database, sandboxes and the JWT secret. `DEER_FLOW_HOME` overrides
    /// it; a relative path is taken from the config file's folder. Default `.deer-flow`.
    #[serde(default = "default_home")]
    pub home: PathBuf,
    /// `log_level`: the default tracing filter when `RUST_LOG` is unset (`error`, `warning`,
    /// `info`, `debug`, `trace`). Default `info`.
    #[serde(default = "default_log_level")]
    pub log_level: String,
    /// `[server]`: where the binary listens.
    #[serde(default)]
    pub server: ServerConfig,
    /// `[database]`: where SQLite lives.
    #[serde(default)]
    pub database: DatabaseConfig,
    /// `[auth]`: cookies, JWT, password hashing, lockout, CSRF origins.
    #[serde(default)]
    pub auth: AuthConfig,
    /// `[[models]]`: the configured chat models; the first is the default.
    #[serde(default)]
    pub models: Vec<ModelConfig>,
    /// `[sandbox]`: which sandbox runs the file tools.
    #[serde(default)]
    pub sandbox: SandboxConfig,
    /// `[[tool_groups]]`: named groups of tools.
    #[serde(default = "default_tool_groups")]
    pub tool_groups: Vec<ToolGroupConfig>,
    /// `[[tools]]`: the tools bound to the lead agent.
    #[serde(default = "default_tools")]
    pub tools: Vec<ToolConfig>,
    /// `[tool_limits]`: limits of the file tools.
    #[serde(default)]
    pub tool_limits: ToolLimitsConfig,
    /// `[skills]`: the skills folder and its path inside the sandbox.
    #[serde(default)]
    pub skills: SkillsConfig,
    /// AWS credentials for `use = "bedrock"` models without an `api_key`: never part of the
    /// file, read by [`Config::apply_env`] from the standard variables (`AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`) as boto3 reads them. Its
    /// `Debug` shows the region only.
    #[serde(skip)]
    pub aws_credentials: Option<aws_sign::AwsCredentials>,
    /// `[title]`: the title middleware.
    #[serde(default)]
    pub title: TitleConfig,
    /// `[suggestions]`: the follow-up suggestions route.
    #[serde(default)]
    pub suggestions: SuggestionsConfig,
    /// `[token_usage]`: whether web clients show token usage.
    #[serde(default)]
    pub token_usage: TokenUsageConfig,
    /// `[uploads]`: the upload limits web clients enforce.
    #[serde(default)]
    pub uploads: UploadsConfig,
    /// `[memory]`: long-term memory (not implemented; must stay off).
    #[serde(default)]
    pub memory: MemoryConfig,
    /// `[summarization]`: context summarisation (not implemented; must stay off).
    #[serde(default)]
    pub summarization: SummarizationConfig,
    /// `[runs]`: run execution limits and SSE settings.
    #[serde(default)]
    pub runs: RunsConfig,
    /// `[llm_retry]`: retries of failed model calls.
    #[serde(default)]
    pub llm_retry: LlmRetryConfig,
    /// `[message_limits]`.
    #[serde(default)]
    pub message_limits: MessageLimitsConfig,
}

fn default_home() -> PathBuf {
    PathBuf::from(".deer-flow")
}
fn default_log_level() -> String {
    "info".into()
}

/// `[server]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// `server.host`: the address to bind. Default `127.0.0.1`.
    pub host: String,
    /// `server.port`: the port; `0` picks a free one. Default `8001`; `--port` overrides.
    pub port: u16,
    /// `server.web_dir`: a built web client (a folder with `index.html`, such as
    /// `gateway-under-test/web/dist`) served at `/` from the API's own origin, so the page's
    /// cookie session and CSRF header work as in production. A path without a file answers
    /// `index.html` (the client routes itself); `/api` and `/health` are never served from it.
    /// Relative to the config file's folder. Unset (the default) serves no client.
    pub web_dir: Option<PathBuf>,
    /// `server.header_read_timeout_secs`: how long a client may take to send a request's
    /// headers, counted from when the server starts waiting for them (so it also closes idle
    /// keep-alive connections). At least 1. Default 10.
    pub header_read_timeout_secs: u64,
    /// `server.request_body_timeout_secs`: how long a request body may go without sending
    /// anything; the request then fails and the connection closes. At least 1. Default 30.
    pub request_body_timeout_secs: u64,
    /// `server.request_body_deadline_secs`: how long a whole request body may take, however
    /// steadily it trickles in; the request then fails and the connection closes. At least 1.
    /// Default 120 (the 2 MiB body limit at about 17 KiB/s).
    pub request_body_deadline_secs: u64,
    /// `server.max_connections`: connections served at once. At the bound a new client closes
    /// the oldest idle connection (one with no request in flight); when none is idle it waits
    /// in the listen backlog until one closes. At least 1. Default 512.
    pub max_connections: usize,
    /// `server.max_connections_per_client`: connections one peer address may hold at once, so
    /// that one client cannot take every slot. At the bound its oldest idle connection is
    /// closed; when none is idle the new one is refused with a 503. Peers listed in
    /// `auth.trusted_proxies` are exempt (a proxy carries every user). At least 1. Default 256.
    pub max_connections_per_client: usize,
    /// `server.write_timeout_secs`: how long a response write may make no progress (a client
    /// that stopped reading) before the connection is closed. At least 1. Default 30.
    pub write_timeout_secs: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            host: "127.0.0.1".into(),
            port: 8001,
            web_dir: None,
            header_read_timeout_secs: 10,
            request_body_timeout_secs: 30,
            request_body_deadline_secs: 120,
            max_connections: 512,
            max_connections_per_client: 256,
            write_timeout_secs: 30,
        }
    }
}

/// `[database]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DatabaseConfig {
    /// `database.backend`: where the database lives. Default `sqlite`.
    pub backend: DatabaseBackend,
    /// `database.sqlite_dir`: the folder of `deerflow.db`; relative to `home`. Default `db`.
    pub sqlite_dir: PathBuf,
    /// `database.synchronous`: when SQLite syncs the database to the disk. Default `normal`.
    pub synchronous: Synchronous,
    /// `database.space_reserve`: keep a disk-space reserve of 4 MiB beside the database, given up
    /// so that a thread delete still gets through on a full disk. Default `true`; a database
    /// thrown away with its gateway (the replay harness's hermetic configuration) goes without.
    pub space_reserve: bool,
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        DatabaseConfig {
            backend: DatabaseBackend::Sqlite,
            sqlite_dir: PathBuf::from("db"),
            synchronous: Synchronous::Normal,
            space_reserve: true,
        }
    }
}

/// `database.backend`: DeerFlow's three values. This gateway has no PostgreSQL driver, so
/// `postgres` parses (a DeerFlow configuration names it) and [`Config::validate`] refuses it by
/// name.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum DatabaseBackend {
    /// One SQLite database in memory, gone when the gateway stops, as DeerFlow's `memory`
    /// ("no persistence across restarts"): for a development run or a test's gateway. The
    /// store is the same code and schema as `sqlite`'s; nothing is written to the disk, so
    /// `sqlite_dir`, `synchronous` and `space_reserve` do not apply.
    Memory,
    /// `<home>/<sqlite_dir>/deerflow.db`, in WAL mode.
    Sqlite,
    /// PostgreSQL: not supported by this gateway.
    Postgres,
}

/// `database.synchronous`: when SQLite syncs the database to the disk (its `PRAGMA synchronous`
/// in WAL mode).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Synchronous {
    /// Synced at every checkpoint and when the gateway stops: a power loss may roll the last
    /// commits back but never corrupts the database. The default.
    #[default]
    Normal,
    /// Never synced: for a database thrown away with its gateway (the replay harness's hermetic
    /// configuration), where each sync is a wait on the disk for nothing. A power loss or an
    /// operating system crash may corrupt it; a crash of the gateway alone does not.
    Off,
}

/// `[auth]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    /// `auth.disabled`: auth-disabled mode (synthetic `default` user, no CSRF). Also switched on
    /// by `DEER_FLOW_AUTH_DISABLED=1`. Refused when `auth.environment` is `prod`/`production`.
    pub disabled: bool,
    /// `auth.environment`: the deployment environment (`DEER_FLOW_ENV` or `ENVIRONMENT`).
    pub environment: Option<String>,
    /// `auth.jwt_secret`: the HS256 secret (`AUTH_JWT_SECRET`). When unset, a secret is generated
    /// and kept in `<home>/.jwt_secret`.
    #[serde(serialize_with = "serialize_secret")]
    pub jwt_secret: Option<SecretString>,
    /// `auth.token_expiry_days`: JWT and cookie lifetime, 1 to 30. Default 7.
    pub token_expiry_days: u32,
    /// `auth.registration_enabled`: whether `register` accepts new users. Default true.
    pub registration_enabled: bool,
    /// `auth.cors_origins`: allowed browser origins (`GATEWAY_CORS_ORIGINS`, comma-separated).
    pub cors_origins: Vec<String>,
    /// `auth.trusted_proxies`: peers whose `X-Real-IP` is believed (`AUTH_TRUSTED_PROXIES`).
    pub trusted_proxies: Vec<String>,
    /// `auth.allow_insecure_persistent_cookie`: persistent cookies over plain http to
    /// non-loopback hosts (`DEER_FLOW_AUTH_ALLOW_INSECURE_PERSISTENT_COOKIE`).
    pub allow_insecure_persistent_cookie: bool,
    /// `auth.login_max_failures`: failed logins for one account from one client IP before that
    /// pair is locked out. Default 5.
    pub login_max_failures: u32,
    /// `auth.login_max_failures_per_account`: failed logins for one account from all clients
    /// before the account is locked out for every client that has not signed in to it
    /// successfully in the last 30 days; at least `login_max_failures`. Default 20.
    pub login_max_failures_per_account: u32,
    /// `auth.lockout_seconds`: how long failures are counted, and how long a lockout lasts.
    /// Default 300.
    pub lockout_seconds: u64,
    /// `[auth.password_hash]`: argon2id cost.
    pub password_hash: PasswordHashConfig,
    /// `auth.max_concurrent_hashes`: password hashes (logins, registrations) computed at once,
    /// each costing `password_hash.memory_kib`; `0` means one per available core. Default 0.
    pub max_concurrent_hashes: usize,
    /// `auth.hash_queue`: hashes that may wait for one of those; past it a login or
    /// registration is refused with 503 and `Retry-After`. Default 64.
    pub hash_queue: usize,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            disabled: false,
            environment: None,
            jwt_secret: None,
            token_expiry_days: 7,
            registration_enabled: true,
            cors_origins: Vec::new(),
            trusted_proxies: Vec::new(),
            allow_insecure_persistent_cookie: false,
            login_max_failures: 5,
            login_max_failures_per_account: 20,
            lockout_seconds: 300,
            password_hash: PasswordHashConfig::default(),
            max_concurrent_hashes: 0,
            hash_queue: 64,
        }
    }
}

impl AuthConfig {
    /// True when auth-disabled mode is requested and the environment is not production.
    pub fn auth_disabled_effective(&self) -> bool {
        let production = self
            .environment
            .as_deref()
            .map(|env| matches!(env.trim().to_lowercase().as_str(), "prod" | "production"))
            .unwrap_or(false);
        self.disabled && !production
    }
}

/// `[auth.password_hash]`: argon2id parameters. Tests use the cheapest values.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PasswordHashConfig {
    /// Memory in KiB (at least 8). Default 19456 (OWASP's argon2id minimum).
    pub memory_kib: u32,
    /// Passes (at least 1). Default 2.
    pub iterations: u32,
    /// Lanes (at least 1). Default 1.
    pub parallelism: u32,
}

impl Default for PasswordHashConfig {
    fn default() -> Self {
        PasswordHashConfig {
            memory_kib: 19456,
            iterations: 2,
            parallelism: 1,
        }
    }
}

impl PasswordHashConfig {
    /// The cheapest valid setting, for tests.
    pub fn cheap() -> Self {
        PasswordHashConfig {
            memory_kib: 8,
            iterations: 1,
            parallelism: 1,
        }
    }
}

/// One `[[models]]` entry. Its `Debug` output hides the API key.
#[derive(Clone, Serialize, Deserialize)]
pub struct ModelConfig {
    /// `models[].name`: the name runs select with `context.model_name`.
    pub name: String,
    /// `models[].display_name`: shown in UIs.
    #[serde(default)]
    pub display_name: Option<String>,
    /// `models[].use`: the provider, by its registered name (`openai`, or one a crate registered).
    #[serde(rename = "use")]
    pub use_: String,
    /// `models[].model`: the provider's model id (e.g. `gpt-5.5`).
    #[serde(default)]
    pub model: Option<String>,
    /// `models[].api_key`: the key; `$VAR` or `${VAR}` is read from the environment at load.
    #[serde(default)]
    #[serde(serialize_with = "serialize_secret")]
    pub api_key: Option<SecretString>,
    /// `models[].base_url`: the endpoint root (e.g. `https://host/v1`); `$VAR` expands.
    #[serde(default)]
    pub base_url: Option<String>,
    /// `models[].supports_thinking`: whether thinking mode may be requested.
    #[serde(default)]
    pub supports_thinking: bool,
    /// `models[].description`: shown in the model picker (`GET /api/models`).
    #[serde(default)]
    pub description: Option<String>,
    /// `models[].supports_reasoning_effort`: whether a run's `reasoning_effort` is meaningful.
    #[serde(default)]
    pub supports_reasoning_effort: bool,
    /// `models[].max_context_tokens`: the context window, for `context_usage` in
    /// `GET /api/threads/{id}/token-usage`; unset means unknown.
    #[serde(default)]
    pub max_context_tokens: Option<u64>,
    /// `models[].request_timeout_secs`: per-request timeout. Default 120.
    #[serde(default = "default_request_timeout")]
    pub request_timeout_secs: u64,
    /// Any other keys are passed to the provider as they are (a replay provider reads
    /// `fixture`, for example).
    #[serde(flatten)]
    pub settings: Map<String, Value>,
}

fn default_request_timeout() -> u64 {
    120
}

impl std::fmt::Debug for ModelConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelConfig")
            .field("name", &self.name)
            .field("display_name", &self.display_name)
            .field("use", &self.use_)
            .field("model", &self.model)
            .field(
                "api_key",
                &self.api_key.as_ref().map(|_| "[secret removed]"),
            )
            .field("base_url", &self.base_url)
            .field("supports_thinking", &self.supports_thinking)
            .field("description", &self.description)
            .field("supports_reasoning_effort", &self.supports_reasoning_effort)
            .field("max_context_tokens", &self.max_context_tokens)
            .field("request_timeout_secs", &self.request_timeout_secs)
            .field("settings", &self.settings.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ModelConfig {
    /// A model entry for provider `use_name`, with defaults elsewhere.
    pub fn new(name: &str, use_name: &str) -> ModelConfig {
        ModelConfig {
            name: name.into(),
            display_name: None,
            use_: use_name.into(),
            model: None,
            api_key: None,
            base_url: None,
            supports_thinking: false,
            description: None,
            supports_reasoning_effort: false,
            max_context_tokens: None,
            request_timeout_secs: default_request_timeout(),
            settings: Map::new(),
        }
    }
}

/// `[sandbox]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SandboxConfig {
    /// `sandbox.use`: only `local` (tools run on the host under the virtual-path mapping).
    #[serde(rename = "use")]
    pub use_: String,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            use_: "local".into(),
        }
    }
}

/// One `[[tool_groups]]` entry.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ToolGroupConfig {
    /// `tool_groups[].name`, e.g. `file:read`.
    pub name: String,
}

/// One `[[tools]]` entry.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ToolConfig {
    /// `tools[].name`: a built-in (`ls`, `read_file`, `write_file`) or a tool registered by an
    /// embedding crate.
    pub name: String,
    /// `tools[].group`: one of the `tool_groups`.
    pub group: String,
}

fn default_tool_groups() -> Vec<ToolGroupConfig> {
    ["file:read", "file:write"]
        .into_iter()
        .map(|name| ToolGroupConfig { name: name.into() })
        .collect()
}

fn default_tools() -> Vec<ToolConfig> {
    [
        ("ls", "file:read"),
        ("read_file", "file:read"),
        ("write_file", "file:write"),
    ]
    .into_iter()
    .map(|(name, group)| ToolConfig {
        name: name.into(),
        group: group.into(),
    })
    .collect()
}

/// `[tool_limits]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ToolLimitsConfig {
    /// `tool_limits.write_file_max_bytes`: the largest file `write_file` leaves behind (the
    /// content of one call, and the whole file after an append); 0 or less disables it
    /// (`DEERFLOW_WRITE_FILE_MAX_BYTES`). Default 81920.
    pub write_file_max_bytes: i64,
    /// `tool_limits.read_before_write`: refuse to overwrite a file the agent has not read at its
    /// current version. Default true.
    pub read_before_write: bool,
}

impl Default for ToolLimitsConfig {
    fn default() -> Self {
        ToolLimitsConfig {
            write_file_max_bytes: 81920,
            read_before_write: true,
        }
    }
}

/// `[message_limits]`: the largest message each source may add to a thread, in bytes (0 turns
/// a limit off). Every step checkpoints and streams the state, so one oversized message costs
/// far more than its own size; these bounds keep a run's storage and stream proportionate.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MessageLimitsConfig {
    /// `message_limits.user_message_bytes`: the text of one input message; a larger one is
    /// refused with 413. Default 1 MiB.
    pub user_message_bytes: usize,
    /// `message_limits.model_answer_bytes`: everything one model answer carries (text,
    /// reasoning, refusal, tool-call names, ids and arguments, metadata); a larger one fails the
    /// model call (not retried). Default 1 MiB.
    pub model_answer_bytes: usize,
    /// `message_limits.tool_call_args_bytes`: the JSON arguments of one tool call; a larger one
    /// is not run and the model sees a tool error. Default 256 KiB.
    pub tool_call_args_bytes: usize,
    /// `message_limits.tool_calls_per_answer`: tool calls of one answer that are run; each
    /// further call is not run and the model sees a tool error. 0 disables. Default 32.
    pub tool_calls_per_answer: usize,
    /// `message_limits.tool_result_bytes_per_step`: bytes of tool results one tool step adds;
    /// a result that would pass it, and every later call of the step, become tool errors.
    /// 0 disables. Default 1 MiB.
    pub tool_result_bytes_per_step: usize,
}

impl Default for MessageLimitsConfig {
    fn default() -> Self {
        MessageLimitsConfig {
            user_message_bytes: 1024 * 1024,
            model_answer_bytes: 1024 * 1024,
            tool_call_args_bytes: 256 * 1024,
            tool_calls_per_answer: 32,
            tool_result_bytes_per_step: 1024 * 1024,
        }
    }
}

/// `[skills]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SkillsConfig {
    /// `skills.path`: host folder of skills (`public/`, `custom/`); relative to `home`.
    pub path: PathBuf,
    /// `skills.container_path`: where the sandbox sees them. Default `/mnt/skills`.
    pub container_path: String,
}

impl Default for SkillsConfig {
    fn default() -> Self {
        SkillsConfig {
            path: PathBuf::from("skills"),
            container_path: "/mnt/skills".into(),
        }
    }
}

/// `[title]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TitleConfig {
    /// `title.enabled`. Default true.
    pub enabled: bool,
    /// `title.model_name`: a configured model that writes titles; unset means the local
    /// fallback (no model call).
    pub model_name: Option<String>,
    /// `title.max_chars`. Default 60.
    pub max_chars: usize,
    /// `title.max_words`. Default 6.
    pub max_words: usize,
}

impl Default for TitleConfig {
    fn default() -> Self {
        TitleConfig {
            enabled: true,
            model_name: None,
            max_chars: 60,
            max_words: 6,
        }
    }
}

/// `[suggestions]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SuggestionsConfig {
    /// `suggestions.enabled`. Default true.
    pub enabled: bool,
    /// `suggestions.max_suggestions`: the most questions a request may ask for; a request's `n`
    /// is capped at it. Default 3, DeerFlow's `DEFAULT_MAX_SUGGESTIONS`: a web client sends
    /// `n = max_suggestions`, so the default is part of the suggestions prompt.
    pub max_suggestions: u32,
    /// `suggestions.model_name`: the model to ask; default the first configured model.
    pub model_name: Option<String>,
}

impl Default for SuggestionsConfig {
    fn default() -> Self {
        SuggestionsConfig {
            enabled: true,
            max_suggestions: 3,
            model_name: None,
        }
    }
}

/// `[token_usage]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TokenUsageConfig {
    /// `token_usage.enabled`: whether web clients display token usage (`GET /api/models`).
    /// Default false, as DeerFlow ships.
    pub enabled: bool,
}

/// `[uploads]`: the limits `GET /api/threads/{id}/uploads/limits` announces.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct UploadsConfig {
    /// `uploads.max_files`: files per upload. Default 10.
    pub max_files: u64,
    /// `uploads.max_file_size`: bytes per file. Default 52428800 (50 MiB).
    pub max_file_size: u64,
    /// `uploads.max_total_size`: bytes per upload. Default 104857600 (100 MiB).
    pub max_total_size: u64,
}

impl Default for UploadsConfig {
    fn default() -> Self {
        UploadsConfig {
            max_files: 10,
            max_file_size: 50 * 1024 * 1024,
            max_total_size: 100 * 1024 * 1024,
        }
    }
}

/// `[memory]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryConfig {
    /// `memory.enabled`: must be false (not implemented).
    pub enabled: bool,
    /// `memory.injection_enabled`: must be false (not implemented).
    pub injection_enabled: bool,
}

/// `[summarization]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SummarizationConfig {
    /// `summarization.enabled`: must be false (not implemented).
    pub enabled: bool,
}

/// `[runs]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RunsConfig {
    /// `runs.default_recursion_limit`: used when a request gives none or an unusable one.
    /// Default 100.
    pub default_recursion_limit: u32,
    /// `runs.max_recursion_limit`: requests are clamped to this. Default 1000.
    pub max_recursion_limit: u32,
    /// `runs.stream_buffer_events`: events kept per run for `Last-Event-ID`. Default 256.
    pub stream_buffer_events: usize,
    /// `runs.stream_buffer_ttl_seconds`: how long a finished run's buffer is kept. Default 60.
    pub stream_buffer_ttl_seconds: u64,
    /// `runs.heartbeat_seconds`: idle time before a `: heartbeat` comment. Default 15.
    pub heartbeat_seconds: u64,
}

impl Default for RunsConfig {
    fn default() -> Self {
        RunsConfig {
            default_recursion_limit: 100,
            max_recursion_limit: 1000,
            stream_buffer_events: 256,
            stream_buffer_ttl_seconds: 60,
            heartbeat_seconds: 15,
        }
    }
}

/// `[llm_retry]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct LlmRetryConfig {
    /// `llm_retry.max_attempts`: attempts for `transient` and `busy` failures. Default 3.
    pub max_attempts: u32,
    /// `llm_retry.burst_max_attempts`: attempts for `burst_rate` failures. Default 2.
    pub burst_max_attempts: u32,
    /// `llm_retry.base_delay_ms`: the backoff base. Default 500.
    pub base_delay_ms: u64,
    /// `llm_retry.max_delay_ms`: the backoff cap. Default 8000.
    pub max_delay_ms: u64,
}

impl Default for LlmRetryConfig {
    fn default() -> Self {
        LlmRetryConfig {
            max_attempts: 3,
            burst_max_attempts: 2,
            base_delay_ms: 500,
            max_delay_ms: 8000,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            home: default_home(),
            log_level: default_log_level(),
            server: ServerConfig::default(),
            database: DatabaseConfig::default(),
            auth: AuthConfig::default(),
            models: Vec::new(),
            sandbox: SandboxConfig::default(),
            tool_groups: default_tool_groups(),
            tools: default_tools(),
            tool_limits: ToolLimitsConfig::default(),
            skills: SkillsConfig::default(),
            aws_credentials: None,
            title: TitleConfig::default(),
            suggestions: SuggestionsConfig::default(),
            token_usage: TokenUsageConfig::default(),
            uploads: UploadsConfig::default(),
            memory: MemoryConfig::default(),
            summarization: SummarizationConfig::default(),
            runs: RunsConfig::default(),
            llm_retry: LlmRetryConfig::default(),
            message_limits: MessageLimitsConfig::default(),
        }
    }
}

impl Config {
    /// Parses TOML text. `origin` names the file in errors.
    pub fn from_toml_str(text: &str, origin: &Path) -> Result<Config, ConfigError> {
        toml::from_str(text).map_err(|err| ConfigError::Parse {
            path: origin.to_path_buf(),
            message: err.to_string().trim_end().to_string(),
        })
    }

    /// Reads the file, applies the environment overrides and `$ENV` expansion, resolves relative
    /// folders against the file's folder, and validates.
    pub fn load(path: &Path, env: EnvLookup<'_>) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let mut config = Config::from_toml_str(&text, path)?;
        let base = path.parent().unwrap_or(Path::new("."));
        if config.home.is_relative() {
            config.home = base.join(&config.home);
        }
        if let Some(web_dir) = config.server.web_dir.as_mut()
            && web_dir.is_relative()
        {
            *web_dir = base.join(&*web_dir);
        }
        config.apply_env(env)?;
        config.validate()?;
        Ok(config)
    }

    /// Applies the environment variables the DeerFlow gateway honours, and expands `$VAR` in
    /// model `api_key` and `base_url`.
    pub fn apply_env(&mut self, env: EnvLookup<'_>) -> Result<(), ConfigError> {
        let set = |name: &str| env(name).filter(|value| !value.trim().is_empty());
        if let Some(home) = set("DEER_FLOW_HOME") {
            self.home = PathBuf::from(home);
        }
        if set("DEER_FLOW_AUTH_DISABLED").as_deref() == Some("1") {
            self.auth.disabled = true;
        }
        if let Some(environment) = set("DEER_FLOW_ENV").or_else(|| set("ENVIRONMENT")) {
            self.auth.environment = Some(environment);
        }
        if let Some(secret) = set("AUTH_JWT_SECRET") {
            self.auth.jwt_secret = Some(secret.into());
        }
        if let Some(origins) = set("GATEWAY_CORS_ORIGINS") {
            self.auth.cors_origins = split_list(&origins);
        }
        if let Some(proxies) = set("AUTH_TRUSTED_PROXIES") {
            self.auth.trusted_proxies = split_list(&proxies);
        }
        if let Some(flag) = set("DEER_FLOW_AUTH_ALLOW_INSECURE_PERSISTENT_COOKIE") {
            self.auth.allow_insecure_persistent_cookie = matches!(
                flag.trim().to_lowercase().as_str(),
                "1" | "true" | "yes" | "on"
            );
        }
        if let Some(limit) = set("DEERFLOW_WRITE_FILE_MAX_BYTES") {
            self.tool_limits.write_file_max_bytes = limit.trim().parse().map_err(|_| {
                invalid(
                    "DEERFLOW_WRITE_FILE_MAX_BYTES",
                    format!("not an integer: '{limit}'"),
                )
            })?;
        }
        self.aws_credentials = aws_sign::AwsCredentials::from_vars(|name| env(name));
        for (index, model) in self.models.iter_mut().enumerate() {
            let expand = |field: &str, text: &str| {
                expand_env(text, env).map_err(|var| {
                    invalid(
                        format!("models[{index}].{field}"),
                        format!("environment variable ${var} is not set"),
                    )
                })
            };
            if let Some(key) = &model.api_key {
                model.api_key = Some(expand("api_key", key.expose_secret())?.into());
            }
            if let Some(url) = &model.base_url {
                model.base_url = Some(expand("base_url", url)?);
            }
        }
        Ok(())
    }

    /// Checks values that parse but cannot be used, naming the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.database.backend == DatabaseBackend::Postgres {
            return Err(invalid(
                "database.backend",
                "'postgres' is not supported by this gateway; use 'sqlite' or 'memory'",
            ));
        }
        if self.sandbox.use_ != "local" {
            return Err(invalid(
                "sandbox.use",
                format!(
                    "unsupported sandbox '{}'; only 'local' is supported",
                    self.sandbox.use_
                ),
            ));
        }
        for (key, value) in [
            (
                "server.header_read_timeout_secs",
                self.server.header_read_timeout_secs,
            ),
            (
                "server.request_body_timeout_secs",
                self.server.request_body_timeout_secs,
            ),
            (
                "server.request_body_deadline_secs",
                self.server.request_body_deadline_secs,
            ),
            (
                "server.max_connections",
                u64::try_from(self.server.max_connections).unwrap_or(u64::MAX),
            ),
            (
                "server.max_connections_per_client",
                u64::try_from(self.server.max_connections_per_client).unwrap_or(u64::MAX),
            ),
            ("server.write_timeout_secs", self.server.write_timeout_secs),
        ] {
            if value == 0 {
                return Err(invalid(key, "must be at least 1"));
            }
        }
        if !(1..=30).contains(&self.auth.token_expiry_days) {
            return Err(invalid(
                "auth.token_expiry_days",
                "must be between 1 and 30",
            ));
        }
        let hash = &self.auth.password_hash;
        if hash.parallelism == 0 || hash.iterations == 0 || hash.memory_kib < 8 * hash.parallelism {
            return Err(invalid(
                "auth.password_hash",
                "needs iterations ≥ 1, parallelism ≥ 1 and memory_kib ≥ 8 × parallelism",
            ));
        }
        if self.auth.login_max_failures == 0 {
            return Err(invalid("auth.login_max_failures", "must be at least 1"));
        }
        if self.auth.login_max_failures_per_account < self.auth.login_max_failures {
            return Err(invalid(
                "auth.login_max_failures_per_account",
                format!(
                    "must be at least auth.login_max_failures ({})",
                    self.auth.login_max_failures
                ),
            ));
        }
        if let Some(web_dir) = &self.server.web_dir
            && !web_dir.join("index.html").is_file()
        {
            return Err(invalid(
                "server.web_dir",
                format!(
                    "{} has no index.html; build the client first (`npm run build` in gateway-under-test/web)",
                    web_dir.display()
                ),
            ));
        }
        let mut names = BTreeMap::new();
        for (index, model) in self.models.iter().enumerate() {
            if model.name.trim().is_empty() {
                return Err(invalid(
                    format!("models[{index}].name"),
                    "must not be empty",
                ));
            }
            if let Some(previous) = names.insert(model.name.as_str(), index) {
                return Err(invalid(
                    format!("models[{index}].name"),
                    format!("'{}' is already used by models[{previous}]", model.name),
                ));
            }
            if model.use_.trim().is_empty() {
                return Err(invalid(
                    format!("models[{index}].use"),
                    "must name a provider",
                ));
            }
        }
        for (key, model_name) in [
            ("title.model_name", &self.title.model_name),
            ("suggestions.model_name", &self.suggestions.model_name),
        ] {
            if let Some(name) = model_name
                && !names.contains_key(name.as_str())
            {
                return Err(invalid(key, format!("'{name}' is not a configured model")));
            }
        }
        if !(1..=5).contains(&self.suggestions.max_suggestions) {
            return Err(invalid(
                "suggestions.max_suggestions",
                "must be between 1 and 5 (the range of a request's `n`)",
            ));
        }
        let groups: Vec<&str> = self.tool_groups.iter().map(|g| g.name.as_str()).collect();
        for (index, tool) in self.tools.iter().enumerate() {
            if !groups.contains(&tool.group.as_str()) {
                return Err(invalid(
                    format!("tools[{index}].group"),
                    format!("'{}' is not one of the tool_groups {groups:?}", tool.group),
                ));
            }
        }
        if self.memory.enabled || self.memory.injection_enabled {
            return Err(invalid(
                "memory.enabled",
                "memory is not implemented; keep it false",
            ));
        }
        if self.summarization.enabled {
            return Err(invalid(
                "summarization.enabled",
                "summarization is not implemented; keep it false",
            ));
        }
        let runs = &self.runs;
        if runs.max_recursion_limit == 0 || runs.default_recursion_limit == 0 {
            return Err(invalid(
                "runs.max_recursion_limit",
                "recursion limits must be at least 1",
            ));
        }
        if runs.stream_buffer_events == 0 {
            return Err(invalid("runs.stream_buffer_events", "must be at least 1"));
        }
        if self.llm_retry.max_attempts == 0 || self.llm_retry.burst_max_attempts == 0 {
            return Err(invalid(
                "llm_retry.max_attempts",
                "attempt counts must be at least 1",
            ));
        }
        Ok(())
    }

    /// The folder holding the SQLite database.
    pub fn database_dir(&self) -> PathBuf {
        self.home.join(&self.database.sqlite_dir)
    }

    /// The model entry named `name`.
    pub fn model(&self, name: &str) -> Option<&ModelConfig> {
        self.models.iter().find(|model| model.name == name)
    }
}

fn split_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(String::from)
        .collect()
}

/// Expands `$VAR` and `${VAR}`; `$$` is a literal `$`. Returns the name of a missing variable.
pub fn expand_env(text: &str, env: EnvLookup<'_>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        if ch != '$' {
            out.push(ch);
            continue;
        }
        match chars.peek() {
            Some('$') => {
                chars.next();
                out.push('$');
            }
            Some('{') => {
                chars.next();
                let name: String = chars.by_ref().take_while(|c| *c != '}').collect();
                out.push_str(&env(&name).ok_or(name)?);
            }
            Some(c) if c.is_ascii_alphabetic() || *c == '_' => {
                let mut name = String::new();
                while let Some(c) = chars.peek().copied() {
                    if c.is_ascii_alphanumeric() || c == '_' {
                        name.push(c);
                        chars.next();
                    } else {
                        break;
                    }
                }
                out.push_str(&env(&name).ok_or(name)?);
            }
            _ => out.push('$'),
        }
    }
    Ok(out)
}

/// Writes a secret as its value: only a configuration file written on purpose (a hermetic
/// config, whose key is the `$OPENAI_API_KEY` placeholder) serialises one. `Debug` never shows it.
fn serialize_secret<S: serde::Serializer>(
    secret: &Option<SecretString>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match secret {
        Some(secret) => serializer.serialize_some(secret.expose_secret()),
        None => serializer.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn expands_env_references_in_model_credentials() {
        let mut config = Config::from_toml_str(
            r#"
            [[models]]
            name = "m"
            use = "openai"
            api_key = "$OPENAI_API_KEY"
            base_url = "${OPENAI_API_BASE}/v1"
            "#,
            Path::new("t.toml"),
        )
        .unwrap();
        let env = env_of(&[
            ("OPENAI_API_KEY", "sk-test"),
            ("OPENAI_API_BASE", "http://h"),
        ]);
        config.apply_env(&env).unwrap();
        assert_eq!(
            config.models[0]
                .api_key
                .as_ref()
                .map(ExposeSecret::expose_secret),
            Some("sk-test")
        );
        assert_eq!(config.models[0].base_url.as_deref(), Some("http://h/v1"));
    }

    #[test]
    fn apply_env_takes_the_aws_credentials_from_the_lookup_and_never_shows_them() {
        let table = |name: &str| {
            [
                ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
                ("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI-secret"),
                ("AWS_REGION", "eu-west-3"),
            ]
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.to_string())
        };
        let mut config = Config::default();
        config.apply_env(&table).unwrap();
        let aws = config
            .aws_credentials
            .as_ref()
            .expect("both key variables are set");
        assert_eq!(aws.region, "eu-west-3");
        let shown = format!("{config:?}{}", toml::to_string(&config).unwrap_or_default());
        assert!(
            !shown.contains("AKIDEXAMPLE") && !shown.contains("wJalrXUtnFEMI"),
            "{shown}"
        );
        let mut without = Config::default();
        without.apply_env(&|_: &str| None).unwrap();
        assert!(without.aws_credentials.is_none());
    }

    #[test]
    fn debug_output_never_shows_the_api_key_or_the_jwt_secret() {
        let mut model = ModelConfig::new("m", "openai");
        model.api_key = Some("sk-live-abcdefghijklmnop".into());
        let mut config = Config {
            models: vec![model],
            ..Config::default()
        };
        config.auth.jwt_secret = Some("jwt-secret-qrstuvwxyz".into());
        let shown = format!("{config:?} {config:#?} {:?}", config.auth);
        for secret in ["sk-live", "jwt-secret-qrstuvwxyz"] {
            assert!(!shown.contains(secret), "{secret} shown: {shown}");
        }
        assert!(shown.contains("[secret removed]"));
    }

    #[test]
    fn a_missing_env_variable_names_the_key_and_the_variable() {
        let mut config = Config::from_toml_str(
            "[[models]]\nname = \"m\"\nuse = \"openai\"\napi_key = \"$NOPE\"\n",
            Path::new("t.toml"),
        )
        .unwrap();
        let err = config.apply_env(&env_of(&[])).unwrap_err().to_string();
        assert_eq!(
            err,
            "config key `models[0].api_key`: environment variable $NOPE is not set"
        );
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        let err = Config::from_toml_str("[title]\nenabld = true\n", Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("c.toml") && err.contains("enabld"), "{err}");
        let config =
            Config::from_toml_str("[auth]\ntoken_expiry_days = 40\n", Path::new("c.toml")).unwrap();
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains("auth.token_expiry_days"), "{err}");
        let config = Config::from_toml_str(
            "[auth]\nlogin_max_failures = 5\nlogin_max_failures_per_account = 4\n",
            Path::new("c.toml"),
        )
        .unwrap();
        let err = config.validate().unwrap_err().to_string();
        assert_eq!(
            err,
            "config key `auth.login_max_failures_per_account`: must be at least \
             auth.login_max_failures (5)"
        );
        for key in [
            "header_read_timeout_secs",
            "request_body_timeout_secs",
            "request_body_deadline_secs",
            "max_connections",
            "max_connections_per_client",
            "write_timeout_secs",
        ] {
            let text = format!("[server]\n{key} = 0\n");
            let config = Config::from_toml_str(&text, Path::new("c.toml")).unwrap();
            let err = config.validate().unwrap_err().to_string();
            assert_eq!(
                err,
                format!("config key `server.{key}`: must be at least 1")
            );
        }
        let config =
            Config::from_toml_str("[title]\nmodel_name = \"ghost\"\n", Path::new("c.toml"))
                .unwrap();
        assert!(
            config
                .validate()
                .unwrap_err()
                .to_string()
                .contains("title.model_name")
        );
    }

    /// `database.synchronous` reads `normal` and `off`, defaults to `normal`, and a bad value
    /// names the key.
    #[test]
    fn database_synchronous_reads_its_two_values_and_names_a_bad_one() {
        let cases = [
            ("", Synchronous::Normal),
            (
                "[database]\nsynchronous = \"normal\"\n",
                Synchronous::Normal,
            ),
            ("[database]\nsynchronous = \"off\"\n", Synchronous::Off),
        ];
        for (text, expected) in cases {
            let config = Config::from_toml_str(text, Path::new("c.toml")).unwrap();
            assert_eq!(config.database.synchronous, expected, "{text:?}");
        }
        let err =
            Config::from_toml_str("[database]\nsynchronous = \"full\"\n", Path::new("c.toml"))
                .unwrap_err()
                .to_string();
        assert!(
            err.contains("c.toml") && err.contains("synchronous"),
            "{err}"
        );
    }

    /// `database.backend` reads DeerFlow's three values and defaults to `sqlite`; `postgres` is
    /// refused by name, and an unknown value names the key and the file.
    #[test]
    fn database_backend_reads_deerflows_values_and_refuses_postgres_by_name() {
        let cases = [
            ("", DatabaseBackend::Sqlite),
            (
                "[database]\nbackend = \"sqlite\"\n",
                DatabaseBackend::Sqlite,
            ),
            (
                "[database]\nbackend = \"memory\"\n",
                DatabaseBackend::Memory,
            ),
        ];
        for (text, expected) in cases {
            let config = Config::from_toml_str(text, Path::new("c.toml")).unwrap();
            assert_eq!(config.database.backend, expected, "{text:?}");
            config.validate().unwrap();
        }
        let postgres =
            Config::from_toml_str("[database]\nbackend = \"postgres\"\n", Path::new("c.toml"))
                .unwrap();
        let err = postgres.validate().unwrap_err().to_string();
        assert!(
            err.contains("database.backend") && err.contains("'postgres' is not supported"),
            "{err}"
        );
        let err = Config::from_toml_str("[database]\nbackend = \"mysql\"\n", Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("c.toml") && err.contains("backend") && err.contains("memory"),
            "{err}"
        );
    }

    #[test]
    fn auth_disabled_is_refused_in_production() {
        let mut config = Config::default();
        config
            .apply_env(&env_of(&[
                ("DEER_FLOW_AUTH_DISABLED", "1"),
                ("DEER_FLOW_ENV", "Production"),
            ]))
            .unwrap();
        assert!(config.auth.disabled);
        assert!(!config.auth.auth_disabled_effective());
        let mut config = Config::default();
        config
            .apply_env(&env_of(&[("DEER_FLOW_AUTH_DISABLED", "1")]))
            .unwrap();
        assert!(config.auth.auth_disabled_effective());
    }

    #[test]
    fn web_dir_is_taken_from_the_config_folder_and_must_hold_index_html() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("gateway.toml");
        std::fs::write(&path, "[server]\nweb_dir = \"client\"\n").unwrap();
        let err = Config::load(&path, &env_of(&[])).unwrap_err().to_string();
        assert!(
            err.starts_with("config key `server.web_dir`: ")
                && err.contains(&folder.path().join("client").display().to_string())
                && err.contains("has no index.html"),
            "{err}"
        );
        std::fs::create_dir(folder.path().join("client")).unwrap();
        std::fs::write(folder.path().join("client/index.html"), "<!doctype html>").unwrap();
        let config = Config::load(&path, &env_of(&[])).unwrap();
        assert_eq!(config.server.web_dir, Some(folder.path().join("client")));
    }

    #[test]
    fn defaults_give_the_three_file_tools_and_local_titles() {
        let config = Config::from_toml_str("", Path::new("empty.toml")).unwrap();
        config.validate().unwrap();
        let tools: Vec<_> = config.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(tools, ["ls", "read_file", "write_file"]);
        assert!(config.title.enabled && config.title.model_name.is_none());
    }
}
