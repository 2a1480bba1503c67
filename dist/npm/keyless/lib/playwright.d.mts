import type { TestType, PlaywrightTestArgs, PlaywrightTestOptions, PlaywrightWorkerArgs, PlaywrightWorkerOptions } from "@playwright/test";

import type { KeylessServer, ServeOptions } from "./serve.d.mts";

export type { CheckOptions, KeylessConnection, KeylessServer, KeylessUrls, Problem, ServeOptions, ServerState, Stopped } from "./serve.d.mts";
export { connect, startServe } from "./serve.d.mts";

/** The options a test file or project sets with `test.use` / `use`. */
export interface KeylessTestOptions {
  /** The fixture each test starts a fresh replay of (`<scenario>.<mode>`); unset: no reset, no check. */
  keylessFixture: string | undefined;
  /** Recorded turns the test did not ask for pass (default: they fail it). */
  keylessAllowUnusedTurns: boolean;
}

/** The test fixtures. */
export interface KeylessTestFixtures {
  /** The worker's keyless serve, reset to `keylessFixture` before the test and checked after it. */
  keyless: KeylessServer | undefined;
}

/** The worker options: how each worker starts `keyless serve` (cwd defaults to the config's folder). */
export interface KeylessWorkerOptions {
  /** null: no keyless serve (the config's own baseURL and webServer, e.g. `keyless record --serve`). */
  keylessServe: ServeOptions | null;
}

/** The worker fixtures. */
export interface KeylessWorkerFixtures {
  /** This worker's keyless serve (none with `keylessServe: null`). */
  keylessServer: KeylessServer | undefined;
}

export const test: TestType<
  PlaywrightTestArgs & PlaywrightTestOptions & KeylessTestOptions & KeylessTestFixtures,
  PlaywrightWorkerArgs & PlaywrightWorkerOptions & KeylessWorkerOptions & KeylessWorkerFixtures
>;
export { expect } from "@playwright/test";
