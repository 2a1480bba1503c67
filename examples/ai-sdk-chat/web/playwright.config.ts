/**
 * The page in Debian's Chromium headless shell, against the chat route and a replayed model:
 * `webServer` runs `keyless serve` with this folder's keyless.toml (the route, serving the built
 * page from dist/, with its model at keyless's model server on this folder's fixtures). Each test
 * selects its fixture through the model server's reset route and checks its state afterwards
 * (tests/chat.ts). With RECORD_SCENARIO set (record.sh), `webServer` runs `keyless record --serve`
 * instead and the tests tagged for that scenario drive the recording.
 *
 * One worker: one replayed backend, whose active fixture the tests take turns switching.
 */

import { defineConfig } from "@playwright/test";

import {
  BASE_URL,
  CHROMIUM,
  KEYLESS,
  MODEL_PORT,
  RECORD,
  REPLAY_LOG,
  RESET_TOKEN_FILE,
  SERVE_STATUS,
  WEB_PORT,
} from "./tests/env";

const quote = (arg: string) => `'${arg.replaceAll("'", "'\\''")}'`;
const keyless = RECORD
  ? [KEYLESS, "record", "--serve", "--scenario", RECORD.scenario, "--mode", "chat",
     "--upstream", RECORD.upstream]
  : [KEYLESS, "serve", "--replay-log", REPLAY_LOG, "--reset-token-file", RESET_TOKEN_FILE];

export default defineConfig({
  testDir: "tests",
  testMatch: "**/*.spec.ts",
  grep: RECORD ? new RegExp(`@record:${RECORD.scenario}\\b`) : undefined,
  workers: 1,
  forbidOnly: process.env.CI !== undefined && process.env.CI !== "",
  retries: 0,
  timeout: 30_000,
  expect: { timeout: 10_000 },
  reporter: [["list"], ["./tests/serve-status.ts"]],
  webServer: {
    command: ["sh", "tests/webserver.sh", ...keyless, "--port", String(WEB_PORT),
              "--model-port", String(MODEL_PORT)].map(quote).join(" "),
    url: `${BASE_URL}/health`,
    env: { SERVE_STATUS },
    reuseExistingServer: false,
    timeout: 30_000,
    stdout: "ignore",
    stderr: "pipe",
    // keyless prints its summary (or builds the fixture) on SIGTERM, then exits.
    gracefulShutdown: { signal: "SIGTERM", timeout: 15_000 },
  },
  use: {
    baseURL: BASE_URL,
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
