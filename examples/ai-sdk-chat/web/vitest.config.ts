/**
 * The Vitest suite (`npm run test:client`): the AI SDK's own client against the chat route,
 * replayed by one `keyless serve` for the run (tests/keyless-setup.ts, keyless/vitest/setup), each
 * test reset to its fixture and checked after it (useKeyless, keyless/vitest). The browser suite
 * (`*.spec.ts`) is Playwright's.
 */

import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["tests/**/*.test.ts"],
    globalSetup: ["tests/keyless-setup.ts"],
    // One keyless serve for the run, whose fixture each test switches: files take turns.
    fileParallelism: false,
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
