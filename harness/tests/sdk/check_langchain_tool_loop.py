"""LangChain's chat models driving a tool loop against the model server.

Usage: check_langchain_tool_loop.py <model server URL> <prompt> [<URL to reset> | none]
    [<families>]

Runs the same loop with each chat model of the comma-separated families (default: all four,
`anthropic,responses,gemini,bedrock`): `ChatAnthropic`, `ChatOpenAI(use_responses_api=True)`,
`ChatGoogleGenerativeAI` (google-genai at the model server's Gemini wire) and
`ChatBedrockConverse` (boto3 at its Converse wire, dummy credentials), each with `invoke` and
then with `stream` (the chunks added up), the fixture replay at the model server (or at the URL
given: the upstream of a recording proxy) reset before each; `none` resets nothing (a strict
replay serves the runs' calls in order). The
loop is LangChain's own: the model bound to two real tools over an in-memory file store
(`write_file` answers "OK", `read_file` the file's content), each tool call executed and its
`ToolMessage` appended, until an answer calls no tool. Prints one JSON line: for each run, its
answers' text and tool calls (name, arguments, id), in order.
"""

import json
import os
import sys
import urllib.request

import boto3
from botocore.config import Config
from langchain_anthropic import ChatAnthropic
from langchain_aws import ChatBedrockConverse
from langchain_google_genai import ChatGoogleGenerativeAI
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

FILES = {}


@tool
def write_file(description: str, path: str, content: str) -> str:
    """Write a text file."""
    FILES[path] = content
    return "OK"


@tool
def read_file(description: str, path: str) -> str:
    """Read a text file."""
    return FILES.get(path, f"Error: {path} does not exist")


TOOLS = {"write_file": write_file, "read_file": read_file}
HEADERS = {"x-keyless-caller": "lead_agent"}


def reset(url):
    if url == "none":
        return
    request = urllib.request.Request(url + "/_keyless/reset", data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json",
                                              # The driver's alone (issue 34, finding 3).
                                              "x-keyless-reset-token":
                                                  os.environ["KEYLESS_RESET_TOKEN"]})
    with urllib.request.urlopen(request) as answer:
        assert answer.status == 200, answer.status


def ask(model, messages, streamed):
    if not streamed:
        return model.invoke(messages)
    message = None
    for chunk in model.stream(messages):
        message = chunk if message is None else message + chunk
    return message


def tool_loop(model, prompt, streamed):
    FILES.clear()
    bound = model.bind_tools(list(TOOLS.values()))
    messages = [HumanMessage(content=prompt)]
    answers = []
    for _ in range(8):
        message = ask(bound, messages, streamed)
        calls = [{"name": c["name"], "args": c["args"], "id": c["id"]} for c in message.tool_calls]
        answers.append({"text": message.text, "calls": calls})
        if not message.tool_calls:
            return answers
        messages.append(message)
        for call in message.tool_calls:
            result = TOOLS[call["name"]].invoke(call["args"])
            messages.append(ToolMessage(content=result, tool_call_id=call["id"]))
    raise AssertionError(f"the loop did not end: {answers}")


def bedrock(url):
    """ChatBedrockConverse on a boto3 client at `url` with dummy credentials, which sends the
    caller header with every call."""
    client = boto3.client(
        "bedrock-runtime", endpoint_url=url, region_name="us-east-1",
        aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="not-a-secret",
        config=Config(retries={"max_attempts": 1}))

    def add_caller(request, **_):
        for name, value in HEADERS.items():
            request.headers[name] = value

    client.meta.events.register("before-sign.bedrock-runtime.*", add_caller)
    return ChatBedrockConverse(model="us.anthropic.claude-replay-v1:0", client=client,
                               region_name="us-east-1", max_tokens=1024,
                               disable_streaming=False)


def main():
    url, prompt = sys.argv[1], sys.argv[2]
    reset_url = sys.argv[3] if len(sys.argv) > 3 else url
    families = (sys.argv[4] if len(sys.argv) > 4 else "anthropic,responses,gemini,bedrock")
    make = {
        "anthropic": lambda: ChatAnthropic(
            model="claude-replay", base_url=url, api_key="not-a-key", max_retries=0,
            max_tokens=1024, default_headers=HEADERS),
        "responses": lambda: ChatOpenAI(
            model="gpt-replay", base_url=url + "/v1", api_key="not-a-key", max_retries=0,
            use_responses_api=True, default_headers=HEADERS),
        "gemini": lambda: ChatGoogleGenerativeAI(
            model="gemini-replay", google_api_key="not-a-key", base_url=url, max_retries=1,
            additional_headers=HEADERS),
        "bedrock": lambda: bedrock(url),
    }
    models = [make[family]() for family in families.split(",")]
    runs = []
    for model in models:
        for streamed in (False, True):
            reset(reset_url)
            runs.append(tool_loop(model, prompt, streamed))
    print(json.dumps(runs))


if __name__ == "__main__":
    main()
