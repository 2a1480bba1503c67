/**
 * After every spec: each gateway's whole replay log. Any miss fails the run with its diagnostic
 * (also one no test was running for, such as a late suggestions call); recorded turns that no
 * test used are listed, since they show a fixture the browser no longer exercises fully.
 */

import { gateways } from "./env";
import { recordedTurns } from "./fixtures";
import { missReport, readReplayLog, unusedTurns } from "./replay-log";

export default function globalTeardown(): void {
  const reports: string[] = [];
  for (const gateway of gateways()) {
    if (gateway.replayLog === null) continue;
    const events = readReplayLog(gateway.replayLog);
    const unused = unusedTurns(recordedTurns(gateway.fixture), events);
    if (events.length === 0) continue;
    const hits = events.filter((event) => event.event === "hit").length;
    const listed = unused.map((turn) => `#${turn.index} ${turn.caller}`).join(", ");
    console.log(`replay ${gateway.name}: ${hits} hit(s); unused turns: ${listed === "" ? "none" : listed}`);
    const report = missReport(events, `${gateway.name} (${gateway.baseUrl})`);
    if (report !== "") reports.push(report);
  }
  if (reports.length > 0) throw new Error(reports.join("\n\n"));
}
