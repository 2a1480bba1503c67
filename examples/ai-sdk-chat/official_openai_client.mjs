// OpenAI's own client (the `openai` package) drives the agent's OpenAI-style routes: for each
// prompt, the whole conversation so far, streamed, the answer assembled by the client's stream
// helpers (`chat.completions.stream(...).finalChatCompletion()`,
// `responses.stream(...).finalResponse()`), appended as the next assistant turn. Prints the
// conversation as JSON: check.sh compares it with the one keyless's driver sent
// (`keyless test --json`'s `history`).
//
//   node official_openai_client.mjs chat http://127.0.0.1:3000/v1 gpt-4o-mini "Hi" "Again"
//   node official_openai_client.mjs responses http://127.0.0.1:3000/v1 gpt-4o-mini "Hi" "Again"
import OpenAI from "openai";

const [api, baseURL, model, ...prompts] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "unused" });
const conversation = [];
for (const content of prompts) {
  conversation.push({ role: "user", content });
  if (api === "chat") {
    const stream = client.chat.completions.stream({ model, messages: conversation, stream: true });
    const completion = await stream.finalChatCompletion();
    const message = completion.choices[0].message;
    conversation.push({ role: "assistant", content: message.content ?? "" });
  } else if (api === "responses") {
    const stream = client.responses.stream({ model, input: conversation });
    const response = await stream.finalResponse();
    // The message items' text, as the client's `output_text` joins it (set only on a response
    // it parses).
    const text = response.output
      .filter((item) => item.type === "message")
      .flatMap((item) => item.content.filter((part) => part.type === "output_text"))
      .map((part) => part.text)
      .join("");
    conversation.push({ role: "assistant", content: text });
  } else {
    throw new Error(`unknown API ${api}: expected chat or responses`);
  }
}
console.log(JSON.stringify(conversation));
