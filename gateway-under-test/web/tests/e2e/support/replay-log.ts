/**
 * The replay gateway's log of what replay did, one JSON object per line, appended the moment it
 * happens (the same miss also goes to the gateway's stderr):
 *
 * - `{"event": "hit", "turn": <index in the fixture's turns>, "caller": "<caller>"}`
 * - `{"event": "miss", "caller": "<caller>", "diagnostic": "<the miss message: nearest turn, first difference>"}`
 *
 * The suite reads it after each test (a miss fails that test, with the diagnostic) and at the
 * end (misses fail the run; turns no test used are listed).
 */

import { existsSync, readFileSync, statSync } from "node:fs";

/** One line of a replay log. */
export type ReplayEvent =
  | { event: "hit"; turn: number; caller: string }
  | { event: "miss"; caller: string; diagnostic: string };

/** Parses replay log text; a line that is not an event is an error naming the line. */
export function parseReplayLog(text: string, source: string): ReplayEvent[] {
  const events: ReplayEvent[] = [];
  text.split("\n").forEach((line, index) => {
    if (line.trim() === "") return;
    const where = `${source}:${index + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      throw new Error(`${where}: not JSON: ${line.slice(0, 120)}`);
    }
    const record = (typeof value === "object" && value !== null ? value : {}) as Record<string, unknown>;
    if (record.event === "hit" && Number.isInteger(record.turn) && typeof record.caller === "string") {
      events.push({ event: "hit", turn: record.turn as number, caller: record.caller });
    } else if (record.event === "miss" && typeof record.caller === "string" && typeof record.diagnostic === "string") {
      events.push({ event: "miss", caller: record.caller, diagnostic: record.diagnostic });
    } else {
      throw new Error(`${where}: expected {"event": "hit", "turn", "caller"} or {"event": "miss", "caller", "diagnostic"}`);
    }
  });
  return events;
}

/** The log's size now, so a test can read only what it caused. */
export function replayLogOffset(path: string): number {
  return existsSync(path) ? statSync(path).size : 0;
}

/** The events appended to the log at `path` since `offset`. */
export function readReplayLog(path: string, offset = 0): ReplayEvent[] {
  if (!existsSync(path)) return [];
  return parseReplayLog(readFileSync(path).subarray(offset).toString("utf8"), path);
}

/** The misses among `events`, as one report (empty when there are none). */
export function missReport(events: readonly ReplayEvent[], gateway: string): string {
  const misses = events.filter((event) => event.event === "miss");
  if (misses.length === 0) return "";
  const details = misses.map((miss, index) => `--- miss ${index + 1} of ${misses.length} (caller ${miss.caller}) ---\n${miss.diagnostic}`);
  return `The replay gateway ${gateway} missed ${misses.length} model call(s): the page drove a conversation the fixture did not record.\n${details.join("\n")}`;
}

/** The recorded turns no hit used. */
export function unusedTurns<T extends { index: number }>(turns: readonly T[], events: readonly ReplayEvent[]): T[] {
  const used = new Set(events.flatMap((event) => (event.event === "hit" ? [event.turn] : [])));
  return turns.filter((turn) => !used.has(turn.index));
}
