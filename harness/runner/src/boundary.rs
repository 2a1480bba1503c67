//! The boundaries besides the model's chat wire that a run records and replays
//! (`docs/replay-and-fixtures.md` §12), as configured (`[http.<name>]` in `keyless.toml`), and
//! where the gateway reaches each one: [`Boundaries`], parsed once by the CLI and handed to the
//! model server (which serves every boundary itself, on its own port) and to the gateway command
//! ([`BoundaryEndpoint`]: the `{http_url:<name>}` placeholder and the `KEYLESS_HTTP_URL_<NAME>`
//! variable). One small typed mechanism, so a new boundary kind adds an [`EndpointKind`] and a
//! table, not a second substitution pass.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use replay_core::{ExchangeMiss, UnusedExchange};

use crate::mcp::McpUpstream;
use crate::run_ca::RunCa;

/// The path prefix every boundary is served under on the model server.
pub const BOUNDARY_ROUTE_PREFIX: &str = "/_keyless";

/// A boundary's configured name (`tavily` in `[http.tavily]`): lowercase ASCII letters, digits,
/// `-` and `_`, so it is a path segment and, upper-cased, part of a variable's name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BoundaryName(String);

impl BoundaryName {
    /// The name, or why it is not one.
    pub fn parse(name: &str) -> Result<BoundaryName, BoundaryConfigError> {
        let valid = !name.is_empty()
            && name.len() <= 64
            && (name.bytes())
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
        if valid {
            Ok(BoundaryName(name.to_owned()))
        } else {
            Err(BoundaryConfigError::Name(name.to_owned()))
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name in a variable: upper-cased, `-` as `_`.
    pub fn env_suffix(&self) -> String {
        self.0.to_ascii_uppercase().replace('-', "_")
    }
}

impl fmt::Display for BoundaryName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a boundary's configuration is unusable; the CLI adds the file and the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BoundaryConfigError {
    /// A name that is not a path segment or a variable's part.
    #[error(
        "{0:?} is not a boundary name: use lowercase letters, digits, `-` and `_` (at most 64)"
    )]
    Name(String),
    /// An upstream that is not an absolute http(s) URL.
    #[error("upstream {0:?} is not an absolute http:// or https:// URL")]
    Upstream(String),
    /// A `[proxy] hosts` entry that is not a bare host name.
    #[error("{0:?} is not a host name (give it as `api.tavily.com`: no scheme, port or path)")]
    ProxyHost(String),
    /// A `[proxy] hosts` entry no `[http.<name>]` upstream has as its host.
    #[error(
        "{host:?} is the host of no [http.<name>] upstream (configured: {configured}); add one \
         with upstream = \"https://{host}\" (or proxy_host = \"{host}\")"
    )]
    ProxyHostUnmapped {
        /// The host.
        host: String,
        /// The configured upstreams, `name = upstream`.
        configured: String,
    },
    /// A `[proxy] hosts` entry several `[http.<name>]` upstreams have as their host.
    #[error("{host:?} is the host of several [http.<name>] upstreams ({names}); keep one per host")]
    ProxyHostAmbiguous {
        /// The host.
        host: String,
        /// Their names.
        names: String,
    },
    /// An `ignore` entry that names no part of a request.
    #[error("ignore entry {0:?} must start with `body.`, `query.` or `header.` and name a field")]
    Ignore(String),
}

/// A part of an HTTP request's canonical form the key leaves out (`ignore = ["body.request_id",
/// "query.ts"]`): a field of the JSON or form body, a query parameter, or a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IgnoredField {
    /// A dotted path into the body (`body.meta.request_id`: `["meta", "request_id"]`).
    Body(Vec<String>),
    /// A query parameter, every value of it.
    Query(String),
    /// A header (lowercase); headers are outside the canonical form unless named in `headers`,
    /// so this only documents intent.
    Header(String),
}

impl IgnoredField {
    /// The entry as written, or why it is not one.
    pub fn parse(entry: &str) -> Result<IgnoredField, BoundaryConfigError> {
        let bad = || BoundaryConfigError::Ignore(entry.to_owned());
        let (part, rest) = entry.split_once('.').ok_or_else(bad)?;
        if rest.is_empty() {
            return Err(bad());
        }
        match part {
            "body" => {
                let path: Vec<String> = rest.split('.').map(str::to_owned).collect();
                if path.iter().any(String::is_empty) {
                    return Err(bad());
                }
                Ok(IgnoredField::Body(path))
            }
            "query" => Ok(IgnoredField::Query(rest.to_owned())),
            "header" => Ok(IgnoredField::Header(rest.to_ascii_lowercase())),
            _ => Err(bad()),
        }
    }
}

/// One `[http.<name>]` table: an HTTP API a tool calls, recorded and replayed at
/// `{http_url:<name>}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUpstream {
    /// The upstream's base URL (`https://api.tavily.com`), without a trailing `/`. Recording
    /// forwards `<base>/<rest>` there.
    pub upstream: String,
    /// Parts of a request the key leaves out (a request id, a timestamp parameter).
    pub ignore: Vec<IgnoredField>,
    /// More names of secret fields (JSON body keys, query parameters, headers), redacted before
    /// anything is written, besides the ones every upstream has (`api_key`, `key`, …).
    pub secret_fields: Vec<String>,
    /// The host the forward-proxy mode answers as this API (`[proxy] hosts`), when it is not
    /// the upstream's own: recording against a staging or scripted server while the gateway's
    /// client calls the real host.
    pub proxy_host: Option<String>,
    /// Test-only: a CA (PEM) recording also trusts for this upstream, the proxy mode's local
    /// HTTPS upstream's; there is no such knob in a real build.
    #[cfg(test)]
    pub(crate) trusted_test_ca: Option<String>,
}

impl HttpUpstream {
    /// The host the forward-proxy mode answers as this API: `proxy_host`, else the upstream's.
    pub fn proxied_host(&self) -> Option<String> {
        self.proxy_host.clone().or_else(|| self.host())
    }

    /// The upstream's host, lowercase.
    pub fn host(&self) -> Option<String> {
        (reqwest::Url::parse(&self.upstream).ok())
            .and_then(|url| url.host_str().map(str::to_ascii_lowercase))
    }

    /// An upstream from its table's values, checked.
    pub fn new(
        upstream: &str,
        ignore: &[String],
        secret_fields: &[String],
    ) -> Result<HttpUpstream, BoundaryConfigError> {
        let base = upstream.trim_end_matches('/');
        let parsed = reqwest::Url::parse(base)
            .map_err(|_| BoundaryConfigError::Upstream(upstream.to_owned()))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(BoundaryConfigError::Upstream(upstream.to_owned()));
        }
        Ok(HttpUpstream {
            upstream: base.to_owned(),
            ignore: (ignore.iter())
                .map(|entry| IgnoredField::parse(entry))
                .collect::<Result<_, _>>()?,
            secret_fields: (secret_fields.iter())
                .map(|field| field.to_ascii_lowercase())
                .collect(),
            proxy_host: None,
            #[cfg(test)]
            trusted_test_ca: None,
        })
    }
}

/// Every boundary a run records and replays besides the model's chat wire, by kind and name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Boundaries {
    /// `[http.<name>]`: HTTP APIs.
    pub http: BTreeMap<BoundaryName, HttpUpstream>,
    /// `[mcp.<name>]`: MCP servers (`docs/replay-and-fixtures.md` §12.5).
    pub mcp: BTreeMap<BoundaryName, McpUpstream>,
    /// The program `{mcp_cmd:<name>}` runs (`keyless mcp-stdio`): the running keyless
    /// binary's absolute path, which the CLI sets (a stdio server gets almost no environment,
    /// so no `PATH` lookup is relied on); `keyless` when unset.
    pub stand_in: Option<String>,
    /// The file they were configured in, for messages (`keyless.toml` at …).
    pub configured_in: String,
    /// `[proxy]`: the forward-proxy mode, when some hosts are listed.
    pub proxy: Option<ProxyMode>,
}

/// The forward-proxy mode (`[proxy] hosts = [...]`): the model server is the gateway's HTTP(S)
/// proxy; a call to a listed host is the call to the `[http.<name>]` whose upstream has that
/// host, served by the same HTTP boundary as `{http_url:<name>}`; any other host is refused.
#[derive(Debug, Clone)]
pub struct ProxyMode {
    /// Each listed host (lowercase) and the HTTP API it is.
    pub hosts: BTreeMap<String, BoundaryName>,
    /// The run's certificate authority.
    pub ca: Arc<RunCa>,
}

/// `host` lowercase, if it is a bare host name (no scheme, port or path).
pub fn bare_host(host: &str) -> Result<String, BoundaryConfigError> {
    let lower = host.to_ascii_lowercase();
    let bare = !lower.is_empty()
        && (lower.bytes()).all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
    if bare {
        Ok(lower)
    } else {
        Err(BoundaryConfigError::ProxyHost(host.to_owned()))
    }
}

impl PartialEq for ProxyMode {
    fn eq(&self, other: &ProxyMode) -> bool {
        self.hosts == other.hosts && Arc::ptr_eq(&self.ca, &other.ca)
    }
}

impl Eq for ProxyMode {}

impl ProxyMode {
    /// The mode for `hosts`, each mapped to the one `http` upstream with that host; `ca` signs
    /// the certificates the gateway is shown.
    pub fn new(
        hosts: &[String],
        http: &BTreeMap<BoundaryName, HttpUpstream>,
        ca: Arc<RunCa>,
    ) -> Result<ProxyMode, BoundaryConfigError> {
        let mut mapped = BTreeMap::new();
        for host in hosts {
            let lower = bare_host(host)?;
            let names: Vec<&BoundaryName> = (http.iter())
                .filter(|(_, upstream)| upstream.proxied_host().as_deref() == Some(lower.as_str()))
                .map(|(name, _)| name)
                .collect();
            match names.as_slice() {
                [name] => {
                    mapped.insert(lower, (*name).clone());
                }
                [] => {
                    let configured: Vec<String> = (http.iter())
                        .map(|(name, upstream)| {
                            let host = upstream.proxied_host().unwrap_or_default();
                            format!("{name} = {host}")
                        })
                        .collect();
                    return Err(BoundaryConfigError::ProxyHostUnmapped {
                        host: host.clone(),
                        configured: if configured.is_empty() {
                            "none".to_owned()
                        } else {
                            configured.join(", ")
                        },
                    });
                }
                several => {
                    let names: Vec<&str> = several.iter().map(|name| name.as_str()).collect();
                    return Err(BoundaryConfigError::ProxyHostAmbiguous {
                        host: host.clone(),
                        names: names.join(", "),
                    });
                }
            }
        }
        Ok(ProxyMode { hosts: mapped, ca })
    }

    /// The HTTP API a request to `host` (any case, a port after it allowed) is, if listed.
    pub fn api_of(&self, host: &str) -> Option<&BoundaryName> {
        let bare = match host.rsplit_once(':') {
            Some((bare, port)) if port.bytes().all(|b| b.is_ascii_digit()) => bare,
            _ => host,
        };
        self.hosts.get(&bare.to_ascii_lowercase())
    }

    /// The gateway's proxy and trust variables, the proxy being the model server at
    /// `model_server_root`: both spellings of each proxy variable (clients read either), the
    /// model server and MCP URLs (on 127.0.0.1) never proxied, and the run's CA as the only
    /// authority trusted (nothing else is reachable through the proxy).
    pub fn env(&self, model_server_root: &str) -> Vec<(String, String)> {
        let model_server_root = server_root(model_server_root);
        let bundle = self.ca.bundle().display().to_string();
        let no_proxy = "127.0.0.1,localhost,::1".to_owned();
        let mut env = Vec::new();
        for name in ["HTTPS_PROXY", "HTTP_PROXY"] {
            env.push((name.to_owned(), model_server_root.to_owned()));
            env.push((name.to_ascii_lowercase(), model_server_root.to_owned()));
        }
        env.push(("NO_PROXY".to_owned(), no_proxy.clone()));
        env.push(("no_proxy".to_owned(), no_proxy));
        for name in ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS"] {
            env.push((name.to_owned(), bundle.clone()));
        }
        env
    }
}

impl Boundaries {
    /// Whether none is configured.
    pub fn is_empty(&self) -> bool {
        self.http.is_empty() && self.mcp.is_empty()
    }

    /// Every configured boundary's endpoint the gateway is given.
    pub fn endpoints(&self) -> Vec<BoundaryEndpoint> {
        let http = (self.http.keys()).map(|name| (EndpointKind::HttpUrl, name));
        let mcp = (self.mcp.keys())
            .flat_map(|name| [(EndpointKind::McpUrl, name), (EndpointKind::McpCmd, name)]);
        (http.chain(mcp))
            .map(|(kind, name)| BoundaryEndpoint {
                kind,
                name: name.clone(),
                stand_in: self.stand_in.clone(),
            })
            .collect()
    }

    /// Whether `kind` has a boundary named `name`.
    fn has(&self, kind: EndpointKind, name: &str) -> bool {
        match kind {
            EndpointKind::HttpUrl => self.http.keys().any(|n| n.as_str() == name),
            EndpointKind::McpUrl | EndpointKind::McpCmd => {
                self.mcp.keys().any(|n| n.as_str() == name)
            }
        }
    }

    /// `line` with every boundary placeholder (`{http_url:<name>}`) replaced by its value on
    /// the model server at `model_server_root` (`http://127.0.0.1:<port>`); a placeholder whose
    /// name is not configured is an error naming it and the configuration file.
    pub fn substitute(
        &self,
        line: &str,
        model_server_root: &str,
    ) -> Result<String, PlaceholderError> {
        let mut out = String::with_capacity(line.len());
        let mut rest = line;
        while let Some(start) = rest.find('{') {
            out.push_str(&rest[..start]);
            let after = &rest[start + 1..];
            let placeholder = (after.find('}')).and_then(|end| {
                let (prefix, name) = after[..end].split_once(':')?;
                let kind = EndpointKind::ALL
                    .into_iter()
                    .find(|kind| kind.placeholder_prefix() == prefix)?;
                Some((kind, name, end))
            });
            let Some((kind, name, end)) = placeholder else {
                out.push('{');
                rest = after;
                continue;
            };
            if !self.has(kind, name) {
                return Err(PlaceholderError {
                    placeholder: after[..end].to_owned(),
                    file: match self.configured_in.is_empty() {
                        true => "no keyless.toml".to_owned(),
                        false => self.configured_in.clone(),
                    },
                    configured: self
                        .endpoints()
                        .iter()
                        .filter(|endpoint| endpoint.kind == kind)
                        .map(|endpoint| endpoint.name.to_string())
                        .collect(),
                    table: kind.table(),
                });
            }
            let endpoint = BoundaryEndpoint {
                kind,
                name: BoundaryName(name.to_owned()),
                stand_in: self.stand_in.clone(),
            };
            out.push_str(&endpoint.value(model_server_root));
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    /// Every endpoint's variable and value on the model server at `model_server_root`, and
    /// the forward-proxy mode's variables when it is on.
    pub fn env(&self, model_server_root: &str) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = (self.endpoints().iter())
            .map(|endpoint| (endpoint.env_var(), endpoint.value(model_server_root)))
            .collect();
        if let Some(proxy) = &self.proxy {
            env.extend(proxy.env(model_server_root));
        }
        env
    }
}

/// A placeholder naming a boundary that is not configured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{{{placeholder}}} names no boundary configured in {file}: add a [{table}.<name>] table \
     (configured: {})",
    if .configured.is_empty() { "none".to_owned() } else { .configured.join(", ") }
)]
pub struct PlaceholderError {
    /// The placeholder, without its braces.
    pub placeholder: String,
    /// Where the command line came from (the configuration file).
    pub file: String,
    /// The names configured for its kind.
    pub configured: Vec<String>,
    /// The table its kind is configured in.
    pub table: &'static str,
}

/// What a placeholder stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointKind {
    /// `{http_url:<name>}`: the base URL of a recorded HTTP API.
    HttpUrl,
    /// `{mcp_url:<name>}`: the Streamable HTTP URL of a recorded MCP server.
    McpUrl,
    /// `{mcp_cmd:<name>}`: a shell command line running keyless's stdio stand-in for it.
    McpCmd,
}

impl EndpointKind {
    /// Every kind.
    pub const ALL: [EndpointKind; 3] = [
        EndpointKind::HttpUrl,
        EndpointKind::McpUrl,
        EndpointKind::McpCmd,
    ];

    /// The word before `:` in its placeholder.
    pub fn placeholder_prefix(self) -> &'static str {
        match self {
            EndpointKind::HttpUrl => "http_url",
            EndpointKind::McpUrl => "mcp_url",
            EndpointKind::McpCmd => "mcp_cmd",
        }
    }

    /// Its variable's name without the boundary's name.
    pub fn env_prefix(self) -> &'static str {
        match self {
            EndpointKind::HttpUrl => "KEYLESS_HTTP_URL_",
            EndpointKind::McpUrl => "KEYLESS_MCP_URL_",
            EndpointKind::McpCmd => "KEYLESS_MCP_CMD_",
        }
    }

    /// The `keyless.toml` table its boundaries are configured in.
    pub fn table(self) -> &'static str {
        match self {
            EndpointKind::HttpUrl => "http",
            EndpointKind::McpUrl | EndpointKind::McpCmd => "mcp",
        }
    }
}

/// Where the gateway reaches one boundary: a placeholder in its command and a variable in its
/// environment, both standing for a value on the model server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundaryEndpoint {
    /// What it stands for.
    pub kind: EndpointKind,
    /// The boundary's name.
    pub name: BoundaryName,
    /// The stand-in program of `{mcp_cmd:<name>}` ([`Boundaries::stand_in`]).
    pub stand_in: Option<String>,
}

impl BoundaryEndpoint {
    /// `{http_url:<name>}`.
    pub fn placeholder(&self) -> String {
        format!("{{{}:{}}}", self.kind.placeholder_prefix(), self.name)
    }

    /// `KEYLESS_HTTP_URL_<NAME>`.
    pub fn env_var(&self) -> String {
        format!("{}{}", self.kind.env_prefix(), self.name.env_suffix())
    }

    /// Its value on the model server at `model_server_root` (`http://127.0.0.1:<port>`):
    /// `<root>/_keyless/http/<name>`.
    pub fn value(&self, model_server_root: &str) -> String {
        let root = server_root(model_server_root);
        match self.kind {
            EndpointKind::HttpUrl => format!("{root}{BOUNDARY_ROUTE_PREFIX}/http/{}", self.name),
            EndpointKind::McpUrl => format!("{root}{BOUNDARY_ROUTE_PREFIX}/mcp/{}", self.name),
            EndpointKind::McpCmd => format!(
                "{} mcp-stdio --url {root}{BOUNDARY_ROUTE_PREFIX}/mcp/{}",
                shell_quoted(self.stand_in.as_deref().unwrap_or("keyless")),
                self.name
            ),
        }
    }
}

/// The model server's root (`http://127.0.0.1:<port>`) from its root or its OpenAI base URL
/// (`…/v1`, what the gateway command is given).
fn server_root(url: &str) -> &str {
    let root = url.trim_end_matches('/');
    root.strip_suffix("/v1").unwrap_or(root)
}

/// `word` as one word of a POSIX shell line: as it is when it holds only safe characters, else
/// single-quoted.
fn shell_quoted(word: &str) -> String {
    let safe = (word.bytes()).all(|b| b.is_ascii_alphanumeric() || b"/._-+:=@".contains(&b));
    if safe && !word.is_empty() {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The ledger of the boundaries besides the model's chat wire, as a model server's
/// `GET /_keyless/state` reports it for the active fixture (the misses among its problems, as a
/// model miss is, the unused exchanges beside its unused turns): every boundary's, on one path
/// to [`Verdict::with_exchanges`](replay_core::Verdict::with_exchanges).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BoundaryLedger {
    /// Calls no recorded exchange answered, oldest first.
    pub misses: Vec<ExchangeMiss>,
    /// Recorded exchanges nobody asked for.
    pub unused: Vec<UnusedExchange>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boundaries(names: &[&str]) -> Boundaries {
        let upstream = HttpUpstream::new("https://api.tavily.com/", &[], &[]).expect("valid");
        Boundaries {
            http: (names.iter())
                .map(|name| (BoundaryName::parse(name).expect("name"), upstream.clone()))
                .collect(),
            configured_in: "keyless.toml".into(),
            ..Boundaries::default()
        }
    }

    #[test]
    fn placeholders_become_the_model_servers_urls_and_an_unknown_name_is_an_error() {
        let configured = boundaries(&["tavily", "jina-reader"]);
        let root = "http://127.0.0.1:8090";
        let cases = [
            (
                "run --search {http_url:tavily}",
                Ok("run --search http://127.0.0.1:8090/_keyless/http/tavily"),
            ),
            (
                "A={http_url:jina-reader}/x B={port} {json}",
                Ok("A=http://127.0.0.1:8090/_keyless/http/jina-reader/x B={port} {json}"),
            ),
            ("no placeholder {", Ok("no placeholder {")),
            (
                "{http_url:brave}",
                Err(
                    "{http_url:brave} names no boundary configured in keyless.toml: add a [http.<name>] table (configured: jina-reader, tavily)",
                ),
            ),
        ];
        for (line, expected) in cases {
            let got = configured
                .substitute(line, root)
                .map_err(|err| err.to_string());
            assert_eq!(
                got.as_deref(),
                expected.map_err(str::to_owned).as_deref(),
                "{line}"
            );
        }
        assert_eq!(
            configured.env("http://127.0.0.1:8090/v1"),
            [
                (
                    "KEYLESS_HTTP_URL_JINA_READER".to_owned(),
                    "http://127.0.0.1:8090/_keyless/http/jina-reader".to_owned()
                ),
                (
                    "KEYLESS_HTTP_URL_TAVILY".to_owned(),
                    "http://127.0.0.1:8090/_keyless/http/tavily".to_owned()
                ),
            ]
        );
    }

    /// `{mcp_url:<name>}` and `{mcp_cmd:<name>}` (and their variables) stand for the MCP route
    /// and a shell line running the stand-in by its path, quoted when it needs to be.
    #[test]
    fn mcp_placeholders_are_the_route_and_the_stand_in_command_line() {
        let mut configured = Boundaries {
            configured_in: "keyless.toml".into(),
            stand_in: Some("/opt/my tools/keyless".into()),
            ..Boundaries::default()
        };
        configured.mcp.insert(
            BoundaryName::parse("time-server").expect("name"),
            McpUpstream::Url("https://mcp.example.com/mcp".into()),
        );
        let root = "http://127.0.0.1:8090/v1";
        let route = "http://127.0.0.1:8090/_keyless/mcp/time-server";
        let cmd = format!("'/opt/my tools/keyless' mcp-stdio --url {route}");
        let cases = [
            ("url={mcp_url:time-server}", Ok(format!("url={route}"))),
            ("{mcp_cmd:time-server}", Ok(cmd.clone())),
            (
                "{mcp_url:time}",
                Err("{mcp_url:time} names no boundary configured in keyless.toml: add a [mcp.<name>] table (configured: time-server)".to_owned()),
            ),
        ];
        for (line, expected) in cases {
            let got = configured
                .substitute(line, root)
                .map_err(|err| err.to_string());
            assert_eq!(got, expected, "{line}");
        }
        assert_eq!(
            configured.env(root),
            [
                ("KEYLESS_MCP_URL_TIME_SERVER".to_owned(), route.to_owned()),
                ("KEYLESS_MCP_CMD_TIME_SERVER".to_owned(), cmd),
            ]
        );
    }

    #[test]
    fn bad_names_upstreams_and_ignore_entries_are_refused_naming_them() {
        let cases: [(Result<(), BoundaryConfigError>, &str); 6] = [
            (
                BoundaryName::parse("Tavily").map(drop),
                "\"Tavily\" is not a boundary name",
            ),
            (
                BoundaryName::parse("a/b").map(drop),
                "\"a/b\" is not a boundary name",
            ),
            (
                HttpUpstream::new("api.tavily.com", &[], &[]).map(drop),
                "upstream \"api.tavily.com\"",
            ),
            (
                HttpUpstream::new("ftp://x", &[], &[]).map(drop),
                "upstream \"ftp://x\"",
            ),
            (
                HttpUpstream::new("https://x", &["request_id".into()], &[]).map(drop),
                "ignore entry \"request_id\"",
            ),
            (
                HttpUpstream::new("https://x", &["body.".into()], &[]).map(drop),
                "ignore entry \"body.\"",
            ),
        ];
        for (result, expected) in cases {
            let err = result.expect_err(expected).to_string();
            assert!(err.contains(expected), "{err}\nexpected: {expected}");
        }
    }
}
