"""Drives an MCP server the way a gateway does, with a client nobody here wrote.

Usage: client.py CLIENT TRANSPORT TARGET CALLS_JSON
  CLIENT: sdk (the official `mcp` ClientSession) or langchain (langchain-mcp-adapters'
  MultiServerMCPClient, which opens a session per tool call, as DeerFlow does)
  TRANSPORT: http (TARGET is the URL) or stdio (TARGET is a shell command line)
  CALLS_JSON: [[tool, {arguments}], ...]
Prints one JSON line: the listed tool names and each call's text, or the error it raised.
"""

import asyncio
import json
import sys


async def with_sdk(transport, target, calls):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamablehttp_client

    if transport == "http":
        connection = streamablehttp_client(target)
    else:
        connection = stdio_client(StdioServerParameters(command="sh", args=["-c", target]))
    async with connection as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            tools = [tool.name for tool in (await session.list_tools()).tools]
            results = []
            for name, arguments in calls:
                try:
                    result = await session.call_tool(name, arguments)
                    results.append([c.text for c in result.content if c.type == "text"])
                except Exception as err:  # the miss diagnostic, as the client saw it
                    results.append({"raised": str(err)})
            return {"tools": tools, "calls": results}


async def with_langchain(transport, target, calls):
    from langchain_mcp_adapters.client import MultiServerMCPClient

    if transport == "http":
        connection = {"transport": "streamable_http", "url": target}
    else:
        connection = {"transport": "stdio", "command": "sh", "args": ["-c", target]}
    client = MultiServerMCPClient({"time": connection})
    tools = {tool.name: tool for tool in await client.get_tools()}
    results = []
    for name, arguments in calls:
        try:
            result = await tools[name].ainvoke(arguments)
            # LangChain gives each content block a fresh random id: not the server's answer.
            if isinstance(result, list):
                result = [{k: v for k, v in b.items() if k != "id"} if isinstance(b, dict) else b
                          for b in result]
            results.append(result)
        except Exception as err:
            results.append({"raised": str(err)})
    return {"tools": sorted(tools), "calls": results}


def main():
    client, transport, target, calls = sys.argv[1:5]
    run = with_sdk if client == "sdk" else with_langchain
    print(json.dumps(asyncio.run(run(transport, target, json.loads(calls))), default=str))


main()
