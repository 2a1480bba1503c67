//! `keyless.toml`: the configuration file, parsed once into typed values, and merged with the
//! flags (every key is also a flag, and a flag wins). Paths in the file are relative to the
//! file's folder; paths given as flags are relative to the current folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use keyless_runner::boundary::{
    Boundaries, BoundaryConfigError, BoundaryName, HttpUpstream, ProxyMode, bare_host,
};
use keyless_runner::mcp::McpUpstream;
use keyless_runner::run_ca::RunCa;
use serde::Deserialize;

/// The configuration file's name, looked up in the current folder.
pub const CONFIG_FILE: &str = "keyless.toml";

/// The default readiness path.
pub const DEFAULT_READY: &str = "/health";

/// The default readiness timeout, in seconds.
pub const DEFAULT_READY_TIMEOUT_SECS: u64 = 60;

/// The default model server port for `--gateway-url` (a gateway started by someone else must
/// know its model's base URL in advance).
pub const DEFAULT_MODEL_PORT: u16 = 8090;

/// A usage or configuration error: the command exits 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// The API dialect the driver speaks to the gateway: the runner's one list, parsed here from
/// `--api` ([`api_parser`]) and the file's `api` key.
pub use keyless_runner::Api;

/// The `--api` parser: the names of [`Api::ALL`], so the list exists once.
pub fn api_parser() -> impl clap::builder::TypedValueParser<Value = Api> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(Api::ALL.map(Api::as_str))
        .try_map(|name| name.parse::<Api>())
}

/// The stream modes every run asks for, and so the golden it is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum StreamModes {
    /// `["values"]`: every event's shape.
    #[default]
    Values,
    /// The web client's four modes (`messages-tuple`, `values`, `updates`, `custom`), runs of
    /// chunks of one message as one entry.
    Web,
}

impl StreamModes {
    /// The driver's stream modes.
    pub fn driver(self) -> keyless_runner::session::StreamModes {
        match self {
            StreamModes::Values => keyless_runner::session::StreamModes::Values,
            StreamModes::Web => keyless_runner::session::StreamModes::Web,
        }
    }
}

/// The file as written: every key optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// The fixture folder.
    pub fixtures: Option<PathBuf>,
    /// The golden folder.
    pub golden: Option<PathBuf>,
    /// A gateway already running.
    pub gateway_url: Option<String>,
    /// The command that starts the gateway for each fixture.
    pub gateway_cmd: Option<String>,
    /// The readiness path.
    pub ready: Option<String>,
    /// How long the gateway may take to become ready, in seconds.
    pub ready_timeout_secs: Option<u64>,
    /// The API dialect.
    pub api: Option<Api>,
    /// The prefix of the dialect's routes (`/api` for DeerFlow, the root for the others).
    pub base_path: Option<String>,
    /// The route runs are posted to, for a dialect with one endpoint (`/api/chat` for the AI
    /// SDK).
    pub endpoint: Option<String>,
    /// LangGraph: the assistant (graph id) of every run.
    pub assistant: Option<String>,
    /// LangGraph: the assistant of each scenario id, over `assistant`.
    pub assistants: Option<BTreeMap<String, String>>,
    /// A static auth header sent with every request (its value read from `auth_env`).
    pub auth_header: Option<String>,
    /// The variable holding the auth header's value.
    pub auth_env: Option<String>,
    /// The stream modes every run asks for.
    pub stream_modes: Option<StreamModes>,
    /// A model server already running, to reuse.
    pub model_server: Option<String>,
    /// The port of the model server `keyless` starts.
    pub model_port: Option<u16>,
    /// Where the gateway's logs go.
    pub logs: Option<PathBuf>,
    /// Whether every unused recorded turn fails a fixture (`--strict-unused`).
    pub strict_unused: Option<bool>,
    /// How long one fixture's drive may take, in seconds (`--fixture-time-limit`).
    pub fixture_time_limit_secs: Option<u64>,
    /// The oldest a fixture may be, by its provenance, before `keyless test` warns (`30d`).
    pub max_age: Option<crate::age::MaxAge>,
    /// Whether a fixture older than `max_age` fails the run (`--max-age-fail`).
    pub max_age_fail: Option<bool>,
    /// How many fixtures run at once (`keyless test --jobs`).
    pub jobs: Option<std::num::NonZeroUsize>,
    /// Start the gateway once per job and run several fixtures through it.
    pub reuse_gateway: Option<bool>,
    /// How fixtures are recorded.
    pub record: Option<RecordConfig>,
    /// Event types every fixture's golden leaves out (`ignore_events = ["RAW"]`): a framework's
    /// own telemetry, whose place in the stream is its internals. What is ignored is no longer
    /// guarded.
    pub ignore_events: Option<Vec<String>>,
    /// Settings of single fixtures, by fixture name (`[fixture."chat.chat"]`).
    pub fixture: Option<BTreeMap<String, FixtureConfig>>,
    /// HTTP APIs the gateway's tools call, recorded and replayed at `{http_url:<name>}`
    /// (`[http.tavily]`).
    pub http: Option<BTreeMap<String, HttpConfig>>,
    /// MCP servers the gateway uses, recorded and replayed at `{mcp_url:<name>}` and
    /// `{mcp_cmd:<name>}` (`[mcp.time]`).
    pub mcp: Option<BTreeMap<String, McpConfig>>,
    /// The forward-proxy mode: hosts whose calls the model server records and replays as the
    /// gateway's HTTP(S) proxy (`[proxy] hosts = ["api.tavily.com"]`).
    pub proxy: Option<ProxyConfig>,
}

/// An `[mcp.<name>]` table: an MCP server, by its Streamable HTTP `url` or its stdio
/// `command`, which recording talks to (replay never does).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// The server's Streamable HTTP endpoint (`https://…/mcp`).
    pub url: Option<String>,
    /// The program and its arguments of a stdio server (`["uvx", "mcp-server-time"]`).
    pub command: Option<Vec<String>>,
    /// Variables added to a stdio server's environment (their values are secrets of the run:
    /// none may be left in the recording).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// A stdio server's working folder, relative to the file's folder.
    pub cwd: Option<PathBuf>,
}

impl McpConfig {
    /// The server recording talks to, or what is wrong with the table.
    fn upstream(&self, base: &Path) -> Result<McpUpstream, String> {
        match (&self.url, &self.command) {
            (Some(url), None) => {
                if !self.env.is_empty() || self.cwd.is_some() {
                    return Err("`env` and `cwd` are for a `command` server, not a `url`".into());
                }
                let scheme = url.split_once("://").map(|(scheme, _)| scheme);
                if !matches!(scheme, Some("http" | "https")) {
                    return Err(format!(
                        "url {url:?} is not an absolute http:// or https:// URL"
                    ));
                }
                Ok(McpUpstream::Url(url.clone()))
            }
            (None, Some(command)) if !command.is_empty() => Ok(McpUpstream::Command {
                argv: command.clone(),
                env: self.env.clone(),
                cwd: self.cwd.as_ref().map(|cwd| base.join(cwd)),
            }),
            (None, Some(_)) => Err("`command` is empty: give the program and its arguments".into()),
            (Some(_), Some(_)) => Err("give `url` or `command`, not both".into()),
            (None, None) => Err("give `url` (Streamable HTTP) or `command` (stdio)".into()),
        }
    }
}

/// An `[http.<name>]` table: an HTTP API recorded and replayed by base URL.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    /// The API's real base URL (`https://api.tavily.com`), which recording forwards to.
    pub upstream: String,
    /// Parts of a request the replay key leaves out (`body.request_id`, `query.ts`).
    #[serde(default)]
    pub ignore: Vec<String>,
    /// More secret field names, redacted before anything is written.
    #[serde(default)]
    pub secret_fields: Vec<String>,
    /// The host `[proxy] hosts` answers as this API, when it is not `upstream`'s.
    pub proxy_host: Option<String>,
}

/// The `[proxy]` table: the forward-proxy mode.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxyConfig {
    /// The hosts recorded and replayed through the proxy; each is the host of one
    /// `[http.<name>]` upstream, whose rules its calls follow.
    pub hosts: Vec<String>,
}

/// The file's boundary tables, typed and checked; an error names the file and the table's key.
pub fn boundaries(path: Option<&Path>, file: &FileConfig) -> Result<Boundaries, ConfigError> {
    let describe = path.map_or_else(|| CONFIG_FILE.to_owned(), |path| path.display().to_string());
    let mut boundaries = Boundaries {
        configured_in: describe.clone(),
        ..Boundaries::default()
    };
    for (name, table) in file.http.iter().flatten() {
        let at =
            |err: BoundaryConfigError| ConfigError(format!("{describe}: [http.{name}]: {err}"));
        let mut upstream =
            HttpUpstream::new(&table.upstream, &table.ignore, &table.secret_fields).map_err(at)?;
        upstream.proxy_host = (table.proxy_host.as_deref())
            .map(bare_host)
            .transpose()
            .map_err(at)?;
        boundaries
            .http
            .insert(BoundaryName::parse(name).map_err(at)?, upstream);
    }
    if let Some(proxy) = file.proxy.as_ref().filter(|proxy| !proxy.hosts.is_empty()) {
        let at = |err: String| ConfigError(format!("{describe}: [proxy] hosts: {err}"));
        let ca = RunCa::generate().map_err(|err| at(err.to_string()))?;
        let mode = ProxyMode::new(&proxy.hosts, &boundaries.http, Arc::new(ca))
            .map_err(|err| at(err.to_string()))?;
        boundaries.proxy = Some(mode);
    }
    let base = path.and_then(Path::parent).unwrap_or(Path::new("."));
    for (name, table) in file.mcp.iter().flatten() {
        let at = |err: String| ConfigError(format!("{describe}: [mcp.{name}]: {err}"));
        let upstream = table.upstream(base).map_err(at)?;
        let name = BoundaryName::parse(name).map_err(|err| at(err.to_string()))?;
        boundaries.mcp.insert(name, upstream);
    }
    // `{mcp_cmd:<name>}` runs this very binary by its absolute path: a stdio server gets
    // almost no environment, so `PATH` may not find it.
    boundaries.stand_in = (std::env::current_exe().ok()).map(|exe| exe.display().to_string());
    Ok(boundaries)
}

/// A `[fixture."NAME"]` table: settings of one fixture, over the file's.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureConfig {
    /// Event types this fixture's golden also leaves out.
    pub ignore_events: Option<Vec<String>>,
}

/// The `[record]` table.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordConfig {
    /// The upstream's OpenAI base URL.
    pub upstream: Option<String>,
    /// The variable holding the upstream's API key.
    pub key_env: Option<String>,
}

/// A loaded configuration file and its folder.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The file, if one was found.
    pub path: Option<PathBuf>,
    /// What it says.
    pub file: FileConfig,
    /// Its boundary tables (`[http.<name>]`), typed once.
    pub boundaries: Arc<Boundaries>,
    /// The folder its relative paths are relative to (the current folder without a file).
    pub base: PathBuf,
}

impl Loaded {
    /// `explicit` (`--config FILE`, which must exist), else `keyless.toml` in the current
    /// folder if there is one, else no file.
    pub fn find(explicit: Option<&Path>) -> Result<Loaded, ConfigError> {
        let cwd = std::env::current_dir()
            .map_err(|err| ConfigError(format!("cannot read the current folder: {err}")))?;
        let path = match explicit {
            Some(path) => Some(cwd.join(path)),
            None => Some(cwd.join(CONFIG_FILE)).filter(|path| path.is_file()),
        };
        let Some(path) = path else {
            return Ok(Loaded {
                path: None,
                file: FileConfig::default(),
                boundaries: Arc::default(),
                base: cwd,
            });
        };
        let text = std::fs::read_to_string(&path)
            .map_err(|err| ConfigError(format!("cannot read {}: {err}", path.display())))?;
        let file = parse(&path, &text)?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or(cwd);
        Ok(Loaded {
            boundaries: Arc::new(boundaries(Some(&path), &file)?),
            path: Some(path),
            file,
            base,
        })
    }

    /// A folder: the flag (relative to the current folder), else the key (relative to the
    /// file), else `default` beside the file.
    pub fn folder(&self, flag: Option<&Path>, key: Option<&PathBuf>, default: &str) -> PathBuf {
        match (flag, key) {
            (Some(flag), _) => absolute(flag),
            (None, Some(key)) => self.base.join(key),
            (None, None) => self.base.join(default),
        }
    }

    /// The file's name for messages (`keyless.toml` at …, or "no configuration file").
    pub fn describe(&self) -> String {
        match &self.path {
            Some(path) => path.display().to_string(),
            None => format!("no {CONFIG_FILE} (flags and defaults only)"),
        }
    }
}

/// Parses the file's text; the error names the file, the line and the key.
pub fn parse(path: &Path, text: &str) -> Result<FileConfig, ConfigError> {
    toml::from_str(text).map_err(|err| ConfigError(format!("{}: {err}", path.display())))
}

fn absolute(path: &Path) -> PathBuf {
    std::env::current_dir()
        .map(|cwd| cwd.join(path))
        .unwrap_or_else(|_| path.to_path_buf())
}

/// The readiness timeout of a number of seconds.
pub fn ready_timeout(secs: Option<u64>) -> Duration {
    Duration::from_secs(secs.unwrap_or(DEFAULT_READY_TIMEOUT_SECS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_file_is_named_with_its_line_and_key() {
        let path = Path::new("/repo/keyless.toml");
        let cases = [
            (
                "an unknown key",
                "fixtures = \"f\"\ngatway_cmd = \"x\"\n",
                "gatway_cmd",
            ),
            (
                "a wrong type",
                "ready_timeout_secs = \"ten\"\n",
                "ready_timeout_secs",
            ),
            ("an unknown dialect", "api = \"langchain\"\n", "api"),
            ("a dialect misspelt", "api = \"ai_sdk\"\n", "api"),
            (
                "an unknown stream mode set",
                "stream_modes = \"all\"\n",
                "stream_modes",
            ),
            ("no jobs", "jobs = 0\n", "jobs"),
            (
                "an unknown record key",
                "[record]\nupstrem = \"u\"\n",
                "upstrem",
            ),
            (
                "ignored events that are not a list",
                "ignore_events = \"RAW\"\n",
                "ignore_events",
            ),
            (
                "an unknown fixture key",
                "[fixture.\"a.chat\"]\nignore_event = [\"RAW\"]\n",
                "ignore_event",
            ),
        ];
        for (name, text, key) in cases {
            let err = parse(path, text).unwrap_err().to_string();
            assert!(
                err.starts_with("/repo/keyless.toml: ")
                    && err.contains("line ")
                    && err.contains(key),
                "{name}: {err}"
            );
        }
    }

    /// `[http.<name>]` tables become typed upstreams; a bad one is named with the file, the
    /// table and what is wrong.
    #[test]
    fn http_tables_are_typed_once_and_a_bad_one_names_the_file_and_the_table() {
        let path = Path::new("/repo/keyless.toml");
        let good = "[http.tavily]\nupstream = \"https://api.tavily.com/\"\nignore = [\"body.request_id\", \"query.ts\"]\nsecret_fields = [\"X-Token\"]\n";
        let file = parse(path, good).expect("parses");
        let typed = boundaries(Some(path), &file).expect("valid");
        let (name, tavily) = typed.http.iter().next().expect("one");
        assert_eq!(name.as_str(), "tavily");
        assert_eq!(tavily.upstream, "https://api.tavily.com");
        assert_eq!(tavily.ignore.len(), 2);
        assert_eq!(tavily.secret_fields, ["x-token"]);
        let cases = [
            (
                "[http.Tavily]\nupstream = \"https://x\"\n",
                "/repo/keyless.toml: [http.Tavily]: \"Tavily\" is not a boundary name",
            ),
            (
                "[http.t]\nupstream = \"x\"\n",
                "/repo/keyless.toml: [http.t]: upstream \"x\"",
            ),
            (
                "[http.t]\nupstream = \"https://x\"\nignore = [\"ts\"]\n",
                "/repo/keyless.toml: [http.t]: ignore entry \"ts\"",
            ),
        ];
        for (text, expected) in cases {
            let file = parse(path, text).expect("parses");
            let err = boundaries(Some(path), &file).expect_err(text).to_string();
            assert!(err.starts_with(expected), "{err}\nexpected: {expected}");
        }
        let err = parse(path, "[http.t]\nupstrem = \"https://x\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("upstrem"), "{err}");
    }

    /// `[proxy] hosts` maps each host to the `[http.<name>]` upstream with that host, and the
    /// gateway gets the proxy and trust variables; a host no upstream (or several) has, or one
    /// that is not a bare host, is refused naming the file, the field and the host.
    #[test]
    fn proxy_hosts_map_to_the_http_upstream_with_that_host_and_a_bad_one_is_named() {
        let path = Path::new("/repo/keyless.toml");
        let http = "[http.tavily]\nupstream = \"https://api.tavily.com\"\n[http.jina]\nupstream = \"https://r.jina.ai/\"\n";
        let good = format!("{http}[proxy]\nhosts = [\"api.tavily.com\", \"R.jina.ai\"]\n");
        let typed = boundaries(Some(path), &parse(path, &good).expect("parses")).expect("valid");
        let proxy = typed.proxy.as_ref().expect("proxy mode");
        assert_eq!(
            proxy.api_of("api.tavily.com:443").map(|n| n.as_str()),
            Some("tavily")
        );
        assert_eq!(proxy.api_of("r.jina.ai").map(|n| n.as_str()), Some("jina"));
        assert_eq!(proxy.api_of("example.com:443"), None);
        let env: BTreeMap<String, String> =
            typed.env("http://127.0.0.1:4000").into_iter().collect();
        assert_eq!(env["HTTPS_PROXY"], "http://127.0.0.1:4000");
        // The gateway command is given the OpenAI base URL: the proxy is the server's root.
        let from_base: BTreeMap<String, String> =
            typed.env("http://127.0.0.1:4000/v1").into_iter().collect();
        assert_eq!(from_base["https_proxy"], "http://127.0.0.1:4000");
        assert_eq!(env["http_proxy"], "http://127.0.0.1:4000");
        assert_eq!(env["NO_PROXY"], "127.0.0.1,localhost,::1");
        let bundle = proxy.ca.bundle().display().to_string();
        for name in ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS"] {
            assert_eq!(env[name], bundle, "{name}");
        }
        let cases = [
            (
                format!("{http}[proxy]\nhosts = [\"api.brave.com\"]\n"),
                "/repo/keyless.toml: [proxy] hosts: \"api.brave.com\" is the host of no [http.<name>] upstream (configured: jina = r.jina.ai, tavily = api.tavily.com)",
            ),
            (
                format!("{http}[proxy]\nhosts = [\"https://api.tavily.com\"]\n"),
                "/repo/keyless.toml: [proxy] hosts: \"https://api.tavily.com\" is not a host name",
            ),
            (
                format!(
                    "{http}[http.tavily2]\nupstream = \"https://api.tavily.com/v2\"\n[proxy]\nhosts = [\"api.tavily.com\"]\n"
                ),
                "/repo/keyless.toml: [proxy] hosts: \"api.tavily.com\" is the host of several [http.<name>] upstreams (tavily, tavily2)",
            ),
        ];
        for (text, expected) in cases {
            let file = parse(path, &text).expect("parses");
            let err = boundaries(Some(path), &file).expect_err(&text).to_string();
            assert!(err.starts_with(expected), "{err}\nexpected: {expected}");
        }
        let scripted = "[http.tavily]\nupstream = \"http://127.0.0.1:8098\"\nproxy_host = \"api.tavily.com\"\n[proxy]\nhosts = [\"api.tavily.com\"]\n";
        let typed = boundaries(Some(path), &parse(path, scripted).expect("parses")).expect("valid");
        let proxy = typed.proxy.as_ref().expect("proxy mode");
        assert_eq!(
            proxy.api_of("api.tavily.com").map(|n| n.as_str()),
            Some("tavily")
        );
        let bad =
            "[http.tavily]\nupstream = \"http://127.0.0.1:8098\"\nproxy_host = \"https://x\"\n";
        let err = boundaries(Some(path), &parse(path, bad).expect("parses")).expect_err("bad");
        assert!(
            err.to_string()
                .starts_with("/repo/keyless.toml: [http.tavily]: \"https://x\" is not a host name"),
            "{err}"
        );
        let err = parse(path, "[proxy]\nhost = [\"x\"]\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("host"), "{err}");
    }

    /// `[mcp.<name>]` tables become typed servers (a stdio `cwd` relative to the file's
    /// folder); a bad one is named with the file, the table and what is wrong.
    #[test]
    fn mcp_tables_are_typed_once_and_a_bad_one_names_the_file_and_the_table() {
        let path = Path::new("/repo/keyless.toml");
        let good = "[mcp.time]\ncommand = [\"uvx\", \"mcp-server-time\"]\nenv = { TOKEN = \"t\" }\ncwd = \"tools\"\n[mcp.search]\nurl = \"https://mcp.example.com/mcp\"\n";
        let typed = boundaries(Some(path), &parse(path, good).expect("parses")).expect("valid");
        let servers: Vec<(&str, &McpUpstream)> = typed
            .mcp
            .iter()
            .map(|(name, up)| (name.as_str(), up))
            .collect();
        assert_eq!(
            servers,
            [
                (
                    "search",
                    &McpUpstream::Url("https://mcp.example.com/mcp".into())
                ),
                (
                    "time",
                    &McpUpstream::Command {
                        argv: vec!["uvx".into(), "mcp-server-time".into()],
                        env: [("TOKEN".to_owned(), "t".to_owned())].into(),
                        cwd: Some(PathBuf::from("/repo/tools")),
                    }
                ),
            ]
        );
        let cases = [
            (
                "[mcp.t]\n",
                "[mcp.t]: give `url` (Streamable HTTP) or `command` (stdio)",
            ),
            (
                "[mcp.t]\nurl = \"https://x\"\ncommand = [\"x\"]\n",
                "[mcp.t]: give `url` or `command`, not both",
            ),
            ("[mcp.t]\ncommand = []\n", "[mcp.t]: `command` is empty"),
            (
                "[mcp.t]\nurl = \"x\"\n",
                "[mcp.t]: url \"x\" is not an absolute",
            ),
            (
                "[mcp.t]\nurl = \"https://x\"\ncwd = \"a\"\n",
                "[mcp.t]: `env` and `cwd` are for a `command` server",
            ),
            (
                "[mcp.T]\nurl = \"https://x\"\n",
                "[mcp.T]: \"T\" is not a boundary name",
            ),
        ];
        for (text, expected) in cases {
            let file = parse(path, text).expect("parses");
            let err = boundaries(Some(path), &file).expect_err(text).to_string();
            assert!(
                err.starts_with(&format!("/repo/keyless.toml: {expected}")),
                "{err}\nexpected: {expected}"
            );
        }
    }

    #[test]
    fn a_folder_is_the_flag_else_the_key_beside_the_file_else_the_default_beside_it() {
        let loaded = Loaded {
            path: Some(PathBuf::from("/repo/ci/keyless.toml")),
            file: FileConfig::default(),
            boundaries: Arc::default(),
            base: PathBuf::from("/repo/ci"),
        };
        let cwd = std::env::current_dir().unwrap();
        let key = PathBuf::from("recorded");
        let cases = [
            (
                "a flag",
                Some(Path::new("mine")),
                Some(&key),
                cwd.join("mine"),
            ),
            (
                "a key",
                None,
                Some(&key),
                PathBuf::from("/repo/ci/recorded"),
            ),
            ("neither", None, None, PathBuf::from("/repo/ci/fixtures")),
        ];
        for (name, flag, key, expected) in cases {
            assert_eq!(loaded.folder(flag, key, "fixtures"), expected, "{name}");
        }
    }

    #[test]
    fn the_examples_configurations_parse_with_their_dialects() {
        let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let cases = [
            ("python-gateway", Api::Deerflow, None),
            ("langgraph-agent", Api::Langgraph, Some("agent")),
            ("ai-sdk-chat", Api::AiSdk, None),
            ("ag-ui-agent", Api::AgUi, None),
        ];
        for (example, api, assistant) in cases {
            let path = examples.join(example).join(CONFIG_FILE);
            let text = std::fs::read_to_string(&path).unwrap();
            let file = parse(&path, &text).unwrap_or_else(|err| panic!("{err}"));
            assert_eq!(file.api, Some(api), "{example}");
            assert_eq!(file.assistant.as_deref(), assistant, "{example}");
        }
        let path = examples.join("langgraph-agent").join(CONFIG_FILE);
        let file = parse(&path, &std::fs::read_to_string(&path).unwrap()).unwrap();
        let assistants = file.assistants.unwrap_or_default();
        assert_eq!(assistants.get("review").map(String::as_str), Some("review"));
    }

    #[test]
    fn the_template_parses() {
        let file = parse(Path::new("keyless.toml"), crate::init::TEMPLATE).unwrap();
        assert_eq!(file.api, Some(Api::Deerflow));
        assert_eq!(file.ready.as_deref(), Some(DEFAULT_READY));
        // Its commented scale keys parse once uncommented.
        let text = crate::init::TEMPLATE
            .replace("# jobs = 2", "jobs = 2")
            .replace("# reuse_gateway = false", "reuse_gateway = false")
            .replace("# max_age = \"30d\"", "max_age = \"30d\"")
            .replace("# max_age_fail = false", "max_age_fail = false")
            .replace("# [http.tavily]", "[http.tavily]")
            .replace(
                "# upstream = \"https://api.tavily.com\"",
                "upstream = \"https://api.tavily.com\"",
            )
            .replace("# ignore = [", "ignore = [");
        let file = parse(Path::new("keyless.toml"), &text).unwrap();
        assert_eq!(
            (
                file.jobs.map(std::num::NonZeroUsize::get),
                file.reuse_gateway
            ),
            (Some(2), Some(false))
        );
        assert_eq!(
            (file.max_age.map(|age| age.to_string()), file.max_age_fail),
            (Some("30d".to_owned()), Some(false))
        );
        // A bad age names the key and the form.
        let typed = boundaries(None, &file).expect("its [http] example is valid");
        assert_eq!(typed.http.len(), 1);
        let err = parse(Path::new("keyless.toml"), "max_age = \"30 days\"\n").unwrap_err();
        assert!(err.to_string().contains("e.g. 30d"), "{err}");
    }
}
