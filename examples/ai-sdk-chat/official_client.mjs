// The AI SDK's own client drives the chat route: for each prompt, the user message `Chat`
// builds, `DefaultChatTransport.sendMessages` (the request useChat sends), and
// `readUIMessageStream` over its chunks (the assistant message useChat shows and sends back),
// appended to the conversation as `Chat` appends it. Prints the conversation as JSON: check.sh
// compares it with the one keyless's driver assembled (`keyless test --json`'s `history`).
//
//   node official_client.mjs http://127.0.0.1:3000/api/chat "What is the weather in Paris?" "And in Lisbon?"
import { DefaultChatTransport, generateId, readUIMessageStream } from "ai";

const [api, ...prompts] = process.argv.slice(2);
const transport = new DefaultChatTransport({ api });
const chatId = generateId();
const messages = [];
for (const text of prompts) {
  messages.push({ parts: [{ type: "text", text }], id: generateId(), role: "user" });
  const stream = await transport.sendMessages({
    chatId,
    messages,
    trigger: "submit-message",
    messageId: undefined,
    abortSignal: undefined,
  });
  let message;
  const errors = [];
  for await (const snapshot of readUIMessageStream({
    stream,
    message: { id: generateId(), role: "assistant", parts: [] },
    onError: (error) => errors.push(String(error)),
    terminateOnError: true,
  })) {
    message = snapshot;
  }
  if (errors.length > 0) {
    console.error(`official client: ${errors.join("; ")}`);
    process.exit(1);
  }
  if (message !== undefined) {
    messages.push(message);
  }
}
console.log(JSON.stringify(messages));
