//! DeerFlow's dialect and its web client, everything about DeerFlow's API in one file: the
//! session its frontend opens (register, which sets the session cookie and the `csrf_token`
//! cookie echoed as `X-CSRF-Token`), threads and `runs/stream` below `/api`, Layer 1's run
//! request with the fixture's context and `assistant_id: "lead_agent"`, its framing (`metadata`
//! first, `end` last), and [`WebClient`]: the requests DeerFlow's chat page makes, in its order,
//! with its exact run request, the one page flow the recorder and the web tests both drive.

use reqwest::Method;
use serde_json::{Map, Value, json};

use replay_core::{Framing, FramingProblem, Scenario, UiMode};

use super::api::{Api, StreamModes};
use super::dialect::{Begin, Dialect, Protocol, RunContext, first_violation};
use super::error::DriverError;
use super::http::{Exchange, HttpClient, RunRequest, create_thread};
use super::transcript::{RunTranscript, SseEvent};

/// The prefix of DeerFlow's routes, as its frontend calls them.
pub const BASE: &str = "/api";

/// DeerFlow's protocol: routes below `/api`, ready at `/health`, runs below a thread, UI modes,
/// each run framed by `metadata` first and `end` last ([`framing`]).
pub const PROTOCOL: Protocol = Protocol {
    base_path: BASE,
    ready_path: "/health",
    endpoint: None,
    ui_modes: true,
    headers: &[],
    lf_only: false,
    framing,
    named: None,
};

/// The event every run opens with.
const FIRST: &str = "metadata";
/// The event every run closes with.
const LAST: &str = "end";

/// DeerFlow's framing rule: each run's first event is `metadata` and its last `end`; the first
/// run that breaks it is named.
fn framing(runs: &[RunTranscript], _model_error_recorded: bool) -> Framing {
    first_violation(runs, |transcript| {
        let name = |event: Option<&SseEvent>| event.map(|event| event.event.clone());
        let first = name(transcript.events.first());
        let last = name(transcript.events.last());
        if first.as_deref() != Some(FIRST) {
            Some(FramingProblem::First {
                expected: format!("{FIRST:?}"),
                got: first,
            })
        } else if last.as_deref() != Some(LAST) {
            Some(FramingProblem::Last {
                expected: format!("{LAST:?}"),
                got: last,
            })
        } else {
            None
        }
    })
}

/// The password every driven user registers with.
pub const DRIVER_PASSWORD: &str = "very-strong-password-123";

/// The stream modes DeerFlow's web client asks for.
pub const WEB_STREAM_MODES: [&str; 4] = ["messages-tuple", "values", "updates", "custom"];

/// How many of the last visible messages the suggestions request carries, as the frontend sends.
const SUGGESTIONS_CONTEXT: usize = 6;

/// DeerFlow's gateway API below `base` (`/api` as its frontend calls it).
#[derive(Debug, Clone)]
pub struct DeerFlow {
    base: String,
    /// The thread of the conversation begun.
    thread_id: String,
}

impl DeerFlow {
    /// The dialect with its routes below `base`.
    pub fn new(base: String) -> DeerFlow {
        DeerFlow {
            base,
            thread_id: String::new(),
        }
    }

    fn threads_path(&self) -> String {
        threads_path(&self.base)
    }
}

/// `<base>/threads`.
fn threads_path(base: &str) -> String {
    format!("{base}/threads")
}

/// `<base>/threads/<id><rest>`.
fn thread_path(base: &str, thread_id: &str, rest: &str) -> String {
    format!("{}/{thread_id}{rest}", threads_path(base))
}

/// Registers `e2e-<8 hex>@example.com` at `<base>/v1/auth/register` and keeps the `csrf_token`
/// cookie, echoed as `X-CSRF-Token` from then on.
pub async fn register(client: &mut HttpClient, base: &str) -> Result<(), DriverError> {
    let email = format!(
        "e2e-{}@example.com",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let body = json!({"email": email, "password": DRIVER_PASSWORD});
    let path = format!("{base}/v1/auth/register");
    let response = client.post_json(&path, &body, 201).await?;
    let token = response
        .cookies()
        .find(|cookie| cookie.name() == "csrf_token")
        .map(|cookie| cookie.value().to_string())
        .ok_or_else(|| DriverError::MissingCsrfCookie {
            route: format!("POST {path}"),
        })?;
    client.set_session_header("X-CSRF-Token", token);
    Ok(())
}

/// Layer 1's run request: `stream_mode: ["values"]`, `recursion_limit: 100`, the scenario's
/// context, the prompt as a user message.
pub fn values_run_request(prompt: &str, context: &Value) -> Value {
    json!({
        "assistant_id": "lead_agent",
        "input": {"messages": [{"role": "user", "content": prompt}]},
        "config": {"recursion_limit": 100},
        "context": context,
        "stream_mode": ["values"],
    })
}

/// The run request of DeerFlow's web client, in its exact form: the prompt as a text block,
/// `recursion_limit: 1000`, the context the client builds for `mode` (the picked model when there
/// is one, the mode, its `reasoning_effort` unless flash, its three flags, the thread id), the
/// four web stream modes, `stream_resumable: false` (the LangGraph SDK always sends it),
/// `assistant_id` and `on_disconnect: "continue"`.
///
/// The web client builds the same body (`gateway-under-test/web/src/chat/run-request.ts`), and
/// both are held to `gateway-under-test/web/src/chat/run-requests/run-request.<mode>.json`, so
/// a run recorded through this driver replays in the browser without a miss.
pub fn web_run_request(
    prompt: &str,
    mode: UiMode,
    model_name: Option<&str>,
    thread_id: &str,
) -> Value {
    let mut context = Map::new();
    if let Some(model_name) = model_name {
        context.insert("model_name".into(), json!(model_name));
    }
    context.insert("mode".into(), json!(mode.as_str()));
    if let Some(effort) = mode.reasoning_effort() {
        context.insert("reasoning_effort".into(), json!(effort));
    }
    let flags = mode.context();
    for flag in ["thinking_enabled", "is_plan_mode", "subagent_enabled"] {
        context.insert(flag.into(), flags[flag].clone());
    }
    context.insert("thread_id".into(), json!(thread_id));
    json!({
        "input": {"messages": [{"type": "human", "content": [{"type": "text", "text": prompt}],
                                "additional_kwargs": {}}]},
        "config": {"recursion_limit": 1000},
        "context": context,
        "stream_mode": WEB_STREAM_MODES,
        "stream_resumable": false,
        "assistant_id": "lead_agent",
        "on_disconnect": "continue",
    })
}

/// The scenario's UI mode, or [`DriverError::NoUiMode`] for a label.
pub fn ui_mode(scenario: &Scenario) -> Result<UiMode, DriverError> {
    scenario.mode.ui().ok_or_else(|| DriverError::NoUiMode {
        mode: scenario.mode.to_string(),
    })
}

/// The suggestions request the frontend sends after a run: the last six visible messages as
/// `{"role", "content"}`, `n`, and the picked model as `model_name` (absent when none is picked:
/// the frontend sends `undefined`, which `JSON.stringify` drops).
pub fn suggestions_request(
    messages: &[(String, String)],
    n: u32,
    model_name: Option<&str>,
) -> Value {
    let recent: Vec<Value> = messages
        .iter()
        .skip(messages.len().saturating_sub(SUGGESTIONS_CONTEXT))
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    let mut body = json!({"messages": recent, "n": n});
    if let Some(model_name) = model_name {
        body["model_name"] = json!(model_name);
    }
    body
}

/// The visible human and AI messages of a `values` state as `(role, text)`, the way the frontend
/// builds the suggestions request: hidden messages skipped, AI messages without text skipped.
pub fn visible_conversation(values: &Value) -> Vec<(String, String)> {
    let Some(messages) = values.get("messages").and_then(Value::as_array) else {
        return Vec::new();
    };
    messages
        .iter()
        .filter(|message| {
            message.pointer("/additional_kwargs/hide_from_ui") != Some(&Value::Bool(true))
        })
        .filter_map(|message| {
            let role = match message.get("type")?.as_str()? {
                "human" => "user",
                "ai" => "assistant",
                _ => return None,
            };
            let text = match message.get("content")? {
                Value::String(text) => text.clone(),
                Value::Array(blocks) => blocks
                    .iter()
                    .filter_map(|block| block.get("text").and_then(Value::as_str))
                    .collect(),
                _ => return None,
            };
            (!text.trim().is_empty()).then(|| (role.to_string(), text))
        })
        .collect()
}

#[async_trait::async_trait]
impl Dialect for DeerFlow {
    async fn open(&mut self, client: &mut HttpClient) -> Result<(), DriverError> {
        register(client, &self.base).await
    }

    async fn begin(&mut self, start: Begin<'_>) -> Result<(), DriverError> {
        let client = start.client;
        self.thread_id = create_thread(client, &self.threads_path()).await?;
        Ok(())
    }

    fn run_request(&self, run: &RunContext<'_>) -> Result<RunRequest, DriverError> {
        let (prompt, scenario) = (run.prompt, run.scenario);
        let body = match run.modes {
            StreamModes::Values => values_run_request(prompt, &scenario.context),
            StreamModes::Web => web_run_request(prompt, ui_mode(scenario)?, None, &self.thread_id),
        };
        Ok(RunRequest {
            path: thread_path(&self.base, &self.thread_id, "/runs/stream"),
            body,
            headers: Vec::new(),
        })
    }
}

/// DeerFlow's chat page, as its web client drives it: the one page flow, driven by the recorder
/// (so a recorded fixture replays in the browser without a miss) and by the web tests.
///
/// Page load ([`WebClient::open`]): register, `auth/me`, `features`, `models`, `skills`,
/// `channels/providers`, `suggestions/config`; a new chat ([`Page::new_thread`]):
/// `threads/search`, the thread created, `GET`, `history`, `messages/page`, `token-usage`,
/// `uploads/limits`; each prompt ([`Page::send`]) streamed with the web request
/// (`web_run_request`, four stream modes, the picked model), after each run the thread,
/// `history`, `messages/page` and `token-usage` again, then the follow-up suggestions as
/// DeerFlow's frontend asks for them (`frontend/src/components/workspace/input-box.tsx`): the
/// last six visible messages and `n = max_suggestions`, skipped while `suggestions/config` says
/// they are off or no message is visible; at the end each run's `workspace-changes`.
#[derive(Debug, Clone)]
pub struct WebClient {
    base: String,
    model_name: Option<String>,
}

/// A scenario driven through DeerFlow's chat page ([`WebClient::drive`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PageRuns {
    /// The thread the runs went to.
    pub thread_id: String,
    /// One transcript per prompt (the web stream modes).
    pub transcripts: Vec<RunTranscript>,
    /// Every request but the streams and the registration, in order, with its answer.
    pub exchanges: Vec<Exchange>,
}

impl PageRuns {
    /// The suggestions answers, one per run that asked for them.
    pub fn suggestions(&self) -> Vec<Value> {
        (self.exchanges.iter())
            .filter(|exchange| exchange.method == "POST" && exchange.path.ends_with("/suggestions"))
            .map(|exchange| exchange.body.clone())
            .collect()
    }

    /// The first request that did not answer 2xx, as an error (the recorder stops on it: a
    /// page a browser could not load records nothing worth replaying).
    pub fn first_failure(&self) -> Option<DriverError> {
        let failed = self
            .exchanges
            .iter()
            .find(|exchange| !exchange.succeeded())?;
        Some(DriverError::PageRequest {
            route: format!("{} {}", failed.method, failed.path),
            status: failed.status,
            body: replay_core::first_chars(&failed.body.to_string(), 2000).to_owned(),
        })
    }
}

impl WebClient {
    /// The page below DeerFlow's `BASE` (`/api`), picking `model_name` as the page's model picker does
    /// (`None`: no model picked, the gateway's default).
    pub fn new(model_name: Option<&str>) -> WebClient {
        WebClient {
            base: BASE.to_owned(),
            model_name: model_name.map(str::to_owned),
        }
    }

    /// Opens the page on the gateway at `url` and drives `scenario`'s prompt and follow-ups in
    /// one new thread: the flow the recorder and the web tests share.
    pub async fn drive(&self, url: &str, scenario: &Scenario) -> Result<PageRuns, DriverError> {
        let mode = ui_mode(scenario)?;
        let mut page = self.open(url).await?;
        let thread_id = page.new_thread().await?;
        let mut transcripts = Vec::new();
        for prompt in scenario.prompts() {
            transcripts.push(page.send(&thread_id, prompt, mode).await?);
        }
        for run_id in transcripts.iter().filter_map(RunTranscript::run_id) {
            let path = format!("/runs/{run_id}/workspace-changes");
            page.get(&thread_path(&page.base, &thread_id, &path))
                .await?;
        }
        Ok(PageRuns {
            thread_id,
            transcripts,
            exchanges: page.exchanges,
        })
    }

    /// Registers on the gateway at `url` and loads the page: `auth/me`, `features`, `models`,
    /// `skills`, `channels/providers`, `suggestions/config`.
    pub async fn open(&self, url: &str) -> Result<Page, DriverError> {
        let mut client = HttpClient::new(url)?;
        register(&mut client, &self.base).await?;
        let mut page = Page {
            client,
            base: self.base.clone(),
            model_name: self.model_name.clone(),
            exchanges: Vec::new(),
            suggestions: None,
        };
        for path in [
            "/v1/auth/me",
            "/features",
            "/models",
            "/skills",
            "/channels/providers",
        ] {
            page.get(&format!("{}{path}", page.base)).await?;
        }
        let config = page
            .get(&format!("{}/suggestions/config", page.base))
            .await?;
        let on = config["enabled"] != Value::Bool(false);
        let n = config["max_suggestions"].as_u64().unwrap_or(3) as u32;
        page.suggestions = on.then_some(n);
        Ok(page)
    }
}

/// DeerFlow's chat page, opened ([`WebClient::open`]): the signed-in session and every request
/// it made so far.
#[derive(Debug)]
pub struct Page {
    client: HttpClient,
    base: String,
    model_name: Option<String>,
    exchanges: Vec<Exchange>,
    /// `n` of the suggestions request (`max_suggestions`), `None` while they are off.
    suggestions: Option<u32>,
}

impl Page {
    /// Every request but the streams and the registration, in order.
    pub fn exchanges(&self) -> &[Exchange] {
        &self.exchanges
    }

    /// Starts a new chat as the page does: the thread list, the thread created with a fresh
    /// id, the thread's page and its upload limits. Returns the thread id.
    pub async fn new_thread(&mut self) -> Result<String, DriverError> {
        let search =
            json!({"limit": 50, "offset": 0, "sort_by": "updated_at", "sort_order": "desc"});
        let threads = threads_path(&self.base);
        self.post(&format!("{threads}/search"), &search).await?;
        let thread_id = uuid::Uuid::new_v4().to_string();
        let create = json!({"thread_id": thread_id, "metadata": {}});
        self.post(&threads, &create).await?;
        self.thread_page(&thread_id).await?;
        (self.get(&thread_path(&self.base, &thread_id, "/uploads/limits"))).await?;
        Ok(thread_id)
    }

    /// Sends `prompt` in `mode` to the thread and streams the run with the web client's request
    /// (`web_run_request`); then reloads the thread and asks for follow-up suggestions as
    /// DeerFlow's frontend does: the last six visible messages and `n = max_suggestions`,
    /// skipped while they are off or no message is visible.
    pub async fn send(
        &mut self,
        thread_id: &str,
        prompt: &str,
        mode: UiMode,
    ) -> Result<RunTranscript, DriverError> {
        let request = RunRequest {
            path: thread_path(&self.base, thread_id, "/runs/stream"),
            body: web_run_request(prompt, mode, self.model_name.as_deref(), thread_id),
            headers: Vec::new(),
        };
        let transcript = (self.client)
            .stream(request, StreamModes::Web, Api::Deerflow)
            .await?;
        self.thread_page(thread_id).await?;
        let conversation = transcript
            .final_values()
            .map(|values| visible_conversation(&values))
            .unwrap_or_default();
        if self.suggestions.is_some() && !conversation.is_empty() {
            self.suggest(thread_id, &conversation).await?;
        }
        Ok(transcript)
    }

    /// Asks for follow-up suggestions after `conversation` (`(role, text)`, the last six sent)
    /// with `n = max_suggestions` (3 while the page has them off); returns the answer.
    pub async fn suggest(
        &mut self,
        thread_id: &str,
        conversation: &[(String, String)],
    ) -> Result<Value, DriverError> {
        let n = self.suggestions.unwrap_or(3);
        let body = suggestions_request(conversation, n, self.model_name.as_deref());
        (self.post(&thread_path(&self.base, thread_id, "/suggestions"), &body)).await
    }

    /// What a chat page reads about its thread: the thread, its history, its message page and
    /// its token usage.
    async fn thread_page(&mut self, thread_id: &str) -> Result<(), DriverError> {
        let path = |rest: &str| thread_path(&self.base, thread_id, rest);
        let (thread, history) = (path(""), path("/history"));
        let (messages, usage) = (path("/messages/page?limit=50"), path("/token-usage"));
        self.get(&thread).await?;
        self.post(&history, &json!({"limit": 1})).await?;
        self.get(&messages).await?;
        self.get(&usage).await?;
        Ok(())
    }

    /// `GET path`, kept as an exchange; returns the answer's body.
    async fn get(&mut self, path: &str) -> Result<Value, DriverError> {
        let exchange = self.client.exchange(Method::GET, path, None).await?;
        let body = exchange.body.clone();
        self.exchanges.push(exchange);
        Ok(body)
    }

    /// `POST path` with `body`, kept as an exchange; returns the answer's body.
    async fn post(&mut self, path: &str, body: &Value) -> Result<Value, DriverError> {
        let exchange = self.client.exchange(Method::POST, path, Some(body)).await?;
        let answer = exchange.body.clone();
        self.exchanges.push(exchange);
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suggestions_request_is_the_frontends_with_the_picked_model_or_none() {
        let conversation: Vec<(String, String)> = (0..8)
            .map(|turn| ("user".to_owned(), format!("message {turn}")))
            .collect();
        let picked = suggestions_request(&conversation, 3, Some("scenario-model"));
        assert_eq!(picked["model_name"], "scenario-model");
        assert_eq!(picked["n"], 3);
        let sent = picked["messages"].as_array().expect("messages");
        assert_eq!(sent.len(), 6, "the last six only: {picked}");
        assert_eq!(sent[0]["content"], "message 2");
        let none = suggestions_request(&conversation, 3, None);
        assert!(
            none.get("model_name").is_none(),
            "no model picked, no key: {none}"
        );
    }

    /// The web client's expected run request bodies, one file per mode:
    /// `{"inputs": {"prompt", "mode", "model_name", "thread_id"}, "body": …}`.
    fn run_request_files() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../gateway-under-test/web/src/chat/run-requests")
    }

    #[test]
    fn the_web_run_request_is_the_web_clients_for_every_mode() {
        let folder = run_request_files();
        let mut problems = Vec::new();
        for mode in UiMode::ALL {
            let path = folder.join(format!("run-request.{mode}.json"));
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
            let file: Value = serde_json::from_str(&text)
                .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
            let inputs = &file["inputs"];
            assert_eq!(inputs["mode"], mode.as_str(), "{}", path.display());
            let built = web_run_request(
                inputs["prompt"].as_str().expect("inputs.prompt"),
                mode,
                inputs["model_name"].as_str(),
                inputs["thread_id"].as_str().expect("inputs.thread_id"),
            );
            if built != file["body"] {
                problems.push(format!(
                    "{}: the client sends\n  {}\ndeerflow::web_run_request builds\n  {built}",
                    path.display(),
                    file["body"]
                ));
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn every_run_request_file_is_a_mode_the_driver_knows() {
        let mut modes: Vec<String> = std::fs::read_dir(run_request_files())
            .expect("the client's run-requests folder")
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .map(|name| {
                let mode = name
                    .strip_prefix("run-request.")
                    .and_then(|rest| rest.strip_suffix(".json"));
                mode.unwrap_or_else(|| panic!("{name}: not run-request.<mode>.json"))
                    .to_owned()
            })
            .collect();
        modes.sort();
        let mut known: Vec<String> = UiMode::ALL.iter().map(|mode| mode.to_string()).collect();
        known.sort();
        assert_eq!(modes, known);
    }
}
