/**
 * The gateway's REST routes the chat client uses besides the LangGraph-compatible ones (which go
 * through the SDK's `Client`): auth, models, suggestions, history pages and workspace changes.
 * Every request is same-origin with cookies, and mutating ones carry the CSRF header.
 */

import type { GatewayUser } from "../auth/synthetic-user";
import type { ConversationLine } from "../chat/conversation";
import { parseMessagesPage, type MessagesPage } from "../chat/history";
import { withCsrf } from "./csrf";

/** A request the gateway refused or could not answer; the message names the route. */
export class GatewayError extends Error {
  constructor(
    readonly route: string,
    readonly status: number,
    readonly detail: unknown,
  ) {
    super(`${route} answered ${status}: ${describeDetail(detail)}`);
    this.name = "GatewayError";
  }
}

function describeDetail(detail: unknown): string {
  if (typeof detail === "string") return detail;
  if (typeof detail === "object" && detail !== null && "message" in detail && typeof detail.message === "string") {
    return detail.message;
  }
  return JSON.stringify(detail) ?? "no detail";
}

type Body = { json: unknown } | { form: Record<string, string> } | null;

async function send(method: string, path: string, body: Body = null): Promise<Response> {
  const route = `${method} ${path}`;
  let init: RequestInit = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
  if (body !== null && "json" in body) {
    init = { ...init, body: JSON.stringify(body.json), headers: { ...init.headers, "Content-Type": "application/json" } };
  } else if (body !== null) {
    init = { ...init, body: new URLSearchParams(body.form) };
  }
  const response = await fetch(path, withCsrf(init, document.cookie));
  if (response.ok) return response;
  let detail: unknown = response.statusText;
  try {
    const parsed: unknown = await response.json();
    detail = typeof parsed === "object" && parsed !== null && "detail" in parsed ? parsed.detail : parsed;
  } catch {
    // Not JSON: the status text says enough.
  }
  throw new GatewayError(route, response.status, detail);
}

async function sendJson<T>(method: string, path: string, body: Body = null): Promise<T> {
  return (await (await send(method, path, body)).json()) as T;
}

/** The signed-in user, or `null` when there is no session (401). */
export async function currentUser(): Promise<GatewayUser | null> {
  try {
    return await sendJson<GatewayUser>("GET", "/api/v1/auth/me");
  } catch (error) {
    if (error instanceof GatewayError && error.status === 401) return null;
    throw error;
  }
}

/** Signs in (a form post, as OAuth2's password flow wants); the gateway sets the cookies. */
export async function signIn(email: string, password: string): Promise<void> {
  await send("POST", "/api/v1/auth/login/local", { form: { username: email, password } });
}

/** Creates an account and signs in with it. */
export async function register(email: string, password: string): Promise<GatewayUser> {
  return sendJson<GatewayUser>("POST", "/api/v1/auth/register", { json: { email, password } });
}

/** Ends the session; the gateway deletes the cookies. */
export async function signOut(): Promise<void> {
  await send("POST", "/api/v1/auth/logout");
}

/** A configured model, as `GET /api/models` lists it. */
export interface ModelInfo {
  name: string;
  model: string | null;
  display_name: string | null;
  description: string | null;
  supports_thinking: boolean;
  supports_reasoning_effort: boolean;
}

/** `GET /api/models`. */
export interface ModelsAnswer {
  models: ModelInfo[];
  token_usage: { enabled: boolean };
}

/** The configured models. */
export function listModels(): Promise<ModelsAnswer> {
  return sendJson<ModelsAnswer>("GET", "/api/models");
}

/** `GET /api/suggestions/config`. */
export interface SuggestionsConfig {
  enabled: boolean;
  max_suggestions: number;
}

/** Whether follow-up suggestions are on, and how many to ask for. */
export function suggestionsConfig(): Promise<SuggestionsConfig> {
  return sendJson<SuggestionsConfig>("GET", "/api/suggestions/config");
}

/** Up to `n` follow-up questions for the recent conversation. */
export async function suggestFollowUps(threadId: string, messages: ConversationLine[], n: number): Promise<string[]> {
  const path = `/api/threads/${encodeURIComponent(threadId)}/suggestions`;
  const answer = await sendJson<{ suggestions: unknown }>("POST", path, { json: { messages, n } });
  return Array.isArray(answer.suggestions)
    ? answer.suggestions.filter((entry): entry is string => typeof entry === "string")
    : [];
}

/** How many message rows one history page asks for (the gateway's default). */
export const HISTORY_PAGE_SIZE = 50;

/** One page of a thread's message history: the newest when `beforeSeq` is `null`. */
export async function messagesPage(threadId: string, beforeSeq: number | null): Promise<MessagesPage> {
  const params = new URLSearchParams({ limit: String(HISTORY_PAGE_SIZE) });
  if (beforeSeq !== null) params.set("before_seq", String(beforeSeq));
  const path = `/api/threads/${encodeURIComponent(threadId)}/messages/page?${params.toString()}`;
  return parseMessagesPage(await sendJson<unknown>("GET", path), `GET ${path}`);
}

/** One file a run changed. */
export interface ChangedFile {
  path: string;
  status: string;
  additions: number;
  deletions: number;
}

/** What a run changed under the sandbox roots (`available` is false when nothing was recorded). */
export interface WorkspaceChanges {
  available: boolean;
  summary: { created: number; modified: number; deleted: number; additions: number; deletions: number };
  files: ChangedFile[];
}

/** `GET …/runs/{run_id}/workspace-changes`, without file contents or diffs. */
export function workspaceChanges(threadId: string, runId: string): Promise<WorkspaceChanges> {
  const path = `/api/threads/${encodeURIComponent(threadId)}/runs/${encodeURIComponent(runId)}/workspace-changes?include_files=true&include_diff=false`;
  return sendJson<WorkspaceChanges>("GET", path);
}
