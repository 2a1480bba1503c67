// The test-runner helpers' shared part (keyless/playwright, keyless/vitest): starts `keyless
// serve` on free ports, reads the one JSON line it prints once the gateway is ready, switches
// and checks the model server through its `/_keyless/reset` and `/_keyless/state` routes, and
// stops it with SIGTERM, so keyless prints its summary and exits 0 only if every model call was
// answered as recorded. Plain JavaScript with types beside it (serve.d.mts): no build step.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

/** The header `POST /_keyless/reset` needs, with the token of the JSON line. */
const RESET_TOKEN_HEADER = "x-keyless-reset-token";

/** How long keyless may take to print its summary after SIGTERM before it is killed. */
const STOP_TIMEOUT_MS = 15_000;

/** The launcher of this package (it runs the platform package's binary). */
const LAUNCHER = fileURLToPath(new URL("../bin/keyless.js", import.meta.url));

/** Children still running when Node exits (a crashed worker) get SIGTERM: none outlives it. */
const running = new Set();
process.on("exit", () => {
  for (const child of running) child.kill("SIGTERM");
});

/**
 * Starts `keyless serve` and resolves once its gateway is ready, with a handle on it.
 *
 * @param {import("./serve.d.mts").ServeOptions} [options]
 * @returns {Promise<import("./serve.d.mts").KeylessServer>}
 */
export async function startServe(options = {}) {
  const keyless = options.keyless ?? process.env.KEYLESS ?? LAUNCHER;
  const args = ["serve", "--port", "0", "--model-port", "0"];
  if (options.fixture !== undefined) args.push("--fixture", options.fixture);
  if (options.config !== undefined) args.push("--config", options.config);
  if (options.logs !== undefined) args.push("--logs", options.logs);
  args.push(...(options.args ?? []));
  const [command, argv] = keyless.endsWith(".js") ? [process.execPath, [keyless, ...args]] : [keyless, args];
  const child = spawn(command, argv, {
    cwd: options.cwd ?? process.cwd(),
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (text) => {
    stderr += text;
  });
  const exited = new Promise((resolve) => {
    child.on("close", (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    });
  });
  const what = `keyless serve (${[keyless, ...args].join(" ")}, in ${options.cwd ?? process.cwd()})`;
  const announced = await new Promise((resolve, reject) => {
    let stdout = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (text) => {
      stdout += text;
      const end = stdout.indexOf("\n");
      if (end < 0) return;
      try {
        resolve(JSON.parse(stdout.slice(0, end)));
      } catch (err) {
        reject(new Error(`${what} printed a first line that is not JSON: ${stdout.slice(0, end)} (${err})`));
      }
    });
    child.on("error", (err) => reject(new Error(`cannot run ${what}: ${err.message}`)));
    void exited.then(({ code, signal }) =>
      reject(new Error(`${what} exited ${code ?? signal} before its gateway was ready:\n${stderr}`)),
    );
  });
  const urls = {
    gatewayUrl: announced.gateway_url,
    modelBaseUrl: announced.model_base_url,
    modelServerUrl: announced.model_server_url,
    fixture: announced.fixture,
    fixtures: announced.fixtures,
    resetToken: announced.reset_token,
  };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
    const { code, signal } = await exited;
    clearTimeout(timer);
    return { code, signal, stderr };
  };
  return {
    ...connect(urls),
    stop,
    async stopAndCheck() {
      const { code, signal, stderr: summary } = await stop();
      if (code !== 0) {
        throw new Error(`keyless serve exited ${code ?? signal} (0 only when every model call was answered as recorded); its summary:\n${summary}`);
      }
    },
  };
}

/**
 * A handle on a `keyless serve` (or `keyless model-server`) someone else started, from its URLs.
 *
 * @param {import("./serve.d.mts").KeylessUrls} urls
 * @returns {import("./serve.d.mts").KeylessConnection}
 */
export function connect(urls) {
  const state = async () => {
    const response = await fetch(`${urls.modelServerUrl}/_keyless/state`);
    if (!response.ok) {
      throw new Error(`keyless: GET /_keyless/state: ${response.status}: ${await response.text()}`);
    }
    return /** @type {import("./serve.d.mts").ServerState} */ (await response.json());
  };
  return {
    ...urls,
    state,
    async reset(fixture) {
      const response = await fetch(`${urls.modelServerUrl}/_keyless/reset`, {
        method: "POST",
        headers: { "content-type": "application/json", [RESET_TOKEN_HEADER]: urls.resetToken },
        body: JSON.stringify(fixture === undefined ? {} : { fixture }),
      });
      if (!response.ok) {
        throw new Error(`keyless: POST /_keyless/reset ${JSON.stringify({ fixture })}: ${response.status}: ${await response.text()}`);
      }
    },
    async check(options = {}) {
      const current = await state();
      const lines = current.problems.map((problem, index) =>
        `problem ${index + 1} of ${current.problems.length}: ${problem.kind}: ${problem.message}`,
      );
      if (!options.allowUnusedTurns && current.unused_turns.length > 0) {
        lines.push(
          `fixture ${current.fixture}: recorded turn(s) ${JSON.stringify(current.unused_turns)} not asked for ` +
            "(the test made fewer model calls than the recording; allowUnusedTurns accepts that)",
        );
      }
      if (lines.length > 0) {
        throw new Error(`keyless: the model side of this test (${current.served_calls} call(s) answered as recorded):\n${lines.join("\n")}`);
      }
      return current;
    },
  };
}
