/**
 * The signed-in page: the thread sidebar, the chat, and what both need from the gateway once
 * (the models, the suggestions configuration, the thread list) plus the settings kept in
 * `localStorage`.
 */

import { useCallback, useEffect, useMemo, useState } from "react";

import { createGatewayClient } from "../api/client";
import { listModels, suggestionsConfig, type ModelInfo, type SuggestionsConfig } from "../api/gateway";
import type { GatewayUser } from "../auth/synthetic-user";
import { loadSettings, MODE_LABELS, MODES, parseMode, saveSettings, type Settings } from "../chat/modes";
import type { ThreadSummary } from "../chat/threads";
import { ChatView } from "./ChatView";
import { threadPath, useRoute } from "./route";
import { Sidebar } from "./Sidebar";

type Models = { status: "loading" } | { status: "ready"; models: ModelInfo[] } | { status: "failed"; message: string };

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export function Workspace({
  user,
  authDisabled,
  onSignOut,
}: {
  user: GatewayUser;
  authDisabled: boolean;
  onSignOut: () => void;
}) {
  const client = useMemo(() => createGatewayClient(window.location.origin), []);
  const [route, navigate] = useRoute();
  const [settings, setSettings] = useState<Settings>(() => loadSettings(window.localStorage));
  const [models, setModels] = useState<Models>({ status: "loading" });
  const [suggestions, setSuggestions] = useState<SuggestionsConfig | null>(null);
  const [threads, setThreads] = useState<ThreadSummary[]>([]);
  const [threadsError, setThreadsError] = useState<string | null>(null);
  // One chat view per conversation: a new chat gets a fresh view, and keeps it once its thread
  // exists (its address changes from `/` to the thread's page mid-stream).
  const [newChats, setNewChats] = useState(0);
  const [adopted, setAdopted] = useState<{ threadId: string; key: string } | null>(null);
  const chatKey =
    route.threadId === null
      ? `new-${newChats}`
      : route.threadId === adopted?.threadId
        ? adopted.key
        : `thread-${route.threadId}`;
  const go = (path: string) => {
    if (path === "/") setNewChats((count) => count + 1);
    navigate(path);
  };

  const updateSettings = (change: Partial<Settings>) => {
    const next = { ...settings, ...change };
    setSettings(next);
    saveSettings(window.localStorage, next);
  };

  useEffect(() => {
    listModels().then(
      (answer) => setModels({ status: "ready", models: answer.models }),
      (error: unknown) => {
        console.error("Models could not be loaded:", errorMessage(error));
        setModels({ status: "failed", message: errorMessage(error) });
      },
    );
    suggestionsConfig().then(setSuggestions, (error: unknown) => {
      console.error("The suggestions configuration could not be loaded:", errorMessage(error));
    });
  }, []);

  const refreshThreads = useCallback(() => {
    client.threads.search<{ title?: string }>({ limit: 100 }).then(
      (found) => {
        setThreadsError(null);
        setThreads(
          found.map((thread) => ({
            threadId: thread.thread_id,
            title: typeof thread.values?.title === "string" ? thread.values.title : null,
            updatedAt: thread.updated_at,
          })),
        );
      },
      (error: unknown) => setThreadsError(errorMessage(error)),
    );
  }, [client]);
  useEffect(refreshThreads, [refreshThreads]);

  // The picked model, or the gateway's first when the stored one is gone.
  const modelList = models.status === "ready" ? models.models : [];
  const modelName = modelList.find((model) => model.name === settings.modelName)?.name ?? modelList[0]?.name ?? null;

  const pickers = (
    <div className="pickers">
      <label>
        Mode
        <select
          aria-label="Mode"
          value={settings.mode}
          onChange={(event) => updateSettings({ mode: parseMode(event.target.value) ?? settings.mode })}
        >
          {MODES.map((mode) => (
            <option key={mode} value={mode}>
              {MODE_LABELS[mode]}
            </option>
          ))}
        </select>
      </label>
      <label>
        Model
        <select
          aria-label="Model"
          value={modelName ?? ""}
          disabled={modelList.length === 0}
          onChange={(event) => updateSettings({ modelName: event.target.value })}
        >
          {models.status === "loading" && <option value="">Loading models…</option>}
          {models.status === "failed" && <option value="">Models couldn't be loaded</option>}
          {modelList.map((model) => (
            <option key={model.name} value={model.name} title={model.description ?? undefined}>
              {model.display_name ?? model.name}
            </option>
          ))}
        </select>
      </label>
    </div>
  );

  const account = authDisabled ? (
    <p>
      Auth is off: everyone is <strong>{user.email}</strong>
    </p>
  ) : (
    <>
      <p>
        Signed in as <strong>{user.email}</strong>
      </p>
      <button type="button" onClick={onSignOut}>
        Sign out
      </button>
    </>
  );

  const known = threads.find((thread) => thread.threadId === route.threadId);
  return (
    <div className="workspace">
      <Sidebar
        threads={threads}
        loadError={threadsError}
        activeThreadId={route.threadId}
        account={account}
        onNavigate={go}
      />
      <ChatView
        key={chatKey}
        client={client}
        threadId={route.threadId}
        knownTitle={known?.title ?? null}
        mode={settings.mode}
        modelName={modelName}
        pickers={pickers}
        suggestions={suggestions}
        onThreadCreated={(id) => {
          setAdopted({ threadId: id, key: chatKey });
          navigate(threadPath(id), { replace: true });
          refreshThreads();
        }}
        onRunFinished={refreshThreads}
      />
    </div>
  );
}
