/**
 * Rebuilding a thread's history from `GET /api/threads/{id}/messages/page`, the only source of
 * history for a thread whose runs have no checkpoint (a compacted or seeded thread).
 *
 * The contract: each page holds the newest `limit` message rows before the cursor, in ascending
 * `seq`, and `next_before_seq` points at the next older page. So the client asks for pages newest
 * first and puts each older page *in front of* what it has. Getting either side of this wrong
 * shows the runs of a reloaded thread in reverse (DeerFlow's issue #3352), so the rebuild checks
 * the result and names the side at fault instead of rendering a wrong order.
 */

import { asMessage, type Message } from "./messages";

/** One message row of `messages/page`. */
export interface MessageRow {
  thread_id: string;
  run_id: string;
  event_type: string;
  category: string;
  content: Message;
  metadata: Record<string, unknown>;
  seq: number;
  created_at: string;
}

/** One page of `messages/page`. */
export interface MessagesPage {
  data: MessageRow[];
  has_more: boolean;
  next_before_seq: number | null;
}

/** The history cannot be rebuilt: the gateway's pages break the contract. */
export class HistoryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "HistoryError";
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function parseRow(value: unknown, where: string): MessageRow {
  if (!isRecord(value)) throw new HistoryError(`${where}: not an object`);
  const content = asMessage(value.content);
  if (content === null) throw new HistoryError(`${where}.content: not a message dump`);
  if (typeof value.seq !== "number" || !Number.isInteger(value.seq)) {
    throw new HistoryError(`${where}.seq: not an integer`);
  }
  if (typeof value.run_id !== "string") throw new HistoryError(`${where}.run_id: not a string`);
  return {
    thread_id: typeof value.thread_id === "string" ? value.thread_id : "",
    run_id: value.run_id,
    event_type: typeof value.event_type === "string" ? value.event_type : "",
    category: typeof value.category === "string" ? value.category : "",
    content,
    metadata: isRecord(value.metadata) ? value.metadata : {},
    seq: value.seq,
    created_at: typeof value.created_at === "string" ? value.created_at : "",
  };
}

/** Checks the shape of a `messages/page` answer; errors name the route and the field. */
export function parseMessagesPage(value: unknown, route: string): MessagesPage {
  if (!isRecord(value) || !Array.isArray(value.data) || typeof value.has_more !== "boolean") {
    throw new HistoryError(`${route}: expected {"data": [...], "has_more": bool, "next_before_seq": int|null}`);
  }
  const next = value.next_before_seq;
  if (next !== null && next !== undefined && typeof next !== "number") {
    throw new HistoryError(`${route}: next_before_seq must be an integer or null`);
  }
  return {
    data: value.data.map((row, index) => parseRow(row, `${route}: data[${index}]`)),
    has_more: value.has_more,
    next_before_seq: typeof next === "number" ? next : null,
  };
}

/**
 * The rows of `pages` (as fetched: newest page first) in conversation order. Each older page
 * goes in front; the result must then ascend strictly in `seq`, or the gateway broke the
 * contract and a `HistoryError` says where.
 */
export function rebuildHistory(pagesNewestFirst: readonly MessagesPage[]): MessageRow[] {
  let rows: MessageRow[] = [];
  for (const page of pagesNewestFirst) rows = [...page.data, ...rows];
  for (let index = 1; index < rows.length; index += 1) {
    const before = rows[index - 1];
    const after = rows[index];
    if (before !== undefined && after !== undefined && after.seq <= before.seq) {
      throw new HistoryError(
        `messages/page rows are out of order: seq ${before.seq} (run ${before.run_id}) comes before ` +
          `seq ${after.seq} (run ${after.run_id}); each page must ascend in seq and pages must come newest first`,
      );
    }
  }
  return rows;
}

/** Fetches one page: the newest when `beforeSeq` is `null`. */
export type PageFetcher = (beforeSeq: number | null) => Promise<MessagesPage>;

/** What `loadHistory` found. */
export interface LoadedHistory {
  rows: MessageRow[];
  /** Older rows exist beyond `maxPages`. */
  truncated: boolean;
}

/** Fetches pages newest first until there are no more (or `maxPages`), then rebuilds. */
export async function loadHistory(fetchPage: PageFetcher, maxPages = 40): Promise<LoadedHistory> {
  const pages: MessagesPage[] = [];
  let cursor: number | null = null;
  do {
    const page = await fetchPage(cursor);
    pages.push(page);
    if (!page.has_more) return { rows: rebuildHistory(pages), truncated: false };
    if (page.next_before_seq === null || (cursor !== null && page.next_before_seq >= cursor)) {
      throw new HistoryError(
        `messages/page: has_more is true but next_before_seq (${String(page.next_before_seq)}) does not move ` +
          `back from the cursor (${String(cursor)})`,
      );
    }
    cursor = page.next_before_seq;
  } while (pages.length < maxPages);
  return { rows: rebuildHistory(pages), truncated: true };
}
