"""The clock route's MCP server, written with the official Python SDK (`mcp`, FastMCP; the same
server as examples/langgraph-agent's): one tool, `get_time`, whose answer holds the current time,
so two recordings differ and only a replay is byte-identical. `keyless record --config
clock.keyless.toml` relays to it over Streamable HTTP (`[mcp.clock]`); `keyless test` never
reaches it.

    python mcp_server.py http 8932
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
