"""The official `ollama` Python client and LangChain's `ChatOllama` driving a tool loop against
the model server's Ollama wire (`POST /api/chat`).

Usage: check_ollama.py <model server URL> <prompt> [<URL to reset> | none]

Runs the same loop with `ollama.Client.chat` (`stream=False`, then `stream=True` with the
chunks added up) and with `ChatOllama` (`invoke`, then `stream`), the fixture replay at the
model server (or at the URL given: the upstream of a recording proxy) reset before each; `none`
resets nothing (a strict replay serves the runs' calls in order). The loop executes each tool
call over an in-memory file store (`write_file` answers "OK", `read_file` the file's content)
and appends its result, until an answer calls no tool. Before the loops, `Client.list()` and
`Client.show()` must name the model the server replays. Prints one JSON line: for each run,
its answers' text, thinking and tool calls (name, arguments; Ollama sends no call ids, and
LangChain makes up its own), in order.
"""

import json
import os
import sys
import urllib.request

import ollama
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_ollama import ChatOllama

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
HEADERS = {"X-Harness-Caller": "lead_agent"}


def reset(url):
    if url == "none":
        return
    request = urllib.request.Request(url + "/_keyless/reset", data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json",
                                              "x-keyless-reset-token":
                                                  os.environ["KEYLESS_RESET_TOKEN"]})
    with urllib.request.urlopen(request) as answer:
        assert answer.status == 200, answer.status


def seen(text, thinking, calls):
    return {"text": text, "thinking": thinking or "",
            "calls": [{"name": name, "args": dict(args)} for name, args in calls]}


def client_chat(client, model, messages, streamed):
    """One `Client.chat`: the assistant message as a dict, the stream's chunks added up."""
    tools = [t.tool_call_schema.model_json_schema() for t in TOOLS.values()]
    tools = [{"type": "function", "function": {"name": name, "description": t.description,
                                                "parameters": schema}}
             for (name, t), schema in zip(TOOLS.items(), tools)]
    if not streamed:
        answer = client.chat(model=model, messages=messages, tools=tools, stream=False)
        assert answer.done, answer
        message = answer.message
        return message.content or "", message.thinking, list(message.tool_calls or [])
    text, thinking, calls, done = "", "", [], False
    for chunk in client.chat(model=model, messages=messages, tools=tools, stream=True):
        text += chunk.message.content or ""
        thinking += chunk.message.thinking or ""
        calls += list(chunk.message.tool_calls or [])
        done = done or bool(chunk.done)
    assert done, "the stream ended without its done line"
    return text, thinking, calls


def client_loop(client, model, prompt, streamed):
    FILES.clear()
    messages = [{"role": "user", "content": prompt}]
    answers = []
    for _ in range(8):
        text, thinking, calls = client_chat(client, model, messages, streamed)
        pairs = [(c.function.name, c.function.arguments) for c in calls]
        answers.append(seen(text, thinking, pairs))
        if not calls:
            return answers
        messages.append({"role": "assistant", "content": text,
                         "tool_calls": [{"function": {"name": n, "arguments": dict(a)}}
                                        for n, a in pairs]})
        for name, args in pairs:
            messages.append({"role": "tool", "content": TOOLS[name].invoke(dict(args)),
                             "tool_name": name})
    raise AssertionError(f"the loop did not end: {answers}")


def langchain_loop(model, prompt, streamed):
    FILES.clear()
    bound = model.bind_tools(list(TOOLS.values()))
    messages = [HumanMessage(content=prompt)]
    answers = []
    for _ in range(8):
        if streamed:
            message = None
            for chunk in bound.stream(messages):
                message = chunk if message is None else message + chunk
        else:
            message = bound.invoke(messages)
        thinking = message.additional_kwargs.get("reasoning_content")
        answers.append(seen(message.text, thinking,
                            [(c["name"], c["args"]) for c in message.tool_calls]))
        if not message.tool_calls:
            return answers
        messages.append(message)
        for call in message.tool_calls:
            result = TOOLS[call["name"]].invoke(call["args"])
            messages.append(ToolMessage(content=result, tool_call_id=call["id"]))
    raise AssertionError(f"the loop did not end: {answers}")


def main():
    url, prompt = sys.argv[1], sys.argv[2]
    reset_url = sys.argv[3] if len(sys.argv) > 3 else url
    client = ollama.Client(host=url, headers=HEADERS)
    models = [m.model for m in client.list().models]
    assert models, "no model listed"
    model = models[0]
    client.show(model)
    runs = []
    for streamed in (False, True):
        reset(reset_url)
        runs.append(client_loop(client, model, prompt, streamed))
    chat = ChatOllama(model=model, base_url=url, client_kwargs={"headers": HEADERS},
                      validate_model_on_init=True)
    for streamed in (False, True):
        reset(reset_url)
        runs.append(langchain_loop(chat, prompt, streamed))
    print(json.dumps(runs))


if __name__ == "__main__":
    main()
