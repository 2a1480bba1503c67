/** The thread list (newest first, searchable by title), the new-chat button and the session. */

import { useMemo, useState, type MouseEvent, type ReactNode } from "react";

import { visibleThreads, type ThreadSummary } from "../chat/threads";
import { threadPath } from "./route";

export function Sidebar({
  threads,
  loadError,
  activeThreadId,
  account,
  onNavigate,
}: {
  threads: readonly ThreadSummary[];
  loadError: string | null;
  activeThreadId: string | null;
  account: ReactNode;
  onNavigate: (path: string) => void;
}) {
  const [query, setQuery] = useState("");
  const shown = useMemo(() => visibleThreads(threads, query), [threads, query]);
  const follow = (event: MouseEvent<HTMLAnchorElement>, path: string) => {
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
    event.preventDefault();
    onNavigate(path);
  };
  return (
    <nav className="sidebar" aria-label="Threads">
      <a className="new-chat" href="/" onClick={(event) => follow(event, "/")}>
        New chat
      </a>
      <input
        type="search"
        aria-label="Search threads"
        placeholder="Search threads"
        value={query}
        onChange={(event) => setQuery(event.target.value)}
      />
      {loadError !== null && <p role="alert">Threads could not be loaded: {loadError}</p>}
      <ul className="thread-list">
        {shown.map((thread) => {
          const path = threadPath(thread.threadId);
          return (
            <li key={thread.threadId}>
              <a
                href={path}
                aria-current={thread.threadId === activeThreadId ? "page" : undefined}
                onClick={(event) => follow(event, path)}
              >
                {thread.title ?? "Untitled chat"}
              </a>
            </li>
          );
        })}
        {shown.length === 0 && loadError === null && (
          <li className="empty">{query === "" ? "No chats yet" : "No chat matches"}</li>
        )}
      </ul>
      <div className="account">{account}</div>
    </nav>
  );
}

