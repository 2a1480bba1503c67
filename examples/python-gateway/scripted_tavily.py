"""A scripted upstream that answers like Tavily's `POST /search`, to record this example's search
fixture without a Tavily key. Each answer carries `--answer` and a response time that differs at
every call, as the real API's does, so two recordings differ as they would against Tavily.

    python scripted_tavily.py --port 8098 --answer "Sunny, 21 °C"
"""

from __future__ import annotations

import argparse
import json
import random
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        answer = self.server.answer
        reply = {
            "query": body.get("query"),
            "results": [{"title": "Weather", "url": "https://weather.example/paris",
                         "content": answer, "score": 0.93}],
            "response_time": round(random.uniform(0.2, 1.5), 2),
        }
        encoded = json.dumps(reply).encode()
        self.send_response(200 if self.path == "/search" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(encoded)))
        self.end_headers()
        self.wfile.write(encoded)

    def log_message(self, fmt, *args) -> None:  # noqa: D401 - the standard library's name
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8098)
    parser.add_argument("--answer", default="Sunny, 21 °C")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.answer = args.answer
    server.serve_forever()


if __name__ == "__main__":
    main()
