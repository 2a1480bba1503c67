import type { KeylessUrls, ServeOptions } from "./serve.d.mts";

/** The part of Vitest's TestProject a globalSetup uses. */
export interface Provider {
  provide(key: "keyless", value: KeylessUrls): void;
}

/** A Vitest globalSetup function: starts `keyless serve`, provides its URLs, stops it at the end. */
export function keylessGlobalSetup(options?: ServeOptions): (project: Provider) => Promise<() => Promise<void>>;
