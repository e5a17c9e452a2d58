"""Issue 13, ``nanoknow demo``: it touches only what it recorded as its own (case 2) and stops
within seconds on SIGTERM while its index step starts the JVM (case 12).

Real ``nanoknow demo`` processes (embedded questions, no NanoKnow data), stopped early with
real signals: the later steps (projection, lm-eval) are not needed to show either."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import VENV_BIN, run_command

ENV = {"NANOKNOW_DATA_DIR": "", "TOKENIZERS_PARALLELISM": "false"}
ARGS = ["--questions", "12", "--limit", "1"]


def demo(out: Path, *extra, check=False):
    return run_command(["nanoknow", "demo", "--out", str(out), *ARGS, *extra], env=ENV, cwd=out.parent,
                       check=check, timeout=120)


def _user_files(out: Path) -> None:
    out.mkdir()
    (out / "notes.txt").write_text("my notes")
    (out / "mine").mkdir()
    (out / "mine" / "data.csv").write_text("1,2,3")


def _user_files_intact(out: Path) -> bool:
    return (out / "notes.txt").read_text() == "my notes" and (out / "mine" / "data.csv").read_text() == "1,2,3"


@pytest.mark.parametrize("name", ["corpus", "models", "report"])
def test_an_output_name_the_demo_did_not_make_is_refused_untouched(tmp_path, name):
    out = tmp_path / "demo"
    _user_files(out)
    (out / name).mkdir()
    (out / name / "precious.txt").write_text("do not delete")
    for extra in ([], ["--fresh"]):
        proc = demo(out, *extra)
        assert proc.returncode == 2, proc.stderr[-3000:]
        assert f"{out / name}: --out: {name} is in {out} but not made by nanoknow demo" in proc.stderr
        assert (out / name / "precious.txt").read_text() == "do not delete" and _user_files_intact(out)
        assert not (out / ".steps").exists()


def test_a_foreign_steps_folder_or_a_file_as_out_is_refused(tmp_path):
    out = tmp_path / "demo"
    out.mkdir()
    (out / ".steps").mkdir()
    (out / ".steps" / "todo.txt").write_text("mine")
    proc = demo(out, "--fresh")
    assert proc.returncode == 2 and "without the demo's record of its outputs" in proc.stderr
    assert (out / ".steps" / "todo.txt").read_text() == "mine"
    file_out = tmp_path / "demo.txt"
    file_out.write_text("a file")
    proc = demo(file_out)
    assert proc.returncode == 2 and "--out: exists and is not a folder" in proc.stderr
    assert file_out.read_text() == "a file"


def _start(out: Path, *extra) -> subprocess.Popen:
    return subprocess.Popen([str(VENV_BIN / "nanoknow"), "demo", "--out", str(out), *ARGS, *extra],
                            cwd=out.parent, env={**os.environ, **ENV}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def _wait_for(proc: subprocess.Popen, ready, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        assert time.monotonic() < deadline, "the demo did not get there in time"
        time.sleep(0.05)


def _sigterm(proc: subprocess.Popen, within: float = 10) -> str:
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"the demo still ran {within} s after SIGTERM")
    assert time.monotonic() - start < within
    return err


def test_sigterm_stops_the_demo_and_fresh_deletes_only_what_it_made(tmp_path):
    out = tmp_path / "demo"
    _user_files(out)
    # 1. stopped while the index step starts the JVM: within seconds, no JVM crash file
    proc = _start(out)
    _wait_for(proc, lambda: (out / ".steps" / "corpus.json").is_file())
    err = _sigterm(proc)
    assert proc.returncode == 128 + signal.SIGTERM and "stopped by SIGTERM" in err, err[-3000:]
    assert not list(tmp_path.rglob("hs_err_pid*.log"))
    assert _user_files_intact(out)
    created = json.loads((out / ".steps" / "created.json").read_text())["created"]
    assert created[:2] == ["corpus", "index"] and set(created) <= {"corpus", "index"}
    assert not (out / "index").exists() and not list(out.glob(".nanoknow-index*"))
    # 2. --fresh deletes what the demo recorded (with anything put inside it), nothing else
    (out / "corpus" / "sentinel").write_text("inside the demo's corpus")
    proc = _start(out, "--fresh")
    _wait_for(proc, lambda: not (out / "corpus" / "sentinel").exists() and (out / ".steps" / "corpus.json").is_file())
    _sigterm(proc)
    assert _user_files_intact(out)
    assert (out / "corpus" / "shard_00000.parquet").is_file()  # made again
    assert json.loads((out / ".steps" / "created.json").read_text())["created"][0] == "corpus"
