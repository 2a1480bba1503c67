/**
 * What a person does in the chat client, as steps the specs share: get a session, open the
 * workspace, send a prompt and wait for its run, and read the conversation back.
 */

import type { APIRequestContext, Locator, Page, Request } from "@playwright/test";
import { randomUUID } from "node:crypto";

import type { Gateway } from "./env";
import { expect } from "./test";

/** The password every test account uses. */
export const PASSWORD = "very-strong-password-123";

/** A fresh e-mail address for a test account. */
export function freshEmail(): string {
  return `e2e-${randomUUID().slice(0, 8)}@example.com`;
}

/** Registers an account through the API; the page's context keeps its cookies. */
export async function registerThroughApi(request: APIRequestContext, gateway: Gateway): Promise<void> {
  const response = await request.post(`${gateway.baseUrl}/api/v1/auth/register`, {
    data: { email: freshEmail(), password: PASSWORD },
  });
  expect(response.status(), `POST /api/v1/auth/register: ${await response.text()}`).toBe(201);
}

/** The conversation log. */
export function conversation(page: Page): Locator {
  return page.getByRole("log", { name: "Conversation" });
}

/** Opens `path` of the gateway with a session (registered unless auth is disabled). */
export async function openWorkspace(page: Page, gateway: Gateway, path = "/"): Promise<void> {
  if (!gateway.authDisabled) await registerThroughApi(page.request, gateway);
  await page.goto(`${gateway.baseUrl}${path}`);
  await expect(page.getByRole("textbox", { name: "Message" })).toBeVisible();
}

/** Waits until the conversation is idle: no run streaming, no history loading. */
export async function waitUntilIdle(page: Page): Promise<void> {
  await expect(conversation(page)).toHaveAttribute("aria-busy", "false", { timeout: 30_000 });
}

/** Types `prompt`, presses Enter, waits for its run to finish, and returns the run request. */
export async function sendPrompt(page: Page, prompt: string): Promise<Request> {
  const runRequest = page.waitForRequest((request) => request.method() === "POST" && /\/runs\/stream$/.test(request.url()));
  await page.getByRole("textbox", { name: "Message" }).fill(prompt);
  await page.getByRole("textbox", { name: "Message" }).press("Enter");
  await expect(conversation(page).getByRole("article", { name: "You" }).filter({ hasText: prompt }).last()).toBeVisible();
  await waitUntilIdle(page);
  return runRequest;
}

/** The conversation as lines (`You: …`, `Assistant: …`, `Error: …`, `Tool write_file: …`), in page order. */
export async function conversationLines(page: Page): Promise<string[]> {
  return conversation(page)
    .locator('article, [role="alert"][aria-label="Model error"], details')
    .evaluateAll((elements) =>
      elements.map((element) => {
        const text = (element.textContent ?? "").replace(/\s+/g, " ").trim();
        const label = element.getAttribute("aria-label") ?? element.tagName;
        return `${label}: ${text}`;
      }),
    );
}
