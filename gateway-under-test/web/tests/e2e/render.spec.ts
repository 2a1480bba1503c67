/**
 * Render: every fixture in `fixtures/` replayed through the page. Pick the fixture's mode, send
 * its prompt and follow-ups, and the page must show the recorded final answers, each tool step
 * with its arguments, the title and the first recorded suggestion; a recorded model error shows
 * as an error. Each run request the page sends must be `runRequestBody`'s, the body the
 * harness's recorder is held to as well. Adding a fixture adds a case.
 */

import { parseMode } from "../../src/chat/modes";
import { runRequestBody } from "../../src/chat/run-request";

import { conversation, openWorkspace, sendPrompt } from "./support/chat";
import { gatewayNamed } from "./support/env";
import { renderCases } from "./support/fixtures";
import { expect, keepScreenshot, test } from "./support/test";

for (const fixture of renderCases()) {
  test(`renders ${fixture.stem}`, async ({ page }) => {
    const gateway = gatewayNamed(fixture.stem, { fixture: fixture.file });
    await openWorkspace(page, gateway);
    const mode = parseMode(fixture.mode);
    if (mode === null) throw new Error(`fixtures/${fixture.file}: mode "${fixture.mode}" is not a mode of the client`);
    await page.getByRole("combobox", { name: "Mode", exact: true }).selectOption(mode);
    const modelPicker = page.getByRole("combobox", { name: "Model" });
    await expect(modelPicker, "the model picker, filled from GET /api/models").toBeEnabled();
    const modelName = (await modelPicker.inputValue()) || null;
    for (const prompt of fixture.prompts) {
      const request = await sendPrompt(page, prompt);
      const threadId = decodeURIComponent(/\/threads\/([^/]+)\/runs\/stream$/.exec(request.url())?.[1] ?? "");
      expect(request.postDataJSON(), "the run request is src/chat/run-request.ts's").toStrictEqual(
        runRequestBody({ prompt, mode, modelName, threadId }),
      );
    }

    const log = conversation(page);
    await expect(page.getByRole("heading", { level: 1 }), "the title").toHaveText(fixture.title);
    for (const answer of fixture.finalAnswers) {
      await expect(log.getByRole("article", { name: "Assistant" }).filter({ hasText: answer }), `answer "${answer}"`).toBeVisible();
    }
    for (const name of new Set(fixture.steps.map((step) => step.name))) {
      const expected = fixture.steps.filter((step) => step.name === name);
      const shown = log.getByRole("group", { name: `Tool call: ${name}` });
      await expect(shown, `tool steps named ${name}`).toHaveCount(expected.length);
      for (const [index, step] of expected.entries()) {
        for (const text of step.texts) await expect(shown.nth(index), `${name} step ${index + 1}`).toContainText(text);
      }
    }
    if (fixture.error !== null) {
      await expect(log.getByRole("alert", { name: "Model error" }), "the recorded model error").toContainText(fixture.error);
    }
    if (fixture.firstSuggestion !== null) {
      const suggestions = page.getByRole("region", { name: "Suggested follow-ups" });
      await expect(suggestions.getByRole("button", { name: fixture.firstSuggestion }), "the first suggestion").toBeVisible();
    }
    await keepScreenshot(page, `render-${fixture.stem}`);
  });
}
