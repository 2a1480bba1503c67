"""A scripted OpenAI-compatible upstream, to record this example's fixtures without an API key.

With a key you record against your real provider instead (`--upstream https://api.openai.com/v1`);
this script stands in for it so the fixtures can be rebuilt on any machine (`record.sh` does). It
answers Chat Completions, streamed or not, as OpenAI does:

- the agent (`agent.py`): a user message naming a file gets a `write_file` call when it says
  "write '<text>' to <file>", else a `read_file` call; after a `write_file` result, a `read_file`
  call on the same file; after a `read_file` result, an answer quoting it;
- the clock graphs (`clock.py`): "what time is it in <city>" gets a `get_time` call, and its
  result an answer quoting it;
- the review graph (`review.py`): the writer's system prompt gets a sentence, the critic's a risk;
- a user message asking for "the whole archive" gets a 400 (the context is too long), as a
  provider answers a request it refuses.

    python scripted_upstream.py --port 8099    # then --upstream http://127.0.0.1:8099/v1
"""

from __future__ import annotations

import argparse
import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def tool_call(messages: list[dict], name: str, arguments: dict) -> dict:
    return {"tool_calls": [{"index": 0, "id": f"call_{len(messages)}", "type": "function",
                            "function": {"name": name, "arguments": json.dumps(arguments)}}]}


def reply(messages: list[dict]) -> dict:
    """The scripted delta for a conversation: a tool call, or the answer."""
    system = messages[0].get("content") if messages[0]["role"] == "system" else ""
    if "Write one short sentence" in (system or ""):
        return {"content": "Ship on Monday, after the tests pass."}
    if "Name one risk" in (system or ""):
        return {"content": "A Friday release leaves no one to fix what breaks."}
    last = messages[-1]
    if last["role"] == "tool":
        call = messages[-2]["tool_calls"][0]["function"]
        if call["name"] == "get_time":
            return {"content": f"The clock says: {last['content']}"}
        path = json.loads(call["arguments"])["path"]
        if call["name"] == "write_file":
            return tool_call(messages, "read_file", {"path": path})
        return {"content": f"{path} says: {last['content']}"}
    text = last.get("content") or ""
    if isinstance(text, list):
        text = "".join(block.get("text", "") for block in text)
    time = re.search(r"[Ww]hat time is it in (\w+)", text)
    if time:
        return tool_call(messages, "get_time", {"city": time.group(1)})
    write = re.search(r"[Ww]rite '([^']*)' to (\S+?)[,.]?(\s|$)", text)
    if write:
        return tool_call(messages, "write_file", {"path": write.group(2), "content": write.group(1)})
    read = re.search(r"(\S+\.txt)", text)
    return tool_call(messages, "read_file", {"path": read.group(1) if read else "notes.txt"})


class Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

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
        delta = reply(body["messages"])
        finish = "tool_calls" if "tool_calls" in delta else "stop"
        base = {"id": f"chatcmpl-scripted-{len(body['messages'])}", "created": 1700000000,
                "model": body["model"]}
        if not body.get("stream"):
            message = {"role": "assistant", "content": delta.get("content")}
            if "tool_calls" in delta:
                message["tool_calls"] = [{k: v for k, v in call.items() if k != "index"}
                                         for call in delta["tool_calls"]]
            answer = {**base, "object": "chat.completion",
                      "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                      "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        base["object"] = "chat.completion.chunk"
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
