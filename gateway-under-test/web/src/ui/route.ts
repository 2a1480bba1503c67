/**
 * The client's two pages, addressed by path so a thread can be bookmarked and reloaded:
 * `/` is a new chat and `/chats/<thread id>` an existing one. The gateway serves `index.html`
 * for both (SPA fallback).
 */

import { useCallback, useEffect, useState } from "react";

/** Where the page is. */
export interface Route {
  /** The open thread, or `null` for a new chat. */
  threadId: string | null;
}

/** The route of `pathname`; anything unknown is a new chat. */
export function parseRoute(pathname: string): Route {
  const match = /^\/chats\/([^/]+)\/?$/.exec(pathname);
  return { threadId: match?.[1] !== undefined ? decodeURIComponent(match[1]) : null };
}

/** The path of a thread's page. */
export function threadPath(threadId: string): string {
  return `/chats/${encodeURIComponent(threadId)}`;
}

/** The current route and a way to move (`replace` keeps the history entry, for a new thread). */
export function useRoute(): [Route, (path: string, options?: { replace?: boolean }) => void] {
  const [route, setRoute] = useState(() => parseRoute(window.location.pathname));
  useEffect(() => {
    const onPop = () => setRoute(parseRoute(window.location.pathname));
    window.addEventListener("popstate", onPop);
    return () => window.removeEventListener("popstate", onPop);
  }, []);
  const navigate = useCallback((path: string, options?: { replace?: boolean }) => {
    if (options?.replace === true) window.history.replaceState(null, "", path);
    else window.history.pushState(null, "", path);
    setRoute(parseRoute(path));
  }, []);
  return [route, navigate];
}
