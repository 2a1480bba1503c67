// keyless/vitest/setup: a Vitest globalSetup that starts one `keyless serve` for the run and
// `provide`s its URLs (`inject("keyless")`, which useKeyless() reads). At the run's end keyless
// gets SIGTERM, prints its summary, and must exit 0, or the run fails with that summary. One
// server for the run: files that reset it to different fixtures must not run at once
// (`fileParallelism: false`), or let each file start its own (useKeyless without this setup).
import { startServe } from "./serve.mjs";

/**
 * @param {import("./serve.d.mts").ServeOptions} [options]
 */
export function keylessGlobalSetup(options = {}) {
  return async (project) => {
    const server = await startServe(options);
    const { gatewayUrl, modelBaseUrl, modelServerUrl, fixture, fixtures, resetToken } = server;
    project.provide("keyless", { gatewayUrl, modelBaseUrl, modelServerUrl, fixture, fixtures, resetToken });
    return async () => {
      await server.stopAndCheck();
    };
  };
}
