"""Graphs `clock` and `clock_http`: a stock `create_agent` agent whose one tool comes from an MCP
server (`mcp_server.py`) through `langchain-mcp-adapters`, over stdio and over Streamable HTTP.

The agent knows nothing of the harness: it reads where its MCP server is from the environment,
as a deployment's MCP config would. Under keyless those are the stand-ins keyless serves
(`KEYLESS_MCP_CMD_CLOCK`: a command line running `keyless mcp-stdio`, which `{mcp_cmd:clock}`
also gives; `KEYLESS_MCP_URL_CLOCK_HTTP`: the route `{mcp_url:clock-http}` gives), so recording
relays to the real server and replay answers from the fixture, with the server absent.

The tool's schema is the server's: each call opens a session, lists the server's tools and calls
the one the model named (`MultiServerMCPClient.get_tools`, a session per call, as DeerFlow
does). The graph is built at import, before any MCP server is reachable, so the model is told
the tool's name and arguments here; a server that renames it fails the call and the contract
golden (`<fixture>.mcp.snap`).
"""

from __future__ import annotations

import os
import shlex

from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_mcp_adapters.client import MultiServerMCPClient

from agent import model

SYSTEM_PROMPT = "You tell the time with the get_time tool; answer briefly."


def connection(server: str) -> dict:
    """How to reach `server`: `clock` over stdio, `clock-http` over Streamable HTTP."""
    if server == "clock":
        argv = shlex.split(os.environ["KEYLESS_MCP_CMD_CLOCK"])
        return {"transport": "stdio", "command": argv[0], "args": argv[1:]}
    return {"transport": "streamable_http", "url": os.environ["KEYLESS_MCP_URL_CLOCK_HTTP"]}


def clock_tool(server: str):
    """`get_time` of the MCP server `server`, called through langchain-mcp-adapters."""

    @tool
    async def get_time(city: str) -> str:
        """The time now (UTC) in a city."""
        client = MultiServerMCPClient({server: connection(server)})
        tools = {t.name: t for t in await client.get_tools(server_name=server)}
        if "get_time" not in tools:
            return f"Error: the {server} MCP server has no get_time tool (it has {sorted(tools)})"
        arguments = {"city": city}
        return await tools["get_time"].ainvoke(arguments)

    return get_time


graph = create_agent(model(), [clock_tool("clock")], system_prompt=SYSTEM_PROMPT)
graph_http = create_agent(model(), [clock_tool("clock-http")], system_prompt=SYSTEM_PROMPT)
