/**
 * Multi-run order (DeerFlow's issue #3352): a thread whose two runs exist only as journal rows
 * (seeded, no checkpoint) must render its older run above its newer one. Both sides can break
 * this: the gateway's `messages/page` order and paging, and the client's rebuild of the pages.
 * The older run is long enough that the history spans two pages, so a client that stitches pages
 * in the wrong order fails here too.
 */

import { randomUUID } from "node:crypto";

import { conversation, openWorkspace, waitUntilIdle } from "./support/chat";
import { gatewayNamed } from "./support/env";
import { expect, keepScreenshot, test } from "./support/test";

const ALPHA = "ALPHA-FIRST-QUESTION-7f3a2c";
const OMEGA = "OMEGA-SECOND-QUESTION-9b21d4";
/** Filler exchanges in the older run: with the client's 50-row pages, history spans two pages. */
const FILLER_EXCHANGES = 30;

function message(role: "human" | "ai", content: string, id: string) {
  return { role, content, id };
}

test("runs of a seeded thread render oldest first, each once", async ({ page }) => {
  const gateway = gatewayNamed("multi-run", { seedRoute: true });
  await openWorkspace(page, gateway);
  const threadId = `e2e-multi-run-${randomUUID().slice(0, 8)}`;
  const older = [message("human", `Question ${ALPHA}`, `${threadId}-h1`), message("ai", "The first answer.", `${threadId}-a1`)];
  for (let index = 0; index < FILLER_EXCHANGES; index += 1) {
    older.push(message("human", `Filler question ${index + 1}`, `${threadId}-fh${index}`));
    older.push(message("ai", `Filler answer ${index + 1}`, `${threadId}-fa${index}`));
  }
  const csrf = (await page.context().cookies(gateway.baseUrl)).find((cookie) => cookie.name === "csrf_token")?.value;
  const seeded = await page.request.post(`${gateway.baseUrl}/api/test-only/seed-runs`, {
    headers: csrf === undefined ? {} : { "X-CSRF-Token": csrf },
    data: {
      thread_id: threadId,
      runs: [
        { run_id: `${threadId}-r1`, created_at: "2026-01-01T00:00:00+00:00", messages: older },
        {
          run_id: `${threadId}-r2`,
          created_at: "2026-01-01T00:01:00+00:00",
          messages: [message("human", `Question ${OMEGA}`, `${threadId}-h2`), message("ai", "The second answer.", `${threadId}-a2`)],
        },
      ],
    },
  });
  expect(seeded.status(), `POST /api/test-only/seed-runs: ${await seeded.text()}`).toBe(200);

  await page.goto(`${gateway.baseUrl}/chats/${threadId}`);
  await waitUntilIdle(page);
  const log = conversation(page);
  await expect(log.getByText(ALPHA), `${ALPHA} renders exactly once`).toHaveCount(1);
  await expect(log.getByText(OMEGA), `${OMEGA} renders exactly once`).toHaveCount(1);
  const alpha = await log.getByText(ALPHA).boundingBox();
  const omega = await log.getByText(OMEGA).boundingBox();
  expect(alpha, `${ALPHA} has no box`).not.toBeNull();
  expect(omega, `${OMEGA} has no box`).not.toBeNull();
  expect(
    (alpha?.y ?? 0) < (omega?.y ?? 0),
    `the older run (${ALPHA}, y=${alpha?.y}) must render above the newer one (${OMEGA}, y=${omega?.y}). ` +
      "Either the gateway's run order broke (GET …/messages/page must answer each page in ascending seq, newest page first, " +
      "next_before_seq pointing back) or the client's history rebuild did (src/chat/history.ts puts each older page in front; " +
      "runsFromRows in src/chat/conversation.ts keeps the rows' order)",
  ).toBe(true);
  await log.getByText(ALPHA).scrollIntoViewIfNeeded();
  await keepScreenshot(page, "multi-run-order");
});
