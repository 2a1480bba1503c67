// A scripted OpenAI-compatible upstream, to record this example's fixtures without an API key.
//
// With a key you record against your real provider instead (`--upstream
// https://api.openai.com/v1`); this script stands in for it so the fixtures can be rebuilt on
// any machine (`record.sh` does). It answers streamed Chat Completions as OpenAI does, the text
// in several chunks:
//
// - a user message naming a city ("… in Paris …") gets a `weather` tool call for that city;
// - after the tool's result, the answer quotes it;
// - a user message with no city gets a one-sentence answer and no tool call;
// - the clock route's "What time is it in <city>?" gets a `get_time` call (its MCP tool), and
//   the tool's result an answer quoting its text.
//
//   node scripted_upstream.mjs --port 8099    # then --upstream http://127.0.0.1:8099/v1
import http from "node:http";

const port = Number(process.argv[process.argv.indexOf("--port") + 1] || 8099);

/** The scripted answer for a conversation: `{ text }` or `{ call: { name, arguments } }`. */
function reply(messages) {
  const last = messages[messages.length - 1];
  if (last.role === "tool" && /"get_time"/.test(JSON.stringify(messages.at(-2)))) {
    return { text: `The clock says: ${JSON.stringify(last.content)}` };
  }
  if (last.role === "tool") {
    const result = JSON.parse(last.content);
    return { text: `In ${result.city} it is ${result.forecast} and ${result.temperatureC} °C.` };
  }
  const text = typeof last.content === "string"
    ? last.content
    : last.content.map((part) => part.text ?? "").join("");
  const time = text.match(/What time is it in ([A-Z][a-z]+)/);
  if (time) {
    return { call: { name: "get_time", arguments: JSON.stringify({ city: time[1] }) } };
  }
  const city = text.match(/\bin ([A-Z][a-z]+)/);
  if (city) {
    return { call: { name: "weather", arguments: JSON.stringify({ city: city[1] }) } };
  }
  return { text: "Ask me about the weather in a city, and I will look it up." };
}

/** The chunks of one streamed answer. */
function chunks(body, answer) {
  const base = { id: `chatcmpl-scripted-${body.messages.length}`, object: "chat.completion.chunk",
                 created: 1700000000, model: body.model };
  const chunk = (delta, finish = null) => ({ ...base,
    choices: [{ index: 0, delta, finish_reason: finish }] });
  const out = [chunk({ role: "assistant", content: "" })];
  if (answer.call) {
    const { name, arguments: args } = answer.call;
    const half = Math.floor(args.length / 2);
    out.push(chunk({ tool_calls: [{ index: 0, id: `call_${body.messages.length}`,
      type: "function", function: { name, arguments: args.slice(0, half) } }] }));
    out.push(chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(half) } }] }));
    out.push(chunk({}, "tool_calls"));
  } else {
    for (const word of answer.text.match(/\S+\s*/g)) {
      out.push(chunk({ content: word }));
    }
    out.push(chunk({}, "stop"));
  }
  out.push({ ...base, choices: [],
             usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } });
  return out;
}

http
  .createServer(async (req, res) => {
    let text = "";
    for await (const piece of req) text += piece;
    const body = JSON.parse(text);
    res.writeHead(200, { "content-type": "text/event-stream" });
    for (const chunk of chunks(body, reply(body.messages))) {
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
    }
    res.end("data: [DONE]\n\n");
  })
  .listen(port, "127.0.0.1");
