"""A shopping-list agent served over AG-UI by Pydantic AI's own adapter (`AGUIAdapter`).

A stock Pydantic AI `Agent` with an `OpenAIChatModel` whose base URL comes from the environment,
as any deployment's does, and one tool, `add_item`, that appends to the run's shared AG-UI state
(`StateDeps`): it answers with the list's new length and sends the change to the frontend as a
`STATE_DELTA` (a JSON Patch). Because the answer reads the state the client sent back, a client
that forgets to carry the state into a follow-up changes the tool result, and so the model's
conversation. It knows nothing of the harness: pointed at a provider it is a real agent, pointed
at the harness's model server it replays a recorded run.

    KEYLESS_MODEL_BASE_URL=http://127.0.0.1:8090/v1 KEYLESS_GATEWAY_PORT=8000 python agent.py
"""

from __future__ import annotations

import os

import uvicorn
from ag_ui.core import EventType, StateDeltaEvent
from pydantic import BaseModel
from pydantic_ai import Agent, RunContext, ToolReturn
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.ui import StateDeps
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

SYSTEM_PROMPT = (
    "You keep the user's shopping list. Use add_item for every item the user wants on it; "
    "answer briefly."
)


class ShoppingList(BaseModel):
    """The AG-UI state this agent shares with its frontend."""

    items: list[str] = []


def model() -> OpenAIChatModel:
    """The chat model from the environment: the harness's model server, or a provider."""
    base_url = os.environ.get("KEYLESS_MODEL_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
    provider = OpenAIProvider(base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY", "unused"))
    return OpenAIChatModel(os.environ.get("AGENT_MODEL", "gpt-4o-mini"), provider=provider)


agent = Agent(model(), deps_type=StateDeps[ShoppingList], instructions=SYSTEM_PROMPT, retries=0)


@agent.tool
def add_item(ctx: RunContext[StateDeps[ShoppingList]], item: str) -> ToolReturn:
    """Add `item` to the shopping list."""
    items = ctx.deps.state.items
    # A JSON Patch against the state the frontend holds: the list is created by the first item
    # and appended to after that, so the patch only applies to the state the client carried over.
    patch = (
        {"op": "add", "path": "/items/-", "value": item}
        if items
        else {"op": "add", "path": "/items", "value": [item]}
    )
    items.append(item)
    count = len(items)
    delta = StateDeltaEvent(type=EventType.STATE_DELTA, delta=[patch])
    noun = "item" if count == 1 else "items"
    return ToolReturn(return_value=f"Added {item}; the list has {count} {noun}.", metadata=[delta])


async def run_agent(request: Request) -> Response:
    """POST /: one AG-UI run (a `RunAgentInput` in, the run's events out as SSE)."""
    return await AGUIAdapter.dispatch_request(
        request, agent=agent, deps=StateDeps(ShoppingList())
    )


async def health(_: Request) -> Response:
    return PlainTextResponse("ok")


app = Starlette(routes=[Route("/", run_agent, methods=["POST"]), Route("/health", health)])

if __name__ == "__main__":
    port = int(os.environ.get("KEYLESS_GATEWAY_PORT", "8000"))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
