"""Drives a running gateway with the official LangGraph Python SDK (a client nobody here wrote).

Usage: check_langgraph_sdk.py <gateway-url>

Registers a user over plain HTTP (the SDK has no cookie login), then uses the SDK with the
session cookie and CSRF header to create a thread, stream a run in "values" mode, list the
thread's runs and read its state. Prints one JSON summary line; exits non-zero on any mismatch.
"""

import asyncio
import json
import sys
import uuid

import httpx
from langgraph_sdk import get_client


async def main(base: str) -> None:
    async with httpx.AsyncClient(base_url=base) as http:
        email = f"sdk-{uuid.uuid4().hex[:8]}@example.com"
        response = await http.post(
            "/api/v1/auth/register",
            json={"email": email, "password": "very-strong-password-123"},
        )
        assert response.status_code == 201, response.text
        cookies = {name: value for name, value in response.cookies.items()}
    cookie_header = "; ".join(f"{name}={value}" for name, value in cookies.items())
    client = get_client(
        url=f"{base}/api",
        headers={"Cookie": cookie_header, "X-CSRF-Token": cookies["csrf_token"]},
    )

    thread = await client.threads.create()
    thread_id = thread["thread_id"]
    events = []
    async for part in client.runs.stream(
        thread_id,
        "lead_agent",
        input={"messages": [{"role": "user", "content": "Say hello to the SDK"}]},
        stream_mode="values",
    ):
        events.append(part)
    names = [part.event for part in events]
    assert names[0] == "metadata", names
    assert names[-1] == "end" or names.count("values") >= 1, names
    last_values = [part.data for part in events if part.event == "values"][-1]
    answer = last_values["messages"][-1]
    assert answer["type"] == "ai", answer
    assert answer["content"] == "Hello, SDK!", answer

    runs = await client.runs.list(thread_id)
    assert len(runs) == 1 and runs[0]["status"] == "success", runs
    assert runs[0]["run_id"] == events[0].data["run_id"], runs

    state = await client.threads.get_state(thread_id)
    assert state["values"]["messages"][-1]["content"] == "Hello, SDK!", state
    assert state["values"]["title"] == "Say hello to the SDK", state["values"].get("title")

    print(json.dumps({
        "sdk": "langgraph-sdk",
        "thread_id": thread_id,
        "events": names,
        "runs": [run["status"] for run in runs],
        "state_messages": len(state["values"]["messages"]),
        "title": state["values"]["title"],
    }))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
