//! The test vocabulary: [`spawn_gateway`] boots a real gateway on 127.0.0.1:0 with a fresh home
//! and a [`ScriptedModel`]; [`TestClient`] speaks the wire contract with a cookie jar and returns
//! whole SSE transcripts. Failures print the transcript.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use gateway_under_test::config::{Config, ModelConfig, PasswordHashConfig};
use gateway_under_test::messages::{Message, ToolCall};
use gateway_under_test::models::{ChatModel, ModelError, ModelRequest};
use gateway_under_test::{AppBuilder, RunningGateway};
use serde_json::{Value, json};
use tempfile::TempDir;

/// The scenario prompt of `docs/replay-and-fixtures.md` §2.2.
pub const SCENARIO_PROMPT: &str = "Using your own file tools directly, create the file /mnt/user-data/outputs/note.txt with exactly this content: hi from replay. Then read that same file back and reply with its exact contents. Do NOT delegate to a subagent and do NOT use the task tool — do it yourself. Do not ask any clarifying questions.";

/// A model that answers from a script and records every request it receives.
#[derive(Debug, Default)]
pub struct ScriptedModel {
    script: Mutex<VecDeque<Result<Message, ModelError>>>,
    requests: Mutex<Vec<ModelRequest>>,
    /// When set, an empty script answers with this text instead of failing.
    fallback_text: Mutex<Option<String>>,
    /// How long each call takes.
    delay: Mutex<std::time::Duration>,
    /// When set, requests are not kept: a long run's requests hold its conversation once per
    /// step, which would make its cost grow with steps × conversation.
    forget_requests: std::sync::atomic::AtomicBool,
}

impl ScriptedModel {
    /// Queues answers, served in order.
    pub fn push(&self, answers: impl IntoIterator<Item = Result<Message, ModelError>>) {
        self.script.lock().unwrap().extend(answers);
    }

    /// Every later call with an empty script answers `text`.
    pub fn answer_always(&self, text: &str) {
        *self.fallback_text.lock().unwrap() = Some(text.to_string());
    }

    /// Makes every call take `millis` milliseconds.
    pub fn set_delay(&self, millis: u64) {
        *self.delay.lock().unwrap() = std::time::Duration::from_millis(millis);
    }

    /// Stops keeping the requests received ([`ScriptedModel::requests`] stays empty).
    pub fn forget_requests(&self) {
        self.forget_requests
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().unwrap().clone()
    }
}

#[async_trait]
impl ChatModel for ScriptedModel {
    async fn invoke(&self, request: &ModelRequest) -> Result<Message, ModelError> {
        if !self
            .forget_requests
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            self.requests.lock().unwrap().push(request.clone());
        }
        let delay = *self.delay.lock().unwrap();
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let next = self.script.lock().unwrap().pop_front();
        match next {
            Some(answer) => answer,
            None => match self.fallback_text.lock().unwrap().clone() {
                Some(text) => Ok(Message::ai(text, Vec::new())),
                None => Err(ModelError::new(
                    "ScriptExhausted",
                    "the scripted model has no answer left",
                )),
            },
        }
    }
}

/// An AI message calling one tool.
pub fn tool_call(name: &str, args: Value, id: &str) -> Result<Message, ModelError> {
    Ok(Message::ai(
        "",
        vec![ToolCall {
            name: name.into(),
            args,
            id: id.into(),
        }],
    ))
}

/// An AI message with text only.
pub fn answer(text: &str) -> Result<Message, ModelError> {
    Ok(Message::ai(text, Vec::new()))
}

/// The write → read → answer script of the scenario.
pub fn write_read_script() -> Vec<Result<Message, ModelError>> {
    vec![
        tool_call(
            "write_file",
            json!({"description": "Create the requested output file with exact content",
                   "path": "/mnt/user-data/outputs/note.txt", "content": "hi from replay."}),
            "call_write",
        ),
        tool_call(
            "read_file",
            json!({"description": "Read the file back", "path": "/mnt/user-data/outputs/note.txt"}),
            "call_read",
        ),
        answer("hi from replay."),
    ]
}

/// How to configure a test gateway.
pub struct GatewayOptions {
    /// Adjusts the config before the app is built.
    pub configure: Box<dyn FnOnce(&mut Config) + Send>,
    /// Adjusts the builder (extra tools, middlewares, providers).
    pub extend: Box<dyn FnOnce(AppBuilder) -> AppBuilder + Send>,
    /// Reuse this home folder instead of a fresh one (restart tests).
    pub home: Option<Arc<TempDir>>,
}

impl Default for GatewayOptions {
    fn default() -> Self {
        GatewayOptions {
            configure: Box::new(|_| {}),
            extend: Box::new(|builder| builder),
            home: None,
        }
    }
}

/// A running gateway with its scripted model and home.
pub struct TestGateway {
    /// The running server.
    pub gateway: RunningGateway,
    /// The model every run uses.
    pub model: Arc<ScriptedModel>,
    /// The gateway's home folder.
    pub home: Arc<TempDir>,
}

impl TestGateway {
    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        self.gateway.url()
    }

    /// A fresh client (its own cookie jar).
    pub fn client(&self) -> TestClient {
        TestClient::new(self.url())
    }

    /// A fresh client signed in as a newly registered user.
    pub async fn registered_client(&self) -> TestClient {
        let mut client = self.client();
        client.register().await;
        client
    }

    /// A newly registered user's client and a fresh thread of theirs.
    pub async fn client_with_thread(&self) -> (TestClient, String) {
        let client = self.registered_client().await;
        let thread_id = client.create_thread().await;
        (client, thread_id)
    }

    /// Stops the server.
    pub async fn stop(self) {
        self.gateway
            .shutdown()
            .await
            .expect("gateway shuts down cleanly");
    }
}

/// The test configuration: fresh home, cheap hashing, the scripted model, fast retries.
pub fn test_config(home: &std::path::Path) -> Config {
    let mut config = Config {
        home: home.to_path_buf(),
        ..Config::default()
    };
    config.auth.password_hash = PasswordHashConfig::cheap();
    config.auth.jwt_secret = Some("test-secret".into());
    let mut model = ModelConfig::new("scripted-model", "scripted");
    model.supports_thinking = true;
    config.models = vec![model];
    config.llm_retry.base_delay_ms = 1;
    config.llm_retry.max_delay_ms = 5;
    config
}

/// Boots a gateway on 127.0.0.1:0.
pub async fn spawn_gateway() -> TestGateway {
    spawn_gateway_with(GatewayOptions::default()).await
}

/// Boots a gateway after `configure` adjusted its configuration.
pub async fn spawn_gateway_configured(
    configure: impl FnOnce(&mut Config) + Send + 'static,
) -> TestGateway {
    spawn_gateway_with(GatewayOptions {
        configure: Box::new(configure),
        ..Default::default()
    })
    .await
}

/// Boots a gateway with options.
pub async fn spawn_gateway_with(options: GatewayOptions) -> TestGateway {
    let home = options
        .home
        .unwrap_or_else(|| Arc::new(tempfile::tempdir().expect("Failed to create a temp home")));
    let mut config = test_config(home.path());
    (options.configure)(&mut config);
    let model = Arc::new(ScriptedModel::default());
    let provider_model = model.clone();
    let builder = AppBuilder::new(config).provider("scripted", move |_: &ModelConfig, _: &_| {
        Ok(provider_model.clone() as Arc<dyn ChatModel>)
    });
    let app = (options.extend)(builder)
        .build()
        .expect("Failed to build the app");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("Failed to bind 127.0.0.1:0");
    let gateway = app.serve(listener).expect("Failed to serve");
    TestGateway {
        gateway,
        model,
        home,
    }
}

/// One SSE frame as the test saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// `event:` value.
    pub event: String,
    /// `data:` parsed as JSON.
    pub data: Value,
    /// `id:` value, if any.
    pub id: Option<String>,
}

/// A whole SSE response.
#[derive(Debug, Clone)]
pub struct Transcript {
    /// Status code.
    pub status: u16,
    /// Response headers.
    pub headers: reqwest::header::HeaderMap,
    /// The raw body.
    pub raw: String,
    /// Parsed frames (comments skipped).
    pub frames: Vec<Frame>,
}

impl Transcript {
    /// Event names in order.
    pub fn events(&self) -> Vec<&str> {
        self.frames.iter().map(|f| f.event.as_str()).collect()
    }

    /// `(event, sorted top-level keys or None)` per frame.
    pub fn shapes(&self) -> Vec<(String, Option<Vec<String>>)> {
        self.frames
            .iter()
            .map(|frame| {
                let keys = frame.data.as_object().map(|object| {
                    let mut keys: Vec<String> = object.keys().cloned().collect();
                    keys.sort();
                    keys
                });
                (frame.event.clone(), keys)
            })
            .collect()
    }

    /// The last `values` frame's data.
    pub fn last_values(&self) -> &Value {
        &self
            .frames
            .iter()
            .rev()
            .find(|f| f.event == "values")
            .unwrap_or_else(|| panic!("no values frame in:\n{}", self.raw))
            .data
    }

    /// The last message of the last `values` frame.
    pub fn last_message(&self) -> &Value {
        self.last_values()["messages"]
            .as_array()
            .and_then(|messages| messages.last())
            .unwrap_or_else(|| panic!("no message in the last values frame:\n{}", self.raw))
    }

    /// The run id of the leading `metadata` frame.
    pub fn run_id(&self) -> &str {
        self.frames
            .first()
            .and_then(|frame| frame.data["run_id"].as_str())
            .unwrap_or_else(|| panic!("no metadata frame with a run_id in:\n{}", self.raw))
    }
}

/// Parses an SSE body frame by frame, checking the contract's line order.
pub fn parse_sse(raw: &str) -> Vec<Frame> {
    let mut frames = Vec::new();
    for block in raw.split("\n\n").filter(|b| !b.trim().is_empty()) {
        if block.starts_with(':') {
            continue;
        }
        let lines: Vec<&str> = block.lines().collect();
        let event = lines[0]
            .strip_prefix("event: ")
            .unwrap_or_else(|| panic!("frame must start with event:\n{block}"));
        let data = lines
            .get(1)
            .and_then(|l| l.strip_prefix("data: "))
            .unwrap_or_else(|| panic!("second line must be data:\n{block}"));
        let id = lines.get(2).map(|l| {
            l.strip_prefix("id: ")
                .unwrap_or_else(|| panic!("third line must be id:\n{block}"))
                .to_string()
        });
        assert!(
            lines.len() <= 3,
            "a frame has at most event, data and id lines:\n{block}"
        );
        frames.push(Frame {
            event: event.to_string(),
            data: serde_json::from_str(data)
                .unwrap_or_else(|e| panic!("data is not JSON ({e}):\n{block}")),
            id,
        });
    }
    frames
}

/// A client with a cookie jar.
pub struct TestClient {
    /// The gateway URL.
    pub url: String,
    /// The HTTP client.
    pub http: reqwest::Client,
    /// The CSRF token from the last session-creating call.
    pub csrf: Option<String>,
}

impl TestClient {
    /// A client for `url`.
    pub fn new(url: String) -> TestClient {
        let http = reqwest::Client::builder()
            .cookie_store(true)
            .no_proxy()
            .build()
            .expect("Failed to build the HTTP client");
        TestClient {
            url,
            http,
            csrf: None,
        }
    }

    /// `POST /api/v1/auth/register` with a random e-mail; keeps the CSRF token.
    pub async fn register(&mut self) -> Value {
        let email = format!(
            "e2e-{}@example.com",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let response = self
            .http
            .post(format!("{}/api/v1/auth/register", self.url))
            .json(&json!({"email": email, "password": "very-strong-password-123"}))
            .send()
            .await
            .expect("register request");
        assert_eq!(
            response.status(),
            201,
            "register failed: {:?}",
            response.text().await
        );
        self.csrf = Some(
            response
                .cookies()
                .find(|c| c.name() == "csrf_token")
                .expect("register sets csrf_token")
                .value()
                .to_string(),
        );
        response.json().await.expect("register body")
    }

    /// A request with the CSRF header when a token is known.
    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let builder = self.http.request(method, format!("{}{path}", self.url));
        match &self.csrf {
            Some(token) => builder.header("X-CSRF-Token", token),
            None => builder,
        }
    }

    /// POST JSON; returns status and body.
    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        status_and_body(self.request(reqwest::Method::POST, path).json(&body)).await
    }

    /// GET; returns status and body.
    pub async fn get(&self, path: &str) -> (u16, Value) {
        status_and_body(self.request(reqwest::Method::GET, path)).await
    }

    /// Creates a thread with a fresh UUID id.
    pub async fn create_thread(&self) -> String {
        let thread_id = uuid::Uuid::new_v4().to_string();
        let (status, body) = self
            .post(
                "/api/threads",
                json!({"thread_id": thread_id, "metadata": {}}),
            )
            .await;
        assert_eq!(status, 200, "create thread: {body}");
        thread_id
    }

    /// POSTs a body to a streaming route and reads the whole stream.
    pub async fn stream(&self, path: &str, body: Value) -> Transcript {
        let response = self
            .request(reqwest::Method::POST, path)
            .json(&body)
            .send()
            .await
            .expect("stream request");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let raw = response.text().await.expect("stream body");
        let frames = if status == 200 {
            parse_sse(&raw)
        } else {
            Vec::new()
        };
        Transcript {
            status,
            headers,
            raw,
            frames,
        }
    }

    /// Streams a run of `thread_id` from the whole request `body`.
    pub async fn stream_run(&self, thread_id: &str, body: Value) -> Transcript {
        self.stream(&format!("/api/threads/{thread_id}/runs/stream"), body)
            .await
    }

    /// Streams the scenario-shaped run request with `prompt` and `context`.
    pub async fn run_stream(&self, thread_id: &str, prompt: &str, context: Value) -> Transcript {
        self.stream_run(thread_id, run_body(prompt, context)).await
    }

    /// Streams the write/read scenario's prompt with its `ultra` context.
    pub async fn run_scenario(&self, thread_id: &str) -> Transcript {
        self.run_stream(thread_id, SCENARIO_PROMPT, ultra_context())
            .await
    }
}

/// The Layer 1 run body.
pub fn run_body(prompt: &str, context: Value) -> Value {
    json!({
        "assistant_id": "lead_agent",
        "input": {"messages": [{"role": "user", "content": prompt}]},
        "config": {"recursion_limit": 100},
        "context": context,
        "stream_mode": ["values"],
    })
}

/// The `ultra` context of the scenario.
pub fn ultra_context() -> Value {
    json!({"is_bootstrap": false, "mode": "ultra", "thinking_enabled": true, "is_plan_mode": true, "subagent_enabled": true})
}

/// Sends `request`; returns the status and the body as JSON (a body that is not JSON comes back
/// as a JSON string, so an assertion on it shows the text).
pub async fn status_and_body(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, body)
}
