/**
 * Before any spec: every gateway answers `/health`, serves the built client at `/`, and keeps a
 * replay log (without one a miss could pass unseen, so that is an error unless
 * `E2E_ALLOW_UNCHECKED_MISSES=1` says the person running the suite knows).
 */

import { gateways } from "./env";

async function check(url: string, what: string, accept: (body: string) => boolean): Promise<void> {
  let response: globalThis.Response;
  try {
    response = await fetch(url);
  } catch (error) {
    throw new Error(
      `${what}: ${url} cannot be reached (${error instanceof Error ? error.message : String(error)}); is the replay gateway running?`,
      { cause: error },
    );
  }
  const body = await response.text();
  if (!response.ok || !accept(body)) {
    throw new Error(`${what}: ${url} answered ${response.status}: ${body.slice(0, 200)}`);
  }
}

export default async function globalSetup(): Promise<void> {
  for (const gateway of gateways()) {
    await check(`${gateway.baseUrl}/health`, `gateway ${gateway.name}`, () => true);
    await check(`${gateway.baseUrl}/`, `gateway ${gateway.name} must serve the web client (server.web_dir)`, (body) =>
      body.includes('<div id="root">'),
    );
    if (gateway.replayLog === null) {
      const note = `gateway ${gateway.name} keeps no replay log, so replay misses cannot be checked`;
      if (process.env.E2E_ALLOW_UNCHECKED_MISSES !== "1") {
        throw new Error(`${note}; give it one (replay_log in E2E_GATEWAYS, or E2E_REPLAY_LOG) or set E2E_ALLOW_UNCHECKED_MISSES=1`);
      }
      console.warn(`warning: ${note} (E2E_ALLOW_UNCHECKED_MISSES=1)`);
    }
  }
}
