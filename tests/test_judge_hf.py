"""The llm_judge metric with the ``hf`` backend on the bundled SmolLM2-135M-Instruct (CPU).

A 135M model is no real judge: the test checks the plumbing (one batched generation through
the shared backend, outputs cached, verdicts and the unparseable count derived from exactly
those outputs, nothing loaded again on the second run), not the quality of the verdicts.
"""

from __future__ import annotations

import sqlite3

import pytest

from nanoknow_tasks import scoring
from nanoknow_tasks.judge import metric as judge
from nanoknow_tasks.judge.prompt import parse_judgement
from nanoknow_common.bundled_model import smollm2_gguf
from test_judge import DOCS, forget_process_state, fresh_judge  # noqa: F401 (autouse fixture)


def test_hf_judge_on_smollm2(tmp_path, monkeypatch):
    folder, gguf_file = smollm2_gguf()
    cache = tmp_path / "judge.sqlite"
    judge.configure_from_metadata({"judge_backend": "hf", "judge_model": str(folder), "judge_cache": str(cache),
                                   "judge_max_new_tokens": 8,
                                   "judge_options": {"gguf_file": gguf_file, "batch_size": 2, "progress": False}})
    items = [scoring.process_results(doc, [pred])["llm_judge"] for doc, pred in zip(DOCS[:2], ["Shakespeare", "Lyon"])]
    accuracy = judge.aggregate_accuracy(items)
    assert len(judge._backends) == 1
    with sqlite3.connect(cache) as db:
        outputs = dict(db.execute("SELECT key, output FROM judgements").fetchall())
    assert set(outputs) == {i["judge_key"] for i in items}
    assert all(isinstance(o, str) and o.strip() for o in outputs.values())
    judgements = [parse_judgement(outputs[i["judge_key"]]) for i in items]
    assert accuracy == pytest.approx(sum(j.correct is True for j in judgements) / 2)
    # second run (a fresh process state): from the cache, the model is not loaded again
    forget_process_state(monkeypatch)
    assert judge.aggregate_unparseable(items) == sum(not j.parsed for j in judgements)
    assert judge.aggregate_accuracy(items) == accuracy
    assert judge._backends == {}
