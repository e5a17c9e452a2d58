"""What a user meets through the real ``lm_eval`` CLI: the distractor grid on one question set with
one warning for a build without an index, the judge's key kept out of every output, a key in
``--metadata`` refused, an unreachable judge found before any generation, and a wrong
``dataset_dir`` that says what it holds. The model is lm-eval's own ``dummy`` (answers "lol"):
these are checks of the tasks, not of a model. The judge is the scripted OpenAI-protocol
server of tests/openai_test_server.py on 127.0.0.1."""

import glob
import json
import socket
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from nanoknow_tasks.contexts import in_grid
from nanoknow_tasks.judge.metric import PROBE
from projection.datasets import built_layout

from openai_test_server import FakeOpenAIServer
from sample_root import CORPUS_DIR

GRID_TASKS = ["nanoknow_nq_supported_distractors_k0", "nanoknow_nq_supported_distractors_k1_last",
              "nanoknow_nq_supported_distractors_k8_middle"]
SECRET = "sk-nanoknow-test-5f0c1e9a7d3b"
GENERATION_STARTED = "Running generate_until requests"


def _verdict(messages) -> str:
    return json.dumps({"correct": False, "reason": "scripted"})


@pytest.fixture(scope="module")
def grid_run(run, grid_sample, tmp_path_factory):
    """One lm_eval run of three grid tasks on the build without an index, judged by the scripted
    server with its key given only in the environment."""
    out = tmp_path_factory.mktemp("grid-run")
    with FakeOpenAIServer(reply=_verdict) as server:
        metadata = {"dataset_dir": str(grid_sample.random), "corpus": CORPUS_DIR, "judge_backend": "openai",
                    "judge_model": "test-judge", "judge_base_url": server.base_url,
                    "judge_cache": str(out / "judge.sqlite")}
        proc = run(["lm_eval", "--model", "dummy", "--tasks", ",".join(GRID_TASKS), "--log_samples",
                    "--output_path", str(out / "results"), "--metadata", json.dumps(metadata)],
                   env={"NANOKNOW_JUDGE_API_KEY": SECRET, "NANOKNOW_DATASET_DIR": ""})
    return proc, out, server.requests


def _samples(out: Path, task: str) -> list[dict]:
    path, = glob.glob(str(out / "results" / "*" / f"samples_{task}_*.jsonl"))
    return [json.loads(line) for line in open(path)]


@pytest.mark.slow
def test_grid_tasks_share_one_question_set_and_warn_once(grid_run, grid_sample):
    proc, out, _ = grid_run
    assert proc.stderr.count("was built without an index: its distractors are random documents") == 1
    rows = pq.read_table(built_layout.split_path(grid_sample.random, "nq", CORPUS_DIR, "supported")).to_pylist()
    expected = [r["qid"] for r in rows if in_grid(r)]
    assert 0 < len(expected) == len(rows) - 2  # the two grid outsiders are left out
    for task in GRID_TASKS:
        assert [s["doc"]["qid"] for s in _samples(out, task)] == expected, task
    results = json.load(open(glob.glob(str(out / "results" / "*" / "results_*.json"))[0]))["results"]
    for task in GRID_TASKS:
        assert "has_answer,none" in results[task] and not any(k.startswith("exact_match") for k in results[task])
        assert "llm_judge,none" in results[task]


@pytest.mark.slow
def test_judge_key_from_the_environment_is_used_and_never_written(grid_run):
    proc, out, requests = grid_run
    assert requests and all(r["auth"] == f"Bearer {SECRET}" for r in requests)
    # the judge was checked once for the whole suite, before generation
    probes = [r for r in requests if r["body"]["messages"] == PROBE]
    assert len(probes) == 1 and requests[0]["body"]["messages"] == PROBE
    assert GENERATION_STARTED in proc.stderr
    written = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.name.startswith("results_") for p in written) and any(p.name.startswith("samples_") for p in written)
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), path


@pytest.mark.slow
def test_key_in_metadata_is_refused(run, tmp_path, nanoknow_data_dir):
    metadata = {"data_dir": str(nanoknow_data_dir), "judge_backend": "openai", "judge_model": "m",
                "judge_base_url": "http://127.0.0.1:9/v1", "judge_api_key": SECRET}
    proc = run(["lm_eval", "--model", "dummy", "--tasks", "nanoknow_nq_supported_closedbook", "--limit", "2",
                "--output_path", str(tmp_path / "out"), "--metadata", json.dumps(metadata)], check=False)
    assert proc.returncode != 0
    assert "NanoKnowInputError: judge_api_key: looks like a credential" in proc.stderr
    assert "NANOKNOW_JUDGE_API_KEY" in proc.stderr
    assert not (tmp_path / "out").exists()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_unreachable_judge_fails_before_any_generation(run, tmp_path, nanoknow_data_dir):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    metadata = {"data_dir": str(nanoknow_data_dir), "judge_backend": "openai", "judge_model": "test-judge",
                "judge_base_url": url, "judge_cache": "off"}
    proc = run(["lm_eval", "--model", "dummy", "--tasks", "nanoknow_nq_supported_closedbook", "--limit", "2",
                "--output_path", str(tmp_path / "out"), "--metadata", json.dumps(metadata)], check=False)
    assert proc.returncode != 0
    assert f"NanoKnowInputError: judge_base_url: the openai judge 'test-judge' at {url} did not answer" in proc.stderr
    assert GENERATION_STARTED not in proc.stderr and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_wrong_dataset_dir_says_what_it_holds(run, tmp_path, grid_sample):
    # the build holds nq/sample, and the tasks look for the default corpus, fineweb-edu
    proc = run(["lm_eval", "--model", "dummy", "--tasks", "nanoknow_nq_supported_oracle", "--limit", "2",
                "--output_path", str(tmp_path / "out"),
                "--metadata", json.dumps({"dataset_dir": str(grid_sample.random)})],
               env={"NANOKNOW_DATASET_DIR": ""}, check=False)
    assert proc.returncode != 0
    assert f"no built nq/fineweb-edu supported split in {grid_sample.random}: it holds nq/sample; " \
           """pass --metadata '{"corpus": "sample"}'""" in proc.stderr
