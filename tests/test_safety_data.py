"""Issue 13, NanoKnow files and names: doc-id aliases (case 6), qids with whitespace (7), a
missing answers file (8), names that are paths (11), bytes that are not UTF-8 (13).

Real files, the CLI run in-process (``nanoknow.cli.main``) and, once, as a process."""

from __future__ import annotations

import json

import pytest

from nanoknow.cli import main
from nanoknow_common.errors import NanoKnowInputError
from projection.data import layout
from projection.data.files import load_questions, read_qrels
from tests.conftest import run_command
from tests.safety_helpers import QUESTIONS, one_line_error, write_corpus, write_root


def verify(root, capsys) -> tuple[int, str]:
    code = main(["data", "verify", "--data-dir", str(root)])
    captured = capsys.readouterr()
    verify.out = captured.out
    return code, captured.err


# -- case 6: ids are ASCII digits, duplicates are found on the canonical id ----------------
@pytest.mark.parametrize("extra, words", [
    ("1 Q0 shard_00000_0001 1", "duplicate line for (1, shard_00000_0001) (the same document as shard_00000_1)"),
    ("2 Q0 shard_\u0660\u0660\u0660\u0660\u0660_\u0663 1", "is not shard_<5 digits>_<row>"),   # Arabic-Indic digits
    ("2 Q0 shard_00000_\uff13 1", "is not shard_<5 digits>_<row>"),                            # a full-width 3
    ("2 Q0 shard_00001_1 \u0661", "relevance '\u0661' is not an integer"),
])
def test_doc_id_aliases_fail_data_verify(tmp_path, capsys, extra, words):
    root = write_root(tmp_path / "data")
    qrels = layout.qrels_path(root, "nq", "sample")
    qrels.write_text(qrels.read_text(encoding="utf-8") + extra + "\n", encoding="utf-8")
    code, err = verify(root, capsys)
    assert code == 2 and words in one_line_error(err)
    assert f"{qrels}:4" in err  # the alias line, named
    with pytest.raises(NanoKnowInputError, match="line 4|:4"):  # and a build/loader refuses it too
        load_questions(root, "nq", "sample", "supported")


def test_a_padded_alias_does_not_inflate_answer_frequency(tmp_path):
    root = write_root(tmp_path / "data")
    qrels = layout.qrels_path(root, "nq", "sample")
    qrels.write_text("1 Q0 shard_00000_1 1\n1 Q0 shard_00000_01 1\n1 Q0 shard_00000_001 1\n", encoding="utf-8")
    problems = []
    assert read_qrels(qrels, problems) == {"1": ["shard_00000_1"]}
    assert [p.line for p in problems] == [2, 3]


# -- case 7: qids with whitespace are refused at input --------------------------------------
@pytest.mark.parametrize("qid", ["a b", " 7", "7\t", "x\u00a0y"])
def test_project_refuses_a_qid_with_whitespace(tmp_path, capsys, qid):
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"qid": "ok", "question": "q?", "answer": ["a"]}) + "\n"
                         + json.dumps({"qid": qid, "question": "q?", "answer": ["a"]}) + "\n", encoding="utf-8")
    code = main(["project", "--dataset", "mine", "--questions", str(questions), "--index", str(tmp_path / "index"),
                 "--out", str(tmp_path / "out"), "--verifier", "none"])
    line = one_line_error(capsys.readouterr().err)
    assert code == 2 and f"{questions}:2: qid: qid {qid!r} contains whitespace" in line
    assert not (tmp_path / "out").exists()


def test_project_refuses_a_qid_with_whitespace_from_a_data_dir(tmp_path, capsys):
    root = write_root(tmp_path / "data", corpus_dir="fineweb-edu",
                      questions=QUESTIONS + [("4 b", "a spaced qid", ["x"], [])])
    code = main(["project", "--dataset", "nq", "--data-dir", str(root), "--index", str(tmp_path / "index"),
                 "--out", str(tmp_path / "out"), "--verifier", "none"])
    line = one_line_error(capsys.readouterr().err)
    topics = layout.topics_path(root, "nq", "fineweb-edu", "unsupported")
    assert code == 2 and f"{topics}:2: qid: qid '4 b' contains whitespace" in line


# -- case 8: a missing answers file is an error ---------------------------------------------
@pytest.mark.parametrize("how", ["missing", "folder"])
def test_data_verify_fails_without_an_answers_file(tmp_path, capsys, how):
    root = write_root(tmp_path / "data")
    answers = layout.answers_path(root, "nq")
    answers.unlink()
    if how == "folder":
        answers.mkdir()
    code, err = verify(root, capsys)
    assert code == 2
    assert str(answers) in one_line_error(err) and ("missing" if how == "missing" else "is not a file") in err
    assert "INVALID" in verify.out and "OK" not in verify.out  # the text report, printed before the error


# -- case 11: --dataset / --corpus-name are plain names --------------------------------------
BAD_NAMES = ["../escape", "a/b", "..", ".", "/abs", "x\\y", "", "na me", "caf\u00e9"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_project_refuses_a_dataset_or_corpus_name_that_is_a_path(tmp_path, capsys, name):
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"qid": "1", "question": "q?", "answer": ["a"]}) + "\n", encoding="utf-8")
    out = tmp_path / "deep" / "out"
    for flag, other in (("--dataset", "--corpus-name"), ("--corpus-name", "--dataset")):
        code = main(["project", flag, name, other, "fine", "--questions", str(questions),
                     "--index", str(tmp_path / "index"), "--out", str(out), "--verifier", "none"])
        assert code == 2 and f"{flag}: must be a plain name" in one_line_error(capsys.readouterr().err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.jsonl"]  # nothing written anywhere


@pytest.mark.parametrize("flag", ["--dataset", "--corpus-dir"])
def test_build_refuses_names_that_are_paths(tmp_path, capsys, flag):
    root = write_root(tmp_path / "data")
    write_corpus(tmp_path / "corpus")
    args = {"--dataset": "nq", "--corpus-dir": "sample"}
    for name in ("../../escape", "nq/../nq"):
        args[flag] = name
        code = main(["build", "--data-dir", str(root), "--corpus", str(tmp_path / "corpus"),
                     "--out", str(tmp_path / "built"), *[x for kv in args.items() for x in kv]])
        assert code == 2 and f"{flag}: must be a plain name" in one_line_error(capsys.readouterr().err)
    assert not (tmp_path / "built").exists() and not (tmp_path.parent / "escape").exists()


def test_other_commands_refuse_names_that_are_paths(tmp_path, capsys):
    root = write_root(tmp_path / "data")
    cases = [["exposure", "--dataset", "../nq", "--data-dir", str(root), "--shards-seen", "1",
              "--out", str(tmp_path / "e.jsonl")],
             ["make-sample-corpus", "--out", str(tmp_path / "c"), "--data-dir", str(root), "--dataset", "nq",
              "--corpus-dir", "../sample"]]
    for args in cases:
        assert main(args) == 2
        assert "must be a plain name" in one_line_error(capsys.readouterr().err)


# -- case 13: bytes that are not UTF-8 -------------------------------------------------------
def _spoil(path, line: int) -> None:
    """Put a byte that is not UTF-8 into line ``line`` (1-based) of a text file."""
    lines = path.read_bytes().splitlines(keepends=True)
    lines[line - 1] = lines[line - 1].replace(b"\t", b"\xff\t", 1) if b"\t" in lines[line - 1] \
        else lines[line - 1][:-1] + b"\xe9\n"
    path.write_bytes(b"".join(lines))


@pytest.mark.parametrize("which", ["topics", "answers", "qrels"])
def test_data_verify_names_the_file_and_line_of_bytes_that_are_not_utf8(tmp_path, capsys, which):
    root = write_root(tmp_path / "data")
    path = {"topics": layout.topics_path(root, "nq", "sample", "supported"), "answers": layout.answers_path(root, "nq"),
            "qrels": layout.qrels_path(root, "nq", "sample")}[which]
    _spoil(path, 2)
    code, err = verify(root, capsys)
    assert code == 2 and f"{path}:2: not UTF-8 text" in one_line_error(err)


def test_build_names_the_file_and_line_of_bytes_that_are_not_utf8(tmp_path, capsys):
    root = write_root(tmp_path / "data")
    write_corpus(tmp_path / "corpus")
    answers = layout.answers_path(root, "nq")
    _spoil(answers, 3)
    code = main(["build", "--data-dir", str(root), "--dataset", "nq", "--corpus-dir", "sample",
                 "--corpus", str(tmp_path / "corpus"), "--out", str(tmp_path / "built")])
    assert code == 2 and f"{answers}:3: not UTF-8 text" in one_line_error(capsys.readouterr().err)


def test_project_questions_not_utf8_is_a_one_line_error_from_the_real_command(tmp_path):
    questions = tmp_path / "q.jsonl"
    questions.write_bytes(b'{"qid": "1", "question": "q?", "answer": ["a"]}\n'
                          b'{"qid": "2", "question": "caf\xe9?", "answer": ["a"]}\n')
    proc = run_command(["nanoknow", "project", "--dataset", "mine", "--questions", str(questions),
                        "--index", str(tmp_path / "index"), "--out", str(tmp_path / "out"), "--verifier", "none"],
                       check=False)
    assert proc.returncode == 2
    assert f"{questions}:2: --questions: not UTF-8 text (byte 0xe9 at column" in one_line_error(proc.stderr)
