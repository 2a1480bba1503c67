"""The example's MCP server, written with the official Python SDK (`mcp`, FastMCP): one tool,
`get_time`, whose answer holds the current time, so two recordings differ and only a replay is
byte-identical. `keyless record` talks to it (keyless.toml's `[mcp.clock]` starts it over stdio,
`[mcp.clock-http]` reaches it over Streamable HTTP); `keyless test` never does.

    python mcp_server.py stdio
    python mcp_server.py http 8931
"""

import datetime
import sys

from mcp.server.fastmcp import FastMCP

server = FastMCP("clock", host="127.0.0.1")


@server.tool(name="get_time")
def get_time(city: str) -> str:
    """The time now (UTC) in a city."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return f"It is {now} (UTC) in {city}."


if sys.argv[1:2] == ["http"]:
    server.settings.port = int(sys.argv[2])
    server.run("streamable-http")
else:
    server.run("stdio")
