/**
 * Signed in: register through the page, reload and still be signed in, every mutating API
 * request carries the CSRF header from the `csrf_token` cookie, and sign out.
 */

import type { Request } from "@playwright/test";

import { freshEmail, PASSWORD, sendPrompt } from "./support/chat";
import { gatewayNamed } from "./support/env";
import { renderCase } from "./support/fixtures";
import { expect, keepScreenshot, test } from "./support/test";

test.use({
  expectedHttpErrors: [
    {
      method: "GET",
      path: "/api/v1/auth/me",
      status: 401,
      why: "signed out (before registering and after signing out) the client asks who is signed in, and 401 means nobody",
    },
  ],
});

test("register, reload signed in, mutate with the CSRF header, sign out", async ({ page, context }) => {
  const gateway = gatewayNamed("signed-in", { authDisabled: false });
  const fixture = renderCase(gateway.fixture);
  const mutations: Request[] = [];
  page.on("request", (request) => {
    const path = new URL(request.url()).pathname;
    if (request.method() !== "GET" && path.startsWith("/api/") && !path.startsWith("/api/v1/auth/")) mutations.push(request);
  });

  await page.goto(`${gateway.baseUrl}/`);
  const form = page.getByRole("form", { name: "Sign in" });
  const email = freshEmail();
  await form.getByLabel("Email").fill(email);
  await form.getByLabel("Password").fill(PASSWORD);
  await form.getByRole("button", { name: "Create account" }).click();
  const account = page.getByRole("navigation", { name: "Threads" });
  await expect(account).toContainText(`Signed in as ${email}`);

  await page.reload();
  await expect(account, "still signed in after a reload").toContainText(`Signed in as ${email}`);
  await page.getByRole("combobox", { name: "Mode", exact: true }).selectOption(fixture.mode);
  await sendPrompt(page, fixture.prompts[0] ?? "");

  const csrf = (await context.cookies(gateway.baseUrl)).find((cookie) => cookie.name === "csrf_token")?.value;
  expect(csrf, "the csrf_token cookie after registering").toBeTruthy();
  const paths = mutations.map((request) => `${request.method()} ${new URL(request.url()).pathname}`);
  expect(paths, "the page sent mutating requests").toEqual(
    expect.arrayContaining(["POST /api/threads", expect.stringMatching(/^POST \/api\/threads\/[^/]+\/runs\/stream$/)]),
  );
  for (const request of mutations) {
    expect(await request.headerValue("x-csrf-token"), `${request.method()} ${request.url()} carries X-CSRF-Token`).toBe(csrf);
  }
  await keepScreenshot(page, "signed-in");

  await account.getByRole("button", { name: "Sign out" }).click();
  await expect(form).toBeVisible();
  const left = (await context.cookies(gateway.baseUrl)).map((cookie) => cookie.name);
  expect(left, "signing out deletes the session cookie").not.toContain("access_token");
  expect(left, "signing out deletes the CSRF cookie").not.toContain("csrf_token");
});
