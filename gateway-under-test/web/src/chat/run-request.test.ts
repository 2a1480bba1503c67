import { describe, expect, it } from "vitest";

import { createGatewayClient } from "../api/client";
import { MODES, parseMode } from "./modes";
import { ASSISTANT_ID, runRequestBody, runSubmission, type RunRequestInputs } from "./run-request";

/** `run-requests/run-request.<mode>.json`: the expected wire body for some inputs. */
interface Expectation {
  inputs: { prompt: string; mode: string; model_name: string | null; thread_id: string };
  body: unknown;
}

const files = import.meta.glob<Expectation>("./run-requests/run-request.*.json", { eager: true, import: "default" });
const cases = Object.entries(files).map(([path, expectation]) => {
  const mode = parseMode(expectation.inputs.mode);
  if (mode === null) throw new Error(`${path}: inputs.mode "${expectation.inputs.mode}" is not a mode`);
  const inputs: RunRequestInputs = {
    prompt: expectation.inputs.prompt,
    mode,
    modelName: expectation.inputs.model_name,
    threadId: expectation.inputs.thread_id,
  };
  return { path, inputs, body: expectation.body };
});

/** Sends `inputs` through the SDK's real `runs.stream` and returns the request it made. */
async function sentBySdk(inputs: RunRequestInputs): Promise<{ url: string; body: unknown; headers: Headers }> {
  const requests: { url: string; body: unknown; headers: Headers }[] = [];
  const fetchStub: typeof fetch = (input, init) => {
    requests.push({
      url: input instanceof Request ? input.url : String(input),
      body: JSON.parse(typeof init?.body === "string" ? init.body : "null"),
      headers: new Headers(init?.headers),
    });
    return Promise.resolve(new Response("event: end\ndata: null\n\n", { headers: { "Content-Type": "text/event-stream" } }));
  };
  const client = createGatewayClient("http://gateway.test", { cookies: () => "csrf_token=t0k3n", fetch: fetchStub });
  const { input, options } = runSubmission(inputs);
  for await (const event of client.runs.stream(inputs.threadId, ASSISTANT_ID, { input, ...options })) {
    void event;
  }
  const [request] = requests;
  if (request === undefined || requests.length !== 1) throw new Error(`expected one request, got ${requests.length}`);
  return request;
}

describe("run request", () => {
  it("has an expectation file for every mode", () => {
    expect(cases.map((entry) => entry.inputs.mode).sort()).toStrictEqual([...MODES].sort());
  });

  it.each(cases)("$path: runRequestBody builds the expected body", ({ inputs, body }) => {
    expect(runRequestBody(inputs)).toStrictEqual(body);
  });

  it.each(cases)("$path: the SDK sends exactly that body, with the CSRF header", async ({ inputs, body }) => {
    const request = await sentBySdk(inputs);
    expect(request.url).toBe(`http://gateway.test/api/threads/${inputs.threadId}/runs/stream`);
    expect(request.body).toStrictEqual(body);
    expect(request.headers.get("X-CSRF-Token")).toBe("t0k3n");
  });

  it("leaves model_name out when no model is picked", () => {
    const [first] = cases;
    if (first === undefined) throw new Error("no expectation files");
    const context = runRequestBody({ ...first.inputs, modelName: null }).context;
    expect(Object.keys(context)).not.toContain("model_name");
  });
});
