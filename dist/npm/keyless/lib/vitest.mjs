// keyless/vitest: `useKeyless()` in a test file. It uses the `keyless serve` the run's
// globalSetup (keyless/vitest/setup) started and provided, or else starts one for the file (and
// stops it after the file with SIGTERM: it must exit 0, or the file fails with its summary). Each
// test starts with a fresh replay of the fixture named, and fails after it with keyless's
// diagnostic when a model call missed or a recorded turn went unused.
import { afterAll, afterEach, beforeAll, beforeEach, inject } from "vitest";

import { connect, startServe } from "./serve.mjs";

export { connect, startServe } from "./serve.mjs";

/**
 * @param {import("./vitest.d.mts").UseKeylessOptions} [options]
 * @returns {import("./vitest.d.mts").KeylessHandle}
 */
export function useKeyless(options = {}) {
  /** @type {import("./serve.d.mts").KeylessConnection | undefined} */
  let connection;
  /** @type {import("./serve.d.mts").KeylessServer | undefined} */
  let own;
  const current = () => {
    if (connection === undefined) throw new Error("keyless: useKeyless()'s server is reachable inside tests and hooks only");
    return connection;
  };
  beforeAll(async () => {
    const provided = inject("keyless");
    if (provided !== undefined) {
      connection = connect(provided);
    } else {
      own = await startServe(options.serve);
      connection = own;
    }
  }, 60_000);
  afterAll(async () => {
    if (own !== undefined) await own.stopAndCheck();
  }, 30_000);
  beforeEach(async () => {
    if (options.fixture !== undefined) await current().reset(options.fixture);
  });
  afterEach(async () => {
    if (options.fixture !== undefined) await current().check({ allowUnusedTurns: options.allowUnusedTurns });
  });
  return {
    get gatewayUrl() {
      return current().gatewayUrl;
    },
    get modelBaseUrl() {
      return current().modelBaseUrl;
    },
    get server() {
      return current();
    },
  };
}
