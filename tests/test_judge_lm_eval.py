"""Real ``lm_eval`` CLI runs with the llm_judge metric, the judge being a local scripted
OpenAI-compatible server (tests/openai_test_server.py) on 127.0.0.1."""

from __future__ import annotations

import glob
import json
import sqlite3

import pytest

from nanoknow_tasks.judge import metric as judge
from openai_test_server import FakeOpenAIServer
from test_judge_replies import GARBAGE_REPLY, TRUE_REPLY, bodies, hashed_script, question_of, reply_for_question

TASK = "nanoknow_nq_supported_closedbook"


def _outputs(path):
    results = json.load(open(glob.glob(str(path / "*" / "results_*.json"))[0]))
    samples_files = glob.glob(str(path / "*" / f"samples_{TASK}_*.jsonl"))
    samples = [json.loads(line) for line in open(samples_files[0])] if samples_files else []
    return results, samples


@pytest.mark.slow
def test_lm_eval_smollm2_with_openai_judge(run, tmp_path, nanoknow_data_dir, smollm2_model_args):
    cache = tmp_path / "judge.sqlite"
    with FakeOpenAIServer(reply=hashed_script) as server:
        metadata = {"data_dir": str(nanoknow_data_dir), "judge_backend": "openai", "judge_model": "test-judge",
                    "judge_base_url": server.base_url, "judge_cache": str(cache)}
        run(["lm_eval", "--model", "hf", "--model_args", smollm2_model_args, "--device", "cpu",
             "--tasks", TASK, "--limit", "5", "--batch_size", "5", "--gen_kwargs", "max_gen_toks=16", "--log_samples",
             "--output_path", str(tmp_path / "out"), "--metadata", json.dumps(metadata)],
            env={"NANOKNOW_DATA_DIR": str(nanoknow_data_dir)})
    results, samples = _outputs(tmp_path / "out")
    task = results["results"][TASK]
    assert len(samples) == 5
    # the judge was checked with one tiny request before generation, then judged each sample once
    assert bodies(server)[0]["messages"] == judge.PROBE
    judged = [b for b in bodies(server) if b["messages"] != judge.PROBE]
    assert len(judged) == 5 and {r["model"] for r in bodies(server)} == {"test-judge"}
    asked = sorted(question_of(r["messages"]) for r in judged)
    assert asked == sorted(s["doc"]["question"].strip() for s in samples)
    for sample in samples:
        item = sample["llm_judge"]
        assert item == sample["llm_judge_unparseable"]
        assert (item["question"], item["answers"], item["prediction"]) == (
            sample["doc"]["question"], sample["doc"]["answers"], sample["filtered_resps"][0])
    # the metrics are what the scripted replies imply
    replies = [reply_for_question(s["doc"]["question"].strip()) for s in samples]
    assert task["llm_judge,none"] == pytest.approx(sum(r == TRUE_REPLY for r in replies) / 5)
    assert task["llm_judge_unparseable,none"] == sum(r == GARBAGE_REPLY for r in replies)
    assert "has_answer,none" in task
    # a report gets the per-sample verdicts back from the cache
    verdicts = judge.sample_verdicts(samples, cache_path=str(cache))
    assert [v.raw for v in verdicts] == replies
    with sqlite3.connect(cache) as db:
        assert db.execute("SELECT COUNT(*) FROM judgements").fetchone() == (5,)


def test_lm_eval_without_judge_reports_has_answer_only(run, tmp_path, nanoknow_data_dir):
    env = {"NANOKNOW_DATA_DIR": str(nanoknow_data_dir), "NANOKNOW_JUDGE_CACHE": str(tmp_path / "unused.sqlite")}
    run(["lm_eval", "--model", "dummy", "--tasks", TASK, "--limit", "3", "--log_samples",
         "--output_path", str(tmp_path / "out"), "--metadata", json.dumps({"data_dir": str(nanoknow_data_dir)})],
        env=env)
    results, samples = _outputs(tmp_path / "out")
    assert sorted(k for k in results["results"][TASK] if "," in k) == ["has_answer,none", "has_answer_stderr,none"]
    assert len(samples) == 3 and not any("llm_judge" in s for s in samples)
    assert not (tmp_path / "unused.sqlite").exists()


def test_task_loader_refuses_a_judge_model_without_backend(nanoknow_data_dir, monkeypatch):
    """What lm-eval calls with --metadata '{"judge_model": ...}': a clear error before any model runs."""
    from nanoknow_tasks.loaders import load_question_split
    from nanoknow_common.errors import NanoKnowInputError

    monkeypatch.setattr(judge, "_config", None)
    with pytest.raises(NanoKnowInputError, match="judge_backend: judge settings given .judge_model. but no backend"):
        load_question_split("nq", "supported", data_dir=str(nanoknow_data_dir), judge_model="Qwen/Qwen3-14B")
    assert judge.current_config() is None
