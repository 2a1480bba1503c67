/**
 * The suite's settings, from the environment: where `keyless` is, and whether this run replays
 * (`keyless serve`, one per worker on ports of its own: keyless/playwright) or records through
 * the browser (`keyless record --serve` on the ports below, record.sh).
 */

import { join } from "node:path";

/** The `keyless` binary (`KEYLESS`; default: the one on PATH). */
export const KEYLESS = process.env.KEYLESS ?? "keyless";

/** While recording: the chat route's port (page and route on one origin). */
export const WEB_PORT = Number(process.env.AISDK_WEB_PORT ?? 4317);

/** While recording: the recording proxy's port. */
export const MODEL_PORT = Number(process.env.AISDK_MODEL_PORT ?? 4318);

/** The page's and the route's origin. */
export const BASE_URL = `http://127.0.0.1:${WEB_PORT}`;

/** The model server's root (its `/_keyless/…` routes). */
export const MODEL_URL = `http://127.0.0.1:${MODEL_PORT}`;

/** While recording: the webServer's exit status (tests/webserver.sh, tests/serve-status.ts). */
export const STATE_DIR = join(import.meta.dirname, "..", ".keyless");
export const SERVE_STATUS = join(STATE_DIR, "serve.status");

/**
 * Recording: the scenario whose fixture `keyless record --serve` builds from what the browser
 * does (`RECORD_SCENARIO`), in front of `RECORD_UPSTREAM`. Unset: the suite replays.
 */
export const RECORD =
  process.env.RECORD_SCENARIO !== undefined && process.env.RECORD_SCENARIO !== ""
    ? { scenario: process.env.RECORD_SCENARIO, upstream: process.env.RECORD_UPSTREAM ?? "" }
    : undefined;

/** The Chromium the suite drives: Debian's headless shell unless `CHROMIUM_PATH` names another. */
export const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium-headless-shell";
