"""A scripted OpenAI-compatible upstream, to record this example's fixture without an API key.

With a key you record against your real provider instead (`--upstream https://api.openai.com/v1`);
this script stands in for it so the fixture can be rebuilt on any machine. `/v1/embeddings`
answers vectors of a real model's dimension (1536, as text-embedding-3-small's), deterministic in
the text: each word adds to a few hashed dimensions, so texts that share words are near, and a
retrieval over them ranks as a real one would. The floats are float32s, answered as a float list
or, when the client asks for `encoding_format: base64` (the `openai` package does by default), as
their little-endian bytes. `/v1/chat/completions` streams an answer built from the first note in
the system prompt (the nearest document).

    python scripted_upstream.py --port 8099    # then --upstream http://127.0.0.1:8099/v1
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import re
import struct
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIMENSIONS = 1536


def embed(text: str) -> list[float]:
    """A unit vector of DIMENSIONS float32s for a text: a bag of its hashed words."""
    vector = [0.0] * DIMENSIONS
    for word in re.findall(r"[a-z]+", text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        for slot in range(3):
            index = int.from_bytes(digest[4 * slot:4 * slot + 4], "little") % DIMENSIONS
            vector[index] += 1.0 if digest[16 + slot] & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    # Through float32, as a real model's vectors are.
    return list(struct.unpack(f"<{DIMENSIONS}f", struct.pack(f"<{DIMENSIONS}f", *(x / norm for x in vector))))


def answer(messages: list[dict]) -> list[str]:
    """The scripted answer, in the pieces it is streamed in."""
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    note = re.search(r"^\[([^\]]+)\] ([^.]*\.)", system, re.MULTILINE)
    if not note:
        return ["I do not know."]
    return [f"From the {note.group(1)} note: ", note.group(2)]


class Handler(BaseHTTPRequestHandler):
    def log_message(self, fmt, *args) -> None:  # noqa: D401 - the standard library's name
        pass

    def send_json(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.endswith("/embeddings"):
            self.embeddings(body)
        else:
            self.chat(body)

    def embeddings(self, body: dict) -> None:
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = []
        for index, text in enumerate(inputs):
            vector = embed(text)
            if body.get("encoding_format") == "base64":
                encoded = base64.b64encode(struct.pack(f"<{DIMENSIONS}f", *vector)).decode()
            else:
                encoded = vector
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        tokens = sum(len(text.split()) for text in inputs)
        self.send_json({"object": "list", "data": data, "model": body["model"],
                        "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    def chat(self, body: dict) -> None:
        base = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk",
                "created": 1700000000, "model": body["model"]}
        pieces = answer(body["messages"])
        chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                        "finish_reason": None}]}]
        chunks += [{**base, "choices": [{"index": 0, "delta": {"content": piece},
                                         "finish_reason": None}]} for piece in pieces]
        chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
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
