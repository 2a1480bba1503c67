/**
 * Layer 2: the web client, served by a replay gateway, in Debian's Chromium. The gateways come
 * from `E2E_GATEWAYS` or `E2E_BASE_URL` (tests/e2e/support/env.ts); the report, screenshots and
 * traces go to `target/e2e` (or `E2E_OUTPUT_DIR`). Tests run in parallel (`E2E_WORKERS`, default
 * 2): each replaying spec has a gateway of its own, so their replays and logs do not mix.
 */

import { defineConfig } from "@playwright/test";
import { join } from "node:path";

import { chromiumExecutable } from "./tests/e2e/support/chromium";
import { OUTPUT_DIR } from "./tests/e2e/support/env";

export default defineConfig({
  testDir: "tests/e2e",
  testMatch: "**/*.spec.ts",
  fullyParallel: true,
  workers: Number(process.env.E2E_WORKERS ?? 2),
  forbidOnly: process.env.CI !== undefined && process.env.CI !== "",
  retries: 0,
  timeout: 60_000,
  expect: { timeout: 15_000 },
  outputDir: join(OUTPUT_DIR, "results"),
  reporter: [["list"], ["html", { outputFolder: join(OUTPUT_DIR, "report"), open: "never" }]],
  globalSetup: "./tests/e2e/support/global-setup.ts",
  globalTeardown: "./tests/e2e/support/global-teardown.ts",
  use: {
    browserName: "chromium",
    headless: true,
    launchOptions: {
      executablePath: chromiumExecutable(),
      // As root (CI) Chromium needs --no-sandbox; small /dev/shm in containers needs the other.
      args: ["--no-sandbox", "--disable-dev-shm-usage"],
    },
    viewport: { width: 1280, height: 860 },
    trace: "retain-on-failure",
    screenshot: "only-on-failure",
  },
});
