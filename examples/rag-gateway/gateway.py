"""A small retrieval (RAG) gateway in Python, for keyless's worked example of embeddings.

It serves one OpenAI-style route, `POST /v1/chat/completions` (streamed), and answers each
question from its documents: it embeds the documents and the question through the official
`openai` package's embeddings endpoint, ranks the documents by cosine similarity in memory, and
asks the chat model to answer from the two nearest, streaming the answer back as
`chat.completion.chunk`s. It knows nothing of record or replay: its model's base URL comes from
the environment, as it would for a real provider. Under keyless the embeddings calls are recorded
and replayed like the chat calls, so the same chunks reach the prompt in every replay.

Run it:

    OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-... python gateway.py --port 8001

Environment (keyless's names win, so `keyless test` needs no flags):

    KEYLESS_MODEL_BASE_URL or OPENAI_BASE_URL   the models' OpenAI base URL
    KEYLESS_GATEWAY_PORT or --port              the port on 127.0.0.1
    OPENAI_API_KEY                              the key (any value for a model server)
    GATEWAY_MODEL                               the chat model (default gpt-4o-mini)
    GATEWAY_EMBEDDING_MODEL                     the embeddings model (default text-embedding-3-small)
    GATEWAY_DOCUMENTS                           the documents' JSON file (default documents.json)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from openai import OpenAI, OpenAIError

# How many documents reach the prompt.
TOP_K = 2

SYSTEM_PROMPT = (
    "Answer the question from these notes only, in one sentence. If they do not say, answer "
    "that you do not know.\n\n{notes}"
)


def cosine(a: list[float], b: list[float]) -> float:
    """The cosine similarity of two vectors (0 when either is all zeros)."""
    dot = sum(x * y for x, y in zip(a, b))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norms if norms else 0.0


class Retriever:
    """The documents and the two embeddings calls a question costs: the documents in one batch,
    then the question. Nothing is cached between requests, so each run makes the same calls."""

    def __init__(self, client: OpenAI, model: str, documents: list[dict]) -> None:
        self.client = client
        self.model = model
        self.documents = documents

    def nearest(self, question: str) -> list[dict]:
        texts = [document["text"] for document in self.documents]
        index = self.client.embeddings.create(model=self.model, input=texts).data
        query = self.client.embeddings.create(model=self.model, input=question).data[0]
        scored = sorted(
            zip(self.documents, index),
            key=lambda pair: cosine(pair[1].embedding, query.embedding),
            reverse=True,
        )
        return [document for document, _ in scored[:TOP_K]]


class Handler(BaseHTTPRequestHandler):
    """The routes: health and the streamed chat completion."""

    server_version = "rag-example-gateway"
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args) -> None:  # noqa: D401 - the standard library's name
        sys.stderr.write("gateway: " + (fmt % args) + "\n")

    def send_json(self, status: int, body) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/health":
            self.send_json(200, {"status": "healthy"})
        else:
            self.send_json(404, {"error": {"message": f"Not Found: GET {self.path}"}})

    def do_POST(self) -> None:
        if self.path != "/v1/chat/completions":
            self.send_json(404, {"error": {"message": f"Not Found: POST {self.path}"}})
            return
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
            question = body["messages"][-1]["content"]
            if not isinstance(question, str):
                raise TypeError("content is not a string")
        except (ValueError, KeyError, IndexError, TypeError) as error:
            self.send_json(400, {"error": {"message": f"messages[-1].content: {error}"}})
            return
        self.answer(body.get("model") or "agent", question)

    def answer(self, model: str, question: str) -> None:
        chunk_id = f"chatcmpl-{uuid.uuid4().hex}"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

        def chunk(delta: dict, finish: str | None = None) -> None:
            frame = {"id": chunk_id, "object": "chat.completion.chunk", "created": int(time.time()),
                     "model": model, "choices": [{"index": 0, "delta": delta,
                                                  "finish_reason": finish}]}
            self.wfile.write(f"data: {json.dumps(frame)}\n\n".encode())
            self.wfile.flush()

        chunk({"role": "assistant", "content": ""})
        agent = self.server.agent
        try:
            notes = agent.retriever.nearest(question)
            system = SYSTEM_PROMPT.format(
                notes="\n".join(f"[{note['id']}] {note['text']}" for note in notes))
            stream = agent.client.chat.completions.create(
                model=agent.model, stream=True,
                messages=[{"role": "system", "content": system},
                          {"role": "user", "content": question}])
            for part in stream:
                for choice in part.choices:
                    if choice.delta.content:
                        chunk({"content": choice.delta.content})
        except OpenAIError as error:
            # The model failed: the user reads why, and the stream still ends as a stream does.
            chunk({"content": f"The model failed: {error}"})
        chunk({}, finish="stop")
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


class Agent:
    """The chat client, its model and the retriever, shared by the server's threads."""

    def __init__(self, client: OpenAI, model: str, retriever: Retriever) -> None:
        self.client = client
        self.model = model
        self.retriever = retriever


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=int(os.environ.get("KEYLESS_GATEWAY_PORT", "8001")))
    args = parser.parse_args()
    base_url = os.environ.get("KEYLESS_MODEL_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
    if not base_url:
        sys.exit("gateway: set KEYLESS_MODEL_BASE_URL or OPENAI_BASE_URL to the models' base URL")
    documents_path = Path(os.environ.get("GATEWAY_DOCUMENTS", Path(__file__).with_name("documents.json")))
    documents = json.loads(documents_path.read_text(encoding="utf-8"))
    client = OpenAI(base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY") or "unused")
    retriever = Retriever(client, os.environ.get("GATEWAY_EMBEDDING_MODEL", "text-embedding-3-small"),
                          documents)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.agent = Agent(client, os.environ.get("GATEWAY_MODEL", "gpt-4o-mini"), retriever)
    server.daemon_threads = True
    print(f"gateway: listening on http://127.0.0.1:{args.port}, models at {base_url}, "
          f"{len(documents)} documents", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
