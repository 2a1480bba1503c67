/** How to start `keyless serve`. */
export interface ServeOptions {
  /** The keyless command: a binary, or a `.js` launcher run with Node [default: `KEYLESS`, else this package's launcher]. */
  keyless?: string;
  /** The folder to run it in: its keyless.toml is the configuration [default: the current folder]. */
  cwd?: string;
  /** `--config FILE`. */
  config?: string;
  /** `--fixture NAME|FILE`: serve only this fixture [default: every fixture, the first active]. */
  fixture?: string;
  /** `--logs DIR`: where the gateway's log goes. */
  logs?: string;
  /** More arguments of `keyless serve` (`--replay-log FILE`, …). */
  args?: string[];
  /** More environment variables for keyless and the gateway it starts. */
  env?: Record<string, string>;
}

/** What `keyless serve` announces on its JSON line. */
export interface KeylessUrls {
  /** The gateway's origin. */
  gatewayUrl: string;
  /** The model's base URL the gateway was given (`…/v1`). */
  modelBaseUrl: string;
  /** The model server's root (its `/_keyless/…` routes). */
  modelServerUrl: string;
  /** The active fixture's name at start. */
  fixture: string;
  /** Every served fixture's name. */
  fixtures: string[];
  /** The token `POST /_keyless/reset` needs. */
  resetToken: string;
}

/** One problem the model server reports (`kind`: `miss`, `unserved_route`, …). */
export interface Problem {
  kind: string;
  /** The diagnostic: a miss names the nearest recorded turn and the first differing field. */
  message: string;
}

/** `GET /_keyless/state`. */
export interface ServerState {
  mode: string;
  fixture: string | null;
  fixtures: string[];
  served_calls: number;
  unused_turns: number[];
  problems: Problem[];
}

/** What `check` accepts. */
export interface CheckOptions {
  /** Recorded turns the test did not ask for pass (default: they fail it). */
  allowUnusedTurns?: boolean;
}

/** A model server to reset and check. */
export interface KeylessConnection extends KeylessUrls {
  /** A fresh replay of `fixture` (or of the active one): its turns unused, its problems cleared. */
  reset(fixture?: string): Promise<void>;
  /** The model server's state since the last reset. */
  state(): Promise<ServerState>;
  /** Throws keyless's diagnostic when a call missed (or a recorded turn went unused). */
  check(options?: CheckOptions): Promise<ServerState>;
}

/** How `keyless serve` ended. */
export interface Stopped {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Its stderr: the summary, every problem with its diagnostic. */
  stderr: string;
}

/** A running `keyless serve`. */
export interface KeylessServer extends KeylessConnection {
  /** SIGTERM, then its exit. */
  stop(): Promise<Stopped>;
  /** SIGTERM; throws with its summary unless it exited 0. */
  stopAndCheck(): Promise<void>;
}

export function startServe(options?: ServeOptions): Promise<KeylessServer>;
export function connect(urls: KeylessUrls): KeylessConnection;
