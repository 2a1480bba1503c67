// A chat route on the Vercel AI SDK, as a Next.js `app/api/chat/route.ts` would hold it, served
// by Node's own HTTP server: `POST /api/chat` takes the UI messages `useChat` sends, runs
// `streamText` with a tool loop (one `weather` tool, up to five steps) against an OpenAI Chat
// Completions model at OPENAI_BASE_URL, and answers with `toUIMessageStreamResponse()`.
// `GET /health` answers 200 once the server listens.
//
// `POST /api/clock` is a second chat route whose one tool comes from an MCP server, through the
// AI SDK's own MCP client (`createMCPClient` of `@ai-sdk/mcp`, over Streamable HTTP) at
// CLOCK_MCP_URL: under keyless that is the route `{mcp_url:clock}` names (clock.keyless.toml),
// which relays to the real server when recording and answers from the fixture in replay.
//
// The same agent (the same model, system prompt and tool loop) also answers as an OpenAI-style
// agent endpoint, the way agent servers expose themselves to OpenAI clients: `POST
// /v1/chat/completions` streams its answer as `chat.completion.chunk`s, `POST /v1/responses` as a
// Responses event stream; both take the whole conversation in each request (keyless's
// `--api openai-chat` and `--api openai-responses`).
//
//   OPENAI_BASE_URL=http://127.0.0.1:8090/v1 PORT=3000 node server.mjs
import { readFile } from "node:fs/promises";
import http from "node:http";
import { extname, join, resolve, sep } from "node:path";
import { Readable } from "node:stream";

import { createMCPClient } from "@ai-sdk/mcp";
import { createOpenAI } from "@ai-sdk/openai";
import { convertToModelMessages, stepCountIs, streamText, tool } from "ai";
import { z } from "zod";

const port = Number(process.env.PORT ?? process.env.KEYLESS_GATEWAY_PORT ?? 3000);
const openai = createOpenAI({
  baseURL: process.env.OPENAI_BASE_URL ?? process.env.KEYLESS_MODEL_BASE_URL,
  apiKey: process.env.OPENAI_API_KEY ?? "unused",
});
const MODEL = process.env.CHAT_MODEL ?? "gpt-4o-mini";

export const SYSTEM =
  "You are a concise weather assistant. Use the weather tool for any question about the " +
  "weather in a city, then answer in one sentence.";

/** What the weather tool answers: fixed, so a replay sends the model what was recorded. */
export function forecast(city) {
  return { city, forecast: "sunny", temperatureC: 21 };
}

const tools = {
  weather: tool({
    description: "The weather forecast for a city.",
    inputSchema: z.object({ city: z.string().describe("The city") }),
    execute: async ({ city }) => forecast(city),
  }),
};

/** The chat route: a Web `Request` in, a Web `Response` out (the App Router's signature). */
export async function POST(request) {
  const { messages } = await request.json();
  const result = streamText({
    model: openai.chat(MODEL),
    system: SYSTEM,
    messages: await convertToModelMessages(messages),
    tools,
    stopWhen: stepCountIs(5),
  });
  return result.toUIMessageStreamResponse();
}

export const CLOCK_SYSTEM = "You tell the time with the get_time tool; answer briefly.";

/** The clock route: the MCP server's tools for this request, its client closed once answered. */
export async function POST_CLOCK(request) {
  const { messages } = await request.json();
  const client = await createMCPClient({
    transport: { type: "http", url: process.env.CLOCK_MCP_URL },
  });
  const result = streamText({
    model: openai.chat(MODEL),
    system: CLOCK_SYSTEM,
    messages: await convertToModelMessages(messages),
    tools: await client.tools(),
    stopWhen: stepCountIs(5),
    onFinish: () => client.close(),
    onError: () => client.close(),
  });
  return result.toUIMessageStreamResponse();
}

// The example's page (web/): with STATIC_DIR set (web/keyless.toml sets it to the built page,
// web/dist), every other GET is a file of it, `/` its index.html, so page and route share one
// origin as a Next.js app serves them.
const STATIC_DIR = process.env.STATIC_DIR ? resolve(process.env.STATIC_DIR) : undefined;
const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript", ".css": "text/css",
                ".svg": "image/svg+xml", ".map": "application/json" };

/** A file of STATIC_DIR, or 404 (a path out of it included). */
async function serveStatic(pathname, res) {
  const file = resolve(join(STATIC_DIR, pathname === "/" ? "index.html" : pathname));
  const body = file.startsWith(STATIC_DIR + sep) ? await readFile(file).catch(() => undefined) : undefined;
  if (body === undefined) {
    res.writeHead(404, { "content-type": "text/plain" }).end("not found");
    return;
  }
  res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" }).end(body);
}

/** The agent's answer to a conversation of `{ role, content }` messages: its text stream. */
function agent(messages) {
  const result = streamText({
    model: openai.chat(MODEL),
    system: SYSTEM,
    messages: messages.map(({ role, content }) => ({ role, content: String(content ?? "") })),
    tools,
    stopWhen: stepCountIs(5),
  });
  return result.textStream;
}

/** `POST /v1/chat/completions`, streamed: a role chunk, a chunk per text delta, the finish. */
async function chatCompletions(body, res) {
  const base = { id: "chatcmpl-agent", object: "chat.completion.chunk", created: 1700000000,
                 model: body.model };
  const send = (delta, finish = null) => res.write(`data: ${JSON.stringify({ ...base,
    choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
  res.writeHead(200, { "content-type": "text/event-stream" });
  send({ role: "assistant", content: "" });
  for await (const text of agent(body.messages)) {
    send({ content: text });
  }
  send({}, "stop");
  res.end("data: [DONE]\n\n");
}

/** `POST /v1/responses`, streamed: created, the message item and its text deltas, completed. */
async function responses(body, res) {
  let sequence = 0;
  const send = (type, fields) => res.write(
    `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...fields })}\n\n`);
  const input = typeof body.input === "string" ? [{ role: "user", content: body.input }] : body.input;
  const response = { id: "resp_agent", object: "response", created_at: 1700000000,
                     model: body.model, status: "in_progress", output: [] };
  const item = { id: "msg_agent", type: "message", role: "assistant", status: "in_progress",
                 content: [] };
  res.writeHead(200, { "content-type": "text/event-stream" });
  send("response.created", { response });
  send("response.output_item.added", { output_index: 0, item });
  send("response.content_part.added", { item_id: item.id, output_index: 0, content_index: 0,
                                        part: { type: "output_text", text: "", annotations: [] } });
  let text = "";
  for await (const delta of agent(input)) {
    text += delta;
    send("response.output_text.delta", { item_id: item.id, output_index: 0, content_index: 0,
                                         delta });
  }
  const part = { type: "output_text", text, annotations: [] };
  send("response.output_text.done", { item_id: item.id, output_index: 0, content_index: 0, text });
  send("response.content_part.done", { item_id: item.id, output_index: 0, content_index: 0, part });
  const done = { ...item, status: "completed", content: [part] };
  send("response.output_item.done", { output_index: 0, item: done });
  send("response.completed", { response: { ...response, status: "completed", output: [done] } });
  res.end();
}

/** Node's request as a Web `Request`, and a Web `Response` written back to Node's response. */
async function serve(req, res) {
  const url = new URL(req.url, `http://${req.headers.host}`);
  if (req.method === "GET" && url.pathname === "/health") {
    res.writeHead(200, { "content-type": "text/plain" }).end("ok");
    return;
  }
  if (req.method === "GET" && STATIC_DIR !== undefined) {
    await serveStatic(url.pathname, res);
    return;
  }
  if (req.method === "POST" && url.pathname.startsWith("/v1/")) {
    let text = "";
    for await (const piece of req) text += piece;
    const route = { "/v1/chat/completions": chatCompletions, "/v1/responses": responses };
    if (route[url.pathname]) {
      await route[url.pathname](JSON.parse(text), res);
      return;
    }
  }
  const routes = { "/api/chat": POST, "/api/clock": POST_CLOCK };
  if (req.method !== "POST" || !routes[url.pathname]) {
    res.writeHead(404, { "content-type": "text/plain" }).end("not found");
    return;
  }
  const request = new Request(url, {
    method: "POST",
    headers: req.headers,
    body: Readable.toWeb(req),
    duplex: "half",
  });
  const response = await routes[url.pathname](request);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  for await (const chunk of response.body) {
    res.write(chunk);
  }
  res.end();
}

http
  .createServer((req, res) => {
    serve(req, res).catch((error) => {
      console.error(error);
      if (!res.headersSent) {
        res.writeHead(500, { "content-type": "text/plain" });
      }
      res.end(String(error));
    });
  })
  .listen(port, "127.0.0.1", () => console.log(`chat route at http://127.0.0.1:${port}/api/chat`));
