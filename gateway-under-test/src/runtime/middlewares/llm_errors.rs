//! LLM error handling: classifies model failures, retries the retryable ones with
//! decorrelated-jitter backoff (emitting `llm_retry` custom events), and on final failure returns a
//! fallback AI message instead of raising, so the run ends with status `error` but no SSE `error`.

use std::time::Duration;

use async_trait::async_trait;
use rand::Rng;
use serde_json::json;

use crate::messages::Message;
use crate::models::{ErrorClass, ModelError, ModelRequest};
use crate::runtime::RunContext;
use crate::runtime::middleware::{Hook, Middleware, ModelCall};

/// Wraps every lead-agent model call (`docs/gateway-contract.md` §11.2).
#[derive(Debug, Default)]
pub struct LlmErrorHandlingMiddleware;

/// The fallback AI message for a final failure.
pub fn fallback_message(error: &ModelError) -> Message {
    let class = error.class();
    let content = match class {
        ErrorClass::Generic => format!("LLM request failed: {}", error.message),
        ErrorClass::Quota => "The model provider refused the request because the account's quota or billing limit was reached. Please check the provider account, then try again.".to_string(),
        ErrorClass::Auth => "The model provider rejected the gateway's credentials. Please check the model's API key configuration.".to_string(),
        ErrorClass::BurstRate | ErrorClass::Busy => "The model provider is busy or rate-limiting requests right now. Please wait a moment and try again.".to_string(),
        ErrorClass::Transient => "The model provider could not be reached or failed temporarily. Please try again in a moment.".to_string(),
    };
    let mut message = Message::ai(content, Vec::new());
    message
        .additional_kwargs
        .insert("deerflow_error_fallback".into(), json!(true));
    message
        .additional_kwargs
        .insert("error_type".into(), json!(error.error_type));
    message
        .additional_kwargs
        .insert("error_reason".into(), json!(class.as_str()));
    message
        .additional_kwargs
        .insert("error_detail".into(), json!(error.message));
    message
}

fn max_attempts(class: ErrorClass, run: &RunContext) -> u32 {
    let retry = &run.agent.settings().llm_retry;
    match class {
        ErrorClass::Transient | ErrorClass::Busy => retry.max_attempts,
        ErrorClass::BurstRate => retry.burst_max_attempts,
        ErrorClass::Quota | ErrorClass::Auth | ErrorClass::Generic => 1,
    }
}

/// Decorrelated jitter: a random wait between the base and three times the previous wait,
/// capped.
fn next_wait(previous_ms: u64, base_ms: u64, cap_ms: u64) -> u64 {
    let upper = previous_ms.saturating_mul(3).max(base_ms + 1);
    rand::thread_rng().gen_range(base_ms..upper).min(cap_ms)
}

#[async_trait]
impl Middleware for LlmErrorHandlingMiddleware {
    fn name(&self) -> &'static str {
        "LlmErrorHandlingMiddleware"
    }

    /// No node: it only wraps model calls.
    fn hooks(&self) -> &'static [Hook] {
        &[]
    }

    async fn wrap_model_call(
        &self,
        request: ModelRequest,
        run: &RunContext,
        next: ModelCall<'_>,
    ) -> Result<Message, ModelError> {
        let retry = &run.agent.settings().llm_retry;
        let mut attempt = 1;
        let mut wait_ms = retry.base_delay_ms;
        loop {
            let error = match next.call(request.clone()).await {
                Ok(message) => return Ok(message),
                Err(error) => error,
            };
            let class = error.class();
            let allowed = max_attempts(class, run);
            if attempt >= allowed {
                tracing::warn!(run_id = %run.run_id, class = class.as_str(), "model call failed: {error}");
                return Ok(fallback_message(&error));
            }
            wait_ms = match error.retry_after {
                Some(after) => after.as_millis() as u64,
                None => next_wait(wait_ms, retry.base_delay_ms, retry.max_delay_ms),
            };
            run.emit_custom(json!({
                "type": "llm_retry",
                "attempt": attempt,
                "max_attempts": allowed,
                "wait_ms": wait_ms,
                "reason": class.as_str(),
                "message": error.message,
            }));
            tokio::time::sleep(Duration::from_millis(wait_ms)).await;
            attempt += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fallback_message_carries_the_marker_and_the_detail() {
        let error = ModelError::new("ReplayMiss", "replay miss: no recorded output");
        let message = fallback_message(&error);
        assert_eq!(
            message.text(),
            "LLM request failed: replay miss: no recorded output"
        );
        assert_eq!(
            message.additional_kwargs["deerflow_error_fallback"],
            json!(true)
        );
        assert_eq!(message.additional_kwargs["error_type"], json!("ReplayMiss"));
        assert_eq!(message.additional_kwargs["error_reason"], json!("generic"));
        assert!(message.tool_calls.is_empty());
    }

    #[test]
    fn backoff_stays_between_base_and_cap() {
        let mut wait = 10;
        for _ in 0..50 {
            wait = next_wait(wait, 10, 200);
            assert!((10..=200).contains(&wait), "{wait}");
        }
    }
}
