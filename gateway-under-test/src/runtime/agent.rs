//! The lead agent: what it runs with ([`Agent`], built once per app) and its loop
//! ([`AgentLoop`], one per run).
//!
//! The loop applies the input, runs the before-agent hooks, then alternates model calls (with
//! their after-model hooks) and tool steps until the model answers without tool calls or the
//! recursion limit is hit, then runs the after-agent hooks. Every step that writes state is
//! checkpointed and published as one `values` frame (`docs/gateway-contract.md` §7.2–7.3).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::config::{Config, LlmRetryConfig, MessageLimitsConfig, TitleConfig, ToolLimitsConfig};
use crate::messages::{Message, MessageType};
use crate::models::{ChatModel, ModelRequest, ToolSpec};
use crate::runtime::RunContext;
use crate::runtime::message_limits;
use crate::runtime::middleware::{GraphError, Hook, Middleware, ModelCall, run_hook};
use crate::runtime::prompt::{PromptInputs, system_prompt};
use crate::runtime::state::{AgentState, StateUpdate};
use crate::store::{CheckpointRecord, MessageChanges};
use crate::tools::{ReadTracker, SandboxPaths, Tool, ToolContext, ToolOutput, tool_message};

/// The configuration the agent and its middlewares read: the sections they need, copied out
/// of the [`Config`] so that neither sees auth settings or API keys.
#[derive(Debug, Clone)]
pub struct AgentSettings {
    /// The gateway's home folder (thread sandboxes live under it).
    pub home: PathBuf,
    /// Where the sandbox sees the skills folder.
    pub skills_container_path: String,
    /// `[tool_limits]`.
    pub tool_limits: ToolLimitsConfig,
    /// `[title]`.
    pub title: TitleConfig,
    /// `[llm_retry]`.
    pub llm_retry: LlmRetryConfig,
    /// `[message_limits]`.
    pub message_limits: MessageLimitsConfig,
}

/// What the app binds to its lead agent.
pub struct AgentParts {
    /// The built models, by configured name.
    pub models: BTreeMap<String, Arc<dyn ChatModel>>,
    /// The bound tools, in configuration order.
    pub tools: Vec<Arc<dyn Tool>>,
    /// The middleware chain: built-ins, then registered ones.
    pub middlewares: Vec<Arc<dyn Middleware>>,
    /// Skill names found at start-up.
    pub skills: Vec<String>,
}

/// The lead agent of one gateway: its models, bound tools, middleware chain, prompt inputs and
/// settings, fixed when the app is built and shared by every run.
pub struct Agent {
    models: BTreeMap<String, Arc<dyn ChatModel>>,
    /// Configured names in configuration order, with `supports_thinking`.
    model_names: Vec<(String, bool)>,
    tools: Vec<Arc<dyn Tool>>,
    tool_specs: Vec<ToolSpec>,
    middlewares: Vec<Arc<dyn Middleware>>,
    skills: Vec<String>,
    reads: ReadTracker,
    settings: AgentSettings,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("models", &self.models.keys().collect::<Vec<_>>())
            .field(
                "tools",
                &self.tool_specs.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .field(
                "middlewares",
                &self
                    .middlewares
                    .iter()
                    .map(|m| m.name())
                    .collect::<Vec<_>>(),
            )
            .field("skills", &self.skills)
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// The agent for `config` with the models, tools and chain the app built from it.
    pub fn new(config: &Config, parts: AgentParts) -> Agent {
        // Specs are fixed once the agent is built; every model call sends them.
        let tool_specs = parts.tools.iter().map(|tool| tool.spec()).collect();
        Agent {
            models: parts.models,
            model_names: config
                .models
                .iter()
                .map(|model| (model.name.clone(), model.supports_thinking))
                .collect(),
            tools: parts.tools,
            tool_specs,
            middlewares: parts.middlewares,
            skills: parts.skills,
            reads: ReadTracker::default(),
            settings: AgentSettings {
                home: config.home.clone(),
                skills_container_path: config.skills.container_path.clone(),
                tool_limits: config.tool_limits.clone(),
                title: config.title.clone(),
                llm_retry: config.llm_retry.clone(),
                message_limits: config.message_limits.clone(),
            },
        }
    }

    /// The configured model called `name`.
    pub fn model(&self, name: &str) -> Option<Arc<dyn ChatModel>> {
        self.models.get(name).cloned()
    }

    /// The first configured model's name (the default for runs).
    pub fn default_model_name(&self) -> Option<&str> {
        self.model_names.first().map(|(name, _)| name.as_str())
    }

    /// Whether the configured model `name` accepts thinking options.
    pub fn supports_thinking(&self, name: &str) -> bool {
        self.model_names
            .iter()
            .any(|(model, thinking)| model == name && *thinking)
    }

    /// The bound tools, in configuration order.
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    /// The bound tools' specs, in configuration order.
    pub fn tool_specs(&self) -> &[ToolSpec] {
        &self.tool_specs
    }

    /// The bound tool called `name`.
    pub fn tool(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tool_specs
            .iter()
            .position(|spec| spec.name == name)
            .map(|index| self.tools[index].clone())
    }

    /// The middleware chain: built-ins, then registered ones.
    pub fn middlewares(&self) -> &[Arc<dyn Middleware>] {
        &self.middlewares
    }

    /// Skill names found at start-up.
    pub fn skills(&self) -> &[String] {
        &self.skills
    }

    /// The read-before-write memory of the file tools.
    pub fn read_tracker(&self) -> &ReadTracker {
        &self.reads
    }

    /// The configuration the agent reads.
    pub fn settings(&self) -> &AgentSettings {
        &self.settings
    }

    /// The sandbox folders of `user_id`'s thread `thread_id`.
    pub fn sandbox_paths(&self, user_id: &str, thread_id: &str) -> SandboxPaths {
        SandboxPaths::for_thread(&self.settings.home, Some(user_id), thread_id)
    }
}

/// The pseudo-node that writes the run's input (the checkpoint's `writes` key).
const INPUT_NODE: &str = "__input__";

/// How the loop ended.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentOutcome {
    /// The final state.
    pub state: AgentState,
    /// An error that escaped the graph (sent as an SSE `error` event).
    pub error: Option<GraphError>,
    /// `error_detail` of a fallback message produced by the LLM error middleware in this run.
    pub fallback_error: Option<String>,
    /// Why the loop stopped, when it was not a final answer.
    pub stop_reason: Option<String>,
}

/// Drives one run over the thread's state.
pub struct AgentLoop<'a> {
    run: &'a RunContext,
    chain: Vec<Arc<dyn Middleware>>,
    state: AgentState,
    steps: u32,
    parent_checkpoint: Option<String>,
    fallback_error: Option<String>,
}

impl<'a> AgentLoop<'a> {
    /// A loop starting from `state`, whose latest checkpoint is `parent_checkpoint`.
    pub fn new(run: &'a RunContext, state: AgentState, parent_checkpoint: Option<String>) -> Self {
        AgentLoop {
            run,
            chain: run
                .agent
                .middlewares()
                .iter()
                .filter(|middleware| middleware.applies_to(&run.flags))
                .cloned()
                .collect(),
            state,
            steps: 0,
            parent_checkpoint,
            fallback_error: None,
        }
    }

    /// Runs the loop with the run's input messages.
    pub async fn run(mut self, input: Vec<Message>) -> AgentOutcome {
        // The thread's messages are known to the client; each step then marks only the messages
        // it changed (see `commit`), so a step's cost does not grow with the conversation.
        self.run.mark_messages_sent(&self.state.messages);
        let result = self.drive(input).await;
        let (error, stop_reason) = match result {
            Ok(stop_reason) => (None, stop_reason),
            Err(error) => {
                let reason =
                    (error.name == "GraphRecursionError").then(|| "recursion_limit".into());
                (Some(error), reason)
            }
        };
        AgentOutcome {
            state: self.state,
            error,
            fallback_error: self.fallback_error,
            stop_reason,
        }
    }

    async fn drive(&mut self, input: Vec<Message>) -> Result<Option<String>, GraphError> {
        if !input.is_empty() {
            self.commit(INPUT_NODE, StateUpdate::messages(input))
                .await?;
        }
        self.run_hooks(Hook::BeforeAgent).await?;
        loop {
            self.run_hooks(Hook::BeforeModel).await?;
            self.enter_step()?;
            let answer = self.call_model().await?;
            self.commit("model", StateUpdate::messages(vec![answer]))
                .await?;
            self.run_hooks(Hook::AfterModel).await?;
            // After the after-model hooks, which may strip the answer's tool calls (loop
            // detection, the finish-reason checks).
            let calls_tools = self
                .state
                .last_ai()
                .is_some_and(|message| !message.tool_calls.is_empty());
            if !calls_tools {
                break;
            }
            self.enter_step()?;
            self.tool_step().await?;
        }
        self.run_hooks(Hook::AfterAgent).await?;
        Ok(None)
    }

    /// Runs every `hook` node of the chain, in list order or, for `after_*` hooks, in reverse
    /// (`docs/gateway-contract.md` §7.3).
    async fn run_hooks(&mut self, hook: Hook) -> Result<(), GraphError> {
        let mut nodes: Vec<Arc<dyn Middleware>> = self
            .chain
            .iter()
            .filter(|middleware| middleware.hooks().contains(&hook))
            .cloned()
            .collect();
        if hook.runs_in_reverse() {
            nodes.reverse();
        }
        for middleware in nodes {
            self.enter_step()?;
            let update = run_hook(middleware.as_ref(), hook, &self.state, self.run).await?;
            self.commit_hook(middleware.name(), hook.as_str(), update)
                .await?;
        }
        Ok(())
    }

    fn enter_step(&mut self) -> Result<(), GraphError> {
        self.steps += 1;
        if self.steps > self.run.recursion_limit {
            return Err(GraphError::new(
                "GraphRecursionError",
                format!(
                    "Recursion limit of {} reached without hitting a stop condition. You can increase the limit by setting the `recursion_limit` config key.",
                    self.run.recursion_limit
                ),
            ));
        }
        Ok(())
    }

    async fn call_model(&mut self) -> Result<Message, GraphError> {
        let agent = &self.run.agent;
        let tools = agent.tool_specs().to_vec();
        let prompt = system_prompt(&PromptInputs {
            tools: &tools,
            flags: &self.run.flags,
            skills: agent.skills(),
            skills_container_path: &agent.settings().skills_container_path,
        });
        // The conversation is shared with the request, not copied (see `AgentState::messages`).
        let mut messages = Vec::with_capacity(self.state.messages.len() + 1);
        messages.push(Arc::new(Message::system(prompt)));
        messages.extend(self.state.messages.iter().cloned());
        let request = ModelRequest {
            messages,
            tools,
            metadata: self.run.call_metadata(&[], None),
            options: self.run.call_options(),
        };
        let chain = self.chain.clone();
        let mut answer = ModelCall::new(&chain, self.run.model.as_ref(), self.run)
            .call(request)
            .await
            .map_err(|err| GraphError::new(err.error_type.clone(), err.message.clone()))?;
        if answer.kind != MessageType::Ai {
            return Err(GraphError::new(
                "InvalidResponseError",
                "the model did not answer with an AI message",
            ));
        }
        if answer.id.is_none() {
            answer.id = Some(model_wire::chat_completions::new_run_id());
        }
        if let Some(detail) = answer
            .additional_kwargs
            .get("deerflow_error_fallback")
            .filter(|flag| crate::messages::is_truthy(flag))
            .and(answer.additional_kwargs.get("error_detail"))
        {
            self.fallback_error = Some(detail.as_str().unwrap_or_default().to_string());
        }
        Ok(answer)
    }

    async fn tool_step(&mut self) -> Result<(), GraphError> {
        let calls = self
            .state
            .last_ai()
            .map(|message| message.tool_calls.clone())
            .unwrap_or_default();
        let mut update = StateUpdate::default();
        for middleware in self.chain.clone() {
            if let Some(extra) = middleware.tool_step(&self.state, self.run).await? {
                update.merge(extra);
            }
        }
        let agent = &self.run.agent;
        let context = ToolContext {
            paths: &self.run.paths,
            limits: &agent.settings().tool_limits,
            reads: agent.read_tracker(),
        };
        // Tool results from here on are journaled when the step commits, once they have ids.
        let journal_from = update.messages.len();
        let limits = &agent.settings().message_limits;
        let mut budget = message_limits::ToolStepBudget::new(limits, calls.len());
        for call in calls {
            let tool = agent.tool(&call.name);
            let (output, status) = match (tool, budget.refusal(&call)) {
                (_, Some(refused)) => (ToolOutput::text(refused), "error"),
                (Some(tool), None) => budget.result(tool.run(&call.args, context).await),
                (None, None) => (
                    ToolOutput::text(format!(
                        "Error: {} is not a valid tool, try one of the available tools.",
                        call.name
                    )),
                    "error",
                ),
            };
            update
                .messages
                .push(tool_message(output, &call.name, &call.id, status));
        }
        self.commit_journaled("tools", update, Some(journal_from))
            .await
    }

    /// A hook node's step: its update committed, or, when it wrote nothing, only its `updates`
    /// frame `{"<Middleware>.<hook>": null}` (no checkpoint, no `values` frame), as LangGraph
    /// streams a node that returned nothing.
    async fn commit_hook(
        &mut self,
        middleware: &str,
        hook: &str,
        update: Option<StateUpdate>,
    ) -> Result<(), GraphError> {
        let node = format!("{middleware}.{hook}");
        match update {
            Some(update) if !update.is_empty() => self.commit(&node, update).await,
            _ => {
                if self.run.modes.updates {
                    let mut frame = serde_json::Map::new();
                    frame.insert(node, Value::Null);
                    self.run.stream.publish("updates", &Value::Object(frame));
                }
                Ok(())
            }
        }
    }

    /// Applies one step's writes, checkpoints the state and publishes its frames in LangGraph's
    /// order: the node's new messages (`messages`), its writes (`updates`, named after the
    /// node), then the state (`values`). The input is not a node: it gets a `values` frame only.
    async fn commit(&mut self, node: &str, update: StateUpdate) -> Result<(), GraphError> {
        self.commit_journaled(node, update, None).await
    }

    /// [`AgentLoop::commit`] that also journals the update's messages from `journal_from` on as
    /// `llm.tool.result` rows, as the tool node wrote them (without ids) but naming the ids the
    /// state gives them, so the journal and the state share one stored copy.
    async fn commit_journaled(
        &mut self,
        node: &str,
        mut update: StateUpdate,
        journal_from: Option<usize>,
    ) -> Result<(), GraphError> {
        let writes = update.to_json();
        let is_input = node == INPUT_NODE;
        let unnamed: Vec<bool> = update.messages.iter().map(|m| m.id.is_none()).collect();
        if !is_input {
            // The reducer would give these ids anyway; giving them first lets the `messages`
            // frame and the journal carry the id the state holds.
            for message in update.messages.iter_mut().filter(|m| m.id.is_none()) {
                message.id = Some(uuid::Uuid::new_v4().to_string());
            }
        }
        if let Some(from) = journal_from {
            let rows = update.messages[from..]
                .iter()
                .zip(&unnamed[from..])
                .map(|(message, unnamed)| {
                    let mut shown = message.to_dump();
                    if *unnamed {
                        shown["id"] = Value::Null;
                    }
                    let state_id = message.id.clone().filter(|_| *unnamed);
                    ("llm.tool.result", "message", shown, json!({}), state_id)
                })
                .collect();
            self.run.journal_messages(rows).await;
        }
        if self.run.modes.messages && !is_input {
            self.run.publish_new_messages(node, &update.messages);
        }
        // Only what the step added or replaced is serialised, stored and marked sent: the rest
        // of the conversation is the parent checkpoint's and already known to the client.
        let positions = self.state.apply_in_order(update);
        // The checkpoint's `writes` name these stored messages instead of copying them.
        let written = positions.iter().copied().zip(unnamed).collect();
        let mut changed = positions;
        changed.sort_unstable();
        changed.dedup();
        let changed_messages: Vec<&Message> = changed
            .iter()
            .map(|&index| &*self.state.messages[index])
            .collect();
        self.run.mark_messages_sent_by_ref(&changed_messages);
        let changes = MessageChanges {
            len: self.state.messages.len(),
            changed: changed
                .iter()
                .zip(&changed_messages)
                .map(|(&index, message)| (index, message.to_dump()))
                .collect(),
            writes: written,
        };
        let checkpoint_id = uuid::Uuid::new_v4().to_string();
        let checkpoint = CheckpointRecord {
            thread_id: self.run.thread_id.clone(),
            checkpoint_id: checkpoint_id.clone(),
            parent_checkpoint_id: self.parent_checkpoint.clone(),
            step: i64::from(self.steps),
            values: self.state.to_values_without_messages(),
            metadata: json!({
                "source": if is_input { "input" } else { "loop" },
                "step": self.steps,
                "writes": { node: writes.clone() },
                "parents": {},
                "run_id": self.run.run_id,
                "thread_id": self.run.thread_id,
            }),
            created_at: crate::clock::now_iso(),
        };
        self.run
            .store()
            .put_checkpoint_changes(checkpoint, changes)
            .await
            .map_err(|err| GraphError::new("CheckpointError", err.to_string()))?;
        self.parent_checkpoint = Some(checkpoint_id);
        if self.run.modes.updates && !is_input {
            let mut frame = serde_json::Map::new();
            frame.insert(node.to_string(), writes);
            self.run.stream.publish("updates", &Value::Object(frame));
        }
        if self.run.modes.values {
            // By contract the whole state, at every step (docs/gateway-contract.md §7.2).
            self.run.stream.publish("values", &self.state.to_values());
        }
        Ok(())
    }
}
