"""``nanoknow data verify`` on the released files, and one bad-input case per validation rule."""

import json
import shutil

import pytest

from projection.data import layout
from projection.data.data_root import resolve_data_dir
from nanoknow_common.errors import NanoKnowInputError
from projection.data.files import load_questions, read_qrels
from projection.data.check_files import verify_data_dir


def test_verify_reference_data_counts(run, nanoknow_data_dir):
    proc = run(["nanoknow", "data", "verify", "--json", "--data-dir", str(nanoknow_data_dir)])
    report = json.loads(proc.stdout)
    assert report["ok"] is True
    corpora = {d: info["corpora"] for d, info in report["datasets"].items()}
    nq = corpora["nq"]["fineweb-edu"]
    assert (nq["supported"], nq["unsupported"], nq["qrels_lines"]) == (2389, 1221, 56958)
    squad = corpora["squad"]["fineweb-edu"]
    assert (squad["supported"], squad["unsupported"], squad["qrels_lines"]) == (7490, 3080, None)
    assert "squad/fineweb-edu/qrels.nanoknow-squad-fineweb.supported.txt" in squad["missing"]
    hotpot = corpora["hotpotqa"]["fineweb-edu"]
    assert (hotpot["supported"], hotpot["unsupported"], hotpot["qrels_lines"]) == (2663, 4742, 143485)
    assert (corpora["nq"]["climbmix"]["supported"], corpora["nq"]["climbmix"]["unsupported"]) == (3021, 589)
    assert (corpora["squad"]["climbmix"]["supported"], corpora["squad"]["climbmix"]["unsupported"]) == (9071, 1499)


def test_answer_frequency_is_the_qrels_count(nanoknow_data_dir):
    questions = load_questions(nanoknow_data_dir, "nq", "fineweb-edu", "supported")
    counts = {}
    for line in open(layout.qrels_path(nanoknow_data_dir, "nq", "fineweb-edu"), encoding="utf-8"):
        counts[line.split()[0]] = counts.get(line.split()[0], 0) + 1
    assert len(questions) == 2389
    assert all(q.answer_frequency == counts[q.qid] for q in questions)
    assert sum(q.answer_frequency for q in questions) == 56958
    unsupported = load_questions(nanoknow_data_dir, "nq", "fineweb-edu", "unsupported")
    assert {q.answer_frequency for q in unsupported} == {0}
    squad = load_questions(nanoknow_data_dir, "squad", "fineweb-edu", "supported")
    assert {q.answer_frequency for q in squad} == {None}  # qrels absent: unknown, not zero


def _small_root(tmp_path):
    """A valid miniature data root in the upstream layout (our own tiny content)."""
    root = tmp_path / "data"
    (root / "toy" / "fineweb-edu").mkdir(parents=True)
    layout.answers_path(root, "toy").write_text(
        '{"qid": "1", "answer": ["Paris"]}\n{"qid": "2", "answer": ["Rome", "Roma"]}\n'
        '{"qid": "3", "answer": ["Oslo"]}\n', encoding="utf-8")
    layout.topics_path(root, "toy", "fineweb-edu", "supported").write_text(
        "1\tcapital of france\n2\tcapital of italy\n", encoding="utf-8")
    layout.topics_path(root, "toy", "fineweb-edu", "unsupported").write_text(
        "3\tcapital of norway\n", encoding="utf-8")
    layout.qrels_path(root, "toy", "fineweb-edu").write_text(
        "1 Q0 shard_00000_5 1\n1 Q0 shard_00001_000017 1\n2 Q0 shard_00002_9 1\n", encoding="utf-8")
    return root


def _append(path, text):
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)


BAD_INPUTS = {
    # name: (file kind, text appended, expected message part, expected line)
    "malformed json": ("answers", '{"qid": "4", "answer": [\n', "not valid JSON", 4),
    "answer not a list": ("answers", '{"qid": "4", "answer": "x"}\n', "answer: expected a non-empty list", 4),
    "duplicate answers qid": ("answers", '{"qid": "1", "answer": ["x"]}\n', "duplicate qid '1'", 4),
    "topics wrong field count": ("supported", "4\n", "expected 2 tab-separated fields", 3),
    "duplicate topics line": ("supported", "1\tcapital of france\n", "duplicate line", 3),
    "qid in both splits": ("unsupported", "1\tcapital of france\n", "qid '1' is in both splits", 2),
    "supported qid without qrels": ("supported", "9\tcapital of spain\n", "supported qid '9' has no qrels", 3),
    "qid without answers": ("unsupported", "8\tcapital of chile\n", "qid '8' has no answers", 2),
    "qrels wrong doc id": ("qrels", "2 Q0 doc_7 1\n", "doc_id: 'doc_7' is not shard_<5 digits>_<row>", 4),
    "qrels short shard": ("qrels", "2 Q0 shard_001_7 1\n", "is not shard_<5 digits>_<row>", 4),
    "qrels wrong field count": ("qrels", "2 Q0 shard_00002_9\n", "expected 4 fields", 4),
    "qrels duplicate line": ("qrels", "2 Q0 shard_00002_9 1\n", "duplicate line for (2, shard_00002_9)", 4),
    "qrels unknown qid": ("qrels", "7 Q0 shard_00002_9 1\n", "qrels qid '7' is not a supported topic", 4),
}


def _file_of(root, kind):
    if kind == "answers":
        return layout.answers_path(root, "toy")
    if kind == "qrels":
        return layout.qrels_path(root, "toy", "fineweb-edu")
    return layout.topics_path(root, "toy", "fineweb-edu", kind)


def test_small_root_is_valid(tmp_path):
    report = verify_data_dir(_small_root(tmp_path))
    assert report["ok"], report
    toy = report["datasets"]["toy"]["corpora"]["fineweb-edu"]
    assert (toy["supported"], toy["unsupported"], toy["qrels_lines"]) == (2, 1, 3)


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_is_reported_with_file_line_and_reason(run, tmp_path, name):
    kind, text, message, line = BAD_INPUTS[name]
    root = _small_root(tmp_path)
    path = _file_of(root, kind)
    _append(path, text)
    report = verify_data_dir(root)
    errors = report["datasets"]["toy"]["answer_errors"] + report["datasets"]["toy"]["corpora"]["fineweb-edu"]["errors"]
    assert not report["ok"]
    assert any(message in e and f"{path}:{line}:" in e for e in errors), errors
    proc = run(["nanoknow", "data", "verify", "--data-dir", str(root)], check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and message in proc.stderr, proc.stderr


def test_missing_qrels_reported_as_missing_not_error(tmp_path):
    root = _small_root(tmp_path)
    layout.qrels_path(root, "toy", "fineweb-edu").unlink()
    report = verify_data_dir(root)
    toy = report["datasets"]["toy"]["corpora"]["fineweb-edu"]
    assert report["ok"] and toy["qrels_lines"] is None
    assert toy["missing"] == ["toy/fineweb-edu/qrels.nanoknow-toy-fineweb.supported.txt"]


def test_loader_raises_on_first_bad_line(tmp_path):
    root = _small_root(tmp_path)
    _append(layout.qrels_path(root, "toy", "fineweb-edu"), "2 Q1 shard_00002_3 1\n")
    with pytest.raises(NanoKnowInputError, match=r"qrels\.nanoknow-toy-fineweb\.supported\.txt:4: Q0: expected 'Q0'"):
        read_qrels(layout.qrels_path(root, "toy", "fineweb-edu"))
    with pytest.raises(NanoKnowInputError, match="Q0"):
        load_questions(root, "toy", "fineweb-edu", "supported")


def test_data_dir_resolution_order(tmp_path, monkeypatch):
    explicit, env, cache = tmp_path / "explicit", tmp_path / "env", tmp_path / "cache"
    explicit.mkdir()
    env.mkdir()
    monkeypatch.setenv("NANOKNOW_CACHE_DIR", str(cache))
    monkeypatch.setenv("NANOKNOW_DATA_DIR", str(env))
    assert resolve_data_dir(explicit) == explicit
    assert resolve_data_dir(None) == env
    monkeypatch.delenv("NANOKNOW_DATA_DIR")
    with pytest.raises(NanoKnowInputError, match="nanoknow data fetch"):
        resolve_data_dir(None)
    shutil.copytree(_small_root(tmp_path), cache / "questions-and-qrels")
    assert resolve_data_dir(None) == cache / "questions-and-qrels"
    with pytest.raises(NanoKnowInputError, match="does not exist"):
        resolve_data_dir(tmp_path / "nowhere")
