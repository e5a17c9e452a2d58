"""Issue 13, ``nanoknow index``: nothing lost on bad input or interruption (cases 1, 4, 12).

Real ``nanoknow index`` processes on a small real parquet corpus (one per module); the
signal cases send real SIGTERM/SIGINT/SIGKILL to a real child, bounded in time.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import VENV_BIN, run_command

WORDS = ["apple", "river", "castle", "orbit", "violin", "harbor", "meadow", "copper", "lantern", "glacier"]


def write_corpus(folder: Path, shards: int = 2, docs: int = 400) -> Path:
    folder.mkdir(parents=True)
    for shard in range(shards):
        texts = [" ".join(WORDS[(shard + row + i) % len(WORDS)] for i in range(12)) + f" doc {shard} {row}"
                 for row in range(docs)]
        pq.write_table(pa.table({"text": texts}), folder / f"shard_{shard:05d}.parquet")
    return folder


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with the sha256 of its bytes."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def scratch_folders(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(".nanoknow-index"))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A corpus and a good Lucene index over it, built once; tests copy what they change."""
    root = tmp_path_factory.mktemp("index-site")
    corpus = write_corpus(root / "corpus")
    run_command(["nanoknow", "index", "--corpus", str(corpus), "--index", str(root / "index")])
    return root


@pytest.fixture
def copy(site, tmp_path):
    """A private copy of the corpus and the index."""
    shutil.copytree(site / "corpus", tmp_path / "corpus")
    shutil.copytree(site / "index", tmp_path / "index")
    return tmp_path


def index(*args, cwd=None):
    return run_command(["nanoknow", "index", *map(str, args)], cwd=cwd, check=False)


# -- case 1: --overwrite validates everything first and swaps a finished index in -----------
def test_index_equal_to_or_inside_or_around_the_corpus_is_refused(copy):
    corpus = copy / "corpus"
    before = snapshot(corpus)
    for target in (corpus, corpus / "idx", copy):
        proc = index("--corpus", corpus, "--index", target, "--overwrite")
        assert proc.returncode == 2, proc.stderr
        assert "--index" in proc.stderr and "corpus" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
        assert snapshot(corpus) == before
    assert not (corpus / "idx").exists() and scratch_folders(copy) == []


@pytest.mark.parametrize("case", ["threads 0", "no shards", "integer text", "not parquet"])
def test_bad_input_with_overwrite_keeps_the_old_index(copy, case):
    old = snapshot(copy / "index")
    corpus, extra = copy / "corpus", []
    if case == "threads 0":
        extra = ["--threads", "0"]
    elif case == "no shards":
        corpus = copy / "empty-corpus"
        corpus.mkdir()
    elif case == "integer text":
        pq.write_table(pa.table({"text": [1, 2, 3]}), corpus / "shard_00002.parquet")
    else:
        (corpus / "shard_00002.parquet").write_bytes(b"not a parquet file")
    proc = index("--corpus", corpus, "--index", copy / "index", "--overwrite", *extra)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1  # a one-line error, no traceback
    if case == "integer text":
        assert "shard_00002.parquet" in proc.stderr and "'text'" in proc.stderr
    assert snapshot(copy / "index") == old
    assert scratch_folders(copy) == []


def test_overwrite_refuses_a_folder_that_is_not_a_lucene_index(copy):
    mine = copy / "my-notes"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    proc = index("--corpus", copy / "corpus", "--index", mine, "--overwrite")
    assert proc.returncode == 2 and "not a Lucene index" in proc.stderr
    assert (mine / "thesis.tex").read_text() == "years of work"


def test_overwrite_replaces_a_lucene_index_with_a_complete_one(copy):
    # scratch-like folders of a live process, or without an owner file, are never touched
    alive = copy / ".nanoknow-index-tmp-live"
    alive.mkdir()
    (alive / "owner.json").write_text('{"pid": %d, "started": %r}' % (os.getpid(), _started(os.getpid())))
    foreign = copy / ".nanoknow-index-tmp-unknown"
    foreign.mkdir()
    corpus = copy / "corpus"
    pq.write_table(pa.table({"text": ["one more document about a lantern"]}), corpus / "shard_00002.parquet")
    assert index("--corpus", corpus, "--index", copy / "index", "--overwrite").returncode == 0
    from projection.index import lucene

    assert lucene.index_num_docs(copy / "index") == 801
    assert scratch_folders(copy) == sorted([alive.name, foreign.name])


# -- case 4: the scratch export never outlives the run --------------------------------------
def _start(args, cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.Popen([str(VENV_BIN / "nanoknow"), *map(str, args)], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _wait_for_line(proc: subprocess.Popen, words: str, timeout: float = 120) -> list[str]:
    """Read the child's stderr until a line holds ``words``."""
    deadline, lines = time.monotonic() + timeout, []
    for line in proc.stderr:
        lines.append(line)
        if words in line:
            return lines
        assert time.monotonic() < deadline, f"no {words!r} in time:\n{''.join(lines[-20:])}"
    raise AssertionError(f"child ended before {words!r}:\n{''.join(lines[-20:])}")


def _stop(proc: subprocess.Popen, signum: int, within: float) -> tuple[float, str]:
    """Send ``signum``; return how long the child took to end (fails after ``within`` seconds)
    and the rest of its stderr."""
    start = time.monotonic()
    proc.send_signal(signum)
    try:
        _, err = proc.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"still running {within} s after {signal.Signals(signum).name}")
    return time.monotonic() - start, err


def _wait_for_scratch(proc: subprocess.Popen, parent: Path, timeout: float = 120) -> None:
    """Wait until the run has made its scratch folder (export done or under way, JVM next)."""
    deadline = time.monotonic() + timeout
    while not scratch_folders(parent):
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        assert time.monotonic() < deadline, "no scratch folder in time"
        time.sleep(0.05)


def test_a_killed_run_leaves_a_scratch_folder_that_the_next_run_removes(copy):
    # the log line below is printed once the export is written and the JVM is about to index
    proc = _start(["index", "--corpus", copy / "corpus", "--index", copy / "new-index"], cwd=copy)
    _wait_for_line(proc, "Anserini IndexCollection")
    _stop(proc, signal.SIGKILL, within=10)  # nothing can clean up after SIGKILL ...
    left = scratch_folders(copy)
    assert left and any((copy / name / "jsonl").is_dir() for name in left)
    assert not (copy / "new-index").exists()  # ... but the index path was never touched
    assert index("--corpus", copy / "corpus", "--index", copy / "new-index").returncode == 0
    assert scratch_folders(copy) == []  # ... and the next run recognised and removed it


def _started(pid: int) -> float:
    import psutil

    return psutil.Process(pid).create_time()


# -- case 12: SIGTERM / SIGINT while the JVM starts or indexes ------------------------------
@pytest.mark.parametrize("signum, moment", [
    (signal.SIGTERM, "starting"),   # the export is under way or done, the JVM starts next
    (signal.SIGTERM, "java"),       # right after the JVM started and Anserini began
    (signal.SIGINT, "java"),
])
def test_a_stop_signal_ends_the_run_within_seconds_and_keeps_the_old_index(copy, signum, moment):
    old = snapshot(copy / "index")
    proc = _start(["index", "--corpus", copy / "corpus", "--index", copy / "index", "--overwrite"], cwd=copy)
    if moment == "starting":
        _wait_for_scratch(proc, copy)
    else:
        _wait_for_line(proc, "Anserini IndexCollection")
    took, err = _stop(proc, signum, within=10)
    assert took < 10
    assert proc.returncode == 128 + signum, err[-3000:]
    assert f"stopped by {signal.Signals(signum).name}" in err
    assert not list(copy.glob("hs_err_pid*.log")) and not list(copy.glob("replay_pid*.log"))
    assert snapshot(copy / "index") == old  # the old index is exactly as it was
    assert scratch_folders(copy) == []  # the export was removed on the way out


def test_after_a_stop_signal_the_same_command_completes(copy):
    args = ["index", "--corpus", copy / "corpus", "--index", copy / "index2"]
    proc = _start(args, cwd=copy)
    _wait_for_line(proc, "Anserini IndexCollection")
    _, err = _stop(proc, signal.SIGTERM, within=10)
    assert proc.returncode == 128 + signal.SIGTERM, err[-3000:]
    assert not (copy / "index2").exists()
    done = run_command(["nanoknow", *map(str, args)], cwd=copy, check=False)
    assert done.returncode == 0, done.stderr
    from projection.index import lucene

    assert lucene.index_num_docs(copy / "index2") == 800
    assert not list(copy.glob("hs_err_pid*.log")) and scratch_folders(copy) == []


def test_a_jvm_crash_writes_its_file_to_the_temporary_folder_not_the_working_folder(tmp_path):
    """A real JVM crash: the process sends itself SIGSEGV once the JVM runs; HotSpot's crash
    handler writes hs_err_pid*.log where -XX:ErrorFile says."""
    work, tmp = tmp_path / "work", tmp_path / "tmp"
    work.mkdir()
    tmp.mkdir()
    script = ("import os, signal\nfrom projection.index import lucene\nlucene.start_java()\n"
              "os.kill(os.getpid(), signal.SIGSEGV)\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=work, env={**os.environ, "TMPDIR": str(tmp)},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "hs_err_pid" in proc.stdout + proc.stderr
    assert list(work.iterdir()) == []
    assert len(list(tmp.glob("hs_err_pid*.log"))) == 1


def test_the_jvm_runs_with_reduced_signal_use_and_its_crash_files_in_tmp():
    """-Xrs (SIGTERM/SIGINT/SIGHUP stay Python's) and the crash-file options are in effect."""
    import tempfile

    from projection.index import lucene

    autoclass = lucene.start_java()["autoclass"]
    arguments = autoclass("java.lang.management.ManagementFactory").getRuntimeMXBean().getInputArguments()
    arguments = [arguments.get(i) for i in range(arguments.size())]
    assert "-Xrs" in arguments
    assert f"-XX:ErrorFile={tempfile.gettempdir()}/hs_err_pid%p.log" in arguments
