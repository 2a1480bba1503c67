"""Real HTTP clients against a recorded HTTP API's base URL (`{http_url:tavily}`): `httpx`,
`requests` and `tavily-python`'s `TavilyClient(api_base_url=...)`, each making one Tavily
search with the key as the client sends it (httpx and requests in the JSON body, as Tavily's
older clients did; tavily-python as a bearer token). Prints one JSON line: each client's parsed
answer, which the test compares between the recording and its replay.

Usage: check_http_clients.py <base_url> (the key is read from TAVILY_API_KEY).
"""

import json
import os
import sys

import httpx
import requests
from tavily import TavilyClient


def main() -> None:
    base = sys.argv[1].rstrip("/")
    key = os.environ["TAVILY_API_KEY"]
    got = {}
    with httpx.Client(timeout=30) as client:
        answer = client.post(
            f"{base}/search",
            json={"api_key": key, "query": "httpx: weather in Paris", "max_results": 2},
        )
        got["httpx"] = {"status": answer.status_code, "body": answer.json()}
    answer = requests.post(
        f"{base}/search",
        json={"api_key": key, "query": "requests: weather in Rome", "max_results": 2},
        timeout=30,
    )
    got["requests"] = {"status": answer.status_code, "body": answer.json()}
    client = TavilyClient(api_key=key, api_base_url=base)
    got["tavily-python"] = client.search("tavily: weather in Oslo", max_results=2)
    print(json.dumps(got, sort_keys=True))


if __name__ == "__main__":
    main()
