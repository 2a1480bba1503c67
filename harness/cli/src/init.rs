//! `keyless init`: a commented `keyless.toml` in the current folder, never over an existing one,
//! and the git-ignored `.keyless/` folder keyless keeps its logs and raw recordings in
//! ([`private_folder`]).

use std::path::Path;
use std::process::ExitCode;

use crate::config::{CONFIG_FILE, ConfigError};

/// The file `init` writes. Every key is also a flag of the same name (`--gateway-cmd`, …).
pub const TEMPLATE: &str = r#"# keyless: keyless contract tests for your agent gateway.
#
# `keyless test` replays every fixture (one recorded model run) through your gateway: it starts a
# model server that answers the gateway's model calls from the fixture (five wires: OpenAI Chat
# Completions, OpenAI Responses, Anthropic Messages, Gemini and Bedrock Converse, each at its own
# route), starts the gateway with `gateway_cmd`, waits for `ready`, drives the API, stops the
# gateway, and compares the Server-Sent Events' shapes with the fixture's golden. Every key below is also a
# flag (`--fixtures`, `--golden`, `--gateway-cmd`, …); a flag wins. Relative paths are relative to
# this file's folder.

# Recorded model runs, one `<scenario>.<mode>.json` per fixture.
fixtures = "fixtures"

# Goldens, one insta snapshot `<scenario>.<mode>.snap` per fixture. A missing or changed golden is
# written as `<name>.snap.new`; accept it with `keyless accept` or `keyless review`.
golden = "golden"

# How your gateway is started for each fixture (and stopped after it, so no state leaks between
# fixtures). It runs through `sh -c` in this folder. `{model_base_url}` is the model server's
# OpenAI base URL (`http://127.0.0.1:<port>/v1`) and `{port}` the port the gateway must listen on
# (127.0.0.1); both are also in the environment as KEYLESS_MODEL_BASE_URL and
# KEYLESS_GATEWAY_PORT. Its output goes to a log file named in any failure.
gateway_cmd = "python -m my_gateway --port {port} --openai-base-url {model_base_url}"

# Or a gateway that already runs (its model must point at `keyless model-server`, or at the model
# server `keyless test` starts on `model_port`). Set one of gateway_cmd and gateway_url.
# gateway_url = "http://127.0.0.1:8000"
# model_port = 8090

# The path that answers 2xx once the gateway is ready (LangGraph's server: "/ok"), and how long
# it may take.
ready = "/health"
ready_timeout_secs = 60

# The API the gateway speaks: "deerflow" (DeerFlow's gateway API) or "langgraph" (LangGraph's own
# API server, `langgraph dev` or a LangSmith deployment: ready at /ok, and `assistant = "<graph
# id>"` when langgraph.json has several graphs; an `[assistants]` table sends a scenario to
# another). A deployment's static auth header: auth_header = "x-api-key", auth_env = "VAR" (the
# value is read from VAR and never written). A Vercel AI SDK chat route: "ai-sdk" (posts to
# `endpoint`, default "/api/chat"); an agent served over AG-UI: "ag-ui" (posts RunAgentInput to
# `endpoint`, default "/"); an agent served as OpenAI's API: "openai-chat"
# ("/v1/chat/completions") or "openai-responses" ("/v1/responses"). Six dialects in all:
# deerflow, langgraph, ai-sdk, ag-ui, openai-chat, openai-responses. With all but deerflow a
# fixture's mode is a label (`keyless record --mode chat`).
api = "deerflow"

# The stream modes of every run: "values" (the golden folder above) or "web" (the web client's
# four modes; keep their goldens in another folder, `--golden golden-web`).
# stream_modes = "values"

# Where the gateway's logs go (one `<fixture>.gateway.log` each). `.keyless/` is git-ignored by the
# `.gitignore` inside it, which `keyless init` writes.
logs = ".keyless/logs"

# A fixture fails when the gateway used none of its recorded turns, or none of the lead caller's
# (its model is not the model server); another unused turn is reported. `true` fails every
# unused turn. How long one fixture's drive may take, in seconds.
# strict_unused = false
# fixture_time_limit_secs = 300
# Warn about a fixture recorded (by its provenance) longer ago than this (h, d or w);
# `max_age_fail = true` fails the run for it instead.
# max_age = "30d"
# max_age_fail = false
# How many fixtures run at once (default: the number of cores), each with its own model server
# and gateway on their own ports: a gateway_cmd that writes files must name them after the port
# ($KEYLESS_GATEWAY_PORT). `reuse_gateway = true` starts the gateway once per job and runs the
# fixtures through it (faster when it is slow to start; state it keeps across users and threads
# leaks between fixtures, and a fixture with gateway_config of its own still gets a fresh one).
# jobs = 2
# reuse_gateway = false

# Event types left out of every golden, for a framework that mixes its own telemetry into the
# stream (Agno's AG-UI `RAW` events): where they land is the framework's internals, and its
# upgrades would churn goldens no frontend reads. What is ignored is no longer guarded, so never
# ignore an event your frontend reads. `keyless test` says how many frames each type left out;
# a `[fixture."<name>"]` table with its own `ignore_events` adds types for one fixture.
# ignore_events = ["RAW"]

# How `keyless record` records a fixture: it proxies the gateway's model calls to a real
# OpenAI-compatible endpoint and writes what came back. Record with the settings you replay with:
# the same gateway configuration (model name, message names, prompts, tools), because the
# replay key is computed from the conversation the gateway sends; a fixture recorded with a
# different setting misses on replay. The key is read from the variable `key_env` names and is
# never written anywhere.
[record]
upstream = "https://api.openai.com/v1"
key_env = "OPENAI_API_KEY"

# HTTP APIs your tools call (a search API, a crawler), recorded with the model and replayed from
# the fixture: give the tool's client the base URL `{http_url:tavily}` in gateway_cmd (or
# $KEYLESS_HTTP_URL_TAVILY). Its key comes from your gateway's request and is never written.
# [http.tavily]
# upstream = "https://api.tavily.com"
# ignore = ["body.request_id"]
# A client you cannot give a base URL: list its host, and keyless is the gateway's HTTPS proxy
# for it (HTTPS_PROXY and a per-run CA in SSL_CERT_FILE); other hosts are refused.
# [proxy]
# hosts = ["api.tavily.com"]
"#;

/// Writes `keyless.toml` into `folder`; refuses to overwrite one.
pub fn run(folder: &Path) -> Result<ExitCode, ConfigError> {
    let path = folder.join(CONFIG_FILE);
    if path.exists() {
        return Err(ConfigError(format!(
            "{} exists; keyless init never overwrites it (edit it, or remove it first)",
            path.display()
        )));
    }
    std::fs::write(&path, TEMPLATE)
        .map_err(|err| ConfigError(format!("cannot write {}: {err}", path.display())))?;
    let _ = crate::output::out(format!("wrote {}", path.display()));
    let private = private_folder(folder)?;
    let _ = crate::output::out(format!(
        "{} holds keyless's logs and raw recordings, git-ignored by its .gitignore",
        private.display()
    ));
    let _ = crate::output::out(
        "next: set gateway_cmd, put fixtures in fixtures/ (keyless record makes them), then run keyless test",
    );
    Ok(ExitCode::SUCCESS)
}

/// The folder, beside the configuration, where keyless keeps what is not committed: the
/// gateways' logs and raw recordings.
pub const PRIVATE_FOLDER: &str = ".keyless";

/// What `.keyless/.gitignore` says: everything in the folder, itself included, stays out of git
/// (as pytest's and ruff's caches ignore themselves), so no repository needs an entry for it.
const IGNORE_ALL: &str =
    "# Written by keyless: nothing in .keyless/ (logs, raw recordings) belongs in git.\n*\n";

/// `<root>/.keyless`, created when missing, with the `.gitignore` that ignores it (written when
/// missing; one the user edited is left as it is).
pub fn private_folder(root: &Path) -> Result<std::path::PathBuf, ConfigError> {
    let folder = root.join(PRIVATE_FOLDER);
    std::fs::create_dir_all(&folder)
        .map_err(|err| ConfigError(format!("cannot create {}: {err}", folder.display())))?;
    let ignore = folder.join(".gitignore");
    if std::fs::symlink_metadata(&ignore).is_err() {
        std::fs::write(&ignore, IGNORE_ALL)
            .map_err(|err| ConfigError(format!("cannot write {}: {err}", ignore.display())))?;
    }
    Ok(folder)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The model server's five wires, as the docs name them.
    const WIRES: [&str; 5] = [
        "Chat Completions",
        "Responses",
        "Messages",
        "Gemini",
        "Bedrock Converse",
    ];

    /// A text's words, one space apart, without TOML's comment marks (wrapped lines rejoined).
    fn words(text: &str) -> String {
        let words = text.split_whitespace().filter(|word| *word != "#");
        words.collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn the_template_and_the_help_name_every_wire_and_every_dialect() {
        use clap::CommandFactory;
        let help = crate::Cli::command().render_long_help().to_string();
        for (what, text) in [
            ("keyless init's template", TEMPLATE),
            ("keyless --help", &help),
        ] {
            let text = words(text);
            let dialects = keyless_runner::Api::ALL.map(keyless_runner::Api::as_str);
            for name in WIRES.iter().chain(dialects.iter()) {
                assert!(
                    text.contains(name),
                    "{what} does not name {name:?}:\n{text}"
                );
            }
        }
    }

    #[test]
    fn init_makes_the_private_folder_ignore_itself_and_keeps_an_edited_gitignore() {
        let folder = tempfile::tempdir().unwrap();
        run(folder.path()).unwrap();
        let ignore = folder.path().join(".keyless/.gitignore");
        let written = std::fs::read_to_string(&ignore).unwrap();
        assert!(written.lines().any(|line| line == "*"), "{written}");
        std::fs::write(&ignore, "logs/\n").unwrap();
        private_folder(folder.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&ignore).unwrap(), "logs/\n");
    }
}
