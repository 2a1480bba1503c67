//! The middleware mechanism around the lead agent: an ordered list of [`Middleware`] values, each
//! with optional hooks that run at fixed points of the agent loop.
//!
//! Each node hook a middleware declares ([`Middleware::hooks`]) is its own graph node, run as
//! LangChain's agent factory runs them: `before_agent` and `before_model` hooks in list order,
//! `after_model` and `after_agent` hooks in reverse list order (the last middleware sees the
//! model's answer first). Each node's run is streamed as an `updates` frame, `null` when it wrote
//! nothing; a non-empty [`StateUpdate`] is also a `values` frame (`docs/gateway-contract.md`
//! §5.4, §7.2). `wrap_model_call` hooks nest: the first middleware in the list is the outermost
//! wrapper. `tool_step` writes are folded into the `tools` node, not a node of their own.

use std::sync::Arc;

use async_trait::async_trait;

use crate::messages::Message;
use crate::models::{ChatModel, ModelError, ModelRequest};
use crate::runtime::state::{AgentState, StateUpdate};
use crate::runtime::{RunContext, RunFlags};

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

/// A hook that is a graph node of its own, `<Middleware>.<hook>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// Once per run, before the first model call.
    BeforeAgent,
    /// Before each lead-agent model call.
    BeforeModel,
    /// After each lead-agent model call, once its AI message is in state.
    AfterModel,
    /// Once per run, after the loop ends.
    AfterAgent,
}

impl Hook {
    /// Every node hook.
    pub const ALL: [Hook; 4] = [
        Hook::BeforeAgent,
        Hook::BeforeModel,
        Hook::AfterModel,
        Hook::AfterAgent,
    ];

    /// The hook's name in a node name.
    pub fn as_str(self) -> &'static str {
        match self {
            Hook::BeforeAgent => "before_agent",
            Hook::BeforeModel => "before_model",
            Hook::AfterModel => "after_model",
            Hook::AfterAgent => "after_agent",
        }
    }

    /// Whether the hooks of this kind run in reverse list order (LangChain wires `after_*`
    /// edges from the last middleware to the first).
    pub fn runs_in_reverse(self) -> bool {
        matches!(self, Hook::AfterModel | Hook::AfterAgent)
    }
}

/// One middleware. Every hook has a default that does nothing.
#[async_trait]
pub trait Middleware: Send + Sync {
    /// The middleware's name; hook steps are the graph nodes `<name>.<hook>`.
    fn name(&self) -> &'static str;

    /// The node hooks this middleware has: each runs as a node of its own, streamed even when it
    /// writes nothing, and counts towards the recursion limit. The default is every hook, so a
    /// registered middleware that does not say still has each of its hooks run.
    fn hooks(&self) -> &'static [Hook] {
        &Hook::ALL
    }

    /// Whether the middleware is in a run's chain: DeerFlow builds the lead agent's chain per
    /// run, with some middlewares only in some modes (plan mode, subagents).
    fn applies_to(&self, _flags: &RunFlags) -> bool {
        true
    }

    /// Runs once per run, before the first model call.
    async fn before_agent(&self, _state: &AgentState, _run: &RunContext) -> HookResult {
        Ok(None)
    }

    /// Runs before each lead-agent model call.
    async fn before_model(&self, _state: &AgentState, _run: &RunContext) -> HookResult {
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

/// Runs `hook` of `middleware`.
pub async fn run_hook(
    middleware: &dyn Middleware,
    hook: Hook,
    state: &AgentState,
    run: &RunContext,
) -> HookResult {
    match hook {
        Hook::BeforeAgent => middleware.before_agent(state, run).await,
        Hook::BeforeModel => middleware.before_model(state, run).await,
        Hook::AfterModel => middleware.after_model(state, run).await,
        Hook::AfterAgent => middleware.after_agent(state, run).await,
    }
}
