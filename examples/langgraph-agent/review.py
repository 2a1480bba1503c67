"""Two model-calling nodes that run in parallel on the same conversation: a writer and a critic.

Both see the user's messages, each with its own system prompt, and a final node joins their
answers. The system prompt is left out of the harness's replay key, so the two calls have the
same key: each node names itself in the `x-keyless-caller` header, and the harness keeps their
answers apart (without it, replay reports the ambiguity instead of guessing).
"""

from __future__ import annotations

import operator
from typing import Annotated

from langchain_core.messages import AIMessage, AnyMessage, SystemMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from agent import model


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    drafts: Annotated[list[str], operator.add]


WRITER = model("writer")
CRITIC = model("critic")


def writer(state: State) -> dict:
    prompt = SystemMessage("Write one short sentence answering the user.")
    answer = WRITER.invoke([prompt, *state["messages"]])
    return {"drafts": [f"writer: {answer.content}"]}


def critic(state: State) -> dict:
    prompt = SystemMessage("Name one risk in answering the user, in one short sentence.")
    answer = CRITIC.invoke([prompt, *state["messages"]])
    return {"drafts": [f"critic: {answer.content}"]}


def join(state: State) -> dict:
    return {"messages": [AIMessage("\n".join(sorted(state["drafts"])))]}


builder = StateGraph(State)
builder.add_node("writer", writer)
builder.add_node("critic", critic)
builder.add_node("join", join)
builder.add_edge(START, "writer")
builder.add_edge(START, "critic")
builder.add_edge(["writer", "critic"], "join")
builder.add_edge("join", END)
graph = builder.compile()
