import { mkdtempSync, appendFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

import { localTitle } from "./fixtures";
import { missReport, parseReplayLog, readReplayLog, replayLogOffset, unusedTurns } from "./replay-log";

const HIT = (turn: number, caller = "lead_agent") => JSON.stringify({ event: "hit", turn, caller });
const MISS = JSON.stringify({ event: "miss", caller: "suggest_agent", diagnostic: "no recorded turn for suggest_agent\nnearest: turn 3" });

describe("replay log", () => {
  it("reads hits and misses and reports the misses with their diagnostics", () => {
    const events = parseReplayLog([HIT(0), HIT(1), MISS, ""].join("\n"), "log");
    expect(events.map((event) => event.event)).toStrictEqual(["hit", "hit", "miss"]);
    const report = missReport(events, "gw");
    expect(report).toContain("The replay gateway gw missed 1 model call(s)");
    expect(report).toContain("no recorded turn for suggest_agent\nnearest: turn 3");
  });

  it("reports nothing without misses", () => {
    expect(missReport(parseReplayLog(HIT(0), "log"), "gw")).toBe("");
  });

  it.each([
    ["not JSON", "{", /log:2: not JSON/],
    ["an unknown event", JSON.stringify({ event: "skip" }), /log:2: expected/],
    ["a hit without a turn index", JSON.stringify({ event: "hit", caller: "x" }), /log:2: expected/],
  ])("names the line of %s", (_case, line, message) => {
    expect(() => parseReplayLog(`${HIT(0)}\n${line}`, "log")).toThrowError(message);
  });

  it("lists the turns no hit used", () => {
    const turns = [0, 1, 2, 3].map((index) => ({ index, caller: index === 3 ? "suggest_agent" : "lead_agent" }));
    expect(unusedTurns(turns, parseReplayLog([HIT(0), HIT(2), HIT(0)].join("\n"), "log"))).toStrictEqual([turns[1], turns[3]]);
  });

  it("reads only what was appended after an offset", () => {
    const path = join(mkdtempSync(join(tmpdir(), "replay-log-")), "gateway.jsonl");
    expect(replayLogOffset(path)).toBe(0);
    appendFileSync(path, `${HIT(0)}\n`);
    const offset = replayLogOffset(path);
    appendFileSync(path, `${MISS}\n`);
    expect(readReplayLog(path, offset).map((event) => event.event)).toStrictEqual(["miss"]);
    expect(readReplayLog(path).length).toBe(2);
  });
});

describe("localTitle", () => {
  it.each([
    ["What is the capital of France? Answer in one word.", "What is the capital of France? Answer in one word."],
    [
      "Using your own file tools directly, create the file /mnt/user-data/outputs/note.txt",
      "Using your own file tools directly, create the fil...",
    ],
    ["x".repeat(50), "x".repeat(50)],
    [`${"y".repeat(49)} tail`, `${"y".repeat(49)}...`],
    ["   ", "New Conversation"],
  ])("%s → %s", (prompt, title) => {
    expect(localTitle(prompt)).toBe(title);
  });
});
