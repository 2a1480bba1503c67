//! DeerFlow's dialect: the session its frontend opens (register, which sets the session cookie and
//! the `csrf_token` cookie echoed as `X-CSRF-Token`), threads and `runs/stream` below `/api`, the
//! run request with the fixture's context and `assistant_id: "lead_agent"`, and its framing
//! (`metadata` first, `end` last).

use serde_json::{Value, json};

use replay_core::{Scenario, Turn};

use super::{
    DRIVER_PASSWORD, Dialect, Driver, DriverError, FramingRule, RunRequest, StreamModes,
    create_thread, ui_mode, web_run_request,
};

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
        format!("{}/threads", self.base)
    }
}

/// Registers `e2e-<8 hex>@example.com` at `<base>/v1/auth/register` and keeps the `csrf_token`
/// cookie.
pub async fn register(driver: &mut Driver, base: &str) -> Result<(), DriverError> {
    let email = format!(
        "e2e-{}@example.com",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let body = json!({"email": email, "password": DRIVER_PASSWORD});
    let path = format!("{base}/v1/auth/register");
    let response = driver.post_json(&path, &body, 201).await?;
    let token = response
        .cookies()
        .find(|cookie| cookie.name() == "csrf_token")
        .map(|cookie| cookie.value().to_string())
        .ok_or(DriverError::MissingCsrfCookie)?;
    driver.set_csrf(token);
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

#[async_trait::async_trait]
impl Dialect for DeerFlow {
    async fn open(&mut self, driver: &mut Driver) -> Result<(), DriverError> {
        register(driver, &self.base).await
    }

    async fn begin(&mut self, driver: &Driver, _scenario: &Scenario) -> Result<(), DriverError> {
        self.thread_id = create_thread(driver, &self.threads_path()).await?;
        Ok(())
    }

    fn run_request(
        &self,
        scenario: &Scenario,
        prompt: &str,
        _recorded: &[Turn],
        modes: StreamModes,
    ) -> Result<RunRequest, DriverError> {
        let body = match modes {
            StreamModes::Values => values_run_request(prompt, &scenario.context),
            StreamModes::Web => web_run_request(prompt, ui_mode(scenario)?, None, &self.thread_id),
        };
        Ok(RunRequest {
            path: format!("{}/{}/runs/stream", self.threads_path(), self.thread_id),
            body,
            headers: Vec::new(),
        })
    }

    fn framing_rule(&self) -> FramingRule {
        FramingRule::MetadataThenEnd
    }
}
