// keyless/playwright: Playwright's `test` with keyless in it. Each worker starts its own
// `keyless serve` (free ports, the folder of playwright.config as its configuration), so tests
// in several workers never switch each other's fixture; `baseURL` is that worker's gateway. Each
// test that names a fixture (`test.use({ keylessFixture })`) starts with a fresh replay of it,
// and fails after it with keyless's diagnostic when a model call missed or a recorded turn went
// unused. `keylessServe: null` starts none (a suite whose webServer runs keyless itself, e.g.
// `keyless record --serve`). At the worker's end keyless gets SIGTERM (never Playwright's SIGKILL), prints its
// summary and must exit 0, or the run fails with that summary.
import { dirname } from "node:path";

import { test as base, expect } from "@playwright/test";

import { startServe } from "./serve.mjs";

export { expect };
export { connect, startServe } from "./serve.mjs";

export const test = base.extend({
  keylessServe: [{}, { scope: "worker", option: true }],
  keylessFixture: [undefined, { option: true }],
  keylessAllowUnusedTurns: [false, { option: true }],
  keylessServer: [
    async ({ keylessServe }, use, workerInfo) => {
      if (keylessServe === null) {
        await use(undefined);
        return;
      }
      const root = workerInfo.config.configFile ? dirname(workerInfo.config.configFile) : process.cwd();
      const server = await startServe({
        cwd: root,
        // One log folder per parallel worker: two gateways never write one file.
        logs: `.keyless/logs/playwright-worker-${workerInfo.parallelIndex}`,
        ...keylessServe,
      });
      await use(server);
      await server.stopAndCheck();
    },
    { scope: "worker", timeout: 60_000 },
  ],
  baseURL: async ({ baseURL, keylessServer }, use) => {
    await use(keylessServer?.gatewayUrl ?? baseURL);
  },
  keyless: [
    async ({ keylessServer, keylessFixture, keylessAllowUnusedTurns }, use) => {
      if (keylessServer === undefined || keylessFixture === undefined) {
        await use(keylessServer);
        return;
      }
      await keylessServer.reset(keylessFixture);
      await use(keylessServer);
      await keylessServer.check({ allowUnusedTurns: keylessAllowUnusedTurns });
    },
    { auto: true },
  ],
});
