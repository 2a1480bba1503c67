//! The wire driver: drives any DeerFlow-compatible gateway over HTTP the way the frontend does
//! (register → CSRF cookie → thread → `runs/stream`), with reqwest and eventsource-stream. It
//! knows no gateway types, only the wire contract.

use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{Value, json};

use replay_core::{Scenario, Shape, first_chars, shape_of, web_shape_of};

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

/// One SSE event as the client parsed it.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    /// The event name.
    pub event: String,
    /// The data, as sent.
    pub data: String,
    /// The id, when the frame carried one.
    pub id: Option<String>,
}

/// Everything one streamed run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct RunTranscript {
    /// The request body that started the run.
    pub request: Value,
    /// Parsed events, in order.
    pub events: Vec<SseEvent>,
    /// The raw response body, for failure reports.
    pub raw: String,
}

impl RunTranscript {
    /// The protocol shape: `(event name, sorted top-level keys or null)` per event.
    pub fn shapes(&self) -> Vec<Shape> {
        self.events
            .iter()
            .map(|event| shape_of(Some(&event.event), &event.data))
            .collect()
    }

    /// The web golden's reduction of every event ([`web_shape_of`]).
    pub fn web_shapes(&self) -> Vec<Shape> {
        self.events
            .iter()
            .map(|event| web_shape_of(Some(&event.event), &event.data))
            .collect()
    }

    /// The data of the last `values` event.
    pub fn final_values(&self) -> Option<Value> {
        self.events
            .iter()
            .rev()
            .find(|event| event.event == "values")
            .and_then(|event| serde_json::from_str(&event.data).ok())
    }

    /// The run id from the `metadata` event.
    pub fn run_id(&self) -> Option<String> {
        let metadata = self.events.iter().find(|event| event.event == "metadata")?;
        let data: Value = serde_json::from_str(&metadata.data).ok()?;
        data.get("run_id")?.as_str().map(String::from)
    }
}

/// The stream modes DeerFlow's web client asks for.
pub const WEB_STREAM_MODES: [&str; 4] = ["messages-tuple", "values", "updates", "custom"];

/// The run request of DeerFlow's web client, in its exact form: the prompt as a text block,
/// `recursion_limit: 1000`, the context the client builds for `mode` (`model_name`,
/// `reasoning_effort`, the mode's flags and the thread id), the four web stream modes,
/// `assistant_id` and `on_disconnect: "continue"`. The mode flags come from `context` (a
/// fixture's context), so a web run asks for the same agent behaviour as the recorded one.
pub fn web_run_request(prompt: &str, context: &Value, model_name: &str, thread_id: &str) -> Value {
    let flag = |key: &str| context.get(key).cloned().unwrap_or(Value::Bool(false));
    json!({
        "input": {"messages": [{"type": "human", "content": [{"type": "text", "text": prompt}],
                                "additional_kwargs": {}}]},
        "config": {"recursion_limit": 1000},
        "context": {
            "model_name": model_name,
            "mode": context.get("mode").cloned().unwrap_or(Value::Null),
            "reasoning_effort": "high",
            "thinking_enabled": flag("thinking_enabled"),
            "is_plan_mode": flag("is_plan_mode"),
            "subagent_enabled": flag("subagent_enabled"),
            "thread_id": thread_id,
        },
        "stream_mode": WEB_STREAM_MODES,
        "assistant_id": "lead_agent",
        "on_disconnect": "continue",
    })
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

async fn expect_status(
    route: &str,
    response: reqwest::Response,
    expected: u16,
) -> Result<reqwest::Response, DriverError> {
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
        let response =
            self.post(path)
                .json(body)
                .send()
                .await
                .map_err(|source| DriverError::Http {
                    route: route.clone(),
                    source,
                })?;
        expect_status(&route, response, expected).await
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

    /// Streams one run with the web client's request ([`web_run_request`]).
    pub async fn stream_web_run(
        &self,
        thread_id: &str,
        prompt: &str,
        context: &Value,
        model_name: &str,
    ) -> Result<RunTranscript, DriverError> {
        let request = web_run_request(prompt, context, model_name, thread_id);
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
        let raw = std::sync::Arc::new(parking_lot::Mutex::new(Vec::<u8>::new()));
        let tee = raw.clone();
        let bytes = response.bytes_stream().map(move |chunk| {
            if let Ok(bytes) = &chunk {
                tee.lock().extend_from_slice(bytes);
            }
            chunk
        });
        let mut stream = bytes.eventsource();
        let mut events = Vec::new();
        while let Some(event) = stream.next().await {
            let event = event.map_err(|err| DriverError::Stream {
                route: route.clone(),
                message: err.to_string(),
            })?;
            events.push(SseEvent {
                event: event.event,
                data: event.data,
                id: (!event.id.is_empty()).then_some(event.id),
            });
        }
        let raw = String::from_utf8_lossy(&raw.lock()).into_owned();
        Ok(RunTranscript {
            request,
            events,
            raw,
        })
    }

    /// Creates a thread and streams the scenario's prompt and each follow-up in it, one run after
    /// another, with the scenario's context (the scenario path of Layer 1 and of recording).
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
