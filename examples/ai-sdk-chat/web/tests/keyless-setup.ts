/**
 * The Vitest run's globalSetup: one `keyless serve` with this folder's keyless.toml (the chat
 * route on the fixtures recorded through the browser), its URLs provided to the tests
 * (`inject("keyless")`, read by useKeyless). At the end keyless gets SIGTERM and must exit 0: a
 * model call that missed fails the run with keyless's summary.
 */

import { join } from "node:path";

import { keylessGlobalSetup } from "keyless/vitest/setup";

import { KEYLESS } from "./env";

export default keylessGlobalSetup({
  keyless: KEYLESS,
  cwd: join(import.meta.dirname, ".."),
  logs: ".keyless/logs/vitest",
});
