/**
 * The AI SDK's own client (`DefaultChatTransport`, the request useChat sends, and
 * `readUIMessageStream`, the message useChat assembles) against the chat route, its model
 * replayed by keyless: the conversation it assembles, turn by turn. useKeyless resets the model
 * server to each block's fixture before every test and fails the test with keyless's diagnostic
 * when a model call missed or a recorded turn went unasked.
 */

import { DefaultChatTransport, generateId, readUIMessageStream, type UIMessage } from "ai";
import { useKeyless } from "keyless/vitest";
import { describe, expect, test } from "vitest";

/** The conversation after sending each of `prompts` to the route at `gateway`, as `Chat` builds it. */
async function converse(gateway: string, prompts: string[]): Promise<UIMessage[]> {
  const transport = new DefaultChatTransport<UIMessage>({ api: `${gateway}/api/chat` });
  const chatId = generateId();
  const messages: UIMessage[] = [];
  for (const text of prompts) {
    messages.push({ id: generateId(), role: "user", parts: [{ type: "text", text }] });
    const stream = await transport.sendMessages({
      chatId,
      messages,
      trigger: "submit-message",
      messageId: undefined,
      abortSignal: undefined,
    });
    let message: UIMessage | undefined;
    for await (const snapshot of readUIMessageStream<UIMessage>({
      stream,
      message: { id: generateId(), role: "assistant", parts: [] },
      terminateOnError: true,
    })) {
      message = snapshot;
    }
    if (message !== undefined) messages.push(message);
  }
  return messages;
}

/** Each message as `role: part, part, …`: text, step boundaries, and the tool's state and output. */
function shown(messages: UIMessage[]): string[] {
  return messages.map((message) => {
    const parts = message.parts.map((part) => {
      if (part.type === "text") return `text: ${part.text}`;
      if (part.type === "step-start") return "step";
      if (part.type === "tool-weather" && "state" in part) {
        return `tool-weather ${part.state}: ${JSON.stringify("output" in part ? part.output : undefined)}`;
      }
      return `[${part.type}]`;
    });
    return `${message.role}: ${parts.join(" | ")}`;
  });
}

describe("hello.chat", () => {
  const keyless = useKeyless({ fixture: "hello.chat" });

  test("a greeting is answered with text, in one step", async () => {
    expect(shown(await converse(keyless.gatewayUrl, ["Hello!"]))).toEqual([
      "user: text: Hello!",
      "assistant: step | text: Ask me about the weather in a city, and I will look it up.",
    ]);
  });
});

describe("paris.chat", () => {
  const keyless = useKeyless({ fixture: "paris.chat" });

  // The recorded stream opens each tool step with an empty text part (the page renders none).
  test("the tool step, the answer, then a follow-up turn", async () => {
    const weather = (city: string) => JSON.stringify({ city, forecast: "sunny", temperatureC: 21 });
    expect(shown(await converse(keyless.gatewayUrl, ["What is the weather in Paris?", "And in Lisbon?"]))).toEqual([
      "user: text: What is the weather in Paris?",
      `assistant: step | text:  | tool-weather output-available: ${weather("Paris")} | step | text: In Paris it is sunny and 21 °C.`,
      "user: text: And in Lisbon?",
      `assistant: step | text:  | tool-weather output-available: ${weather("Lisbon")} | step | text: In Lisbon it is sunny and 21 °C.`,
    ]);
  });
});
