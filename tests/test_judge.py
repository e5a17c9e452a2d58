"""The llm_judge metric: configuration, parsing, batching and caching against a real local
OpenAI-compatible HTTP server (tests/openai_test_server.py) with scripted replies."""

from __future__ import annotations

import os
import sqlite3

import pytest

from nanoknow_tasks import scoring
from nanoknow_tasks.judge import metric as judge
from nanoknow_tasks.judge.prompt import answer_judge_messages, parse_judgement
from nanoknow_common.errors import NanoKnowInputError
from openai_test_server import FakeOpenAIServer
from test_judge_replies import FALSE_REPLY, GARBAGE_REPLY, TRUE_REPLY, bodies, question_of

DOCS = [
    {"question": "who wrote hamlet", "answers": ["William Shakespeare", "Shakespeare"]},
    {"question": "capital of france", "answers": ["Paris"]},
    {"question": "largest planet", "answers": ["Jupiter"]},
    {"question": "boiling point of water in celsius", "answers": ["100", "100 °C"]},
]
REPLIES = {"who wrote hamlet": TRUE_REPLY, "capital of france": FALSE_REPLY,
           "largest planet": GARBAGE_REPLY, "boiling point of water in celsius": TRUE_REPLY}


def scripted(messages):
    return REPLIES[question_of(messages)]


@pytest.fixture(autouse=True)
def fresh_judge(monkeypatch):
    """No judge settings from the environment, and no judge state left from another test."""
    for name in list(os.environ):
        if name.startswith("NANOKNOW_JUDGE_") or name in ("OPENAI_BASE_URL", "OPENAI_MODEL"):
            monkeypatch.delenv(name)
    monkeypatch.setattr(judge, "_config", None)
    monkeypatch.setattr(judge, "_backends", {})
    monkeypatch.setattr(judge, "_caches", {})


def forget_process_state(monkeypatch):
    """What a new process would have: the disk cache only."""
    monkeypatch.setattr(judge, "_backends", {})
    monkeypatch.setattr(judge, "_caches", {})


def _items(predictions):
    return [scoring.process_results(doc, [pred])["llm_judge"] for doc, pred in zip(DOCS, predictions)]


# --- parsing ------------------------------------------------------------------------------

@pytest.mark.parametrize("output, correct", [
    ('{"correct": true, "explanation": "ok"}', True),
    ('{"correct": false, "reason": "no"}', False),
    (FALSE_REPLY, False),                                   # thinking block + code fence
    ('Verdict: {"correct": true} as asked', True),          # prose around the object
    ('</think>{"correct": false}', False),                  # server stripped the opening tag
    ('{"score": 1} {"correct": true}', True),               # first object with a boolean "correct"
    ('{"correct": "true"}', None),                          # a string is not a JSON boolean
    ('{"correct": 1}', None),
    ("<think>still thinking {\"correct\": true}", None),    # thinking never closed
    (GARBAGE_REPLY, None),
    ("", None),
    ('{"correct": tru', None),
])
def test_parse_judgement(output, correct):
    judgement = parse_judgement(output)
    assert judgement.correct is correct
    assert judgement.parsed is (correct is not None)
    assert judgement.raw == output


def test_prompt_carries_question_references_and_candidate():
    system, user = answer_judge_messages("Who wrote Hamlet? ", ["William Shakespeare", "Shakespeare"], "  It was\nShakespeare ")
    assert system["role"] == "system" and "strict JSON" in system["content"]
    assert "Question: Who wrote Hamlet?\n" in user["content"]
    assert '["William Shakespeare", "Shakespeare"]' in user["content"]
    assert "Candidate answer: It was Shakespeare\n" in user["content"]
    assert '{"correct": true or false' in user["content"]
    assert "Candidate answer: (no answer)" in answer_judge_messages("q", ["a"], "")[1]["content"]


# --- configuration ------------------------------------------------------------------------

def test_no_judge_configured_gives_has_answer_only():
    assert judge.configure_from_metadata({"data_dir": "/x", "version": 1.0, "pretrained": "m"}) is None
    assert scoring.process_results(DOCS[0], ["Shakespeare wrote it"]) == {"has_answer": 1.0}
    assert scoring.process_results(DOCS[1], ["Lyon"]) == {"has_answer": 0.0}
    # a cache location alone does not ask for a judge, and "none" switches it off
    assert judge.configure_from_metadata({"judge_cache": "/tmp/x.sqlite"}) is None
    assert judge.configure_from_metadata({"judge_backend": "none", "judge_model": "m"}) is None


@pytest.mark.parametrize("metadata, field, words", [
    ({"judge_model": "Qwen/Qwen3-14B"}, "judge_backend", "no backend"),
    ({"judge_backend": "ollama", "judge_model": "m"}, "judge_backend", "unknown judge backend"),
    ({"judge_backend": "openai"}, "judge_model", "needs a model"),
    ({"judge_backend": "openai", "judge_model": "m"}, "judge_base_url", "server URL"),
    ({"judge_backend": "hf", "judge_model": "m", "judge_base_url": "http://x"}, "judge_base_url", "only the openai"),
    ({"judge_backend": "hf", "judge_modle": "m"}, "judge_modle", "unknown judge setting"),
    ({"judge_backend": "hf", "judge_model": "m", "judge_max_new_tokens": "lots"}, "judge_max_new_tokens", "positive"),
    ({"judge_backend": "hf", "judge_model": "m", "judge_options": "[1]"}, "judge_options", "JSON object"),
])
def test_incomplete_judge_settings_are_clear_errors(metadata, field, words):
    with pytest.raises(NanoKnowInputError) as err:
        judge.configure_from_metadata(metadata)
    assert err.value.field == field and words in str(err.value)


def test_environment_configures_and_metadata_overrides(monkeypatch, tmp_path):
    monkeypatch.setenv("NANOKNOW_JUDGE_BACKEND", "openai")
    monkeypatch.setenv("NANOKNOW_JUDGE_MODEL", "env-judge")
    monkeypatch.setenv("NANOKNOW_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("NANOKNOW_JUDGE_OPTIONS", '{"concurrency": 3}')
    monkeypatch.setenv("NANOKNOW_JUDGE_CACHE", str(tmp_path / "c.sqlite"))
    config = judge.configure_from_metadata({})
    assert (config.backend, config.model, config.cache_path) == ("openai", "env-judge", str(tmp_path / "c.sqlite"))
    assert config.backend_options() == {"base_url": "http://127.0.0.1:9/v1", "concurrency": 3}
    config = judge.configure_from_metadata({"judge_model": "meta-judge", "judge_max_new_tokens": 32})
    assert (config.model, config.max_new_tokens) == ("meta-judge", 32)
    monkeypatch.setenv("NANOKNOW_JUDGE_BACKEND", "")
    monkeypatch.delenv("NANOKNOW_JUDGE_BASE_URL")
    with pytest.raises(NanoKnowInputError, match="judge_backend"):
        judge.configure_from_metadata({})


# --- judging through the openai backend ---------------------------------------------------

def test_openai_judge_batches_caches_and_counts_unparseable(tmp_path, monkeypatch):
    cache = tmp_path / "judge.sqlite"
    with FakeOpenAIServer(reply=scripted) as server:
        judge.configure_from_metadata({"judge_backend": "openai", "judge_model": "test-judge",
                                       "judge_base_url": server.base_url, "judge_cache": str(cache),
                                       "judge_max_new_tokens": 40, "judge_options": {"progress": False}})
        items = _items(["Shakespeare", "Lyon", "Saturn", "100 degrees"])
        items.append(dict(items[0]))  # the same prompt twice is asked once
        assert judge.aggregate_accuracy(items) == pytest.approx(3 / 5)   # true, false, ?, true, true
        assert len(server.requests) == 4
        assert {r["model"] for r in bodies(server)} == {"test-judge"}
        assert {r["max_tokens"] for r in bodies(server)} == {40}
        assert sorted(question_of(r["messages"]) for r in bodies(server)) == sorted(REPLIES)
        # the second aggregation of the same task, and a fresh process, read the cache
        assert judge.aggregate_unparseable(items) == 1
        forget_process_state(monkeypatch)
        assert judge.aggregate_unparseable(items) == 1
        assert judge.aggregate_accuracy(items) == pytest.approx(3 / 5)
        assert len(server.requests) == 4
        assert judge._backends == {}  # no backend was even built
        # a new prediction is the only new request
        assert judge.aggregate_accuracy(_items(["Shakespeare", "Paris"])) == pytest.approx(1 / 2)
        assert len(server.requests) == 5
    with sqlite3.connect(cache) as db:
        assert db.execute("SELECT COUNT(*), COUNT(DISTINCT model) FROM judgements").fetchone() == (5, 1)


def test_sample_verdicts_read_logged_samples_from_the_cache(tmp_path):
    cache = tmp_path / "judge.sqlite"
    with FakeOpenAIServer(reply=scripted) as server:
        judge.configure_from_metadata({"judge_backend": "openai", "judge_model": "test-judge",
                                       "judge_base_url": server.base_url, "judge_cache": str(cache)})
        items = _items(["Shakespeare", "Lyon", "Saturn"])
        judge.aggregate_accuracy(items)
    samples = [{"doc_id": i, "has_answer": 0.0, "llm_judge": item} for i, item in enumerate(items)]
    samples.append({"doc_id": 3, "has_answer": 1.0})  # a run without the judge
    verdicts = judge.sample_verdicts(samples, cache_path=str(cache))
    assert [v.correct if v else "missing" for v in verdicts] == [True, False, None, "missing"]
    assert verdicts[2].raw == GARBAGE_REPLY
    assert judge.sample_verdicts(samples, cache_path=str(tmp_path / "nothing.sqlite")) == [None] * 4


def test_items_of_another_judge_are_refused(tmp_path):
    judge.configure_from_metadata({"judge_backend": "openai", "judge_model": "a", "judge_base_url": "http://x/v1",
                                   "judge_cache": "off"})
    items = _items(["Shakespeare"])
    judge.configure_from_metadata({"judge_backend": "openai", "judge_model": "b", "judge_base_url": "http://x/v1",
                                   "judge_cache": "off"})
    with pytest.raises(NanoKnowInputError, match="judge_model"):
        judge.aggregate_accuracy(items)


@pytest.mark.parametrize("name", ["judge_api_key", "api_key", "hf_token", "token", "client_secret", "password",
                                  "OPENAI_API_KEY"])
def test_credentials_in_metadata_are_refused_without_echoing_them(name, monkeypatch):
    monkeypatch.setattr(judge, "_config", None)
    with pytest.raises(NanoKnowInputError, match=f"{name}: looks like a credential.*NANOKNOW_JUDGE_API_KEY") as err:
        judge.configure_from_metadata({"judge_backend": "openai", "judge_model": "m",
                                       "judge_base_url": "http://127.0.0.1:9/v1", name: "sk-do-not-echo"})
    assert "sk-do-not-echo" not in str(err.value)
    with pytest.raises(NanoKnowInputError, match="judge_options.api_key: looks like a credential"):
        judge.configure_from_metadata({"judge_backend": "openai", "judge_model": "m", "judge_base_url": "http://x/v1",
                                       "judge_options": {"api_key": "sk-x"}})


def test_ordinary_model_args_are_not_taken_for_credentials(monkeypatch):
    """lm-eval merges --model_args into the metadata: tokenizer settings must pass."""
    monkeypatch.setenv("NANOKNOW_JUDGE_API_KEY", "sk-from-env")
    config = judge.configure_from_metadata({
        "pretrained": "m", "tokenizer": "t", "add_bos_token": True, "prefix_token_id": 1, "max_gen_toks": 8,
        "use_fast_tokenizer": True, "judge_backend": "openai", "judge_model": "m", "judge_base_url": "http://x/v1"})
    assert config.backend_options()["api_key"] == "sk-from-env" and "sk-from-env" not in repr(config)
