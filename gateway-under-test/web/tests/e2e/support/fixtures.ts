/**
 * The fixtures in `fixtures/`, read the way a browser test needs them: what to send (mode,
 * prompt, follow-ups) and what the page must then show (answers, tool steps, title, first
 * suggestion, error). Adding a fixture file adds a render case.
 */

import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

import { FIXTURES_DIR } from "./env";

interface ToolCall {
  name: string;
  args: Record<string, unknown>;
}

interface Turn {
  caller: string;
  output?: { data?: { content?: unknown; tool_calls?: ToolCall[] } } | null;
  error?: { type?: string; message?: string } | null;
}

interface FixtureFile {
  scenario: string;
  mode: string;
  prompt: string;
  followups?: string[];
  turns: Turn[];
}

/** A tool call the page must show as a step. */
export interface ExpectedStep {
  name: string;
  /** The string arguments, each of which the step shows. */
  texts: string[];
}

/** What one fixture sends and what the page must show for it. */
export interface RenderCase {
  /** The file name in `fixtures/`. */
  file: string;
  /** `<scenario>.<mode>`. */
  stem: string;
  mode: string;
  prompts: string[];
  finalAnswers: string[];
  steps: ExpectedStep[];
  title: string;
  /** The first question of the suggestions recorded after the last run (the chips left shown). */
  firstSuggestion: string | null;
  /** The recorded model error, whose fallback the page shows as an error. */
  error: string | null;
}

function text(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((block: { text?: unknown }) => (typeof block.text === "string" ? block.text : "")).join("");
  }
  return "";
}

/** The gateway's local title for a prompt (`docs/gateway-contract.md` §9, default `max_chars` 60). */
export function localTitle(prompt: string): string {
  const trimmed = prompt.trim();
  if (trimmed === "") return "New Conversation";
  return trimmed.length > 50 ? `${trimmed.slice(0, 50).trimEnd()}...` : trimmed;
}

function modelTitle(turns: Turn[]): string | null {
  const turn = turns.find((entry) => entry.caller === "middleware:title" && entry.output);
  if (turn === undefined) return null;
  return text(turn.output?.data?.content).trim().replace(/^["']|["']$/g, "").slice(0, 60);
}

/**
 * The first question of the last recorded suggestions: the client asks after every run, and
 * the chips after the last run are the ones left on the page.
 */
function firstSuggestion(turns: Turn[]): string | null {
  const turn = turns.findLast((entry) => entry.caller === "suggest_agent");
  const reply = text(turn?.output?.data?.content);
  const start = reply.indexOf("[");
  const end = reply.lastIndexOf("]");
  if (start < 0 || end < start) return null;
  const parsed: unknown = JSON.parse(reply.slice(start, end + 1));
  return Array.isArray(parsed) && typeof parsed[0] === "string" ? parsed[0] : null;
}

function toCase(file: string, fixture: FixtureFile): RenderCase {
  const lead = fixture.turns.filter((turn) => turn.caller === "lead_agent");
  const steps = lead.flatMap((turn) =>
    (turn.output?.data?.tool_calls ?? []).map((call) => ({
      name: call.name,
      texts: Object.values(call.args).filter((value): value is string => typeof value === "string"),
    })),
  );
  const finalAnswers = lead
    .filter((turn) => (turn.output?.data?.tool_calls ?? []).length === 0)
    .map((turn) => text(turn.output?.data?.content))
    .filter((answer) => answer.trim() !== "");
  const error = lead.find((turn) => turn.error)?.error?.message ?? null;
  return {
    file,
    stem: file.replace(/\.json$/, ""),
    mode: fixture.mode,
    prompts: [fixture.prompt, ...(fixture.followups ?? [])],
    finalAnswers,
    steps,
    title: modelTitle(fixture.turns) ?? localTitle(fixture.prompt),
    firstSuggestion: firstSuggestion(fixture.turns),
    error,
  };
}

/** Every fixture, as a render case, in file-name order. */
export function renderCases(): RenderCase[] {
  return readdirSync(FIXTURES_DIR)
    .filter((file) => file.endsWith(".json"))
    .sort()
    .map((file) => toCase(file, JSON.parse(readFileSync(join(FIXTURES_DIR, file), "utf8")) as FixtureFile));
}

/** The render case of `fixtures/<file>`. */
export function renderCase(file: string): RenderCase {
  const found = renderCases().find((candidate) => candidate.file === file);
  if (found === undefined) throw new Error(`fixtures/${file} does not exist`);
  return found;
}

/** How many turns the fixture `file` recorded, by index, with their callers. */
export function recordedTurns(file: string): { index: number; caller: string }[] {
  const fixture = JSON.parse(readFileSync(join(FIXTURES_DIR, file), "utf8")) as FixtureFile;
  return fixture.turns.map((turn, index) => ({ index, caller: turn.caller }));
}
