"""``nanoknow project --ray`` on a real local Ray (``--ray-cpus 2``) over the sample corpus and a
real Lucene index: the same final files and the same work-file lines as the single-machine run,
with answer matching only and with the bundled SmolLM2 verifier, and a resume after lost chunks."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_command

DATASET, CORPUS_NAME = "sample", "sample-corpus"
#: the SmolLM2 runs: 4 questions in chunks of 2 keep the two verifier actors busy in parallel
HF = ["--verifier", "hf", "--judge-mode", "choose", "--window-words", "40", "--dtype", "bfloat16",
      "--limit", "4", "--chunk-size", "2"]
RAY = ["--ray", "--ray-cpus", "2"]


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """The embedded-question sample corpus and its Lucene index."""
    root = tmp_path_factory.mktemp("ray-project")
    corpus, index = root / "corpus", root / "index"
    run_command(["nanoknow", "make-sample-corpus", "--out", str(corpus), "--embedded"])
    run_command(["nanoknow", "index", "--corpus", str(corpus), "--index", str(index), "--threads", "2"])
    return {"root": root, "corpus": corpus, "index": index}


def project(sample, out, *extra, check=True):
    return run_command(["nanoknow", "project", "--questions", str(sample["corpus"] / "questions.jsonl"),
                        "--dataset", DATASET, "--corpus", str(sample["corpus"]), "--corpus-name", CORPUS_NAME,
                        "--index", str(sample["index"]), "--out", str(out), "--threads", "1", *extra], check=check)


def final_files(out) -> dict[str, bytes]:
    base = Path(out) / DATASET
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*"))
            if p.is_file() and ".projection" not in p.parts}


def work_lines(out) -> dict[str, list[bytes]]:
    """Each work file's lines, sorted: Ray appends chunks in the order they finish."""
    work = Path(out) / DATASET / CORPUS_NAME / ".projection"
    return {p.name: sorted(p.read_bytes().splitlines(keepends=True)) for p in sorted(work.iterdir())}


@pytest.fixture(scope="module")
def hf_runs(sample):
    local, ray = sample["root"] / "hf-local", sample["root"] / "hf-ray"
    project(sample, local, *HF)
    project(sample, ray, *HF, *RAY)
    return local, ray


@pytest.mark.slow
def test_ray_matching_only_gives_the_local_files(sample):
    local, ray = sample["root"] / "none-local", sample["root"] / "none-ray"
    args = ["--verifier", "none", "--limit", "12", "--chunk-size", "4"]
    project(sample, local, *args)
    project(sample, ray, *args, *RAY)
    assert final_files(ray) == final_files(local)
    assert len(final_files(local)) >= 5  # answers, topics x2, qrels, candidates, frequencies
    lines = work_lines(ray)
    assert lines == work_lines(local)
    assert len(lines["stage1.jsonl"]) == 3  # 12 questions in chunks of 4
    # a resume with nothing left to do rewrites the final files without starting Ray
    proc = project(sample, ray, *args, *RAY, "--resume")
    assert "without starting Ray" in proc.stderr
    assert final_files(ray) == final_files(local) and work_lines(ray) == lines


@pytest.mark.slow
def test_ray_with_smollm2_verifier_gives_the_local_qrels(hf_runs):
    local, ray = hf_runs
    assert final_files(ray) == final_files(local)
    lines = work_lines(ray)
    assert lines == work_lines(local)  # verdicts, raw judge outputs included
    assert len(lines["stage2.jsonl"]) == 2 and b'"label"' in b"".join(lines["stage2.jsonl"])


@pytest.mark.slow
def test_ray_resume_after_lost_chunks_completes_identically(sample, hf_runs, tmp_path):
    local, ray = hf_runs
    resumed = tmp_path / "resumed"
    shutil.copytree(ray, resumed)
    work = resumed / DATASET / CORPUS_NAME / ".projection"
    for name in ("stage1.jsonl", "stage2.jsonl"):  # a run killed before its last chunks were written
        path = work / name
        path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:-1]))
    with open(work / "stage2.jsonl", "ab") as handle:  # and a torn write the resumed run must drop
        handle.write(b'{"chunk": 1, "questions": [{"qid"')
    for p in final_files(resumed):
        (resumed / DATASET / p).unlink()
    project(sample, resumed, *HF, *RAY, "--resume")
    assert final_files(resumed) == final_files(local)
    assert work_lines(resumed) == work_lines(local)


def test_missing_ray_is_a_one_line_error_naming_the_extra(sample, tmp_path):
    # a `ray` package that fails to import stands in for an environment without Ray
    fake = tmp_path / "no-ray" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named ray')\n")
    path = os.pathsep.join([str(fake.parent), os.environ.get("PYTHONPATH", "")])
    proc = run_command(["nanoknow", "project", "--questions", str(sample["corpus"] / "questions.jsonl"),
                        "--dataset", DATASET, "--corpus", str(sample["corpus"]), "--index", str(sample["index"]),
                        "--out", str(tmp_path / "out"), "--verifier", "none", "--ray"],
                       env={"PYTHONPATH": path}, check=False)
    assert proc.returncode == 2
    assert "pip install 'nanoknow[ray]'" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()  # refused before anything was written
