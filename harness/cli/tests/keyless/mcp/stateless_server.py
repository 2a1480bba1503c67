"""A real MCP server written with the official Python SDK 2.x (MCPServer), which serves the
stateless revision (2026-07-28) and the sessionful one on one endpoint: what keyless records.

Usage: stateless_server.py PORT [--json], or stateless_server.py stdio. `get_time`'s answer holds the current time, so two
recordings differ and only a replay is byte-identical; `get_local_time` asks the client for the
city's UTC offset (an elicitation: an `input_required` result and a retry at 2026-07-28).
"""

import datetime
import sys
from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve

server = MCPServer("time")


class Zone(BaseModel):
    utc_offset: int


def ask_zone(city: str) -> Elicit[Zone]:
    return Elicit(f"Which UTC offset is {city} on?", Zone)


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


@server.tool()
def get_time(city: str) -> str:
    """The time now in a city."""
    return f"{city}: {now()}"


@server.tool()
def get_local_time(city: str, zone: Annotated[Zone, Resolve(ask_zone)]) -> str:
    """The time now in a city, at the offset the user gives."""
    return f"{city} (UTC{zone.utc_offset:+d}): {now()}"


if sys.argv[1] == "stdio":
    server.run("stdio")
else:
    server.run(
        "streamable-http",
        host="127.0.0.1",
        port=int(sys.argv[1]),
        json_response="--json" in sys.argv[2:],
    )
