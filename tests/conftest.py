"""Shared fixtures: the reference NanoKnow data, the bundled small model, CLI runners."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent


@pytest.fixture(scope="session")
def nanoknow_data_dir() -> Path:
    """The released NanoKnow files: $NANOKNOW_DATA_DIR, else ../shared/nanoknow-data."""
    path = Path(os.environ.get("NANOKNOW_DATA_DIR") or REPO_ROOT.parent / "shared" / "nanoknow-data")
    if not (path / "nq" / "answers.nanoknow-nq.jsonl").is_file():
        pytest.fail(f"NanoKnow reference data not found at {path}; set NANOKNOW_DATA_DIR")
    return path


@pytest.fixture(scope="session")
def smollm2_model_args() -> str:
    """lm-eval ``--model_args`` for the bundled SmolLM2-135M-Instruct (hf, CPU)."""
    from nanoknow_common.bundled_model import smollm2_model_args

    return smollm2_model_args()


def run_command(args: list[str], *, cwd: Path | None = None, env: dict | None = None,
                timeout: int = 1200, check: bool = True) -> subprocess.CompletedProcess:
    """Run a console script of this environment (``lm_eval``, ``nanoknow``) and capture output.

    On an unexpected exit code the assertion message carries the tail of stdout/stderr.
    """
    full_env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1",
                "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **(env or {})}
    exe = str(VENV_BIN / args[0]) if (VENV_BIN / args[0]).exists() else args[0]
    proc = subprocess.run([exe, *args[1:]], cwd=cwd or REPO_ROOT, env=full_env, text=True,
                          capture_output=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args[0]} exited {proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}"
                             f"\n--- stderr\n{proc.stderr[-6000:]}")
    return proc


@pytest.fixture(scope="session")
def run():
    """Fixture form of :func:`run_command`."""
    return run_command


@pytest.fixture(scope="session")
def grid_sample(tmp_path_factory):
    """The embedded sample corpus plus the two questions the distractor grid leaves out, its
    data root, and a build without an index (``random``: random distractors only)."""
    from types import SimpleNamespace

    from projection.datasets.build import BuildSettings, build
    from sample_root import CORPUS_DIR, add_grid_outsiders, make_embedded_sample, write_sample_root

    base = tmp_path_factory.mktemp("grid")
    questions, corpus, root = make_embedded_sample(base, filler_docs=300)
    questions, extra, _ = add_grid_outsiders(corpus, questions)
    qrels = write_sample_root(corpus, root, questions, extra_qrels=extra)
    build(root, BuildSettings(dataset="nq", corpus_dir=CORPUS_DIR, corpus=str(corpus)), base / "build-random",
          progress=False)
    return SimpleNamespace(base=base, corpus=corpus, root=root, qrels=qrels, questions=questions,
                           random=base / "build-random")


@pytest.fixture(scope="session")
def grid_hard_build(grid_sample) -> Path:
    """A build of :func:`grid_sample` with a real Lucene index: BM25 hard-negative distractors."""
    from projection.datasets.build import BuildSettings, build
    from projection.index.build_index import build_corpus_index
    from sample_root import CORPUS_DIR

    index = grid_sample.base / "index"
    build_corpus_index(grid_sample.corpus, index, threads=1)
    out = grid_sample.base / "build-hard"
    build(grid_sample.root, BuildSettings(dataset="nq", corpus_dir=CORPUS_DIR, corpus=str(grid_sample.corpus),
                                          index=str(index)), out, progress=False)
    return out
