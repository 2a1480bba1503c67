"""A LangGraph agent with file tools, served by LangGraph's own API server (`langgraph dev`).

A stock `create_agent` agent whose `ChatOpenAI` reads its base URL and key from the environment,
as any deployment's does. Its two tools write and read text files in a per-thread folder below
`AGENT_WORKSPACE` (default: a `workspace/` folder beside this file), confined to it. It knows
nothing of the harness: pointed at a provider it is a real agent, pointed at the harness's model
server it replays a recorded run.
"""

from __future__ import annotations

import os
import pathlib

from langchain.agents import create_agent
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

SYSTEM_PROMPT = (
    "You are a careful assistant with two tools. Use write_file to save text to a file and "
    "read_file to read a file back; answer briefly."
)

WORKSPACE = pathlib.Path(os.environ.get("AGENT_WORKSPACE", pathlib.Path(__file__).parent / "workspace"))


def thread_folder(config: RunnableConfig) -> pathlib.Path:
    """The folder of the run's thread, created on first use."""
    thread_id = str(config.get("configurable", {}).get("thread_id", "no-thread"))
    folder = (WORKSPACE / thread_id).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def confined(folder: pathlib.Path, path: str) -> pathlib.Path:
    """`path` below `folder`, or a ValueError when it would leave it."""
    target = (folder / path.lstrip("/")).resolve()
    if folder != target and folder not in target.parents:
        raise ValueError(f"{path} is outside the workspace")
    return target


# The tools take and answer what DeerFlow's `write_file` and `read_file` take and answer (a
# `description` of why, "OK" once written), so a fixture recorded through DeerFlow's gateway
# replays through this graph too.
@tool
def write_file(path: str, content: str, config: RunnableConfig, description: str = "") -> str:
    """Write `content` to the text file `path` (relative to the workspace), replacing it;
    `description` says why."""
    target = confined(thread_folder(config), path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content, encoding="utf-8")
    return "OK"


@tool
def read_file(path: str, config: RunnableConfig, description: str = "") -> str:
    """Read the text file `path` (relative to the workspace); `description` says why."""
    target = confined(thread_folder(config), path)
    if not target.is_file():
        return f"Error: {path} does not exist"
    return target.read_text(encoding="utf-8")


def model(caller: str | None = None) -> ChatOpenAI:
    """The chat model from the environment; `caller` names the node for the harness's model
    server (`x-keyless-caller`), which needs it only when two nodes send one conversation."""
    headers = {"x-keyless-caller": caller} if caller else None
    return ChatOpenAI(
        model=os.environ.get("AGENT_MODEL", "gpt-4o-mini"),
        base_url=os.environ.get("OPENAI_BASE_URL"),
        api_key=os.environ.get("OPENAI_API_KEY", "unused"),
        default_headers=headers,
        max_retries=0,
    )


graph = create_agent(model(), [write_file, read_file], system_prompt=SYSTEM_PROMPT)
