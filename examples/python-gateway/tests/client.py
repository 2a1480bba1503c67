"""A client of the example gateway's API (DeerFlow's dialect), with the standard library only:
register a user (a session cookie and a CSRF cookie), open a thread, stream a run and return the
thread's messages from its last `values` frame."""

import json
import uuid
import urllib.request
from http.cookiejar import CookieJar


class Gateway:
    def __init__(self, url):
        self.url = url.rstrip("/")
        self.cookies = CookieJar()
        self.http = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies))
        self.post("/api/v1/auth/register",
                  {"email": f"{uuid.uuid4().hex}@example.com", "password": "correct horse battery"})

    def post(self, path, body):
        request = urllib.request.Request(self.url + path, data=json.dumps(body).encode(), method="POST")
        request.add_header("Content-Type", "application/json")
        csrf = next((c.value for c in self.cookies if c.name == "csrf_token"), None)
        if csrf:
            request.add_header("X-CSRF-Token", csrf)
        return self.http.open(request, timeout=120)

    def new_thread(self):
        with self.post("/api/threads", {}) as answer:
            return json.load(answer)["thread_id"]

    def run(self, thread, text):
        """Streams a run; the messages of the last `values` frame (after `end`)."""
        body = {"input": {"messages": [{"role": "user", "content": text}]}, "stream_mode": ["values"]}
        events, event = [], None
        with self.post(f"/api/threads/{thread}/runs/stream", body) as stream:
            for raw in stream:
                line = raw.decode().rstrip("\r\n")
                if line.startswith("event: "):
                    event = line[len("event: "):]
                elif line.startswith("data: "):
                    events.append((event, json.loads(line[len("data: "):])))
        assert events and events[-1][0] == "end", f"the run did not end with `end`: {events[-1:]}"
        values = [data for name, data in events if name == "values"]
        return values[-1]["messages"]
