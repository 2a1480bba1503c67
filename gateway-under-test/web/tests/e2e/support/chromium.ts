/**
 * Finds the Chromium the browser suite drives: Debian's `chromium-headless-shell` or `chromium`,
 * never a browser downloaded by Playwright (only package registries are reachable from CI).
 */

import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";

/**
 * In order of preference, the same as `cargo xtask e2e`'s (xtask/src/e2e.rs; a test there holds
 * them equal): Chromium's headless shell first, the build Playwright itself runs headless tests
 * in, about a fifth faster here than the full browser's headless mode. Headed debugging
 * (`--headed`) needs the full browser: set CHROMIUM_PATH=/usr/bin/chromium.
 */
const NAMES = ["chromium-headless-shell", "chromium", "chromium-browser", "google-chrome-stable", "google-chrome"];

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** `$CHROMIUM_PATH`, else the first Chromium on `PATH`; a clear error when there is none. */
export function chromiumExecutable(env: NodeJS.ProcessEnv = process.env): string {
  const configured = env.CHROMIUM_PATH;
  if (configured !== undefined && configured !== "") {
    if (executable(configured)) return configured;
    throw new Error(`CHROMIUM_PATH=${configured} is not an executable file`);
  }
  for (const folder of (env.PATH ?? "").split(delimiter).filter(Boolean)) {
    for (const name of NAMES) {
      const candidate = join(folder, name);
      if (executable(candidate)) return candidate;
    }
  }
  throw new Error(
    "No Chromium found: install Debian's package (`apt-get install chromium-headless-shell`, or `chromium`) or set CHROMIUM_PATH. " +
      "The suite never downloads Playwright's own browsers.",
  );
}
