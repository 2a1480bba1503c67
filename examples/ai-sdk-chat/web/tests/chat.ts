/**
 * The suite's helpers: the replayed backend's fixture chosen per test and checked after it, the
 * page driven as a person would (type, send, wait for the turn to finish), and the conversation
 * read back as the page shows it.
 */

import { readFileSync } from "node:fs";

import { expect, test, type Page } from "@playwright/test";

import { MODEL_URL, RECORD, RESET_TOKEN_FILE } from "./env";

/**
 * The tests of this block replay `fixture` (`<scenario>.chat`): each starts with a fresh replay
 * of it (`POST /_harness/reset`) and ends by demanding that the model server saw no problem (a
 * miss names its nearest recorded turn and the first differing field). While recording, the
 * recording proxy is checked the same way.
 */
export function replays(fixture: string): void {
  test.beforeEach(async ({ request }) => {
    if (RECORD) return;
    const token = readFileSync(RESET_TOKEN_FILE, "utf8").trim();
    const reset = await request.post(`${MODEL_URL}/_harness/reset`, {
      data: { fixture },
      headers: { "x-keyless-reset-token": token },
    });
    expect(reset.status(), await reset.text()).toBe(200);
  });
  test.afterEach(async ({ request }) => {
    const state = (await (await request.get(`${MODEL_URL}/_harness/state`)).json()) as {
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
