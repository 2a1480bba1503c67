//! The middleware mechanism around the lead agent: an ordered list of [`Middleware`] values, each
//! with optional hooks that run at fixed points of the agent loop.
//!
//! Each hook that returns a non-empty [`StateUpdate`] is its own graph step and so its own
//! `values` frame (`docs/gateway-contract.md` §7.2). `wrap_model_call` hooks nest: the first
//! middleware in the list is the outermost wrapper.

use std::sync::Arc;

use async_trait::async_trait;

use crate::messages::Message;
use crate::models::{ChatModel, ModelError, ModelRequest};
use crate::runtime::RunContext;
use crate::runtime::state::{AgentState, StateUpdate};

/// An error that escapes the agent graph: it ends the run with an SSE `error` event.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{name}: {message}")]
pub struct GraphError {
    /// The error type name (`GraphRecursionError`, `SandboxError`, …).
    pub name: String,
    /// The error text.
    pub message: String,
}

impl GraphError {
    /// An error named `name`.
    pub fn new(name: impl Into<String>, message: impl Into<String>) -> GraphError {
        GraphError {
            name: name.into(),
            message: message.into(),
        }
    }
}

/// What a hook returns: an update (one frame) or nothing (a silent step).
pub type HookResult = Result<Option<StateUpdate>, GraphError>;

/// One middleware. Every hook has a default that does nothing.
#[async_trait]
pub trait Middleware: Send + Sync {
    /// The middleware's name; hook steps are the graph nodes `<name>.<hook>`.
    fn name(&self) -> &'static str;

    /// Runs once per run, before the first model call.
    async fn before_agent(&self, _state: &AgentState, _run: &RunContext) -> HookResult {
        Ok(None)
    }

    /// Wraps every lead-agent model call; call `next.call(request)` to continue inward.
    async fn wrap_model_call(
        &self,
        request: ModelRequest,
        run: &RunContext,
        next: ModelCall<'_>,
    ) -> Result<Message, ModelError> {
        let _ = run;
        next.call(request).await
    }

    /// Runs after each lead-agent model call, once its AI message is in state.
    async fn after_model(&self, _state: &AgentState, _run: &RunContext) -> HookResult {
        Ok(None)
    }

    /// Extra writes folded into a tool step's update (the step's frame carries both).
    async fn tool_step(&self, _state: &AgentState, _run: &RunContext) -> HookResult {
        Ok(None)
    }

    /// Runs once per run, after the loop ends.
    async fn after_agent(&self, _state: &AgentState, _run: &RunContext) -> HookResult {
        Ok(None)
    }
}

/// The rest of a model-call chain: the remaining wrappers, then the model. It is `Copy`, so a
/// retrying wrapper can call it more than once.
#[derive(Clone, Copy)]
pub struct ModelCall<'a> {
    wrappers: &'a [Arc<dyn Middleware>],
    model: &'a dyn ChatModel,
    run: &'a RunContext,
}

impl<'a> ModelCall<'a> {
    /// A chain of `wrappers` (outermost first) around `model`.
    pub fn new(
        wrappers: &'a [Arc<dyn Middleware>],
        model: &'a dyn ChatModel,
        run: &'a RunContext,
    ) -> ModelCall<'a> {
        ModelCall {
            wrappers,
            model,
            run,
        }
    }

    /// Passes the request to the next wrapper, or to the model when none is left.
    pub async fn call(self, request: ModelRequest) -> Result<Message, ModelError> {
        match self.wrappers.split_first() {
            Some((first, rest)) => {
                let next = ModelCall {
                    wrappers: rest,
                    model: self.model,
                    run: self.run,
                };
                first.wrap_model_call(request, self.run, next).await
            }
            None => self.run.call_model_raw(self.model, &request).await,
        }
    }
}
