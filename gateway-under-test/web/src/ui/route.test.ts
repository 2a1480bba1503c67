import { describe, expect, it } from "vitest";

import { parseRoute, threadPath } from "./route";

describe("routes", () => {
  it.each([
    ["/", null],
    ["/chats/abc", "abc"],
    ["/chats/abc/", "abc"],
    ["/chats/e2e-multi-run-1", "e2e-multi-run-1"],
    ["/chats/", null],
    ["/chats/a/b", null],
    ["/elsewhere", null],
  ])("%s opens thread %s", (path, threadId) => {
    expect(parseRoute(path).threadId).toBe(threadId);
  });

  it("round-trips any thread id", () => {
    expect(parseRoute(threadPath("a b/c")).threadId).toBe("a b/c");
  });
});
