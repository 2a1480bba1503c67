//! The wire driver: drives any DeerFlow-compatible gateway over HTTP the way the frontend does
//! (register → CSRF cookie → thread → `runs/stream`), with reqwest and eventsource-stream. It
//! knows no gateway types, only the wire contract.

use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{Map, Value, json};

use replay_core::{Scenario, UiMode, first_chars};

/// A failed step of the drive, naming the route.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// The request could not be sent or its body not read.
    #[error("{route}: {source}")]
    Http {
        /// Method and path.
        route: String,
        /// What reqwest said.
        source: reqwest::Error,
    },
    /// The gateway answered with an unexpected status.
    #[error("{route}: expected {expected}, got {status}: {body}")]
    Status {
        /// Method and path.
        route: String,
        /// The expected status.
        expected: u16,
        /// The status received.
        status: u16,
        /// The response body (truncated).
        body: String,
    },
    /// Registration set no `csrf_token` cookie.
    #[error("POST /api/v1/auth/register: no csrf_token cookie was set")]
    MissingCsrfCookie,
    /// The SSE stream broke.
    #[error("{route}: the event stream broke: {message}")]
    Stream {
        /// Method and path.
        route: String,
        /// What went wrong.
        message: String,
    },
}

pub use crate::transcript::{RunTranscript, SseEvent};

/// The stream modes DeerFlow's web client asks for.
pub const WEB_STREAM_MODES: [&str; 4] = ["messages-tuple", "values", "updates", "custom"];

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

/// A scenario driven the way the web client drives it ([`Driver::run_scenario_as_web_client`]).
#[derive(Debug, Clone, PartialEq)]
pub struct WebClientRuns {
    /// The thread the runs went to.
    pub thread_id: String,
    /// One transcript per prompt.
    pub transcripts: Vec<RunTranscript>,
    /// The suggestions answer after each run (none while suggestions are off).
    pub suggestions: Vec<Value>,
}

/// One request of a driven page and its answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange {
    /// `GET` or `POST`.
    pub method: String,
    /// The path with its query.
    pub path: String,
    /// The status received.
    pub status: u16,
    /// The body, as JSON when it parses, else as a string.
    pub body: Value,
}

impl Exchange {
    /// Whether the status is 2xx.
    pub fn succeeded(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// A browser-like session against one gateway: a cookie jar and the CSRF token.
#[derive(Debug)]
pub struct Driver {
    base: String,
    http: reqwest::Client,
    csrf: Option<String>,
}

/// The password every driven user registers with.
pub const DRIVER_PASSWORD: &str = "very-strong-password-123";

/// Sends `request` for `route` (`METHOD path`, which errors name) and expects `expected`.
async fn send_expecting(
    route: &str,
    request: reqwest::RequestBuilder,
    expected: u16,
) -> Result<reqwest::Response, DriverError> {
    let response = request.send().await.map_err(|source| DriverError::Http {
        route: route.to_string(),
        source,
    })?;
    if response.status().as_u16() == expected {
        return Ok(response);
    }
    let status = response.status().as_u16();
    let body = response.text().await.unwrap_or_default();
    let body = first_chars(&body, 2000).to_owned();
    Err(DriverError::Status {
        route: route.to_string(),
        expected,
        status,
        body,
    })
}

impl Driver {
    /// POSTs `body` to `path` (with the CSRF header once known) and expects `expected`.
    async fn post_json(
        &self,
        path: &str,
        body: &Value,
        expected: u16,
    ) -> Result<reqwest::Response, DriverError> {
        let route = format!("POST {path}");
        send_expecting(&route, self.post(path).json(body), expected).await
    }

    /// A session for the gateway at `base` (`http://127.0.0.1:<port>`).
    pub fn new(base: &str) -> Result<Driver, DriverError> {
        let mut builder = reqwest::Client::builder().cookie_store(true).no_proxy();
        if base.starts_with("http://") {
            // Plain http needs no TLS roots, and loading the system's roots costs about 4 ms per
            // client, a quarter of a whole scenario.
            builder = builder.tls_certs_only(Vec::new());
        }
        let http = builder.build().map_err(|source| DriverError::Http {
            route: "client".into(),
            source,
        })?;
        Ok(Driver {
            base: base.trim_end_matches('/').to_string(),
            http,
            csrf: None,
        })
    }

    fn post(&self, path: &str) -> reqwest::RequestBuilder {
        let request = self.http.post(format!("{}{path}", self.base));
        match &self.csrf {
            Some(token) => request.header("X-CSRF-Token", token),
            None => request,
        }
    }

    /// Sends a request (with the CSRF header once known) and returns whatever the gateway
    /// answered; only a transport failure is an error.
    pub async fn exchange(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Exchange, DriverError> {
        let route = format!("{method} {path}");
        let mut request = self
            .http
            .request(method.clone(), format!("{}{path}", self.base));
        if let Some(token) = &self.csrf {
            request = request.header("X-CSRF-Token", token);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(|source| DriverError::Http {
            route: route.clone(),
            source,
        })?;
        let status = response.status().as_u16();
        let text = response
            .text()
            .await
            .map_err(|source| DriverError::Http { route, source })?;
        Ok(Exchange {
            method: method.to_string(),
            path: path.to_string(),
            status,
            body: serde_json::from_str(&text).unwrap_or(Value::String(text)),
        })
    }

    /// Streams one run with the web client's request (`web_run_request`).
    pub async fn stream_web_run(
        &self,
        thread_id: &str,
        prompt: &str,
        mode: UiMode,
        model_name: Option<&str>,
    ) -> Result<RunTranscript, DriverError> {
        let request = web_run_request(prompt, mode, model_name, thread_id);
        self.stream_request(thread_id, request).await
    }

    /// Registers `e2e-<8 hex>@example.com` and keeps the `csrf_token` cookie.
    pub async fn register(&mut self) -> Result<(), DriverError> {
        let email = format!(
            "e2e-{}@example.com",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let body = json!({"email": email, "password": DRIVER_PASSWORD});
        let response = self.post_json("/api/v1/auth/register", &body, 201).await?;
        let token = response
            .cookies()
            .find(|cookie| cookie.name() == "csrf_token")
            .map(|cookie| cookie.value().to_string())
            .ok_or(DriverError::MissingCsrfCookie)?;
        self.csrf = Some(token);
        Ok(())
    }

    /// Creates a thread with a fresh UUID id.
    pub async fn create_thread(&self) -> Result<String, DriverError> {
        let thread_id = uuid::Uuid::new_v4().to_string();
        let body = json!({"thread_id": thread_id, "metadata": {}});
        self.post_json("/api/threads", &body, 200).await?;
        Ok(thread_id)
    }

    /// Streams one run with the Layer 1 body (`stream_mode: ["values"]`,
    /// `recursion_limit: 100`) and reads the whole stream.
    pub async fn stream_run(
        &self,
        thread_id: &str,
        prompt: &str,
        context: &Value,
    ) -> Result<RunTranscript, DriverError> {
        let request = json!({
            "assistant_id": "lead_agent",
            "input": {"messages": [{"role": "user", "content": prompt}]},
            "config": {"recursion_limit": 100},
            "context": context,
            "stream_mode": ["values"],
        });
        self.stream_request(thread_id, request).await
    }

    /// Streams a run with any request body (other stream modes, for example) and reads the
    /// whole stream.
    pub async fn stream_request(
        &self,
        thread_id: &str,
        request: Value,
    ) -> Result<RunTranscript, DriverError> {
        let path = format!("/api/threads/{thread_id}/runs/stream");
        let route = format!("POST {path}");
        let response = self.post_json(&path, &request, 200).await?;
        // Each frame's data is parsed once, here (`SseEvent::new`); no copy of the raw bytes.
        let mut stream = response.bytes_stream().eventsource();
        let mut events = Vec::new();
        while let Some(event) = stream.next().await {
            let event = event.map_err(|err| DriverError::Stream {
                route: route.clone(),
                message: err.to_string(),
            })?;
            events.push(SseEvent::new(
                event.event,
                event.data,
                (!event.id.is_empty()).then_some(event.id),
            ));
        }
        Ok(RunTranscript { request, events })
    }

    /// Creates a thread and streams the scenario's prompt and each follow-up in it, one run after
    /// another, with the scenario's context and Layer 1's values-only request.
    /// Returns the thread id and one transcript per prompt.
    pub async fn run_scenario(
        &self,
        scenario: &Scenario,
    ) -> Result<(String, Vec<RunTranscript>), DriverError> {
        let thread_id = self.create_thread().await?;
        let mut transcripts = Vec::new();
        for prompt in scenario.prompts() {
            transcripts.push(
                self.stream_run(&thread_id, prompt, &scenario.context)
                    .await?,
            );
        }
        Ok((thread_id, transcripts))
    }

    /// Creates a thread and drives the scenario's prompt and each follow-up in it the way the
    /// web client does (the path of recording): each run with the client's run request
    /// ([`web_run_request`], in the scenario's mode, with `model_name`), and after each run
    /// the follow-up suggestions the client asks for, while `GET /api/suggestions/config` says
    /// they are on (`n = max_suggestions`, the last six visible messages).
    pub async fn run_scenario_as_web_client(
        &self,
        scenario: &Scenario,
        model_name: &str,
    ) -> Result<WebClientRuns, DriverError> {
        let config = self.get_json("/api/suggestions/config").await?;
        let suggestions_on = config["enabled"] != Value::Bool(false);
        let n = config["max_suggestions"].as_u64().unwrap_or(3) as u32;
        let thread_id = self.create_thread().await?;
        let mut runs = WebClientRuns {
            thread_id,
            transcripts: Vec::new(),
            suggestions: Vec::new(),
        };
        for prompt in scenario.prompts() {
            let transcript = self
                .stream_web_run(&runs.thread_id, prompt, scenario.mode, Some(model_name))
                .await?;
            let conversation = transcript
                .final_values()
                .map(|values| visible_conversation(&values))
                .unwrap_or_default();
            runs.transcripts.push(transcript);
            if suggestions_on && n > 0 && !conversation.is_empty() {
                let answer = self.suggestions(&runs.thread_id, &conversation, n).await?;
                runs.suggestions.push(answer);
            }
        }
        Ok(runs)
    }

    /// `GET path`, expecting 200 and a JSON body.
    async fn get_json(&self, path: &str) -> Result<Value, DriverError> {
        let route = format!("GET {path}");
        let request = self.http.get(format!("{}{path}", self.base));
        send_expecting(&route, request, 200)
            .await?
            .json()
            .await
            .map_err(|source| DriverError::Http { route, source })
    }

    /// `POST /api/threads/{id}/suggestions` with the last six visible messages, as the frontend
    /// does after a run; returns the answer body.
    pub async fn suggestions(
        &self,
        thread_id: &str,
        messages: &[(String, String)],
        n: u32,
    ) -> Result<Value, DriverError> {
        let path = format!("/api/threads/{thread_id}/suggestions");
        let route = format!("POST {path}");
        let body = suggestions_request(messages, n);
        let response = self.post_json(&path, &body, 200).await?;
        response
            .json()
            .await
            .map_err(|source| DriverError::Http { route, source })
    }
}

/// The suggestions request the frontend sends after a run: the last six visible messages as
/// `{"role", "content"}` and `n`.
pub fn suggestions_request(messages: &[(String, String)], n: u32) -> Value {
    let recent: Vec<Value> = messages
        .iter()
        .skip(messages.len().saturating_sub(6))
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    json!({"messages": recent, "n": n})
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

#[cfg(test)]
mod tests {
    use super::*;

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
                    "{}: the client sends\n  {}\nharness::driver::web_run_request builds\n  {built}",
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
