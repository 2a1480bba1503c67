/**
 * The LangGraph SDK client for the gateway on the page's own origin: threads and runs go
 * through it (and `useStream` uses it), with the CSRF header added to every mutating request.
 */

import { Client } from "@langchain/langgraph-sdk";

import { withCsrf } from "./csrf";

/** Where the client's cookies and `fetch` come from; the page's own unless a test says. */
export interface ClientEnvironment {
  cookies: () => string;
  fetch?: typeof fetch;
}

const PAGE: ClientEnvironment = { cookies: () => document.cookie };

/** A client for the gateway at `origin` (`<origin>/api`). */
export function createGatewayClient(origin: string, environment: ClientEnvironment = PAGE): Client {
  return new Client({
    apiUrl: `${origin}/api`,
    // No LangSmith key: the gateway authenticates with its session cookie.
    apiKey: null,
    onRequest: (_url, init) => withCsrf(init, environment.cookies()),
    ...(environment.fetch === undefined ? {} : { callerOptions: { fetch: environment.fetch, maxRetries: 0 } }),
  });
}
