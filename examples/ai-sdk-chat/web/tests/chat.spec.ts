/**
 * The chat page rendering replayed runs of the route: the answer, the tool step, a follow-up, and
 * the conversation after a reload. Every test checks the page exactly as it shows the run, so a
 * part the stream adds, drops or reorders fails it; the model side is checked after each test
 * (tests/chat.ts) and at the end (keyless serve's exit status, tests/serve-status.ts).
 *
 * `@record:<scenario>` marks the test whose run record.sh records as `<scenario>.chat`.
 */

import { expect, test } from "keyless/playwright";

import { conversation, replays, send, type Shown } from "./chat";

const PARIS = "What is the weather in Paris?";
const LISBON = "And in Lisbon?";

/** The two turns of paris.chat as the page must show them: each a tool step, then the answer. */
const PARIS_TURN: Shown[] = [
  { role: "user", parts: [`text: ${PARIS}`] },
  {
    role: "assistant",
    parts: [
      "step 1",
      "tool-weather output-available: weather Paris: sunny, 21 °C",
      "step 2",
      "text: In Paris it is sunny and 21 °C.",
    ],
  },
];
const LISBON_TURN: Shown[] = [
  { role: "user", parts: [`text: ${LISBON}`] },
  {
    role: "assistant",
    parts: [
      "step 1",
      "tool-weather output-available: weather Lisbon: sunny, 21 °C",
      "step 2",
      "text: In Lisbon it is sunny and 21 °C.",
    ],
  },
];

test.describe("hello.chat", () => {
  replays("hello.chat");

  test("a greeting is answered with text, in one step, with no tool @record:hello", async ({ page }) => {
    await page.goto("/");
    await send(page, "Hello!");
    expect(await conversation(page)).toEqual([
      { role: "user", parts: ["text: Hello!"] },
      {
        role: "assistant",
        parts: ["step 1", "text: Ask me about the weather in a city, and I will look it up."],
      },
    ]);
  });
});

test.describe("paris.chat", () => {
  replays("paris.chat");

  test("the tool step and then the answer, then a follow-up turn @record:paris", async ({ page }) => {
    await page.goto("/");
    await send(page, PARIS);
    expect(await conversation(page)).toEqual(PARIS_TURN);
    await send(page, LISBON);
    expect(await conversation(page)).toEqual([...PARIS_TURN, ...LISBON_TURN]);
  });

  // One turn of two: the follow-up's recorded turns go unasked, and that is this test's point.
  test.describe(() => {
    test.use({ keylessAllowUnusedTurns: true });

    test("parts in the order the stream sent them: the tool call's step, then the answer's", async ({ page }) => {
      await page.goto("/");
      await send(page, PARIS);
      const assistant = page.locator("li.message[data-role=assistant]");
      // In the order the stream sent them: step 1 holds the tool call, step 2 the answer.
      const order = await assistant
        .locator("[data-part]")
        .evaluateAll((parts) => parts.map((part) => part.getAttribute("data-part")));
      expect(order).toEqual(["step", "tool-weather", "step", "text"]);
    });
  });

  // Cross-stack: the page keeps the conversation across a reload and sends it back with the next
  // message; the route turns it into the model's input. Only the real page against the real
  // route sees whether the restored conversation makes the same model call the live one made
  // (the follow-up must be answered as recorded) and renders the same.
  test("after a reload: the same conversation, and a follow-up answered as recorded", async ({ page }) => {
    await page.goto("/");
    await send(page, PARIS);
    const live = await conversation(page);
    await page.reload();
    await expect(page.locator("li.message")).toHaveCount(2);
    expect(await conversation(page)).toEqual(live);
    await send(page, LISBON);
    expect(await conversation(page)).toEqual([...PARIS_TURN, ...LISBON_TURN]);
  });
});

test.describe("paris.chat@stream-error", () => {
  // The fault scenario: the follow-up's answer fails mid-stream (keyless's fault, at the model's
  // wire); the refused turn goes back unasked.
  replays("paris.chat@stream-error", { allowUnusedTurns: true });

  test("a provider's error in the answer's stream reaches the page as an error", async ({ page }) => {
    await page.goto("/");
    await send(page, PARIS);
    expect(await conversation(page)).toEqual(PARIS_TURN);
    await page.getByLabel("Message").fill(LISBON);
    await page.getByRole("button", { name: "Send" }).click();
    await expect(page.getByTestId("status")).toHaveText("error");
    await expect(page.getByRole("alert")).toHaveText("An error occurred.");
    // The tool step of the follow-up came before the failure, and stays on the page.
    const last = (await conversation(page)).at(-1);
    expect(last?.parts.slice(0, 2)).toEqual(["step 1", "tool-weather output-available: weather Lisbon: sunny, 21 °C"]);
  });
});
