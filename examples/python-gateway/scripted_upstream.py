"""A scripted OpenAI-compatible upstream, to record this example's fixture without an API key.

With a key you record against your real provider instead (`--upstream https://api.openai.com/v1`);
this script stands in for it so the example's fixture can be rebuilt on any machine. It streams
`chat.completion.chunk`s as OpenAI does: a user question with a quoted text gets a `word_count`
tool call on that text, a tool result gets the answer "It has N words."; a question starting
"Search" gets a `web_search` tool call on the quoted text, and its result "The search says: …".

    python scripted_upstream.py --port 8099    # then --upstream http://127.0.0.1:8099/v1
"""

from __future__ import annotations

import argparse
import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def reply(messages: list[dict]) -> dict:
    """The scripted delta for a conversation: a tool call, or the answer."""
    last = messages[-1]
    if last["role"] == "tool":
        if last["content"].isdigit():
            return {"content": f"It has {last['content']} words."}
        return {"content": f"The search says: {last['content']}"}
    quoted = re.search(r"'([^']*)'", last.get("content") or "")
    text = quoted.group(1) if quoted else ""
    # "Search the web for '…'" calls web_search (the gateway's GATEWAY_SEARCH=1 tool).
    if (last.get("content") or "").lower().startswith("search"):
        name, arguments = "web_search", json.dumps({"query": text})
    else:
        name, arguments = "word_count", json.dumps({"text": text})
    return {
        "tool_calls": [
            {"index": 0, "id": f"call_{len(messages)}", "type": "function",
             "function": {"name": name, "arguments": arguments}}
        ]
    }


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        delta = reply(body["messages"])
        finish = "tool_calls" if "tool_calls" in delta else "stop"
        base = {"id": f"chatcmpl-scripted-{len(body['messages'])}", "object": "chat.completion.chunk",
                "created": 1700000000, "model": body["model"]}
        chunks = [
            {**base, "choices": [{"index": 0, "delta": {"role": "assistant", **delta},
                                  "finish_reason": None}]},
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        ]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8099)
    args = parser.parse_args()
    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
