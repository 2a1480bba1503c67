/**
 * The suite's helpers: the replayed backend's fixture chosen per test and checked after it, the
 * page driven as a person would (type, send, wait for the turn to finish), and the conversation
 * read back as the page shows it.
 */

import type { Page } from "@playwright/test";
import { expect, test } from "keyless/playwright";

import { MODEL_URL, RECORD } from "./env";

/**
 * The tests of this block replay `fixture` (`<scenario>.chat`): keyless/playwright starts each
 * with a fresh replay of it in the worker's `keyless serve` and fails it afterwards with keyless's
 * diagnostic when a model call missed (a miss names its nearest recorded turn and the first
 * differing field) or, unless `allowUnusedTurns`, a recorded turn went unasked. While recording
 * (no keyless serve: record.sh's webServer runs `keyless record --serve`), the recording proxy
 * is checked for problems after each test instead.
 */
export function replays(fixture: string, options: { allowUnusedTurns?: boolean } = {}): void {
  if (!RECORD) {
    test.use({ keylessFixture: fixture, keylessAllowUnusedTurns: options.allowUnusedTurns ?? false });
    return;
  }
  test.afterEach(async ({ request }) => {
    const state = (await (await request.get(`${MODEL_URL}/_keyless/state`)).json()) as {
      problems: unknown[];
    };
    expect(state.problems, JSON.stringify(state.problems, null, 2)).toEqual([]);
  });
}

/** Sends `text` from the form and waits until the assistant's answer has finished. */
export async function send(page: Page, text: string): Promise<void> {
  const messages = page.locator("li.message");
  const before = await messages.count();
  await page.getByLabel("Message").fill(text);
  await page.getByRole("button", { name: "Send" }).click();
  // The user's message and the request's status change in one render; then the turn ends as
  // `ready`, or as `error` (shown in the alert, which fails the test at once with its text).
  await expect(messages).not.toHaveCount(before);
  await expect(page.getByTestId("status")).toHaveText(/^(ready|error)$/);
  const alert = page.getByRole("alert");
  expect(await alert.count(), `the page shows an error: ${(await alert.allTextContents()).join("; ")}`).toBe(0);
  expect(await messages.count()).toBe(before + 2);
}

/** One message as the page shows it: its role and its parts, in the order they are rendered. */
export type Shown = { role: string; parts: string[] };

/**
 * The conversation as the page shows it: `step N`, `text: …`, `tool-weather <state>: <city>…`
 * or a part type the page does not know, `[type]`.
 */
export async function conversation(page: Page): Promise<Shown[]> {
  return page.locator("li.message").evaluateAll((items) =>
    items.map((item) => ({
      role: item.getAttribute("data-role") ?? "?",
      parts: Array.from(item.querySelectorAll("[data-part]"), (part) => {
        const kind = part.getAttribute("data-part");
        const text = (part.textContent ?? "").trim();
        if (kind === "tool-weather") return `tool-weather ${part.getAttribute("data-state")}: ${text}`;
        return kind === "text" ? `text: ${text}` : text;
      }),
    })),
  );
}
