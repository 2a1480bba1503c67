"""A scripted LangGraph-dialect gateway for `keyless test`'s reuse and exit tests (stdlib only).

Each run asks the model server once with the run's prompt and streams the answer's text back
(`metadata`, one `values` frame, then the connection closes). Its environment says how it
misbehaves after a run's response is closed:

    GW_EXIT=<code>   exit at once with that code (`os._exit`), after every run
    GW_LATE=<secs>   repeat the run's model call that long after its response, from a
                     background thread, and answer later runs from the first answer without
                     calling the model (a cache): the late call is the only one a later run
                     could be credited with
    GW_SLOW_THREAD=<secs>   every thread but the first takes that long to create
    GW_SEARCH=<base URL>    before the model call, search the prompt there (a Tavily-like
                     `POST /search` with the key in the JSON body) and add the first result's
                     title to the streamed answer
    GW_EMBED=1       before the model call, embed the prompt at the model server's
                     `POST /embeddings` (OpenAI's, one input) and add the vector's dimensions
                     to the streamed answer
"""

import json
import os
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = os.environ["KEYLESS_MODEL_BASE_URL"].rstrip("/") + "/chat/completions"
EXIT = os.environ.get("GW_EXIT")
LATE = os.environ.get("GW_LATE")
SLOW_THREAD = float(os.environ.get("GW_SLOW_THREAD", "0"))
SEARCH = os.environ.get("GW_SEARCH")
EMBED = os.environ.get("GW_EMBED")
EMBEDDINGS = os.environ["KEYLESS_MODEL_BASE_URL"].rstrip("/") + "/embeddings"
lock = threading.Lock()
state = {"threads": 0, "answer": None}


def ask(prompt):
    body = json.dumps(
        {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}]}
    ).encode()
    request = urllib.request.Request(
        MODEL, data=body, headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)["choices"][0]["message"]["content"]
    except Exception as err:  # a refused call answers the run with its error
        return f"model error: {err}"


def search(prompt):
    body = json.dumps(
        {"api_key": os.environ.get("TAVILY_API_KEY", "tvly-not-set"), "query": prompt}
    ).encode()
    request = urllib.request.Request(
        SEARCH.rstrip("/") + "/search", data=body, headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)["results"][0]["title"]
    except Exception as err:  # a miss answers the run with its error
        return f"search error: {err}"


def embed(prompt):
    body = json.dumps({"model": "text-embedding-3-small", "input": [prompt]}).encode()
    request = urllib.request.Request(
        EMBEDDINGS, data=body, headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return f"{len(json.load(response)['data'][0]['embedding'])} dims"
    except Exception as err:  # a miss answers the run with its error
        return f"embeddings error: {err}"


class Handler(BaseHTTPRequestHandler):
    def reply(self, value):
        data = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.reply({"ok": True})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        if self.path == "/assistants/search":
            return self.reply([{"assistant_id": "agent", "graph_id": "agent"}])
        if self.path == "/threads":
            with lock:
                state["threads"] += 1
                slow = state["threads"] > 1
            if slow:
                time.sleep(SLOW_THREAD)
            return self.reply({"thread_id": body.get("thread_id")})
        prompt = body["input"]["messages"][-1]["content"]
        with lock:
            cached = state["answer"] if LATE else None
        embedded = embed(prompt) if EMBED else None
        answer = cached if cached is not None else ask(prompt)
        if embedded:
            answer = f"{answer} [{embedded}]"
        if SEARCH:
            answer = f"{answer} ({search(prompt)})"
        with lock:
            state["answer"] = answer
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        frames = [
            ("metadata", {"run_id": "run-1"}),
            ("values", {"messages": [{"type": "human", "content": prompt},
                                     {"type": "ai", "content": answer}]}),
        ]
        for event, data in frames:
            self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()
        self.close_connection = True
        self.connection.shutdown(2)
        self.connection.close()
        if EXIT is not None:
            os._exit(int(EXIT))
        if LATE and cached is None:
            def late():
                time.sleep(float(LATE))
                ask(prompt)

            threading.Thread(target=late, daemon=True).start()

    def log_message(self, format, *args):
        print(format % args, flush=True)


ThreadingHTTPServer(("127.0.0.1", int(os.environ["KEYLESS_GATEWAY_PORT"])), Handler).serve_forever()
