"""Scripted judge replies for the shared OpenAI test server (tests/openai_test_server.py).

The replies depend only on the question in the judge prompt, so a test can compute what the
metrics must be from the questions alone. The test below checks the scripted server against
the project's real ``openai`` backend.
"""

from __future__ import annotations

import hashlib
import re

from openai_test_server import FakeOpenAIServer

TRUE_REPLY = '{"correct": true, "reason": "same answer"}'
FALSE_REPLY = '<think>compare the two</think>\n```json\n{"correct": false, "reason": "another answer"}\n```'
GARBAGE_REPLY = "The candidate looks right to me."


def question_of(messages: list[dict]) -> str:
    """The question line of a judge prompt (what the scripted replies depend on)."""
    found = re.search(r"^Question: (.*)$", messages[-1]["content"], re.M)
    return found.group(1) if found else ""


def reply_for_question(question: str) -> str:
    """Deterministic scripted verdict: sha256 of the question modulo 3 picks true/false/garbage."""
    return (TRUE_REPLY, FALSE_REPLY, GARBAGE_REPLY)[hashlib.sha256(question.encode()).digest()[0] % 3]


def hashed_script(messages: list[dict]) -> str:
    """Server script: the reply that :func:`reply_for_question` gives the prompt's question."""
    return reply_for_question(question_of(messages))


def bodies(server) -> list[dict]:
    """The JSON bodies the test server received, in arrival order."""
    return [r["body"] for r in server.requests]


def test_scripted_server_speaks_openai_chat_completions():
    from nanoknow_common.llm import make_backend

    messages = [{"role": "user", "content": "Question: who wrote Hamlet?\nCandidate answer: Shakespeare"}]
    with FakeOpenAIServer(reply=hashed_script) as server:
        backend = make_backend("openai", "test-judge", base_url=server.base_url, progress=False)
        out = backend.generate([messages], max_new_tokens=7)
    assert out == [reply_for_question("who wrote Hamlet?")]
    assert len(server.requests) == 1
    assert bodies(server)[0]["model"] == "test-judge" and bodies(server)[0]["max_tokens"] == 7
