import { describe, expect, it } from "vitest";

import { HistoryError, loadHistory, parseMessagesPage, rebuildHistory, type MessageRow, type MessagesPage } from "./history";

function row(seq: number, runId: string, type: "human" | "ai" = "human"): MessageRow {
  return {
    thread_id: "t",
    run_id: runId,
    event_type: type === "human" ? "llm.human.input" : "llm.ai.response",
    category: "message",
    content: { type, content: `${runId}#${seq}` },
    metadata: { caller: "lead_agent" },
    seq,
    created_at: "2026-01-01T00:00:00+00:00",
  };
}

/** The pages a contract-abiding gateway answers for `rows` (ascending), newest page first. */
function pagesOf(rows: MessageRow[], limit: number): MessagesPage[] {
  const pages: MessagesPage[] = [];
  let end = rows.length;
  while (end > 0) {
    const start = Math.max(0, end - limit);
    const data = rows.slice(start, end);
    const hasMore = start > 0;
    pages.push({ data, has_more: hasMore, next_before_seq: hasMore ? (data[0]?.seq ?? null) : null });
    end = start;
  }
  return pages;
}

const ROWS = [row(1, "r1"), row(2, "r1", "ai"), row(3, "r2"), row(4, "r2", "ai"), row(7, "r3"), row(9, "r3", "ai")];
const seqs = (rows: MessageRow[]) => rows.map((entry) => entry.seq);

describe("rebuildHistory", () => {
  it.each([1, 2, 3, 4, 6, 50])("puts pages of %i rows back in conversation order", (limit) => {
    expect(seqs(rebuildHistory(pagesOf(ROWS, limit)))).toStrictEqual([1, 2, 3, 4, 7, 9]);
  });

  it("names both sides when a page comes back newest first (gateway order)", () => {
    const reversed = pagesOf(ROWS, 50).map((page) => ({ ...page, data: [...page.data].reverse() }));
    expect(() => rebuildHistory(reversed)).toThrowError(
      /out of order: seq 9 \(run r3\) comes before seq 7 \(run r3\); each page must ascend in seq and pages must come newest first/,
    );
  });

  it("fails when the pages are given oldest first (a client appending instead of prepending)", () => {
    expect(() => rebuildHistory(pagesOf(ROWS, 2).reverse())).toThrowError(HistoryError);
  });

  it("fails on a repeated seq", () => {
    expect(() => rebuildHistory([{ data: [row(1, "r1"), row(1, "r1")], has_more: false, next_before_seq: null }])).toThrowError(
      /seq 1 \(run r1\) comes before seq 1/,
    );
  });
});

describe("loadHistory", () => {
  it("follows next_before_seq until has_more is false", async () => {
    const pages = pagesOf(ROWS, 2);
    const cursors: (number | null)[] = [];
    const loaded = await loadHistory((before) => {
      cursors.push(before);
      const page = pages[cursors.length - 1];
      if (page === undefined) throw new Error("asked for a page past the last");
      return Promise.resolve(page);
    });
    expect(cursors).toStrictEqual([null, 7, 3]);
    expect(seqs(loaded.rows)).toStrictEqual([1, 2, 3, 4, 7, 9]);
    expect(loaded.truncated).toBe(false);
  });

  it("stops at maxPages and says the history is truncated", async () => {
    const pages = pagesOf(ROWS, 2);
    let calls = 0;
    const loaded = await loadHistory(() => Promise.resolve(pages[calls++] as MessagesPage), 2);
    expect(seqs(loaded.rows)).toStrictEqual([3, 4, 7, 9]);
    expect(loaded.truncated).toBe(true);
  });

  it.each([
    ["null", null],
    ["not moving back", 9],
  ])("refuses has_more with a next_before_seq that is %s", async (_case, next) => {
    const page: MessagesPage = { data: [row(7, "r3"), row(9, "r3")], has_more: true, next_before_seq: next };
    await expect(loadHistory((before) => Promise.resolve(before === null ? page : { ...page, next_before_seq: 9 }))).rejects.toThrowError(
      /has_more is true but next_before_seq/,
    );
  });
});

describe("parseMessagesPage", () => {
  it("accepts the contract's shape", () => {
    const page = parseMessagesPage({ data: [row(1, "r1")], has_more: false, next_before_seq: null }, "GET /page");
    expect(seqs(page.data)).toStrictEqual([1]);
  });

  it.each([
    ["a list instead of the envelope", [], /GET \/page: expected \{"data"/],
    ["a row without seq", { data: [{ run_id: "r", content: { type: "human", content: "x" } }], has_more: false }, /data\[0\]\.seq: not an integer/],
    ["a row whose content is no message", { data: [{ run_id: "r", seq: 1, content: "x" }], has_more: false }, /data\[0\]\.content: not a message dump/],
    ["a string cursor", { data: [], has_more: true, next_before_seq: "4" }, /next_before_seq must be an integer or null/],
  ])("names the field for %s", (_case, value, message) => {
    expect(() => parseMessagesPage(value, "GET /page")).toThrowError(message);
  });
});
