/**
 * One chat: the conversation (rebuilt history plus the live stream), the run status, follow-up
 * suggestions and the composer. Streaming goes through the SDK's `useStream`; history comes from
 * `messages/page`, because that is the one source that also covers threads without a checkpoint.
 *
 * The workspace mounts one `ChatView` per conversation (keyed), so nothing here has to be reset
 * when another thread opens; a new chat keeps its view when its thread is created.
 */

import type { Client } from "@langchain/langgraph-sdk";
import { useStream } from "@langchain/langgraph-sdk/react";
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState, type ReactNode } from "react";

import {
  messagesPage,
  suggestFollowUps,
  workspaceChanges,
  type SuggestionsConfig,
  type WorkspaceChanges,
} from "../api/gateway";
import {
  afterCustom,
  afterUpdate,
  describeActivity,
  IDLE_ACTIVITY,
  mergeRuns,
  recentConversation,
  runsFromMessages,
  runsFromRows,
  type RunView,
  type StreamActivity,
} from "../chat/conversation";
import { loadHistory } from "../chat/history";
import type { Message } from "../chat/messages";
import type { Mode } from "../chat/modes";
import { ASSISTANT_ID, runSubmission } from "../chat/run-request";
import { Composer } from "./Composer";
import { newThreadId } from "./ids";
import { RunBlock } from "./RunBlock";

/** The thread state the chat view reads from `values` frames. */
type ThreadValues = {
  messages: Message[];
  title?: string;
};

/**
 * The page keeps the thread's history itself (from `messages/page`), so `useStream` must not
 * read `/state` or `/history`: a thread without a checkpoint answers those with 404.
 */
const EXTERNAL_THREAD = {
  data: [],
  error: undefined,
  isLoading: false,
  mutate: () => Promise.resolve([]),
};

type HistoryState =
  | { status: "loading"; runs: RunView[] }
  | { status: "ready"; runs: RunView[]; truncated: boolean }
  | { status: "failed"; runs: RunView[]; message: string };

/** A (re)load of history: on opening a thread, and after each run (it stamps `turn_duration`). */
interface HistoryRequest {
  version: number;
  /** Whether a run just ended: the load is then followed by suggestions. */
  afterRun: boolean;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** What the chat view needs from the workspace around it. */
export interface ChatViewProps {
  client: Client;
  threadId: string | null;
  /** The thread's title as the sidebar knows it. */
  knownTitle: string | null;
  mode: Mode;
  modelName: string | null;
  /** The mode and model pickers, shown in the composer. */
  pickers: ReactNode;
  suggestions: SuggestionsConfig | null;
  /** A new chat's thread now exists on the gateway. */
  onThreadCreated: (threadId: string) => void;
  /** A run ended: the thread list may have a new title. */
  onRunFinished: () => void;
}

export function ChatView(props: ChatViewProps) {
  const { client, threadId, mode, modelName, onRunFinished, suggestions, onThreadCreated } = props;
  const [history, setHistory] = useState<HistoryState>(() =>
    threadId === null ? { status: "ready", runs: [], truncated: false } : { status: "loading", runs: [] },
  );
  const [historyRequest, setHistoryRequest] = useState<HistoryRequest>(() => ({
    version: threadId === null ? 0 : 1,
    afterRun: false,
  }));
  const [activity, setActivity] = useState<StreamActivity>(IDLE_ACTIVITY);
  const [runId, setRunId] = useState<string | null>(null);
  const [runError, setRunError] = useState<string | null>(null);
  const [followUps, setFollowUps] = useState<string[]>([]);
  // From a run's end until its follow-up suggestions have arrived (or were skipped): the log
  // reports itself busy meanwhile, so nobody reads a finished run as settled too early.
  const [settling, setSettling] = useState(false);
  // How many runs this view has submitted: suggestions for a run are skipped once a newer one
  // was sent, since its conversation is no longer the page's.
  const submitted = useRef(0);
  const [changes, setChanges] = useState<ReadonlyMap<string, WorkspaceChanges | "failed">>(new Map());
  const requestedChanges = useRef(new Set<string>());

  const stream = useStream<ThreadValues>({
    client,
    assistantId: ASSISTANT_ID,
    threadId,
    thread: EXTERNAL_THREAD,
    onThreadId: onThreadCreated,
    onCreated: (run) => setRunId(run.run_id),
    onUpdateEvent: (data) => setActivity((current) => afterUpdate(current, data)),
    onCustomEvent: (data) => setActivity((current) => afterCustom(current, data)),
    onError: (error) => setRunError(errorMessage(error)),
    // No parameters: the SDK then reads no thread state after the run (see EXTERNAL_THREAD).
    onFinish: () => {
      setSettling(true);
      setHistoryRequest((request) => ({ version: request.version + 1, afterRun: true }));
    },
  });

  const liveRuns = useMemo(() => {
    const runs = runsFromMessages(stream.messages);
    const last = runs.at(-1);
    // The optimistic human message has no stamped run id yet; the stream's metadata has it.
    if (last !== undefined && last.runId === null && runId !== null) runs[runs.length - 1] = { ...last, runId };
    return runs;
  }, [stream.messages, runId]);
  const runs = useMemo(() => mergeRuns(history.runs, liveRuns), [history.runs, liveRuns]);
  const streamingRunId = stream.isLoading ? (liveRuns.at(-1)?.runId ?? null) : null;

  // The callbacks below run after the render that produced these; refs let them read the latest.
  const latest = useRef({ liveRuns, suggestions, onRunFinished });
  useEffect(() => {
    latest.current = { liveRuns, suggestions, onRunFinished };
  });

  // Load history; after a run, then refresh the thread list and ask for follow-up suggestions.
  useEffect(() => {
    if (threadId === null || historyRequest.version === 0) return;
    let cancelled = false;
    const submittedAtStart = submitted.current;
    const settle = () => {
      if (!cancelled) setSettling(false);
    };
    const followUp = (historyRuns: RunView[]) => {
      if (cancelled) return;
      if (!historyRequest.afterRun) return settle();
      const { liveRuns: live, suggestions: config, onRunFinished: finished } = latest.current;
      finished();
      // A newer run was sent meanwhile: its own end brings its suggestions.
      if (submitted.current !== submittedAtStart) return settle();
      if (config === null || !config.enabled || config.max_suggestions < 1) return settle();
      const conversation = recentConversation(mergeRuns(historyRuns, live));
      if (conversation.length === 0) return settle();
      suggestFollowUps(threadId, conversation, config.max_suggestions).then(
        (questions) => {
          if (!cancelled && submitted.current === submittedAtStart) setFollowUps(questions);
          settle();
        },
        (error: unknown) => {
          console.error("Follow-up suggestions failed:", errorMessage(error));
          settle();
        },
      );
    };
    loadHistory((before) => messagesPage(threadId, before)).then(
      ({ rows, truncated }) => {
        if (cancelled) return;
        const historyRuns = runsFromRows(rows);
        setHistory({ status: "ready", runs: historyRuns, truncated });
        followUp(historyRuns);
      },
      (error: unknown) => {
        if (cancelled) return;
        // A console error on purpose: the browser suite fails on it, naming the gateway's fault.
        console.error(`History of thread ${threadId} could not be loaded:`, errorMessage(error));
        setHistory((current) => ({ status: "failed", runs: current.runs, message: errorMessage(error) }));
        followUp([]);
      },
    );
    return () => {
      cancelled = true;
    };
  }, [threadId, historyRequest]);

  // What each finished run changed in the workspace (the "Edited N files" card).
  useEffect(() => {
    if (threadId === null) return;
    for (const run of runs) {
      if (run.runId === null || run.runId === streamingRunId || requestedChanges.current.has(run.runId)) continue;
      const id = run.runId;
      requestedChanges.current.add(id);
      workspaceChanges(threadId, id).then(
        (answer) => setChanges((current) => new Map(current).set(id, answer)),
        (error: unknown) => {
          console.error(`Workspace changes of run ${id} could not be loaded:`, errorMessage(error));
          setChanges((current) => new Map(current).set(id, "failed"));
        },
      );
    }
  }, [threadId, runs, streamingRunId]);

  // Follow the conversation as it grows, unless the person scrolled up to read.
  const logRef = useRef<HTMLElement>(null);
  const followBottom = useRef(true);
  useLayoutEffect(() => {
    const log = logRef.current;
    if (log !== null && followBottom.current) log.scrollTop = log.scrollHeight;
  }, [runs, activity, runError, history.status, followUps]);
  const onScroll = () => {
    const log = logRef.current;
    if (log !== null) followBottom.current = log.scrollHeight - log.scrollTop - log.clientHeight < 48;
  };

  const send = useCallback(
    (text: string) => {
      const id = threadId ?? newThreadId();
      const { input, options } = runSubmission({ prompt: text, mode, modelName, threadId: id });
      submitted.current += 1;
      setFollowUps([]);
      setActivity(IDLE_ACTIVITY);
      setRunError(null);
      setRunId(null);
      followBottom.current = true;
      void stream.submit(input, {
        ...options,
        ...(threadId === null ? { threadId: id } : {}),
        optimisticValues: (previous) => ({ messages: [...(previous.messages ?? []), input.messages[0]] }),
      });
    },
    [threadId, mode, modelName, stream],
  );

  const title = stream.values.title ?? props.knownTitle ?? (threadId === null ? "New chat" : "Untitled chat");
  const busy = stream.isLoading || history.status === "loading";

  return (
    <main className="chat" aria-label="Chat">
      <header className="chat-header">
        <h1>{title}</h1>
      </header>
      <section ref={logRef} onScroll={onScroll} className="conversation" role="log" aria-label="Conversation" aria-busy={busy || settling}>
        {history.status === "loading" && <p role="status">Loading the conversation…</p>}
        {history.status === "failed" && (
          <p role="alert">The conversation's history could not be loaded: {history.message}</p>
        )}
        {history.status === "ready" && history.truncated && <p className="note">Older messages are not shown.</p>}
        {runs.length === 0 && history.status === "ready" && (
          <p className="empty">Ask anything. The assistant can read and write files in its workspace.</p>
        )}
        {runs.map((run, index) => (
          <RunBlock
            key={run.runId ?? `pending-${index}`}
            run={run}
            running={stream.isLoading && index === runs.length - 1}
            changes={run.runId === null ? undefined : changes.get(run.runId)}
          />
        ))}
        {stream.isLoading && (
          <p className="activity" role="status">
            {describeActivity(activity)}
          </p>
        )}
        {runError !== null && (
          <p className="run-error" role="alert">
            The run failed: {runError}
          </p>
        )}
      </section>
      {followUps.length > 0 && !stream.isLoading && (
        <section className="follow-ups" aria-label="Suggested follow-ups">
          {followUps.map((question) => (
            <button key={question} type="button" className="chip" onClick={() => send(question)}>
              {question}
            </button>
          ))}
        </section>
      )}
      <Composer disabled={busy} onSend={send} pickers={props.pickers} />
    </main>
  );
}
