"""A scripted OpenAI-compatible upstream, to record this example's fixture without an API key.

With a key you record against your real provider instead (`--upstream https://api.openai.com/v1`);
this script stands in for it so the example's fixture can be rebuilt on any machine. It streams
`chat.completion.chunk`s as OpenAI does, the answer's text in several chunks: a user message with
a quoted item gets an `add_item` tool call on that item, a tool result gets the answer
"Done: <the tool's result>", and a message asking for "the whole archive" gets a 400 (the context
is too long), as a provider refuses a call.

    python scripted_upstream.py --port 8099    # then --upstream http://127.0.0.1:8099/v1
"""

from __future__ import annotations

import argparse
import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def reply(messages: list[dict]) -> list[dict]:
    """The scripted deltas for a conversation: a tool call, or the answer in three chunks."""
    last = messages[-1]
    if last["role"] == "tool":
        text = f"Done: {last['content']}"
        third = len(text) // 3
        return [{"content": text[:third]}, {"content": text[third:2 * third]}, {"content": text[2 * third:]}]
    content = last.get("content") or ""
    if isinstance(content, list):
        content = " ".join(part.get("text", "") for part in content)
    quoted = re.search(r"'([^']*)'", content)
    arguments = json.dumps({"item": quoted.group(1) if quoted else content})
    half = len(arguments) // 2
    call = {"index": 0, "id": f"call_{len(messages)}", "type": "function",
            "function": {"name": "add_item", "arguments": arguments[:half]}}
    return [{"content": None, "tool_calls": [call]},
            {"tool_calls": [{"index": 0, "function": {"arguments": arguments[half:]}}]}]


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if any("the whole archive" in str(m.get("content")) for m in body["messages"]):
            error = {"error": {"message": "This model's maximum context length is 8192 tokens; "
                                          "the request asked for more.",
                               "type": "invalid_request_error"}}
            data = json.dumps(error).encode()
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        deltas = reply(body["messages"])
        finish = "tool_calls" if "tool_calls" in deltas[0] else "stop"
        base = {"id": f"chatcmpl-scripted-{len(body['messages'])}", "object": "chat.completion.chunk",
                "created": 1700000000, "model": body["model"]}
        chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", **deltas[0]},
                                        "finish_reason": None}]}]
        chunks += [{**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
                   for delta in deltas[1:]]
        chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8099)
    args = parser.parse_args()
    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
