/**
 * Which replay gateways the browser suite talks to, and where it writes.
 *
 * A replay serves each recorded turn once, so every spec that replays a run gets a gateway of its
 * own, looked up by name: `<scenario>.<mode>` for each fixture's render case, and `reload`,
 * `signed-in`, `multi-run` and `auth-disabled` for the other specs. `cargo xtask e2e` starts
 * them and describes them in a manifest named by `E2E_GATEWAYS` (see `ManifestEntry`).
 *
 * Without a manifest, every name resolves to one gateway at `E2E_BASE_URL` replaying
 * `E2E_FIXTURE` (default `write_read_file.ultra.json`), with auth as `E2E_AUTH` says (`enabled`
 * by default) and its replay log at `E2E_REPLAY_LOG`: enough for one spec at a time
 * (`npx playwright test -g ultra`), since a second replay of the same fixture misses.
 *
 * Every gateway serves the built client and `/api` from one origin.
 */

import { readFileSync } from "node:fs";
import { basename, dirname, isAbsolute, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { watchGateway } from "./replay-watch";

/** The web client's folder. */
export const WEB_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
/** The repository root. */
export const REPO_ROOT = resolve(WEB_DIR, "../..");
/** The fixtures every render case comes from. */
export const FIXTURES_DIR = resolve(REPO_ROOT, "fixtures");
/** Reports, screenshots and traces (`target/e2e` unless `E2E_OUTPUT_DIR` says). */
export const OUTPUT_DIR = process.env.E2E_OUTPUT_DIR ?? resolve(REPO_ROOT, "target/e2e");

/** One replay gateway under test. */
export interface Gateway {
  /** A short name for messages (the fixture's stem unless the manifest names it). */
  name: string;
  /** `http://127.0.0.1:<port>`: the client at `/`, the API under `/api`. */
  baseUrl: string;
  /** The fixture it replays, a file name in `fixtures/`. */
  fixture: string;
  /** Started with `DEER_FLOW_AUTH_DISABLED=1`. */
  authDisabled: boolean;
  /** The test-only seed route is mounted. */
  seedRoute: boolean;
  /** The gateway's replay log (JSON lines of hits and misses), or `null` when it keeps none. */
  replayLog: string | null;
}

/**
 * One entry of the manifest `cargo xtask e2e` writes:
 * `{"gateways": [{"name", "base_url", "fixture", "auth": "enabled"|"disabled", "seed_route", "replay_log"}]}`.
 * `fixture` is a file name in `fixtures/`; a relative `replay_log` is relative to the manifest.
 */
interface ManifestEntry {
  name?: unknown;
  base_url?: unknown;
  fixture?: unknown;
  auth?: unknown;
  seed_route?: unknown;
  replay_log?: unknown;
}

function stem(fixture: string): string {
  return basename(fixture).replace(/\.json$/, "");
}

function parseEntry(entry: ManifestEntry, where: string, folder: string): Gateway {
  if (typeof entry.base_url !== "string" || !/^https?:\/\//.test(entry.base_url)) {
    throw new Error(`${where}.base_url: expected an http URL`);
  }
  if (typeof entry.fixture !== "string") throw new Error(`${where}.fixture: expected a fixture file name`);
  if (entry.auth !== "enabled" && entry.auth !== "disabled") {
    throw new Error(`${where}.auth: expected "enabled" or "disabled"`);
  }
  if (entry.replay_log !== null && typeof entry.replay_log !== "string") {
    throw new Error(`${where}.replay_log: expected a path or null`);
  }
  const log = entry.replay_log;
  return {
    name: typeof entry.name === "string" ? entry.name : stem(entry.fixture),
    baseUrl: entry.base_url.replace(/\/+$/, ""),
    fixture: basename(entry.fixture),
    authDisabled: entry.auth === "disabled",
    seedRoute: entry.seed_route === true,
    replayLog: log === null ? null : isAbsolute(log) ? log : resolve(folder, log),
  };
}

function fromManifest(path: string): Gateway[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new Error(`E2E_GATEWAYS=${path}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  const entries = (parsed as { gateways?: unknown } | null)?.gateways;
  if (!Array.isArray(entries) || entries.length === 0) {
    throw new Error(`E2E_GATEWAYS=${path}: expected {"gateways": [...]} with at least one gateway`);
  }
  const found = entries.map((entry: ManifestEntry, index) => parseEntry(entry, `${path}: gateways[${index}]`, dirname(path)));
  const names = found.map((gateway) => gateway.name);
  const repeated = names.find((name, index) => names.indexOf(name) !== index);
  if (repeated !== undefined) throw new Error(`${path}: two gateways are named ${repeated}`);
  return found;
}

function fromBaseUrl(env: NodeJS.ProcessEnv): Gateway[] {
  const baseUrl = env.E2E_BASE_URL;
  if (baseUrl === undefined || baseUrl === "") {
    throw new Error(
      "No gateway to test: set E2E_GATEWAYS (a manifest, as `cargo xtask e2e` writes) or E2E_BASE_URL " +
        "(a replay gateway serving the client, e.g. `cargo xtask replay-gateway`)",
    );
  }
  const fixture = env.E2E_FIXTURE ?? "write_read_file.ultra.json";
  return [
    parseEntry(
      {
        base_url: baseUrl,
        fixture,
        auth: env.E2E_AUTH ?? "enabled",
        seed_route: env.E2E_SEED_ROUTE !== "0",
        replay_log: env.E2E_REPLAY_LOG ?? null,
      },
      "E2E_BASE_URL",
      process.cwd(),
    ),
  ];
}

let cached: Gateway[] | undefined;

/** Every gateway of this run. */
export function gateways(): Gateway[] {
  const manifest = process.env.E2E_GATEWAYS;
  cached ??= manifest !== undefined && manifest !== "" ? fromManifest(manifest) : fromBaseUrl(process.env);
  return cached;
}

function describeAll(): string {
  return gateways()
    .map((gateway) => `${gateway.name} (${gateway.baseUrl}, fixtures/${gateway.fixture}, auth ${gateway.authDisabled ? "disabled" : "enabled"})`)
    .join(", ");
}

/** What a spec needs of its gateway. */
export interface GatewayNeeds {
  fixture?: string;
  authDisabled?: boolean;
  seedRoute?: boolean;
}

/**
 * The gateway named `name` (the only one without a manifest), checked against what the spec
 * needs; the error says what the run has instead. The running test's no-miss check then watches
 * its replay log.
 */
export function gatewayNamed(name: string, needs: GatewayNeeds = {}): Gateway {
  const all = gateways();
  const gateway = process.env.E2E_GATEWAYS ? all.find((candidate) => candidate.name === name) : all[0];
  if (gateway === undefined) throw new Error(`No gateway named ${name}; this run has: ${describeAll()}`);
  const problems = [
    needs.fixture !== undefined && gateway.fixture !== needs.fixture ? `replays fixtures/${gateway.fixture}, not fixtures/${needs.fixture}` : null,
    needs.authDisabled !== undefined && gateway.authDisabled !== needs.authDisabled
      ? `has auth ${gateway.authDisabled ? "disabled" : "enabled"}`
      : null,
    needs.seedRoute === true && !gateway.seedRoute ? "has no seed route" : null,
  ].filter((problem): problem is string => problem !== null);
  if (problems.length > 0) throw new Error(`Gateway ${gateway.name} (${gateway.baseUrl}) ${problems.join(" and ")}`);
  watchGateway(gateway);
  return gateway;
}
