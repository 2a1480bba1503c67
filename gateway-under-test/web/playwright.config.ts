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
  // `list` prints a line per test as it ends; `cargo xtask e2e` sums up from the JSON report.
  reporter: [
    ["list"],
    ["html", { outputFolder: join(OUTPUT_DIR, "report"), open: "never" }],
    ["json", { outputFile: join(OUTPUT_DIR, "results.json") }],
  ],
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
    // One browser context per worker, reset by Playwright between tests (cookies, cache, storage
    // of visited origins, extra pages, routes): a fresh context and its renderer cost about
    // a third of the suite's CPU on two cores. The suite checks the reset it relies on (no
    // cookie survives into the next test: tests/e2e/support/test.ts); `E2E_FRESH_CONTEXT=1`
    // gives every test a context of its own again.
    reuseContext: process.env.E2E_FRESH_CONTEXT !== "1",
    // A failed test keeps its trace (DOM snapshots, network, console); the screencast is left
    // out: recording it for every test cost about a quarter of the suite's time, and a failure
    // keeps its own screenshot anyway. The DOM snapshots are kept although they cost about
    // 1 s of the suite's 7-8 s (every test records them, a passing one then drops its trace):
    // they are what shows the page at each step of a failure.
    trace: { mode: "retain-on-failure", screenshots: false },
    screenshot: "only-on-failure",
  },
});
