"""The ``openai`` backend against a real HTTP server on 127.0.0.1 (faults injected server-side)."""

from __future__ import annotations

import time

import pytest

from nanoknow_common.llm import LLMBackendError, make_backend
from projection.stage2.verification import judge
from tests.openai_test_server import FakeOpenAIServer


def _backend(server, **kw):
    opts = dict(base_url=server.base_url, api_key="sk-test", concurrency=4, timeout=0.5, max_retries=4,
                progress=False)
    opts.update(kw)
    return make_backend("openai", "judge-model", **opts)


def test_concurrent_requests_keep_order_and_retry_429_500_and_timeouts():
    faults = [429, 429, 500, 503, "sleep"]
    with FakeOpenAIServer(faults=faults, sleep_s=1.5) as server:
        backend = _backend(server)
        prompts = [f"prompt {i}" for i in range(20)]
        started = time.monotonic()
        out = backend.generate(prompts, max_new_tokens=7)
        elapsed = time.monotonic() - started
    assert out == [f"ECHO prompt {i}" for i in range(20)]
    assert backend.retries == len(faults)
    assert len(server.requests) == 20 + len(faults)
    assert elapsed < 10
    first = server.requests[0]
    assert first["auth"] == "Bearer sk-test"
    assert first["body"]["model"] == "judge-model"
    assert first["body"]["max_tokens"] == 7
    assert first["body"]["temperature"] == 0.0


def test_chat_messages_are_sent_as_given():
    with FakeOpenAIServer(reply=lambda m: f"{len(m)} messages, first role {m[0]['role']}") as server:
        out = _backend(server).generate([[{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]])
    assert out == ["2 messages, first role system"]


def test_gives_up_after_max_retries_with_the_last_error():
    with FakeOpenAIServer(faults=[500] * 10) as server:
        backend = _backend(server, max_retries=2)
        with pytest.raises(LLMBackendError, match=r"gave up after 3 attempts.*HTTP 500"):
            backend.generate(["x"])
        assert len(server.requests) == 3


def test_client_errors_are_not_retried():
    with FakeOpenAIServer(faults=[400]) as server:
        with pytest.raises(LLMBackendError, match="HTTP 400.*injected bad request"):
            _backend(server).generate(["x"])
        assert len(server.requests) == 1


def test_unreachable_server_fails_clearly():
    backend = make_backend("openai", "m", base_url="http://127.0.0.1:9/v1", max_retries=1,
                           timeout=0.5, progress=False)
    with pytest.raises(LLMBackendError, match="ConnectionError"):
        backend.generate(["x"])


def test_missing_settings_are_reported(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    with pytest.raises(LLMBackendError, match="model name"):
        make_backend("openai", None, base_url="http://127.0.0.1:1/v1")
    with pytest.raises(LLMBackendError, match="server URL"):
        make_backend("openai", "m")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1/")
    monkeypatch.setenv("OPENAI_MODEL", "env-model")
    backend = make_backend("openai")
    assert (backend.base_url, backend.model) == ("http://127.0.0.1:1/v1", "env-model")


def test_verification_through_the_server_parses_thinking_and_counts_unparsed():
    def reply(messages):
        user = messages[-1]["content"]
        if "truly" in user:
            return "<think>the passage names it</think>\n**TRUE**: it states the answer"
        if "pigeon" in user:
            return "coincidental - a pigeon's name"
        return "I am not sure."

    items = [("q", ["a"], "this passage truly answers"), ("q", ["a"], "a pigeon called a"), ("q", ["a"], "??")]
    with FakeOpenAIServer(reply=reply) as server:
        results = judge(_backend(server), items)
    labels = [v.label for v, _ in results]
    assert labels == ["TRUE", "COINCIDENTAL", "UNPARSED"]
    assert results[0][0].reason == "it states the answer"
    system, user = server.requests[0]["body"]["messages"]
    assert system["role"] == "system" and "EXPECTED ANSWERS: \"a\"" in user["content"]


def test_first_true_mode_stops_each_question_at_its_first_true():
    from projection.pipeline import verify_chunk
    from projection.data.files import Question

    def reply(messages):
        return "TRUE: yes" if "good passage" in messages[-1]["content"] else "COINCIDENTAL: no"

    chunk = [Question("1", "q1", ["a"]), Question("2", "q2", ["b"])]
    records = [{"qid": "1", "candidates": [{"passage": "bad passage"}, {"passage": "good passage"},
                                           {"passage": "good passage again"}]},
               {"qid": "2", "candidates": [{"passage": "bad passage"}]}]
    with FakeOpenAIServer(reply=reply) as server:
        backend = _backend(server)
        first = verify_chunk(backend, chunk, records, first_true=True, max_new_tokens=8)
        assert len(server.requests) == 3
        every = verify_chunk(backend, chunk, records, first_true=False, max_new_tokens=8)
        assert len(server.requests) == 3 + 4
    assert [v and v["label"] for v in first[0]["verdicts"]] == ["COINCIDENTAL", "TRUE", None]
    assert [v["label"] for v in every[0]["verdicts"]] == ["COINCIDENTAL", "TRUE", "TRUE"]
    assert [v["label"] for v in first[1]["verdicts"]] == ["COINCIDENTAL"]
