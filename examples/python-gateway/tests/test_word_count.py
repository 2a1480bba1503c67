"""The Python example's gateway under pytest, through the `keyless` fixture (the keyless wheel's
pytest plugin): each test talks to the replayed gateway as a client would, and the plugin fails it
with keyless's diagnostic when the gateway's model calls drift from the recording.

    pip install keyless pytest -r requirements.txt
    pytest                  # replays fixtures/word_count.flash.json through gateway.py
    pytest -n 2             # with pytest-xdist: one served gateway per worker

Copy this file and `client.py` for your own gateway: change the client for your API, and the
marker for your fixture.
"""

import pytest

from client import Gateway

PROMPT = "How many words are in 'the quick brown fox'?"
FOLLOWUP = "And how many in 'hello world'?"


def conversation(keyless):
    """The recorded conversation: the prompt, then the follow-up, in one thread."""
    gateway = Gateway(keyless.gateway_url)
    thread = gateway.new_thread()
    gateway.run(thread, PROMPT)
    return gateway.run(thread, FOLLOWUP)


@pytest.mark.keyless("word_count.flash")
def test_answers_each_question_with_the_tools_count(keyless):
    messages = conversation(keyless)
    answers = [m["content"] for m in messages if m["type"] == "ai" and not m.get("tool_calls")]
    assert answers == ["It has 4 words.", "It has 2 words."]


@pytest.mark.keyless("word_count.flash")
def test_streams_the_tool_call_and_its_result(keyless):
    messages = conversation(keyless)
    calls = [c["args"] for m in messages if m["type"] == "ai" for c in m.get("tool_calls") or []]
    results = [m["content"] for m in messages if m["type"] == "tool"]
    assert calls == [{"text": "the quick brown fox"}, {"text": "hello world"}]
    assert results == ["4", "2"]
