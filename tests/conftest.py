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
