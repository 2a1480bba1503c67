//! Runs: the per-app registry of active runs, the multitask strategy, and the worker that takes a
//! run from `metadata` to `end` in the order of `docs/gateway-contract.md` §11.1.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::config::RunsConfig;
use crate::lock::unpoisoned;
use crate::messages::Message;
use crate::run_status::{MultitaskStrategy, RunStatus};
use crate::runtime::agent::{Agent, AgentLoop};
use crate::runtime::context::{RunContext, RunContextParts, StreamModes};
use crate::runtime::flags::RunFlags;
use crate::runtime::state::AgentState;
use crate::runtime::stream::{RunStream, Subscription};
use crate::store::{RunRecord, Store, StoreError};

/// A validated request to start a run.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// The thread (must exist and be owned by `user_id`; the HTTP layer checks).
    pub thread_id: String,
    /// The caller.
    pub user_id: String,
    /// `lead_agent` or a custom agent name.
    pub assistant_id: String,
    /// The new input messages.
    pub input: Vec<Message>,
    /// Run-context flags.
    pub flags: RunFlags,
    /// The configured model to use.
    pub model_name: String,
    /// Requested stream modes.
    pub modes: StreamModes,
    /// Clamped recursion limit.
    pub recursion_limit: u32,
    /// What to do when another run is active on the thread.
    pub multitask_strategy: MultitaskStrategy,
    /// Keep running when the client disconnects.
    pub continue_on_disconnect: bool,
    /// Client metadata.
    pub metadata: Value,
    /// `{"input", "config"}` as requested (secrets redacted).
    pub kwargs: Value,
}

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Another run is active on the thread and the strategy is `reject`.
    #[error("Thread {0} already has an active run")]
    Busy(String),
    /// The requested model is not configured.
    #[error("Model '{0}' is not in the configured model allowlist")]
    UnknownModel(String),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A run that is executing, or finished less than the buffer TTL ago.
#[derive(Debug)]
pub struct ActiveRun {
    record: Mutex<RunRecord>,
    /// The run's frames.
    pub stream: Arc<RunStream>,
    /// Cancels the run.
    pub cancel: CancellationToken,
    /// Whether a client disconnect leaves the run running.
    pub continue_on_disconnect: bool,
    done: watch::Sender<bool>,
    final_values: Mutex<Option<Value>>,
}

impl ActiveRun {
    /// A snapshot of the run record.
    pub fn record(&self) -> RunRecord {
        unpoisoned(&self.record).clone()
    }

    /// True once the worker has finished.
    pub fn is_done(&self) -> bool {
        *self.done.borrow()
    }

    /// Waits until the worker has finished.
    pub async fn wait(&self) {
        let mut done = self.done.subscribe();
        // An error means the sender is gone, which only happens once the run is finished.
        let _ = done.wait_for(|finished| *finished).await;
    }

    /// The state values after the run, once finished.
    pub fn final_values(&self) -> Option<Value> {
        unpoisoned(&self.final_values).clone()
    }
}

/// The app's active runs, which thread each one holds, and what starting one needs: the agent
/// it executes, the store it records into, the `[runs]` settings and the app's shutdown signal.
#[derive(Debug)]
pub struct RunManager {
    runs: Mutex<HashMap<String, Arc<ActiveRun>>>,
    active_by_thread: Mutex<HashMap<String, String>>,
    agent: Arc<Agent>,
    store: Store,
    settings: RunsConfig,
    shutdown: CancellationToken,
}

impl RunManager {
    /// A manager with no runs. `shutdown` cancels every run it starts.
    pub fn new(
        agent: Arc<Agent>,
        store: Store,
        settings: RunsConfig,
        shutdown: CancellationToken,
    ) -> RunManager {
        RunManager {
            runs: Mutex::default(),
            active_by_thread: Mutex::default(),
            agent,
            store,
            settings,
            shutdown,
        }
    }

    /// The `[runs]` settings (recursion limits, stream buffer, heartbeat).
    pub fn settings(&self) -> &RunsConfig {
        &self.settings
    }

    /// A run still held in memory.
    pub fn get(&self, run_id: &str) -> Option<Arc<ActiveRun>> {
        unpoisoned(&self.runs).get(run_id).cloned()
    }

    /// The in-memory runs of a thread.
    pub fn runs_of_thread(&self, thread_id: &str) -> Vec<RunRecord> {
        // Filtered before the copy: a record carries its run's input messages.
        unpoisoned(&self.runs)
            .values()
            .filter(|run| unpoisoned(&run.record).thread_id == thread_id)
            .map(|run| run.record())
            .collect()
    }

    /// The run currently holding `thread_id`, if any.
    pub fn active_on(&self, thread_id: &str) -> Option<Arc<ActiveRun>> {
        let run_id = unpoisoned(&self.active_by_thread).get(thread_id).cloned()?;
        self.get(&run_id)
    }

    /// Cancels every active run (server shutdown).
    pub fn cancel_all(&self) {
        for run in unpoisoned(&self.runs).values() {
            run.cancel.cancel();
        }
    }
}

/// The `error` of a run found unfinished at start-up: DeerFlow's text.
pub const RESTART_ERROR: &str = "Gateway restarted before this run reached a durable final state.";

/// The `stop_reason` of a run found unfinished at start-up.
pub const RESTART_STOP_REASON: &str = "gateway_restart";

/// At start-up, before any run of this gateway exists: finishes the runs a previous process left
/// `pending` or `running` (it crashed or was killed) as `error` with [`RESTART_ERROR`], and frees
/// their threads, as DeerFlow's `reconcile_orphaned_inflight_runs` does. No worker can own them
/// any more: workers live in the process. Blocking. Returns how many runs were finished.
pub fn finish_orphaned_runs(store: &crate::store::Store) -> Result<usize, StoreError> {
    let now = crate::clock::now_iso();
    let finished = store.finish_orphaned_runs(crate::store::Orphaned {
        before: &now,
        error: RESTART_ERROR,
        stop_reason: RESTART_STOP_REASON,
        now: &now,
    })?;
    for (run_id, thread_id) in &finished {
        tracing::warn!(%run_id, %thread_id, "run interrupted by a restart marked as error");
    }
    Ok(finished.len())
}

/// Starts a run: claims the thread (applying the multitask strategy), records the run as
/// `pending`, subscribes the caller to its stream, and spawns the worker.
pub async fn start_run(
    manager: &Arc<RunManager>,
    spec: RunSpec,
) -> Result<(Arc<ActiveRun>, Subscription), StartError> {
    let model = manager
        .agent
        .model(&spec.model_name)
        .ok_or_else(|| StartError::UnknownModel(spec.model_name.clone()))?;
    loop {
        let previous = manager.active_on(&spec.thread_id);
        match previous {
            Some(previous) if !previous.is_done() => {
                if spec.multitask_strategy == MultitaskStrategy::Reject {
                    return Err(StartError::Busy(spec.thread_id.clone()));
                }
                previous.cancel.cancel();
                previous.wait().await;
            }
            _ => break,
        }
    }
    let run_id = uuid::Uuid::new_v4().to_string();
    let now = crate::clock::now_iso();
    let record = RunRecord {
        run_id: run_id.clone(),
        thread_id: spec.thread_id.clone(),
        owner_id: spec.user_id.clone(),
        assistant_id: spec.assistant_id.clone(),
        status: RunStatus::Pending,
        metadata: spec.metadata.clone(),
        kwargs: spec.kwargs.clone(),
        multitask_strategy: spec.multitask_strategy,
        error: None,
        stop_reason: None,
        counters: zero_counters(),
        created_at: now.clone(),
        updated_at: now,
    };
    let stream = Arc::new(RunStream::new(manager.settings.stream_buffer_events));
    let (done, _) = watch::channel(false);
    let run = Arc::new(ActiveRun {
        record: Mutex::new(record.clone()),
        stream: stream.clone(),
        cancel: manager.shutdown.child_token(),
        continue_on_disconnect: spec.continue_on_disconnect,
        done,
        final_values: Mutex::new(None),
    });
    {
        let mut claims = unpoisoned(&manager.active_by_thread);
        if let Some(holder) = claims.get(&spec.thread_id)
            && manager.get(holder).is_some_and(|r| !r.is_done())
        {
            return Err(StartError::Busy(spec.thread_id.clone()));
        }
        claims.insert(spec.thread_id.clone(), run_id.clone());
        unpoisoned(&manager.runs).insert(run_id.clone(), run.clone());
    }
    if let Err(err) = manager.store.put_run(record).await {
        manager.release(&spec.thread_id, &run_id);
        unpoisoned(&manager.runs).remove(&run_id);
        return Err(err.into());
    }
    let subscription = stream
        .subscribe(None)
        .unwrap_or_else(|_| unreachable_subscription());
    let parts = RunContextParts {
        run_id,
        thread_id: spec.thread_id.clone(),
        user_id: spec.user_id.clone(),
        flags: spec.flags.clone(),
        model_name: spec.model_name.clone(),
        modes: spec.modes.clone(),
        recursion_limit: spec.recursion_limit,
    };
    let context = RunContext::new(
        manager.agent.clone(),
        manager.store.clone(),
        parts,
        model,
        stream,
    );
    tokio::spawn(execute(manager.clone(), run.clone(), context, spec.input));
    Ok((run, subscription))
}

/// A fresh stream always accepts a subscription from its start; this only satisfies the types.
fn unreachable_subscription() -> Subscription {
    let (_tx, live) = tokio::sync::mpsc::unbounded_channel();
    Subscription {
        backlog: Vec::new(),
        live,
    }
}

fn zero_counters() -> Value {
    json!({
        "total_input_tokens": 0, "total_output_tokens": 0, "total_tokens": 0,
        "llm_call_count": 0, "lead_agent_tokens": 0, "subagent_tokens": 0,
        "middleware_tokens": 0, "message_count": 0,
    })
}

impl RunManager {
    /// Frees `thread_id` if `run_id` still holds it.
    fn release(&self, thread_id: &str, run_id: &str) {
        let mut claims = unpoisoned(&self.active_by_thread);
        if claims.get(thread_id).map(String::as_str) == Some(run_id) {
            claims.remove(thread_id);
        }
    }
}

/// How often, and how many times, a run's final record that met a full disk is written again.
const FINAL_RECORD_RETRY: Duration = Duration::from_secs(5);
const FINAL_RECORD_ATTEMPTS: u32 = 120;

/// Writes a run's final record again until the disk has room (someone deleted a thread, or an
/// operator freed space), for ten minutes: otherwise the run would read `running` until a
/// restart's crash recovery (issue 21, finding 12).
async fn write_final_record_later(store: Store, record: RunRecord) {
    for _ in 0..FINAL_RECORD_ATTEMPTS {
        tokio::time::sleep(FINAL_RECORD_RETRY).await;
        match store.put_run(record.clone()).await {
            Ok(()) => {
                tracing::info!(run_id = %record.run_id, "run record written after a full disk");
                return;
            }
            Err(err) if err.is_disk_full() => continue,
            Err(err) => {
                tracing::warn!(run_id = %record.run_id, "run record write failed: {err}");
                return;
            }
        }
    }
    tracing::error!(run_id = %record.run_id, "run record lost: the disk stayed full");
}

async fn set_status(store: &Store, run: &ActiveRun, status: RunStatus) {
    let record = {
        let mut record = unpoisoned(&run.record);
        record.status = status;
        record.updated_at = crate::clock::now_iso();
        record.clone()
    };
    if let Err(err) = store.put_run(record).await {
        tracing::warn!("run record write failed: {err}");
    }
}

/// The worker: `docs/gateway-contract.md` §11.1, steps 3 to 13.
async fn execute(
    manager: Arc<RunManager>,
    run: Arc<ActiveRun>,
    context: RunContext,
    input: Vec<Message>,
) {
    let store = &manager.store;
    let thread_id = context.thread_id.clone();
    let run_id = context.run_id.clone();
    let _ = store
        .set_thread_status(&thread_id, "running", None, &crate::clock::now_iso())
        .await;
    set_status(store, &run, RunStatus::Running).await;
    context.stream.publish(
        "metadata",
        &json!({"run_id": run_id, "thread_id": thread_id}),
    );
    context
        .journal(vec![(
            "run.start",
            "trace",
            json!({"chain": "lead_agent"}),
            json!({"caller": "lead_agent"}),
        )])
        .await;

    let limits = crate::workspace::WorkspaceLimits::default();
    let workspace_before = crate::workspace::snapshot(&context.paths, limits).await;

    let latest = store.latest_checkpoint(&thread_id).await;
    let (state, parent) = match latest {
        Ok(Some(checkpoint)) => (
            AgentState::from_values(&checkpoint.values).unwrap_or_else(|err| {
                tracing::warn!(%thread_id, "stored state unreadable, starting fresh: {err}");
                AgentState::default()
            }),
            Some(checkpoint.checkpoint_id),
        ),
        _ => (AgentState::default(), None),
    };
    let outcome = tokio::select! {
        outcome = AgentLoop::new(&context, state, parent).run(input) => Some(outcome),
        _ = run.cancel.cancelled() => None,
    };

    let (status, error) = match &outcome {
        None => (RunStatus::Interrupted, None),
        Some(outcome) => match (&outcome.error, &outcome.fallback_error) {
            (Some(error), _) => {
                context.stream.publish(
                    "error",
                    &json!({"message": error.message, "name": error.name}),
                );
                (RunStatus::Error, Some(error.message.clone()))
            }
            (None, Some(detail)) => (RunStatus::Error, Some(detail.clone())),
            (None, None) => (RunStatus::Success, None),
        },
    };
    let mut journal = Vec::new();
    if let Some(changes) =
        crate::workspace::changes_since(workspace_before, &context.paths, limits).await
    {
        journal.push((
            crate::workspace::EVENT_TYPE,
            crate::workspace::EVENT_CATEGORY,
            json!(changes.headline()),
            json!({ crate::workspace::METADATA_KEY: changes }),
        ));
    }
    journal.push(("run.end", "outputs", Value::Null, json!({"status": status})));
    if let Some(error) = &error {
        journal.push(("run.error", "error", json!({"error": error}), json!({})));
    }
    context.journal(journal).await;

    let final_state = outcome.as_ref().map(|o| o.state.clone());
    let title = final_state
        .as_ref()
        .and_then(|state| state.channel("title"))
        .and_then(Value::as_str)
        .map(String::from);
    let usage = context.usage();
    let record = {
        let mut record = unpoisoned(&run.record);
        record.status = status;
        record.error = error;
        record.stop_reason = match &outcome {
            None => Some("cancelled".into()),
            Some(outcome) => outcome.stop_reason.clone(),
        };
        record.counters = json!({
            "total_input_tokens": usage.input_tokens,
            "total_output_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
            "llm_call_count": context.llm_call_count(),
            "lead_agent_tokens": usage.lead_agent_tokens,
            "subagent_tokens": usage.subagent_tokens,
            "middleware_tokens": usage.middleware_tokens,
            "message_count": final_state.as_ref().map_or(0, |s| s.messages.len()),
        });
        record.updated_at = crate::clock::now_iso();
        record.clone()
    };
    if let Err(err) = store.put_run(record.clone()).await {
        tracing::warn!(%run_id, "run record write failed: {err}");
        if err.is_disk_full() {
            tokio::spawn(write_final_record_later(store.clone(), record));
        }
    }
    *unpoisoned(&run.final_values) = final_state.map(|state| state.to_values());
    let thread_status = match status {
        RunStatus::Success => "idle",
        other => other.as_str(),
    };
    let _ = store
        .set_thread_status(&thread_id, thread_status, title, &crate::clock::now_iso())
        .await;
    manager.release(&thread_id, &run_id);
    run.stream.finish();
    run.done.send_replace(true);
    drop(context);

    let ttl = Duration::from_secs(manager.settings.stream_buffer_ttl_seconds);
    tokio::spawn(async move {
        tokio::select! {
            _ = tokio::time::sleep(ttl) => {}
            _ = manager.shutdown.cancelled() => {}
        }
        unpoisoned(&manager.runs).remove(&run_id);
    });
}
