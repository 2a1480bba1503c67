"""Drives an MCP server with the official Python SDK 2.x client (`mcp.Client`).

Usage: stateless_client.py MODE URL CALLS_JSON [KEYLESS]
  MODE: auto (probes `server/discover` and speaks the stateless revision 2026-07-28 when the
  server does) or legacy (the `initialize` handshake and a session)
  KEYLESS: a keyless binary: the client then talks over stdio to `KEYLESS mcp-stdio --url URL`
  (what `{mcp_cmd:<name>}` runs), not to URL itself
  CALLS_JSON: [[tool, {arguments}], ...]; an elicitation is answered with utc_offset 2.
Prints one JSON line: the protocol version spoken, the listed tool names and each call's text,
or the error it raised.
"""

import asyncio
import json
import sys

import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def answer(_context, params):
    return types.ElicitResult(action="accept", content={"utc_offset": 2})


async def main(mode, url, calls, keyless):
    server = url
    if keyless:
        server = StdioServerParameters(command=keyless, args=["mcp-stdio", "--url", url])
    async with Client(server, mode=mode, elicitation_callback=answer) as client:
        tools = sorted(tool.name for tool in (await client.list_tools()).tools)
        results = []
        for name, arguments in calls:
            try:
                result = await client.call_tool(name, arguments)
                texts = [c.text for c in result.content if c.type == "text"]
                results.append({"error": texts} if result.is_error else texts)
            except Exception as err:  # the miss diagnostic, as the client saw it
                results.append({"raised": str(err)})
        return {"protocol": client.protocol_version, "tools": tools, "calls": results}


mode, url, calls = sys.argv[1:4]
keyless = sys.argv[4] if len(sys.argv) > 4 else None
print(json.dumps(asyncio.run(main(mode, url, json.loads(calls), keyless)), default=str))
