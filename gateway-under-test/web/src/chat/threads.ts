/** The thread list as the sidebar shows it: titles, newest first, filtered by a search. */

/** A thread as the sidebar lists it. */
export interface ThreadSummary {
  threadId: string;
  title: string | null;
  /** ISO 8601, as the gateway writes it (one shape, so strings order as times). */
  updatedAt: string;
}

/** The threads whose title contains `query` (case-insensitive), newest first. */
export function visibleThreads(threads: readonly ThreadSummary[], query: string): ThreadSummary[] {
  const needle = query.trim().toLowerCase();
  return threads
    .filter((thread) => needle === "" || (thread.title ?? "").toLowerCase().includes(needle))
    .sort((a, b) => (a.updatedAt < b.updatedAt ? 1 : a.updatedAt > b.updatedAt ? -1 : 0));
}
