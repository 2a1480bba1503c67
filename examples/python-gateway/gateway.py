"""A tiny agent gateway in Python, in the DeerFlow dialect, for the harness's worked example.

It is a real gateway, only small: it registers users with a session cookie and a CSRF cookie,
keeps threads, and streams runs as Server-Sent Events (`metadata`, one `values` frame per
state change, `end`). Its agent is a tool loop over the official `openai` package's Chat
Completions client, with one tool, `word_count`. It knows nothing of record or replay: the
harness points its model at a model server through the environment, as a user would point it at
a provider.

Run it:

    OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-... \
        python gateway.py --port 8001

Environment (the harness's names win, so `keyless test --gateway-cmd` needs no flags):

    KEYLESS_MODEL_BASE_URL or OPENAI_BASE_URL   the model's OpenAI base URL
    KEYLESS_GATEWAY_PORT or --port              the port on 127.0.0.1
    OPENAI_API_KEY                              the key (any value for a model server)
    GATEWAY_MODEL                               the model name (default gpt-4o-mini)
    GATEWAY_SEND_NAMES=0                        leave message names off the model's requests
    GATEWAY_MAX_RETRIES                         the openai client's retries (default 2; 0: none)
    GATEWAY_MODEL_TIMEOUT                       the openai client's timeout in seconds (default 60)
    GATEWAY_SEARCH=1                            add a `web_search` tool: tavily-python's TavilyClient,
                                                its key from TAVILY_API_KEY
    TAVILY_BASE_URL                             that client's base URL (default Tavily's own,
                                                https://api.tavily.com, reached through HTTPS_PROXY
                                                when it is set)
"""

from __future__ import annotations

import argparse
import http.cookies
import json
import os
import re
import secrets
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from openai import OpenAI, OpenAIError

SYSTEM_PROMPT = (
    "You are a careful assistant. When the user asks how many words a text has, call the "
    "word_count tool with that text and answer with its result."
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "word_count",
            "description": "Count the words of a text (separated by white space).",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string", "description": "The text."}},
                "required": ["text"],
            },
        },
    }
]

# One agent run may call the model this many times before it stops (DeerFlow's recursion limit
# plays this part there).
MAX_MODEL_CALLS = 8

SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "web_search",
        "description": "Search the web; answers with the best result's title and content.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "The query."}},
            "required": ["query"],
        },
    },
}

THREAD_PATH = re.compile(r"^/api/threads/([0-9A-Za-z-]{1,64})/runs/stream$")


def word_count(text: str) -> str:
    """The one tool: the number of white-space separated words, as text."""
    return str(len(text.split()))


def web_search(query: str) -> str:
    """The search tool: Tavily's own client, which knows nothing of keyless (by base URL when
    TAVILY_BASE_URL is set, else through the HTTPS proxy the environment names)."""
    from tavily import TavilyClient  # only a searching gateway needs tavily-python

    base = os.environ.get("TAVILY_BASE_URL")
    client = TavilyClient(api_key=os.environ["TAVILY_API_KEY"],
                          **({"api_base_url": base} if base else {}))
    results = client.search(query, max_results=1)["results"]
    return f"{results[0]['title']}: {results[0]['content']}" if results else "no result"


def dump(kind: str, content, **fields) -> dict:
    """A message in LangChain's dump form, the form DeerFlow's `values` frames carry."""
    message = {
        "content": content,
        "additional_kwargs": {},
        "response_metadata": {},
        "type": kind,
        "name": fields.pop("name", None),
        "id": fields.pop("id", None) or str(uuid.uuid4()),
    }
    message.update(fields)
    return message


class Store:
    """Users, sessions and threads in memory, behind one lock (the server is threaded)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users: dict[str, str] = {}
        self.sessions: dict[str, str] = {}
        self.threads: dict[str, dict] = {}


class Agent:
    """The tool loop: the model answers, its tool calls run, until it answers with text."""

    def __init__(self, client: OpenAI, model: str, send_names: bool, search: bool = False) -> None:
        self.client = client
        self.model = model
        self.send_names = send_names
        self.tools = TOOLS + [SEARCH_TOOL] if search else TOOLS

    def wire_messages(self, messages: list[dict]) -> list[dict]:
        """The thread's messages as Chat Completions messages, the system prompt first."""
        wire = [{"role": "system", "content": SYSTEM_PROMPT}]
        for message in messages:
            if message["type"] == "human":
                item = {"role": "user", "content": message["content"]}
                if self.send_names and message.get("name"):
                    item["name"] = message["name"]
            elif message["type"] == "ai":
                item = {"role": "assistant", "content": message["content"] or None}
                if message["tool_calls"]:
                    item["tool_calls"] = [
                        {
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": call["name"], "arguments": json.dumps(call["args"])},
                        }
                        for call in message["tool_calls"]
                    ]
            else:
                item = {
                    "role": "tool",
                    "tool_call_id": message["tool_call_id"],
                    "content": message["content"],
                }
            wire.append(item)
        return wire

    def call_model(self, messages: list[dict]) -> dict:
        """One streamed model call, assembled into an AI message dump."""
        stream = self.client.chat.completions.create(
            model=self.model,
            messages=self.wire_messages(messages),
            tools=self.tools,
            stream=True,
        )
        text, message_id, calls = [], None, {}
        for chunk in stream:
            message_id = message_id or chunk.id
            for choice in chunk.choices:
                delta = choice.delta
                if delta.content:
                    text.append(delta.content)
                for call in delta.tool_calls or []:
                    slot = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                    slot["id"] = call.id or slot["id"]
                    if call.function is not None:
                        slot["name"] += call.function.name or ""
                        slot["arguments"] += call.function.arguments or ""
        tool_calls = []
        for index in sorted(calls):
            call = calls[index]
            try:
                args = json.loads(call["arguments"] or "{}")
            except json.JSONDecodeError:
                args = {}
            tool_calls.append(
                {"name": call["name"], "args": args, "id": call["id"], "type": "tool_call"}
            )
        return dump(
            "ai",
            "".join(text),
            id=message_id,
            tool_calls=tool_calls,
            invalid_tool_calls=[],
            usage_metadata=None,
        )

    def run(self, messages: list[dict], publish) -> OpenAIError | None:
        """Runs the loop on `messages` (changed in place), publishing the state after each step;
        the model's failure, if it failed."""
        for _ in range(MAX_MODEL_CALLS):
            try:
                answer = self.call_model(messages)
            except OpenAIError as error:
                # The model failed: the user sees why, as DeerFlow's error middleware shows it.
                messages.append(dump("ai", f"The model failed: {error}", tool_calls=[],
                                     invalid_tool_calls=[], usage_metadata=None))
                publish()
                return error
            messages.append(answer)
            publish()
            if not answer["tool_calls"]:
                return
            for call in answer["tool_calls"]:
                if call["name"] == "word_count" and isinstance(call["args"].get("text"), str):
                    result, status = word_count(call["args"]["text"]), "success"
                elif (call["name"] == "web_search" and self.tools is not TOOLS
                      and isinstance(call["args"].get("query"), str)):
                    try:
                        result, status = web_search(call["args"]["query"]), "success"
                    except Exception as error:  # the tool's failure is the model's to read
                        result, status = f"Error: the search failed: {error}", "error"
                else:
                    result, status = f"Error: unknown tool or arguments: {call['name']}", "error"
                messages.append(dump("tool", result, name=call["name"], tool_call_id=call["id"],
                                     artifact=None, status=status))
            publish()
        return None


class Handler(BaseHTTPRequestHandler):
    """The routes: health, register, threads, and a run's stream."""

    server_version = "python-example-gateway"
    protocol_version = "HTTP/1.1"

    # -- plumbing --------------------------------------------------------------------------

    def log_message(self, fmt, *args) -> None:  # noqa: D401 - the standard library's name
        sys.stderr.write("gateway: " + (fmt % args) + "\n")

    def cookies(self) -> dict[str, str]:
        jar = http.cookies.SimpleCookie(self.headers.get("Cookie", ""))
        return {name: morsel.value for name, morsel in jar.items()}

    def send_json(self, status: int, body, cookies: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (cookies or {}).items():
            http_only = "; HttpOnly" if name == "access_token" else ""
            self.send_header("Set-Cookie", f"{name}={value}; Path=/; SameSite=Strict{http_only}")
        self.end_headers()
        self.wfile.write(data)

    def read_json(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length > 1_000_000:
            raise ValueError("the body is larger than 1 MB")
        return json.loads(self.rfile.read(length) or b"{}")

    def user(self) -> str | None:
        token = self.cookies().get("access_token")
        with self.server.store.lock:
            return self.server.store.sessions.get(token or "")

    def csrf_ok(self) -> bool:
        header = self.headers.get("X-CSRF-Token")
        cookie = self.cookies().get("csrf_token")
        return bool(header) and header == cookie

    # -- routes ----------------------------------------------------------------------------

    def do_GET(self) -> None:
        if self.path == "/health":
            self.send_json(200, {"status": "healthy"})
        else:
            self.send_json(404, {"detail": f"Not Found: GET {self.path}"})

    def do_POST(self) -> None:
        try:
            body = self.read_json()
        except ValueError as error:
            self.send_json(422, {"detail": f"invalid JSON body: {error}"})
            return
        if self.path == "/api/v1/auth/register":
            self.register(body)
            return
        if not self.csrf_ok():
            self.send_json(403, {"detail": "CSRF token missing. Include X-CSRF-Token header."})
            return
        user = self.user()
        if user is None:
            self.send_json(401, {"detail": {"code": "not_authenticated", "message": "Authentication required"}})
            return
        if self.path == "/api/threads":
            self.create_thread(user, body)
            return
        match = THREAD_PATH.match(self.path)
        if match:
            self.stream_run(user, match.group(1), body)
            return
        self.send_json(404, {"detail": f"Not Found: POST {self.path}"})

    def register(self, body: dict) -> None:
        email, password = body.get("email"), body.get("password")
        if not isinstance(email, str) or not isinstance(password, str) or len(password) < 8:
            self.send_json(422, {"detail": "email and a password of 8 characters or more are required"})
            return
        with self.server.store.lock:
            if email in self.server.store.users:
                self.send_json(400, {"detail": {"code": "email_already_exists"}})
                return
            user_id = str(uuid.uuid4())
            self.server.store.users[email] = user_id
            token = secrets.token_urlsafe(32)
            self.server.store.sessions[token] = user_id
        self.send_json(
            201,
            {"id": user_id, "email": email, "system_role": "user", "needs_setup": False,
             "oauth_provider": None},
            cookies={"access_token": token, "csrf_token": secrets.token_urlsafe(32)},
        )

    def create_thread(self, user: str, body: dict) -> None:
        thread_id = body.get("thread_id") or str(uuid.uuid4())
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        thread = {"thread_id": thread_id, "created_at": now, "updated_at": now,
                  "metadata": body.get("metadata") or {}, "status": "idle", "values": {}}
        with self.server.store.lock:
            if thread_id in self.server.store.threads:
                self.send_json(409, {"detail": f"thread {thread_id} exists"})
                return
            self.server.store.threads[thread_id] = {"owner": user, "messages": [], **thread}
        self.send_json(200, thread)

    def stream_run(self, user: str, thread_id: str, body: dict) -> None:
        with self.server.store.lock:
            thread = self.server.store.threads.get(thread_id)
        if thread is None or thread["owner"] != user:
            self.send_json(404, {"detail": f"Thread {thread_id} not found"})
            return
        inputs = (body.get("input") or {}).get("messages") or []
        if not inputs or not isinstance(inputs[-1].get("content"), str):
            self.send_json(422, {"detail": "input.messages[-1].content must be a string"})
            return
        run_id = str(uuid.uuid4())
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

        def frame(event: str, data) -> None:
            self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

        messages = thread["messages"]
        frame("metadata", {"run_id": run_id, "thread_id": thread_id})
        messages.append(dump("human", inputs[-1]["content"], name="user-input"))
        publish = lambda: frame("values", {"messages": messages})  # noqa: E731
        publish()
        failed = self.server.agent.run(messages, publish)
        if failed is not None:
            # The stream says the run failed, as a LangGraph server's `error` event does.
            frame("error", {"error": type(failed).__name__, "message": str(failed)})
        frame("end", None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=int(os.environ.get("KEYLESS_GATEWAY_PORT", "8001")))
    args = parser.parse_args()
    base_url = os.environ.get("KEYLESS_MODEL_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
    if not base_url:
        sys.exit("gateway: set KEYLESS_MODEL_BASE_URL or OPENAI_BASE_URL to the model's base URL")
    # The client's own retries (honouring the provider's `retry-after`) carry a run through a
    # rate limit; GATEWAY_MAX_RETRIES=0 removes them (the 429 fault scenario then fails).
    client = OpenAI(base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY") or "unused",
                    max_retries=int(os.environ.get("GATEWAY_MAX_RETRIES", "2")),
                    timeout=float(os.environ.get("GATEWAY_MODEL_TIMEOUT", "60")))
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.store = Store()
    server.agent = Agent(client, os.environ.get("GATEWAY_MODEL", "gpt-4o-mini"),
                         os.environ.get("GATEWAY_SEND_NAMES", "1") != "0",
                         os.environ.get("GATEWAY_SEARCH") == "1")
    server.daemon_threads = True
    print(f"gateway: listening on http://127.0.0.1:{args.port}, model at {base_url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
