"""A real MCP server written with the official Python SDK (FastMCP): what keyless records.

Usage: time_server.py stdio | time_server.py http PORT [--json] ; add --renamed to rename the
tool (the contract golden must notice). Its answer holds the current time (and the TIME_TOKEN
of its environment, when set), so two recordings
differ and only a replay is byte-identical.
"""

import datetime
import os
import sys

from mcp.server.fastmcp import FastMCP

args = sys.argv[1:]
json_response = "--json" in args
server = FastMCP("time", host="127.0.0.1", json_response=json_response)


def get_time(city: str, utc_offset: int = 0) -> str:
    """The time now in a city."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat()
    # A server that echoes its token (from its configured `env`): the recording must not keep it.
    token = os.environ.get("TIME_TOKEN")
    echoed = f" [{token}]" if token else ""
    return f"{city} (UTC{utc_offset:+d}): {now}{echoed}"


server.tool(name="get_clock" if "--renamed" in args else "get_time")(get_time)

if args[0] == "http":
    server.settings.port = int(args[1])
    server.run("streamable-http")
else:
    server.run("stdio")
