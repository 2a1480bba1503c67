/**
 * The suite's `test`: Playwright's, plus two checks every spec gets without asking.
 *
 * - **A clean page**: the test fails when the page logs an error to the console, throws, or any
 *   request it makes answers 4xx/5xx, except the answers the spec names in
 *   `test.use({ expectedHttpErrors })` (each with why it provokes them). A route the client
 *   needs that disappears, or a default that changes, thus turns the suite red. It also fails
 *   a test that starts with a cookie: the browser context is reused between tests.
 * - **No replay miss**: the test fails when a gateway it looked up (`gatewayNamed`) logged a
 *   miss while it ran, with the gateway's diagnostic.
 */

import { test as base, expect, type ConsoleMessage, type Page, type Request, type Response } from "@playwright/test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

import { OUTPUT_DIR } from "./env";
import { missReport, readReplayLog } from "./replay-log";
import { takeWatched } from "./replay-watch";

/** An error answer a spec provokes on purpose. */
export interface ExpectedHttpError {
  method: string;
  /** The path (without query) or a pattern for it. */
  path: string | RegExp;
  status: number;
  /** Why the spec provokes it. */
  why: string;
}

function expected(response: Response, allowed: readonly ExpectedHttpError[]): boolean {
  const request = response.request();
  const path = new URL(response.url()).pathname;
  return allowed.some(
    (entry) =>
      entry.method === request.method() &&
      entry.status === response.status() &&
      (typeof entry.path === "string" ? entry.path === path : entry.path.test(path)),
  );
}

// Chromium logs every 4xx/5xx answer as a console error too; the response check below already
// judges those (and knows which ones a spec expects), so these lines are not counted twice.
const RESOURCE_STATUS_LINE = /^Failed to load resource: the server responded with a status of \d+/;

export const test = base.extend<{
  expectedHttpErrors: ExpectedHttpError[];
  cleanPage: void;
  noReplayMisses: void;
}>({
  expectedHttpErrors: [[], { option: true }],

  cleanPage: [
    async ({ page, context, expectedHttpErrors }, use) => {
      // The context is reused between tests (playwright.config.ts): a session cookie left by
      // the last test would sign this one in, and cookies are per host, not per port, so they
      // would reach every gateway of the suite.
      const left = (await context.cookies()).map((cookie) => `${cookie.name} (${cookie.domain})`);
      expect(left, "cookies left by an earlier test in the reused browser context").toEqual([]);
      const problems: string[] = [];
      const onConsole = (message: ConsoleMessage): void => {
        if (message.type() === "error" && !RESOURCE_STATUS_LINE.test(message.text())) {
          problems.push(`console error: ${message.text()}`);
        }
      };
      const onPageError = (error: Error): void => {
        problems.push(`uncaught exception: ${error.message}`);
      };
      const onResponse = (response: Response): void => {
        if (response.status() >= 400 && !expected(response, expectedHttpErrors)) {
          problems.push(`${response.request().method()} ${response.url()} answered ${response.status()}`);
        }
      };
      const onRequestFailed = (request: Request): void => {
        const failure = request.failure()?.errorText ?? "unknown";
        // Leaving a page cancels its requests; that is not the gateway failing.
        if (failure !== "net::ERR_ABORTED") problems.push(`${request.method()} ${request.url()} failed: ${failure}`);
      };
      page.on("console", onConsole);
      page.on("pageerror", onPageError);
      page.on("response", onResponse);
      page.on("requestfailed", onRequestFailed);
      await use();
      // The page outlives the test: the next test listens for itself.
      page.off("console", onConsole);
      page.off("pageerror", onPageError);
      page.off("response", onResponse);
      page.off("requestfailed", onRequestFailed);
      expect(problems.length, `the page was not clean:\n${problems.join("\n")}`).toBe(0);
    },
    { auto: true },
  ],

  noReplayMisses: [
    // Playwright reads a fixture's dependencies from this pattern: empty means none.
    // eslint-disable-next-line no-empty-pattern
    async ({}, use) => {
      takeWatched();
      await use();
      const reports = takeWatched()
        .map(({ gateway, path, offset }) => missReport(readReplayLog(path, offset), `${gateway.name} (${gateway.baseUrl})`))
        .filter((report) => report !== "");
      expect(reports.length, reports.join("\n\n")).toBe(0);
    },
    { auto: true },
  ],
});

export { expect };

/** Saves a screenshot of the page as an artifact (`<output>/screenshots/<name>.png`), not a gate. */
export async function keepScreenshot(page: Page, name: string): Promise<void> {
  const folder = join(OUTPUT_DIR, "screenshots");
  mkdirSync(folder, { recursive: true });
  const path = join(folder, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  await test.info().attach(name, { path, contentType: "image/png" });
}
