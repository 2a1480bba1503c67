"""The official `anthropic` and `openai` Python packages against the model server.

Usage: check_wire_sdks.py <model server URL> <jobs.json>

Each job is {"wire": "anthropic" | "responses", "caller": str | null, "body": {...}}: the body
of one request (without `stream`); {"wire": "reset"} starts the replay afresh (and gives no
result). Anthropic jobs run `client.messages.stream(**body)` and read
the final message; Responses jobs run `client.responses.create(stream=True, **body)` and read
the events. Prints one JSON line: for each job, the text, the reasoning and the tool calls
(name and parsed arguments) the client assembled.
"""

import json
import os
import sys
import urllib.request

import anthropic
import openai


def run_anthropic(client, body, headers):
    with client.messages.stream(**body, extra_headers=headers) as stream:
        streamed_text = "".join(stream.text_stream)
        message = stream.get_final_message()
    text = "".join(block.text for block in message.content if block.type == "text")
    assert text == streamed_text, (text, streamed_text)
    thinking = "".join(b.thinking for b in message.content if b.type == "thinking")
    calls = [
        {"name": block.name, "args": block.input, "id": block.id}
        for block in message.content
        if block.type == "tool_use"
    ]
    return {"text": text, "reasoning": thinking, "calls": calls}


def run_responses(client, body, headers):
    text = ""
    arguments = {}
    completed = None
    for event in client.responses.create(stream=True, **body, extra_headers=headers):
        if event.type == "response.output_text.delta":
            text += event.delta
        elif event.type == "response.function_call_arguments.delta":
            arguments[event.item_id] = arguments.get(event.item_id, "") + event.delta
        elif event.type == "response.completed":
            completed = event.response
    assert completed is not None, "no response.completed"
    assert completed.output_text == text, (completed.output_text, text)
    calls = []
    reasoning = ""
    for item in completed.output:
        if item.type == "function_call":
            assert arguments.get(item.id, "") == item.arguments, (arguments, item)
            calls.append({"name": item.name, "args": json.loads(item.arguments or "{}"),
                          "id": item.call_id})
        elif item.type == "reasoning":
            reasoning += "".join(part.text for part in item.summary)
    return {"text": text, "reasoning": reasoning, "calls": calls}


def main():
    url, jobs_path = sys.argv[1], sys.argv[2]
    with open(jobs_path, encoding="utf-8") as jobs_file:
        jobs = json.load(jobs_file)
    claude = anthropic.Anthropic(base_url=url, api_key="not-a-key", max_retries=0)
    gpt = openai.OpenAI(base_url=url + "/v1", api_key="not-a-key", max_retries=0)
    results = []
    for job in jobs:
        headers = {"X-Harness-Caller": job["caller"]} if job.get("caller") else {}
        if job["wire"] == "reset":
            reset = urllib.request.Request(url + "/_harness/reset", data=b"{}", method="POST",
                                           headers={"Content-Type": "application/json",
                                                    # The driver's alone (issue 34, finding 3).
                                                    "x-keyless-reset-token":
                                                        os.environ["KEYLESS_RESET_TOKEN"]})
            with urllib.request.urlopen(reset) as answer:
                assert answer.status == 200, answer.status
        elif job["wire"] == "anthropic":
            results.append(run_anthropic(claude, job["body"], headers))
        else:
            results.append(run_responses(gpt, job["body"], headers))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
