/**
 * While recording (record.sh): a reporter that fails the run unless `keyless record --serve` exited
 * 0 (replaying, keyless/playwright checks each worker's `keyless serve` itself).
 * Its `onEnd` runs after Playwright has stopped the webServer, and tests/webserver.sh has written
 * the command's exit status by then: 1 after a model call that was not answered as recorded (the
 * summary with each miss's diagnostic is on stderr above), or a fixture that was not built.
 */

import { readFileSync } from "node:fs";

import type { FullResult, Reporter } from "@playwright/test/reporter";

import { RECORD, SERVE_STATUS } from "./env";

export default class ServeStatus implements Reporter {
  // Async: a Reporter's onEnd may only change the run's status through a promise.
  // eslint-disable-next-line @typescript-eslint/require-await
  async onEnd(result: FullResult): Promise<{ status: FullResult["status"] } | undefined> {
    const command = RECORD ? "keyless record --serve" : "keyless serve";
    let status: string;
    try {
      status = readFileSync(SERVE_STATUS, "utf8").trim();
    } catch {
      status = "unknown (it wrote no status)";
    }
    if (status === "0") return undefined;
    console.error(`${command} exited ${status}: see its summary above; the run fails`);
    return { status: result.status === "passed" ? "failed" : result.status };
  }
}
