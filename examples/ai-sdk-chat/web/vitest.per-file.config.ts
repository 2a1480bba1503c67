/**
 * The Vitest suite with no globalSetup (`npx vitest run -c vitest.per-file.config.ts`): each
 * useKeyless() block then starts its own `keyless serve` and stops it after its tests, so the
 * blocks and files may run at once. check.sh runs the suite both ways.
 */

import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["tests/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
