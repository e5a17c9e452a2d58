"""Issue 13, ``nanoknow report``: bytes that are not UTF-8 (case 13), samples lines that are
JSON but not lm-eval samples, an ``--out`` that is a file and a disk-full write (case 14).

lm-eval output folders in lm-eval's layout (``write_lm_eval_folder``, checked against real
lm-eval output in ``test_report.py``); the report runs in-process through the CLI. The full
disk is real: ``/dev/full`` (every write fails with ENOSPC) linked in as one output file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nanoknow.cli import main
from tests.safety_helpers import one_line_error
from tests.test_report_inputs import CLOSEDBOOK, ORACLE, STAMP, write_lm_eval_folder


@pytest.fixture
def results(tmp_path) -> Path:
    return write_lm_eval_folder(tmp_path / "runs" / "m", "m", {CLOSEDBOOK[0]: [True, False], ORACLE: [True, True]})


def report(results: Path, out: Path, capsys) -> tuple[int, str]:
    code = main(["report", str(results), "--out", str(out)])
    return code, capsys.readouterr().err


def _samples_file(results: Path, task: str = ORACLE) -> Path:
    return results / f"samples_{task}_{STAMP}.jsonl"


def test_results_file_not_utf8_names_the_file(results, tmp_path, capsys):
    path = results / f"results_{STAMP}.json"
    path.write_bytes(path.read_bytes().replace(b'"results"', b'"r\xe9sults"', 1))
    code, err = report(results, tmp_path / "out", capsys)
    assert code == 2 and f"{path}:1: not UTF-8 text" in one_line_error(err)


def test_samples_file_not_utf8_names_the_file_and_line(results, tmp_path, capsys):
    path = _samples_file(results)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b"question", b"qu\xffstion", 1)
    path.write_bytes(b"".join(lines))
    code, err = report(results, tmp_path / "out", capsys)
    assert code == 2 and f"{path}:2: not UTF-8 text (byte 0xff" in one_line_error(err)


@pytest.mark.parametrize("bad, words", [
    ("[1, 2]", "2: expected a JSON object (an lm-eval sample), got list"),
    ('"just text"', "2: expected a JSON object (an lm-eval sample), got str"),
    ('{"doc_id": 1, "doc": "not an object", "exact_match": 1.0}', "2: doc: expected a JSON object, got str"),
    ('{"doc_id": 1, "doc": [1], "exact_match": 1.0}', "2: doc: expected a JSON object, got list"),
])
def test_samples_line_that_is_json_but_not_a_sample(results, tmp_path, capsys, bad, words):
    path = _samples_file(results)
    lines = path.read_text().splitlines()
    lines[1] = bad
    path.write_text("\n".join(lines) + "\n")
    code, err = report(results, tmp_path / "out", capsys)
    assert code == 2 and f"{path}:{words}" in one_line_error(err)


def test_out_that_is_a_regular_file(results, tmp_path, capsys):
    out = tmp_path / "report.txt"
    out.write_text("mine")
    code, err = report(results, out, capsys)
    assert code == 2 and f"{out}: --out: exists and is not a folder" in one_line_error(err)
    assert out.read_text() == "mine"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs Linux's /dev/full")
@pytest.mark.parametrize("name", ["summary.csv", "summary.md"])
def test_a_full_disk_is_a_one_line_error_naming_the_file(results, tmp_path, capsys, name):
    out = tmp_path / "out"
    out.mkdir()
    (out / name).symlink_to("/dev/full")  # every write to it fails with ENOSPC, as on a full disk
    code, err = report(results, out, capsys)
    assert code == 1
    assert f"{out / name}: No space left on device" in one_line_error(err)


def test_the_reports_good_path_still_works(results, tmp_path, capsys):
    code, _ = report(results, tmp_path / "out", capsys)
    assert code == 0
    rows = (tmp_path / "out" / "summary.csv").read_text().splitlines()
    assert len(rows) == 3 and json.dumps(ORACLE)[1:-1] in "\n".join(rows)
