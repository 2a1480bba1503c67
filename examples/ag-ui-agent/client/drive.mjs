// AG-UI's official client drives the example agent as a frontend does, and writes what it
// assembled: `HttpAgent` from @ag-ui/client POSTs each prompt as a `RunAgentInput` (one thread,
// a new run id per prompt, the messages and state it holds), applies the stream's events with the
// client's own reducer (`defaultApplyEvents`, after `verifyEvents`) and keeps the messages and
// the state for the next run.
//
//   node drive.mjs --url http://127.0.0.1:8000/ --prompt "…" [--followup "…"]… --out client.json
//
// With `--compare FILE` (a JSON document `{"messages": […], "state": …}`: the last entry of the
// `history` that `keyless test --json` prints for the driver), it exits 1 unless both hold the
// same messages and state once ids are numbered in order of first appearance (the server mints
// fresh message ids per run).
import { readFileSync, writeFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { HttpAgent } from "@ag-ui/client";

function parseArgs(argv) {
  const args = { prompts: [] };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === "--url") args.url = value;
    else if (flag === "--prompt" || flag === "--followup") args.prompts.push(value);
    else if (flag === "--out") args.out = value;
    else if (flag === "--compare") args.compare = value;
    else throw new Error(`unknown flag ${flag}`);
  }
  if (!args.url || args.prompts.length === 0) {
    throw new Error("usage: drive.mjs --url URL --prompt TEXT [--followup TEXT]… [--out FILE] [--compare FILE]");
  }
  return args;
}

// Ids renamed `id-1`, `id-2`, … in order of first appearance, wherever they occur (a message's
// `id`, a tool call's `id`, a tool message's `toolCallId`), so two runs compare by structure.
function numberIds(document) {
  const names = new Map();
  const rename = (id) => {
    if (!names.has(id)) names.set(id, `id-${names.size + 1}`);
    return names.get(id);
  };
  const walk = (value) => {
    if (Array.isArray(value)) return value.map(walk);
    if (value === null || typeof value !== "object") return value;
    const out = {};
    for (const key of Object.keys(value).sort()) {
      const isId = key === "id" || key === "toolCallId";
      out[key] = isId && typeof value[key] === "string" ? rename(value[key]) : walk(value[key]);
    }
    return out;
  };
  return walk(document);
}

const args = parseArgs(process.argv.slice(2));
const agent = new HttpAgent({ url: args.url, threadId: randomUUID() });
for (const prompt of args.prompts) {
  agent.addMessage({ id: randomUUID(), role: "user", content: prompt });
  let failure;
  await agent.runAgent(
    { runId: randomUUID() },
    { onRunErrorEvent: ({ event }) => { failure = `RUN_ERROR: ${event.message}`; } },
  );
  if (failure) throw new Error(failure);
}
const assembled = { messages: agent.messages, state: agent.state };
if (args.out) writeFileSync(args.out, JSON.stringify(assembled, null, 2) + "\n");

if (args.compare) {
  const driver = JSON.parse(readFileSync(args.compare, "utf8"));
  const [ours, theirs] = [numberIds(assembled), numberIds({ messages: driver.messages, state: driver.state })];
  const [a, b] = [JSON.stringify(ours, null, 2), JSON.stringify(theirs, null, 2)];
  if (a !== b) {
    console.error(`HttpAgent assembled:\n${a}\nthe driver assembled (${args.compare}):\n${b}`);
    console.error("ag-ui client: the official client and the driver assembled different messages or state");
    process.exit(1);
  }
  console.log(`ag-ui client: HttpAgent and the driver assembled the same ${agent.messages.length} messages and state`);
}
