/**
 * Reload: a finished thread, reloaded, shows the same messages and steps in the same order,
 * rebuilt from history alone, with the run's duration.
 */

import { conversationLines, openWorkspace, sendPrompt, waitUntilIdle } from "./support/chat";
import { gatewayNamed } from "./support/env";
import { renderCase } from "./support/fixtures";
import { expect, keepScreenshot, test } from "./support/test";

test("a finished thread reloads with the same messages in the same order", async ({ page }) => {
  const gateway = gatewayNamed("reload");
  const fixture = renderCase(gateway.fixture);
  await openWorkspace(page, gateway);
  await page.getByRole("combobox", { name: "Mode", exact: true }).selectOption(fixture.mode);
  for (const prompt of fixture.prompts) await sendPrompt(page, prompt);
  if (fixture.firstSuggestion !== null) {
    // The page is done with the run once the suggestions are in.
    await expect(page.getByRole("button", { name: fixture.firstSuggestion })).toBeVisible();
  }
  const live = await conversationLines(page);
  expect(live.length, "the run rendered messages").toBeGreaterThan(1);

  await page.reload();
  await waitUntilIdle(page);
  await expect.poll(() => conversationLines(page), { message: "the reloaded conversation" }).toStrictEqual(live);
  await expect(page.getByText(/^Completed in \d+(\.\d)? s$/), "the run's duration after a reload").toBeVisible();
  await keepScreenshot(page, "reload");
});
