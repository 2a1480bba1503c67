/**
 * The auth-disabled contract: without a cookie, `GET /api/v1/auth/me` answers the synthetic user
 * that the client's `synthetic-user` module describes, field by field, and the client opens
 * straight into the workspace.
 */

import { SYNTHETIC_USER, USER_FIELDS } from "../../src/auth/synthetic-user";
import { conversation } from "./support/chat";
import { gatewayNamed } from "./support/env";
import { expect, keepScreenshot, test } from "./support/test";

test("an auth-disabled gateway answers the client's synthetic user and opens the workspace", async ({ page, playwright }) => {
  const gateway = gatewayNamed("auth-disabled", { authDisabled: true });
  const cookieless = await playwright.request.newContext();
  const response = await cookieless.get(`${gateway.baseUrl}/api/v1/auth/me`);
  expect(response.status(), "GET /api/v1/auth/me without a cookie").toBe(200);
  const me = (await response.json()) as Record<string, unknown>;
  await cookieless.dispose();
  for (const field of USER_FIELDS) {
    expect(me[field], `auth/me field ${field} (src/auth/synthetic-user.ts says ${JSON.stringify(SYNTHETIC_USER[field])})`).toStrictEqual(
      SYNTHETIC_USER[field],
    );
  }
  expect(Object.keys(me).sort(), "auth/me has exactly the UserResponse fields").toStrictEqual([...USER_FIELDS].sort());

  await page.goto(`${gateway.baseUrl}/`);
  await expect(page.getByRole("textbox", { name: "Message" })).toBeVisible();
  await expect(conversation(page)).toBeVisible();
  await expect(page.getByRole("form", { name: "Sign in" })).toHaveCount(0);
  await expect(page.getByRole("navigation", { name: "Threads" })).toContainText(`everyone is ${SYNTHETIC_USER.email}`);
  await keepScreenshot(page, "auth-disabled-workspace");
});
