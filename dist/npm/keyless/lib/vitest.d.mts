import type { KeylessConnection, KeylessUrls, ServeOptions } from "./serve.d.mts";

export type { CheckOptions, KeylessConnection, KeylessServer, KeylessUrls, Problem, ServeOptions, ServerState, Stopped } from "./serve.d.mts";
export { connect, startServe } from "./serve.d.mts";

declare module "vitest" {
  export interface ProvidedContext {
    /** The URLs of the run's `keyless serve` (keyless/vitest/setup). */
    keyless: KeylessUrls | undefined;
  }
}

/** What `useKeyless` does for a file. */
export interface UseKeylessOptions {
  /** The fixture each test starts a fresh replay of; unset: no reset, no check. */
  fixture?: string;
  /** Recorded turns a test did not ask for pass (default: they fail it). */
  allowUnusedTurns?: boolean;
  /** How to start `keyless serve` for this file when no globalSetup provided one. */
  serve?: ServeOptions;
}

/** The file's server, inside its tests and hooks. */
export interface KeylessHandle {
  readonly gatewayUrl: string;
  readonly modelBaseUrl: string;
  readonly server: KeylessConnection;
}

export function useKeyless(options?: UseKeylessOptions): KeylessHandle;
