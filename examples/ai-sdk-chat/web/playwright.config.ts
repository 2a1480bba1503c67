/**
 * The page in Debian's Chromium headless shell, against the chat route and a replayed model:
 * the suite's `test` comes from `keyless/playwright`, whose worker fixture runs `keyless serve`
 * with this folder's keyless.toml (the route, serving the built page from dist/, with its model at
 * keyless's model server on this folder's fixtures), one per worker on ports of its own, stopped
 * with SIGTERM at the worker's end (it must exit 0, or the run fails with its summary). Each test
 * starts with a fresh replay of its fixture and fails after it with keyless's diagnostic when a
 * model call missed (tests/chat.ts).
 *
 * Two workers: each has its own replayed backend, so tests never switch each other's fixture.
 *
 * With RECORD_SCENARIO set (record.sh), `webServer` runs `keyless record --serve` instead (one,
 * so one worker), no `keyless serve` starts, and the tests tagged for that scenario drive the
 * recording.
 */

import { defineConfig } from "@playwright/test";
import type { KeylessTestOptions, KeylessWorkerOptions } from "keyless/playwright";

import {
  BASE_URL,
  CHROMIUM,
  KEYLESS,
  MODEL_PORT,
  RECORD,
  SERVE_STATUS,
  WEB_PORT,
} from "./tests/env";

const quote = (arg: string) => `'${arg.replaceAll("'", "'\\''")}'`;

export default defineConfig<KeylessTestOptions, KeylessWorkerOptions>({
  testDir: "tests",
  testMatch: "**/*.spec.ts",
  grep: RECORD ? new RegExp(`@record:${RECORD.scenario}\\b`) : undefined,
  workers: RECORD ? 1 : 2,
  fullyParallel: true,
  forbidOnly: process.env.CI !== undefined && process.env.CI !== "",
  retries: 0,
  timeout: 30_000,
  expect: { timeout: 10_000 },
  reporter: RECORD ? [["list"], ["./tests/serve-status.ts"]] : [["list"]],
  webServer: RECORD
    ? {
        command: ["sh", "tests/webserver.sh", KEYLESS, "record", "--serve", "--scenario", RECORD.scenario,
                  "--mode", "chat", "--upstream", RECORD.upstream, "--port", String(WEB_PORT),
                  "--model-port", String(MODEL_PORT)].map(quote).join(" "),
        url: `${BASE_URL}/health`,
        env: { SERVE_STATUS },
        reuseExistingServer: false,
        timeout: 30_000,
        stdout: "ignore",
        stderr: "pipe",
        // keyless builds the fixture on SIGTERM, then exits.
        gracefulShutdown: { signal: "SIGTERM", timeout: 15_000 },
      }
    : undefined,
  use: {
    keylessServe: RECORD ? null : { keyless: KEYLESS },
    baseURL: RECORD ? BASE_URL : undefined,
    browserName: "chromium",
    headless: true,
    launchOptions: {
      executablePath: CHROMIUM,
      // As root (CI) Chromium needs --no-sandbox; small /dev/shm in containers needs the other.
      args: ["--no-sandbox", "--disable-dev-shm-usage"],
    },
    trace: { mode: "retain-on-failure", screenshots: false },
    screenshot: "only-on-failure",
  },
});
