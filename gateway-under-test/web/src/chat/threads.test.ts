import { describe, expect, it } from "vitest";

import { visibleThreads, type ThreadSummary } from "./threads";

const THREADS: ThreadSummary[] = [
  { threadId: "a", title: "Capital of France", updatedAt: "2026-01-01T10:00:00+00:00" },
  { threadId: "b", title: "Shopping list", updatedAt: "2026-01-03T10:00:00+00:00" },
  { threadId: "c", title: null, updatedAt: "2026-01-02T10:00:00+00:00" },
  { threadId: "d", title: "france travel", updatedAt: "2026-01-04T10:00:00+00:00" },
];

describe("visibleThreads", () => {
  it.each([
    ["", ["d", "b", "c", "a"]],
    ["  ", ["d", "b", "c", "a"]],
    ["FRANCE", ["d", "a"]],
    ["list", ["b"]],
    ["untitled", []],
  ])("search %j shows %j, newest first", (query, ids) => {
    expect(visibleThreads(THREADS, query).map((thread) => thread.threadId)).toStrictEqual(ids);
  });

  it("leaves the given list as it was", () => {
    const before = THREADS.map((thread) => thread.threadId);
    visibleThreads(THREADS, "");
    expect(THREADS.map((thread) => thread.threadId)).toStrictEqual(before);
  });
});
