"""The official Python clients of the model server's wires under a fault scenario (issue 42):
`openai` (Chat Completions and Responses), `anthropic`, `google-genai` and `boto3`.

Usage: check_wire_faults.py <model server URL> <jobs.json>

Each job is {"wire": ..., "caller": str | null, "body": {...}, "retries": int}: one streamed
call (the body without `stream`) made after a reset (the fault plan's counts start afresh). The
wires: "chat" (`chat.completions.create(stream=True)`), "responses"
(`responses.create(stream=True)`), "anthropic" (`messages.stream`), "gemini"
(`generate_content_stream`), "converse" (`converse_stream`). `retries` is the client's own retry
count (openai's and anthropic's `max_retries`, google-genai's retry options, botocore's
`max_attempts`).

Prints one JSON line: for each job, what the client did: {"raised": the exception's class (or
null), "status": its HTTP status (or null), "detail": the provider's error type, code or status
as the client read it, "answered": whether the call completed, "seconds": how long it took}.
"""

import json
import os
import sys
import time
import urllib.request

import anthropic
import boto3
import botocore.exceptions
import openai
from botocore.config import Config
from google import genai
from google.genai import errors as genai_errors
from google.genai import types


def reset(url):
    request = urllib.request.Request(url + "/_keyless/reset", data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json",
                                              "x-keyless-reset-token":
                                                  os.environ["KEYLESS_RESET_TOKEN"]})
    with urllib.request.urlopen(request) as answer:
        assert answer.status == 200, answer.status


def chat(url, body, headers, retries):
    client = openai.OpenAI(base_url=url + "/v1", api_key="not-a-key", max_retries=retries)
    for _ in client.chat.completions.create(stream=True, **body, extra_headers=headers):
        pass


def responses(url, body, headers, retries):
    client = openai.OpenAI(base_url=url + "/v1", api_key="not-a-key", max_retries=retries)
    for event in client.responses.create(stream=True, **body, extra_headers=headers):
        if event.type == "response.failed":
            # The Responses stream's own failure: the client yields it as an event.
            return {"raised": None, "status": None, "detail": "response.failed:"
                    + event.response.error.code, "answered": False}
    return None


def claude(url, body, headers, retries):
    client = anthropic.Anthropic(base_url=url, api_key="not-a-key", max_retries=retries)
    with client.messages.stream(**body, extra_headers=headers) as stream:
        for _ in stream.text_stream:
            pass


def gemini(url, body, headers, retries):
    options = types.HttpOptions(base_url=url, api_version="v1beta", headers=headers)
    if retries:
        options.retry_options = types.HttpRetryOptions(attempts=retries + 1, initial_delay=0.1)
    client = genai.Client(api_key="not-a-key", http_options=options)
    config = types.GenerateContentConfig(system_instruction=body.get("systemInstruction"))
    for _ in client.models.generate_content_stream(model="gemini-replay",
                                                   contents=body["contents"], config=config):
        pass


def converse(url, body, headers, retries):
    client = boto3.client(
        "bedrock-runtime", endpoint_url=url, region_name="us-east-1",
        aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="not-a-secret",
        config=Config(retries={"max_attempts": retries + 1, "mode": "standard"}))

    def add_caller(request, **_):
        for name, value in headers.items():
            request.headers[name] = value

    client.meta.events.register("before-sign.bedrock-runtime.*", add_caller)
    answer = client.converse_stream(modelId="us.anthropic.claude-replay-v1:0",
                                    messages=body["messages"], system=body["system"],
                                    inferenceConfig=body["inferenceConfig"])
    for _ in answer["stream"]:
        pass


WIRES = {"chat": chat, "responses": responses, "anthropic": claude, "gemini": gemini,
         "converse": converse}


def detail(error):
    """The provider's own name for the failure, as the client read it."""
    if isinstance(error, botocore.exceptions.ClientError):
        return error.response["Error"]["Code"]
    if isinstance(error, botocore.exceptions.EventStreamError):
        return error.response["Error"]["Code"]
    if isinstance(error, genai_errors.APIError):
        return error.status
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            return inner.get("type") or inner.get("code")
    return None


def main():
    url, jobs_path = sys.argv[1], sys.argv[2]
    with open(jobs_path, encoding="utf-8") as jobs_file:
        jobs = json.load(jobs_file)
    results = []
    for job in jobs:
        reset(url)
        headers = {"x-keyless-caller": job["caller"]} if job.get("caller") else {}
        started = time.monotonic()
        try:
            result = WIRES[job["wire"]](url, job["body"], headers, job.get("retries", 0))
            result = result or {"raised": None, "status": None, "detail": None,
                                "answered": True}
        except Exception as error:  # noqa: BLE001 - the class is what is checked
            status = getattr(error, "status_code", None) or getattr(error, "code", None)
            if isinstance(error, botocore.exceptions.ClientError):
                status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            result = {"raised": type(error).__name__, "status": status,
                      "detail": detail(error), "answered": False}
        result["seconds"] = round(time.monotonic() - started, 1)
        results.append(result)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
