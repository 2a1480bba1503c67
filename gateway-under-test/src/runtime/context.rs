//! What one run carries through the agent loop and its middlewares: ids, the run-context flags
//! (`flags.rs`),
//! the sandbox folders, the event stream, and journaling of model calls.
//!
//! A [`RunContext`] reaches the lead [`Agent`] (models, tools, agent settings) and writes its own
//! run's journal rows; it does not reach the rest of the app (auth keys, lockout, users).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::StreamExt;
use model_wire::Event;
use serde_json::{Value, json};

use crate::lock::unpoisoned;
use crate::messages::{Message, ToolCall};
use crate::models::{
    CallMetadata, CallOptions, ChatModel, ModelError, ModelRequest, StreamEvent, StreamFold,
};
use crate::runtime::agent::Agent;
use crate::runtime::flags::RunFlags;
use crate::runtime::message_limits;
use crate::runtime::stream::RunStream;
use crate::store::{NewEvent, Store};
use crate::tools::SandboxPaths;

/// Which stream modes the client asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamModes {
    /// `values`: the full state after each write step.
    pub values: bool,
    /// `updates`: each step's writes, by node.
    pub updates: bool,
    /// `messages-tuple`: streamed message chunks (sent as event `messages`).
    pub messages: bool,
    /// `custom`: custom payloads such as `llm_retry`.
    pub custom: bool,
}

impl StreamModes {
    /// From validated mode names.
    pub fn from_names(names: &[String]) -> StreamModes {
        let has = |name: &str| names.iter().any(|n| n == name);
        StreamModes {
            values: has("values"),
            updates: has("updates"),
            messages: has("messages-tuple") || has("messages"),
            custom: has("custom"),
        }
    }
}

/// One run's context.
pub struct RunContext {
    /// The lead agent the run executes.
    pub agent: Arc<Agent>,
    /// Checkpoints and journal rows go here; private so that middlewares cannot read users.
    store: Store,
    /// The run id.
    pub run_id: String,
    /// The thread id.
    pub thread_id: String,
    /// The user the run belongs to.
    pub user_id: String,
    /// The run-context flags.
    pub flags: RunFlags,
    /// The thread's sandbox folders.
    pub paths: SandboxPaths,
    /// The lead agent's model and its configured name.
    pub model: Arc<dyn ChatModel>,
    /// The configured name of [`RunContext::model`].
    pub model_name: String,
    /// Where frames go.
    pub stream: Arc<RunStream>,
    /// The stream modes requested.
    pub modes: StreamModes,
    /// The recursion limit (graph steps).
    pub recursion_limit: u32,
    llm_calls: AtomicU32,
    human_input_journaled: AtomicBool,
    usage: Mutex<UsageTotals>,
    /// Ids of the messages already on the `messages` stream (streamed or a node's input), so
    /// each message is sent once, as LangGraph deduplicates.
    sent_messages: Mutex<HashSet<String>>,
}

/// Token totals of one run, by caller kind (the run record's counters).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsageTotals {
    /// Prompt tokens.
    pub input_tokens: i64,
    /// Completion tokens.
    pub output_tokens: i64,
    /// All tokens.
    pub total_tokens: i64,
    /// Tokens of lead-agent calls.
    pub lead_agent_tokens: i64,
    /// Tokens of subagent calls.
    pub subagent_tokens: i64,
    /// Tokens of middleware calls (titles).
    pub middleware_tokens: i64,
}

impl UsageTotals {
    fn add(&mut self, caller: &str, usage: Option<&Value>) {
        let Some(usage) = usage else { return };
        let field = |name: &str| usage.get(name).and_then(Value::as_i64).unwrap_or(0);
        let total = field("total_tokens");
        self.input_tokens += field("input_tokens");
        self.output_tokens += field("output_tokens");
        self.total_tokens += total;
        if caller.starts_with("middleware:") {
            self.middleware_tokens += total;
        } else if caller.starts_with("subagent:") {
            self.subagent_tokens += total;
        } else {
            self.lead_agent_tokens += total;
        }
    }
}

impl std::fmt::Debug for RunContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunContext")
            .field("run_id", &self.run_id)
            .field("thread_id", &self.thread_id)
            .field("user_id", &self.user_id)
            .field("model_name", &self.model_name)
            .finish_non_exhaustive()
    }
}

/// The fields of a [`RunContext`] that the caller chooses.
#[derive(Debug)]
pub struct RunContextParts {
    /// The run id.
    pub run_id: String,
    /// The thread id.
    pub thread_id: String,
    /// The user the run belongs to.
    pub user_id: String,
    /// The run-context flags.
    pub flags: RunFlags,
    /// The lead model's configured name.
    pub model_name: String,
    /// The requested stream modes.
    pub modes: StreamModes,
    /// The recursion limit.
    pub recursion_limit: u32,
}

impl RunContext {
    /// Builds the context; `model` is the agent's model called `parts.model_name`.
    pub fn new(
        agent: Arc<Agent>,
        store: Store,
        parts: RunContextParts,
        model: Arc<dyn ChatModel>,
        stream: Arc<RunStream>,
    ) -> RunContext {
        let paths = agent.sandbox_paths(&parts.user_id, &parts.thread_id);
        RunContext {
            agent,
            store,
            run_id: parts.run_id,
            thread_id: parts.thread_id,
            user_id: parts.user_id,
            flags: parts.flags,
            paths,
            model,
            model_name: parts.model_name,
            stream,
            modes: parts.modes,
            recursion_limit: parts.recursion_limit,
            llm_calls: AtomicU32::new(0),
            human_input_journaled: AtomicBool::new(false),
            usage: Mutex::new(UsageTotals::default()),
            sent_messages: Mutex::new(HashSet::new()),
        }
    }

    /// Call options for the lead agent from the flags and the model's capabilities.
    pub fn call_options(&self) -> CallOptions {
        let supports_thinking = self.agent.supports_thinking(&self.model_name);
        CallOptions {
            thinking_enabled: self.flags.thinking_enabled() && supports_thinking,
            reasoning_effort: self.flags.reasoning_effort(),
        }
    }

    /// Metadata for a call made on behalf of this run.
    pub fn call_metadata(&self, tags: &[&str], run_name: Option<&str>) -> CallMetadata {
        CallMetadata {
            tags: tags.iter().map(|tag| tag.to_string()).collect(),
            run_name: run_name.map(String::from),
            run_id: Some(self.run_id.clone()),
            thread_id: Some(self.thread_id.clone()),
        }
    }

    /// Emits a `custom` frame when the client asked for that mode.
    pub fn emit_custom(&self, payload: Value) {
        if self.modes.custom {
            self.stream.publish("custom", &payload);
        }
    }

    /// Appends journal rows for this run.
    pub async fn journal(&self, rows: Vec<(&str, &str, Value, Value)>) {
        let rows = rows
            .into_iter()
            .map(|(event_type, category, content, metadata)| {
                (event_type, category, content, metadata, None)
            })
            .collect();
        self.journal_messages(rows).await;
    }

    /// [`RunContext::journal`] with, per row, the id the state holds a message under when its
    /// dump shows none ([`NewEvent::message_id`]).
    pub async fn journal_messages(&self, rows: Vec<(&str, &str, Value, Value, Option<String>)>) {
        let now = crate::clock::now_iso();
        let events = rows
            .into_iter()
            .map(
                |(event_type, category, content, metadata, message_id)| NewEvent {
                    run_id: self.run_id.clone(),
                    event_type: event_type.into(),
                    category: category.into(),
                    content,
                    message_id,
                    metadata,
                    created_at: now.clone(),
                },
            )
            .collect();
        if let Err(err) = self.store.append_events(&self.thread_id, events).await {
            tracing::warn!(run_id = %self.run_id, "journal write failed: {err}");
        }
    }

    /// Calls `model` without wrappers: streaming when the client asked for message chunks,
    /// otherwise a plain call. Journals `llm.human.input` (first lead-agent call) and
    /// `llm.ai.response` rows.
    pub async fn call_model_raw(
        &self,
        model: &dyn ChatModel,
        request: &ModelRequest,
    ) -> Result<Message, ModelError> {
        let caller = request.metadata.journal_caller();
        if caller == "lead_agent"
            && !self.human_input_journaled.swap(true, Ordering::SeqCst)
            && let Some(human) = request
                .messages
                .iter()
                .rev()
                .find(|m| m.kind == crate::messages::MessageType::Human && !m.is_hidden())
        {
            let mut restored = Message::clone(human);
            if let Some(original) = restored.additional_kwargs.remove("original_user_content") {
                restored.content = original;
            }
            self.journal(vec![(
                "llm.human.input",
                "message",
                restored.to_dump(),
                json!({"caller": "lead_agent"}),
            )])
            .await;
        }
        let started = Instant::now();
        let answer_limit = self.agent.settings().message_limits.model_answer_bytes;
        // A `nostream` call (the title model) is never streamed, as in LangGraph.
        let streamed =
            self.modes.messages && !request.metadata.tags.iter().any(|t| t == "nostream");
        let mut message = if streamed {
            self.stream_model(model, request, answer_limit).await?
        } else {
            model.invoke(request).await?
        };
        message_limits::check_answer(&message, answer_limit)?;
        // Named before it is journaled, as LangChain names a generation before its callbacks
        // see it: the journal row and the state then hold the same message, stored once.
        if message.id.is_none() {
            message.id = Some(model_wire::chat_completions::new_run_id());
        }
        let index = self.llm_calls.fetch_add(1, Ordering::SeqCst);
        unpoisoned(&self.usage).add(&caller, message.usage_metadata.as_ref());
        self.journal(vec![(
            "llm.ai.response",
            "message",
            message.to_dump(),
            json!({
                "caller": caller,
                "usage": message.usage_metadata.clone().unwrap_or(Value::Null),
                "latency_ms": started.elapsed().as_millis() as u64,
                "llm_call_index": index,
            }),
        )])
        .await;
        Ok(message)
    }

    /// The store the run checkpoints into.
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// Token totals so far.
    pub fn usage(&self) -> UsageTotals {
        *unpoisoned(&self.usage)
    }

    /// How many model calls completed in this run.
    pub fn llm_call_count(&self) -> u32 {
        self.llm_calls.load(Ordering::SeqCst)
    }

    /// The `messages` tuple metadata of a frame written by graph node `node`.
    fn tuple_metadata(&self, node: &str, tags: &[String]) -> Value {
        json!({
            "run_id": self.run_id,
            "thread_id": self.thread_id,
            "langgraph_node": node,
            "tags": tags,
        })
    }

    fn sent(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        unpoisoned(&self.sent_messages)
    }

    /// Marks `messages` as already known to the client (a node's input), so they are not sent
    /// again when a node rewrites them under the same id.
    pub fn mark_messages_sent(&self, messages: &[Arc<Message>]) {
        if !self.modes.messages {
            return;
        }
        let mut sent = self.sent();
        sent.extend(messages.iter().filter_map(|m| m.id.clone()));
    }

    /// [`RunContext::mark_messages_sent`] for the messages a step changed.
    pub fn mark_messages_sent_by_ref(&self, messages: &[&Message]) {
        if !self.modes.messages {
            return;
        }
        let mut sent = self.sent();
        sent.extend(messages.iter().filter_map(|m| m.id.clone()));
    }

    /// Publishes `[message, metadata]` on the `messages` stream for each of `messages` (a
    /// node's output) not sent before: a tool result, the user's visible copy, an AI message
    /// that was not streamed (the error fallback). Messages must carry their ids.
    pub fn publish_new_messages(&self, node: &str, messages: &[Message]) {
        if !self.modes.messages {
            return;
        }
        let metadata = self.tuple_metadata(node, &[]);
        for message in messages {
            let fresh = match &message.id {
                Some(id) => self.sent().insert(id.clone()),
                None => true,
            };
            if fresh {
                self.stream
                    .publish("messages", &json!([message.to_dump(), metadata]));
            }
        }
    }

    /// Streams a model call as LangGraph's `messages` mode does: a chunk per text fragment,
    /// one chunk with the `tool_call_chunks` of the calls, then a terminator chunk with
    /// `chunk_position: "last"`. Every chunk and the final message share one id: the model's
    /// own id when it gave one before any chunk went out (a replayed answer keeps its recorded
    /// id), otherwise a fresh `lc_run--<uuid>`. The latest text fragment is held back until the
    /// next one or the end, so a one-chunk answer is sent under its final id.
    async fn stream_model(
        &self,
        model: &dyn ChatModel,
        request: &ModelRequest,
        answer_limit: usize,
    ) -> Result<Message, ModelError> {
        let mut events = message_limits::limit_stream(model.stream(request).await?, answer_limit);
        let mut chunk_id = model_wire::chat_completions::new_run_id();
        let mut chunk_sent = false;
        let metadata = self.tuple_metadata("model", &request.metadata.tags);
        let publish = |chunk: Value| {
            self.stream.publish("messages", &json!([chunk, metadata]));
        };
        let mut held: Option<String> = None;
        // Folded as the events arrive: nothing is kept to be read again.
        let mut fold = StreamFold::default();
        let mut done = None;
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(event) => event,
                Err(err) => {
                    // The attempt failed midway: what it streamed must not read as the start of
                    // the answer (a retry or the fallback message follows under another id), so
                    // close it with a terminator that says it failed; text held back is dropped.
                    if chunk_sent {
                        let mut last = ai_chunk(&chunk_id, json!(""));
                        last["response_metadata"] =
                            json!({"finish_reason": "error", "error_type": err.error_type});
                        last["chunk_position"] = json!("last");
                        publish(last);
                    }
                    return Err(err);
                }
            };
            if let StreamEvent::Delta(Event::TextDelta { delta }) = &event
                && let Some(text) = held.replace(delta.clone())
            {
                publish(ai_chunk(&chunk_id, json!(text)));
                chunk_sent = true;
            }
            if let Some(message) = fold.push(event)? {
                done = Some(message);
                break;
            }
        }
        let mut message = match done {
            Some(message) => message,
            None => fold.finish()?,
        };
        match &message.id {
            Some(id) if !chunk_sent => chunk_id = id.clone(),
            _ => message.id = Some(chunk_id.clone()),
        }
        if let Some(text) = held {
            publish(ai_chunk(&chunk_id, json!(text)));
        }
        if !message.tool_calls.is_empty() {
            let mut chunk = ai_chunk(&chunk_id, json!(""));
            chunk["tool_calls"] = message.tool_calls.iter().map(ToolCall::to_json).collect();
            chunk["tool_call_chunks"] = message
                .tool_calls
                .iter()
                .enumerate()
                .map(|(index, call)| {
                    json!({"name": call.name, "args": call.args.to_string(), "id": call.id,
                           "index": index, "type": "tool_call_chunk"})
                })
                .collect();
            publish(chunk);
        }
        let mut last = ai_chunk(&chunk_id, json!(""));
        last["response_metadata"] = json!(message.response_metadata);
        last["usage_metadata"] = json!(message.usage_metadata);
        last["chunk_position"] = json!("last");
        publish(last);
        self.sent().insert(chunk_id);
        Ok(message)
    }
}

/// An `AIMessageChunk` dump with `content` and nothing else.
fn ai_chunk(id: &str, content: Value) -> Value {
    json!({
        "content": content, "additional_kwargs": {}, "response_metadata": {},
        "type": "AIMessageChunk", "name": null, "id": id,
        "tool_calls": [], "invalid_tool_calls": [], "usage_metadata": null,
        "tool_call_chunks": [], "chunk_position": null,
    })
}
