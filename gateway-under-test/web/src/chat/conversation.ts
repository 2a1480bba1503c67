/**
 * The chat view's model: messages (from the live stream or from rebuilt history) reduced to runs
 * of items — what the person typed, what the assistant answered, and each tool call as a step
 * with its arguments and result — plus each run's duration and token count.
 */

import type { MessageRow } from "./history";
import { isHidden, messageText, stampedRunId, type Message } from "./messages";

/** A message the person sent. */
export interface HumanItem {
  kind: "human";
  key: string;
  text: string;
}

/** What the gateway's error middleware put in place of a failed model call. */
export interface ModelFailure {
  type: string | null;
  reason: string | null;
}

/** An assistant answer; `failure` is set for the gateway's error fallback. */
export interface AiItem {
  kind: "ai";
  key: string;
  text: string;
  failure: ModelFailure | null;
}

/** One tool call and, once it arrived, its result. */
export interface ToolStep {
  kind: "tool";
  key: string;
  name: string;
  args: Record<string, unknown>;
  result: string | null;
  status: "running" | "success" | "error";
}

/** An item of a run, in the order it happened. */
export type RunItem = HumanItem | AiItem | ToolStep;

/** One run: what one prompt set off. */
export interface RunView {
  /** The run id, or `null` while the gateway has not stamped it yet. */
  runId: string | null;
  items: RunItem[];
  /** `turn_duration` of the run's last AI message, in seconds. */
  durationSeconds: number | null;
  /** The sum of the AI messages' `usage_metadata.total_tokens`. */
  totalTokens: number | null;
}

function stringOrNull(value: unknown): string | null {
  return typeof value === "string" ? value : null;
}

function emptyRun(runId: string | null): RunView {
  return { runId, items: [], durationSeconds: null, totalTokens: null };
}

/** Adds one visible message to `run` (mutating it: runs are built fresh each time). */
function addMessage(run: RunView, message: Message, index: number): void {
  const key = message.id ?? `message-${index}`;
  switch (message.type) {
    case "human":
      run.items.push({ kind: "human", key, text: messageText(message.content) });
      return;
    case "ai": {
      const kwargs = message.additional_kwargs ?? {};
      const text = messageText(message.content);
      const failure =
        kwargs.deerflow_error_fallback === true
          ? { type: stringOrNull(kwargs.error_type), reason: stringOrNull(kwargs.error_reason) }
          : null;
      if (text.trim() !== "" || failure !== null) run.items.push({ kind: "ai", key, text, failure });
      for (const [callIndex, call] of (message.tool_calls ?? []).entries()) {
        run.items.push({
          kind: "tool",
          key: call.id ?? `${key}-call-${callIndex}`,
          name: call.name,
          args: call.args,
          result: null,
          status: "running",
        });
      }
      if (typeof kwargs.turn_duration === "number") run.durationSeconds = kwargs.turn_duration;
      const tokens = message.usage_metadata?.total_tokens;
      if (typeof tokens === "number") run.totalTokens = (run.totalTokens ?? 0) + tokens;
      return;
    }
    case "tool": {
      const step = run.items.find(
        (item): item is ToolStep => item.kind === "tool" && item.key === message.tool_call_id,
      );
      const result = messageText(message.content);
      const status = message.status === "error" ? "error" : "success";
      if (step !== undefined) {
        step.result = result;
        step.status = status;
      } else {
        run.items.push({ kind: "tool", key: message.tool_call_id, name: message.name ?? "tool", args: {}, result, status });
      }
      return;
    }
    default:
      return;
  }
}

/**
 * The runs of a thread's live state (`values.messages`): each visible human message starts a
 * run, identified by the `run_id` the gateway stamped on it (`null` for an optimistic message).
 */
export function runsFromMessages(messages: readonly Message[]): RunView[] {
  const runs: RunView[] = [];
  messages.forEach((message, index) => {
    if (isHidden(message)) return;
    let current = runs.at(-1);
    if (message.type === "human" || current === undefined) {
      current = emptyRun(message.type === "human" ? stampedRunId(message) : null);
      runs.push(current);
    }
    addMessage(current, message, index);
  });
  return runs;
}

/** The runs of rebuilt history: consecutive rows of one `run_id` make one run. */
export function runsFromRows(rows: readonly MessageRow[]): RunView[] {
  const runs: RunView[] = [];
  for (const row of rows) {
    if (isHidden(row.content)) continue;
    let current = runs.at(-1);
    if (current === undefined || current.runId !== row.run_id) {
      current = emptyRun(row.run_id);
      runs.push(current);
    }
    addMessage(current, row.content, row.seq);
  }
  return runs;
}

/**
 * History and the live stream together, in history's order. A run both know keeps what the
 * stream showed (the stream also carries what the journal leaves out, such as the error
 * fallback) and takes its duration from history, which stamps `turn_duration`; runs only the
 * stream knows (the one running now) come last.
 */
export function mergeRuns(history: readonly RunView[], live: readonly RunView[]): RunView[] {
  const liveById = new Map(live.filter((run) => run.runId !== null).map((run) => [run.runId, run]));
  const merged = history.map((run) => {
    const streamed = liveById.get(run.runId);
    if (streamed === undefined || streamed.items.length === 0) return run;
    return {
      ...streamed,
      durationSeconds: run.durationSeconds ?? streamed.durationSeconds,
      totalTokens: streamed.totalTokens ?? run.totalTokens,
    };
  });
  const known = new Set(history.map((run) => run.runId));
  return [...merged, ...live.filter((run) => run.runId === null || !known.has(run.runId))];
}

/** A message of the suggestions request. */
export interface ConversationLine {
  role: "user" | "assistant";
  content: string;
}

/** How many recent messages the suggestions request carries (DeerFlow's client sends six). */
export const SUGGESTION_CONTEXT_MESSAGES = 6;

/**
 * The last visible messages as plain text, as the suggestions request carries them: AI messages
 * without text (tool-call turns) are skipped.
 */
export function recentConversation(runs: readonly RunView[]): ConversationLine[] {
  const lines: ConversationLine[] = [];
  for (const run of runs) {
    for (const item of run.items) {
      if (item.kind === "human" && item.text.trim() !== "") lines.push({ role: "user", content: item.text });
      if (item.kind === "ai" && item.text.trim() !== "") lines.push({ role: "assistant", content: item.text });
    }
  }
  return lines.slice(-SUGGESTION_CONTEXT_MESSAGES);
}

/** What the stream says the run is doing, from `updates` and `custom` frames. */
export interface StreamActivity {
  /** The graph node that wrote last (`model`, `tools`, `TitleMiddleware.after_model`, …). */
  node: string | null;
  /** The last `llm_retry` notice, until the next node writes. */
  retry: { attempt: number; maxAttempts: number; reason: string } | null;
}

/** No activity yet. */
export const IDLE_ACTIVITY: StreamActivity = { node: null, retry: null };

/**
 * `activity` after one `updates` frame: the frame's (last) key names the node. LangGraph's own
 * pseudo-nodes (`__input__`, `__interrupt__`) are not work a person would want named, and
 * neither is a node that ran and wrote nothing (`{"<Middleware>.<hook>": null}`, as DeerFlow
 * streams every middleware hook): it leaves the activity as it was.
 */
export function afterUpdate(activity: StreamActivity, data: unknown): StreamActivity {
  if (typeof data !== "object" || data === null) return activity;
  const writes = data as Record<string, unknown>;
  const node = Object.keys(writes)
    .filter((key) => !key.startsWith("__") && writes[key] !== null)
    .at(-1);
  return node === undefined ? activity : { node, retry: null };
}

/** `activity` after one `custom` frame; only `llm_retry` notices change it. */
export function afterCustom(activity: StreamActivity, data: unknown): StreamActivity {
  if (typeof data !== "object" || data === null) return activity;
  const event = data as Record<string, unknown>;
  if (event.type !== "llm_retry") return activity;
  return {
    ...activity,
    retry: {
      attempt: typeof event.attempt === "number" ? event.attempt : 0,
      maxAttempts: typeof event.max_attempts === "number" ? event.max_attempts : 0,
      reason: typeof event.reason === "string" ? event.reason : "unknown",
    },
  };
}

/** A person-readable line for `activity`. */
export function describeActivity(activity: StreamActivity): string {
  if (activity.retry !== null) {
    const { attempt, maxAttempts, reason } = activity.retry;
    return `The model call failed (${reason}); retrying, attempt ${attempt + 1} of ${maxAttempts}…`;
  }
  switch (activity.node) {
    case null:
      return "Starting…";
    case "model":
      return "The model is answering…";
    case "tools":
      return "Running tools…";
    default:
      return `Working: ${activity.node}…`;
  }
}
