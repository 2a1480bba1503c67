import { describe, expect, it } from "vitest";

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
} from "./conversation";
import type { MessageRow } from "./history";
import type { Message } from "./messages";

const usage = (total: number) => ({ input_tokens: total - 10, output_tokens: 10, total_tokens: total });

/** One write/read-file run as the gateway's `values` state holds it. */
function writeReadRun(runId: string, prompt: string): Message[] {
  return [
    {
      type: "system",
      id: `${runId}-reminder`,
      content: "<system-reminder>date</system-reminder>",
      additional_kwargs: { hide_from_ui: true },
    },
    {
      type: "human",
      id: `${runId}-in__user`,
      name: "user-input",
      content: [{ type: "text", text: prompt }],
      additional_kwargs: { run_id: runId },
    },
    {
      type: "ai",
      id: `${runId}-a1`,
      content: "",
      tool_calls: [{ id: `${runId}-c1`, name: "write_file", args: { path: "/o/note.txt", content: "hi", description: "Write it" } }],
      usage_metadata: usage(111),
    },
    { type: "tool", id: `${runId}-t1`, tool_call_id: `${runId}-c1`, name: "write_file", content: "OK", status: "success" },
    {
      type: "ai",
      id: `${runId}-a2`,
      content: "",
      tool_calls: [{ id: `${runId}-c2`, name: "read_file", args: { path: "/o/note.txt" } }],
      usage_metadata: usage(112),
    },
    { type: "tool", id: `${runId}-t2`, tool_call_id: `${runId}-c2`, name: "read_file", content: "hi", status: "success" },
    { type: "ai", id: `${runId}-a3`, content: "It says **hi**.", usage_metadata: usage(113) },
  ];
}

const summary = (runs: RunView[]) =>
  runs.map((run) => ({
    runId: run.runId,
    items: run.items.map((item) =>
      item.kind === "tool" ? `tool:${item.name}=${item.result ?? "…"}` : `${item.kind}:${item.text}`,
    ),
    duration: run.durationSeconds,
    tokens: run.totalTokens,
  }));

describe("runsFromMessages (stream state)", () => {
  it("splits runs at visible human messages and pairs tool calls with their results", () => {
    const runs = runsFromMessages([...writeReadRun("r1", "first"), ...writeReadRun("r2", "second")]);
    expect(summary(runs)).toStrictEqual(
      ["r1", "r2"].map((runId, index) => ({
        runId,
        items: [`human:${index === 0 ? "first" : "second"}`, "tool:write_file=OK", "tool:read_file=hi", "ai:It says **hi**."],
        duration: null,
        tokens: 336,
      })),
    );
  });

  it("keeps a tool step running until its result arrives, with its arguments", () => {
    const [run] = runsFromMessages(writeReadRun("r1", "p").slice(0, 3));
    expect(run?.items.at(-1)).toStrictEqual({
      kind: "tool",
      key: "r1-c1",
      name: "write_file",
      args: { path: "/o/note.txt", content: "hi", description: "Write it" },
      result: null,
      status: "running",
    });
  });

  it("marks the gateway's error fallback as a failure, not an answer", () => {
    const runs = runsFromMessages([
      { type: "human", content: "Summarise", additional_kwargs: { run_id: "r1" } },
      {
        type: "ai",
        id: "f",
        content: "LLM request failed: Error code: 400",
        additional_kwargs: { deerflow_error_fallback: true, error_type: "BadRequestError", error_reason: "generic" },
      },
    ]);
    expect(runs[0]?.items[1]).toStrictEqual({
      kind: "ai",
      key: "f",
      text: "LLM request failed: Error code: 400",
      failure: { type: "BadRequestError", reason: "generic" },
    });
  });

  it("gives an optimistic human message (no stamped run id) a run of its own", () => {
    const runs = runsFromMessages([...writeReadRun("r1", "first"), { type: "human", content: [{ type: "text", text: "next" }] }]);
    expect(summary(runs).map((run) => [run.runId, run.items])).toStrictEqual([
      ["r1", ["human:first", "tool:write_file=OK", "tool:read_file=hi", "ai:It says **hi**."]],
      [null, ["human:next"]],
    ]);
  });
});

function rowsOf(runId: string, messages: Message[], firstSeq: number): MessageRow[] {
  return messages.map((content, index) => ({
    thread_id: "t",
    run_id: runId,
    event_type: "message",
    category: "message",
    content,
    metadata: {},
    seq: firstSeq + index,
    created_at: "",
  }));
}

describe("runsFromRows (history)", () => {
  it("makes one run per run_id and takes turn_duration from the last AI row", () => {
    const withDuration = writeReadRun("r2", "second");
    const last = withDuration.at(-1);
    if (last === undefined) throw new Error("empty run");
    withDuration[withDuration.length - 1] = { ...last, additional_kwargs: { turn_duration: 2.5 } };
    const runs = runsFromRows([...rowsOf("r1", writeReadRun("r1", "first"), 1), ...rowsOf("r2", withDuration, 20)]);
    expect(summary(runs).map((run) => [run.runId, run.items[0], run.duration])).toStrictEqual([
      ["r1", "human:first", null],
      ["r2", "human:second", 2.5],
    ]);
  });
});

describe("mergeRuns", () => {
  const run = (runId: string | null, text: string, durationSeconds: number | null = null): RunView => ({
    runId,
    items: [{ kind: "human", key: text, text }],
    durationSeconds,
    totalTokens: null,
  });

  it("keeps history's order, the stream's items and history's duration, then the running run", () => {
    const merged = mergeRuns(
      [run("r1", "old", 1), run("r2", "journal", 2)],
      [run("r2", "streamed"), run(null, "typing")],
    );
    expect(summary(merged).map((entry) => [entry.runId, entry.items, entry.duration])).toStrictEqual([
      ["r1", ["human:old"], 1],
      ["r2", ["human:streamed"], 2],
      [null, ["human:typing"], null],
    ]);
  });
});

describe("recentConversation", () => {
  it("carries the last six texts, without tool-call turns", () => {
    const runs = runsFromMessages([...writeReadRun("r1", "one"), ...writeReadRun("r2", "two"), ...writeReadRun("r3", "three"), ...writeReadRun("r4", "four")]);
    expect(recentConversation(runs)).toStrictEqual([
      { role: "user", content: "two" },
      { role: "assistant", content: "It says **hi**." },
      { role: "user", content: "three" },
      { role: "assistant", content: "It says **hi**." },
      { role: "user", content: "four" },
      { role: "assistant", content: "It says **hi**." },
    ]);
  });
});

describe("stream activity", () => {
  it.each([
    [[["updates", { model: {} }]], "The model is answering…"],
    [[["updates", { tools: {} }]], "Running tools…"],
    [[["updates", { "TitleMiddleware.after_model": {} }]], "Working: TitleMiddleware.after_model…"],
    [
      [
        ["updates", { model: {} }],
        ["custom", { type: "llm_retry", attempt: 1, max_attempts: 3, reason: "transient" }],
      ],
      "The model call failed (transient); retrying, attempt 2 of 3…",
    ],
    [
      [
        ["custom", { type: "llm_retry", attempt: 1, max_attempts: 3, reason: "busy" }],
        ["updates", { model: {} }],
      ],
      "The model is answering…",
    ],
    [[["custom", { type: "progress" }]], "Starting…"],
    [[["updates", { __input__: {} }]], "Starting…"],
    [
      [
        ["updates", { tools: {} }],
        ["updates", { __interrupt__: [] }],
      ],
      "Running tools…",
    ],
    [[["updates", null]], "Starting…"],
    [
      [
        ["updates", { model: {} }],
        ["updates", { "SafetyFinishReasonMiddleware.after_model": null }],
        ["updates", { "LoopDetectionMiddleware.after_model": null }],
      ],
      "The model is answering…",
    ],
    [
      [
        ["updates", { "SandboxMiddleware.before_agent": null }],
        ["updates", { "DynamicContextMiddleware.before_agent": {} }],
      ],
      "Working: DynamicContextMiddleware.before_agent…",
    ],
  ] as const)("%j reads %s", (events, expected) => {
    const activity = events.reduce(
      (current, [kind, data]) => (kind === "updates" ? afterUpdate(current, data) : afterCustom(current, data)),
      IDLE_ACTIVITY,
    );
    expect(describeActivity(activity)).toBe(expected);
  });
});
