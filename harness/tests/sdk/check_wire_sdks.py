"""The official Python clients of the model server's wires against it: `anthropic`, `openai`,
`google-genai` and `boto3`.

Usage: check_wire_sdks.py <model server URL> <jobs.json>

Each job is {"wire": ..., "caller": str | null, "body": {...}}: the body of one request (without
`stream`); {"wire": "reset"} starts the replay afresh (and gives no result). The wires:

- "anthropic": `client.messages.stream(**body)`, the final message read;
- "responses": `client.responses.create(stream=True, **body)`, the events read;
- "gemini" / "gemini_stream": google-genai's `client.models.generate_content` /
  `generate_content_stream` with the body's contents, system instruction and function
  declarations;
- "converse" / "converse_stream": boto3's `bedrock-runtime` `converse` / `converse_stream` with
  `endpoint_url` at the model server and dummy credentials (botocore checks every frame's CRCs
  as it decodes the event stream).

Prints one JSON line: for each job, the text, the reasoning and the tool calls (name, parsed
arguments, id) the client assembled.
"""

import json
import os
import sys
import urllib.request

import anthropic
import boto3
import openai
from botocore.config import Config
from google import genai
from google.genai import types

# The tools the shipped fixtures call, declared as a gateway would (their schemas do not enter
# the replay key).
DECLARATIONS = [
    types.FunctionDeclaration(
        name=name,
        description=f"{name} a file.",
        parameters_json_schema={"type": "object", "properties": {
            "description": {"type": "string"}, "path": {"type": "string"},
            "content": {"type": "string"}}},
    )
    for name in ("write_file", "read_file")
]
TOOL_SPECS = {"tools": [
    {"toolSpec": {"name": d.name, "description": d.description,
                  "inputSchema": {"json": d.parameters_json_schema}}}
    for d in DECLARATIONS
]}


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


def run_gemini(client, body, caller, streamed):
    config = types.GenerateContentConfig(
        system_instruction=body.get("systemInstruction"),
        tools=[types.Tool(function_declarations=DECLARATIONS)],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        http_options=types.HttpOptions(headers={"x-keyless-caller": caller} if caller else {}),
    )
    arguments = {"model": "gemini-replay", "contents": body["contents"], "config": config}
    if streamed:
        responses = list(client.models.generate_content_stream(**arguments))
    else:
        responses = [client.models.generate_content(**arguments)]
    text, reasoning, calls = "", "", []
    for response in responses:
        for part in response.candidates[0].content.parts or []:
            if part.function_call:
                call = part.function_call
                calls.append({"name": call.name, "args": call.args or {}, "id": call.id})
            elif part.thought:
                reasoning += part.text or ""
            else:
                text += part.text or ""
    assert responses[-1].candidates[0].finish_reason is not None, "no finish reason"
    return {"text": text, "reasoning": reasoning, "calls": calls}


def run_converse(client, body, caller, streamed):
    client.keyless_caller = caller
    arguments = {"modelId": "us.anthropic.claude-replay-v1:0", "messages": body["messages"],
                 "system": body["system"], "inferenceConfig": body["inferenceConfig"],
                 "toolConfig": TOOL_SPECS}
    text, reasoning, calls = "", "", []
    if not streamed:
        answer = client.converse(**arguments)
        for block in answer["output"]["message"]["content"]:
            if "text" in block:
                text += block["text"]
            elif "toolUse" in block:
                use = block["toolUse"]
                calls.append({"name": use["name"], "args": use["input"], "id": use["toolUseId"]})
            elif "reasoningContent" in block:
                reasoning += block["reasoningContent"]["reasoningText"]["text"]
        assert answer["stopReason"], answer
        return {"text": text, "reasoning": reasoning, "calls": calls}
    blocks = {}
    stop = None
    for event in client.converse_stream(**arguments)["stream"]:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            use = start["start"]["toolUse"]
            blocks[start["contentBlockIndex"]] = {"name": use["name"], "id": use["toolUseId"],
                                                  "input": ""}
        elif "contentBlockDelta" in event:
            delta = event["contentBlockDelta"]["delta"]
            if "text" in delta:
                text += delta["text"]
            elif "toolUse" in delta:
                blocks[event["contentBlockDelta"]["contentBlockIndex"]]["input"] += \
                    delta["toolUse"]["input"]
            elif "reasoningContent" in delta:
                reasoning += delta["reasoningContent"].get("text", "")
        elif "messageStop" in event:
            stop = event["messageStop"]["stopReason"]
    assert stop, "no messageStop"
    for index in sorted(blocks):
        block = blocks[index]
        calls.append({"name": block["name"], "args": json.loads(block["input"] or "{}"),
                      "id": block["id"]})
    return {"text": text, "reasoning": reasoning, "calls": calls}


def bedrock_client(url):
    """boto3's bedrock-runtime client at the model server, with dummy credentials; the caller
    of each call goes in the x-keyless-caller header, added before the request is signed."""
    client = boto3.client(
        "bedrock-runtime", endpoint_url=url, region_name="us-east-1",
        aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="not-a-secret",
        config=Config(retries={"max_attempts": 1}))
    client.keyless_caller = None

    def add_caller(request, **_):
        if client.keyless_caller:
            request.headers["x-keyless-caller"] = client.keyless_caller

    client.meta.events.register("before-sign.bedrock-runtime.*", add_caller)
    return client


def main():
    url, jobs_path = sys.argv[1], sys.argv[2]
    with open(jobs_path, encoding="utf-8") as jobs_file:
        jobs = json.load(jobs_file)
    claude = anthropic.Anthropic(base_url=url, api_key="not-a-key", max_retries=0)
    gpt = openai.OpenAI(base_url=url + "/v1", api_key="not-a-key", max_retries=0)
    gemini = genai.Client(api_key="not-a-key",
                          http_options=types.HttpOptions(base_url=url, api_version="v1beta"))
    bedrock = bedrock_client(url)
    results = []
    for job in jobs:
        headers = {"x-keyless-caller": job["caller"]} if job.get("caller") else {}
        if job["wire"] == "reset":
            reset = urllib.request.Request(url + "/_keyless/reset", data=b"{}", method="POST",
                                           headers={"Content-Type": "application/json",
                                                    # The driver's alone (issue 34, finding 3).
                                                    "x-keyless-reset-token":
                                                        os.environ["KEYLESS_RESET_TOKEN"]})
            with urllib.request.urlopen(reset) as answer:
                assert answer.status == 200, answer.status
        elif job["wire"] == "anthropic":
            results.append(run_anthropic(claude, job["body"], headers))
        elif job["wire"] == "responses":
            results.append(run_responses(gpt, job["body"], headers))
        elif job["wire"] in ("gemini", "gemini_stream"):
            results.append(run_gemini(gemini, job["body"], job.get("caller"),
                                      job["wire"] == "gemini_stream"))
        elif job["wire"] in ("converse", "converse_stream"):
            results.append(run_converse(bedrock, job["body"], job.get("caller"),
                                        job["wire"] == "converse_stream"))
        else:
            raise AssertionError(f"unknown wire {job['wire']!r}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
