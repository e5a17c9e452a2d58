"""``nanoknow count``: exact against a brute-force count with the reference rules, resume, bad input, Ray.

The brute force uses the rules' own implementations: stage 1's
:func:`projection.stage1.answer_match.answers_in_text` and lm-eval's ``has_answer`` tokeniser
(:func:`nanoknow_tasks.has_answer.answer_tokens`), on every (document, question) pair.
"""

from __future__ import annotations

import json
import random
import shutil
import sys
import unicodedata
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from nanoknow.cli import main as nanoknow_main
from nanoknow_tasks.has_answer import answer_tokens, has_answer
from projection.stage1.answer_match import answers_in_text, normalize
from projection.count import AnswerMatcher, CountSettings, count_answers, read_counts
from projection.count.matcher import document_tokens
from nanoknow_common.errors import NanoKnowInputError

# Answers that exercise every edge of both rules (qid -> answers).
EDGE_ANSWERS = {
    "1": ["U.S."], "2": ["New York", "NYC"], "3": ["York"], "4": ["new   york"],  # 4: same key as 2's
    "5": ["café"], "6": ["Straße", "strasse"], "7": ["İstanbul"], "8": ["ΣΟΦΟΣ"], "9": ["1"],
    "10": ["1999"], "11": ["in"], "12": ["inside"], "13": ["o"], "14": ["é"], "15": ["no"], "16": ["rå"],
    "17": ["."], "18": [")"], "19": ["C++"], "20": ["AT&T"], "21": ["rock 'n' roll"], "22": ["   ", "zebra"],
    "23": ["a\u200bb"], "24": ["naïve"], "25": ["東京"], "26": ["😀"], "27": ["Éclair", "éclair", "ECLAIR"],
    "28": ["x y"], "29": ["-"], "30": ["ǅ"], "31": ["ﬁ"], "32": ["\u212a"], "33": ["ΑΣ.Β"], "34": ["New York"],
}
PIECES = [
    "the", "river", "inside", "in", "noon", "no", "1999", "1", "o", "U.S.", "u. s.", "US", "New York", "new\n\t york",
    "NEW YORK", "newyork", "York", "NYC", "café", "cafe\u0301", "CAFÉ", "Straße", "STRASSE", "İstanbul", "istanbul",
    "ΣΟΦΟΣ", "σοφος", "σοφοσ", "1,999", "rå", "RÅ", ".", ")", "(", "C++", "c + +", "AT&T", "at & t",
    "rock 'n' roll", "rock'n'roll", "zebra", "zebras", "a\u200bb", "a b", "naïve", "nai\u0308ve", "東京", "東 京",
    "😀", "Éclair", "ECLAIR", "eclair", "x\u00a0y", "x\u3000y", "x  y", "xy", "-", "ǅ", "ǆ", "ﬁ", "fi", "\u212a",
    "k", "ΑΣ.Β", "ασ.β", "ας.β", "é", "e", "words", "and", "more", "text", "\x00", "\u2028",
]
SEPARATORS = [" ", "  ", "\n", "\t", " \u00a0 ", "", ", ", "\r\n", "\u3000"]


def make_docs(rng: random.Random, n: int) -> list[str | None]:
    docs: list[str | None] = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(3, 40)):
            parts.append(rng.choice(PIECES))
            parts.append(rng.choice(SEPARATORS))
        docs.append("".join(parts))
    docs[3] = None  # a null text: a document that matches nothing
    docs[4] = ""
    return docs


def brute_force(docs: list[str | None], answers: list[list[str]]) -> tuple[list[int], list[int]]:
    """Documents per question under both rules, pair by pair with the reference functions."""
    substring = [0] * len(answers)
    token = [0] * len(answers)
    for text in docs:
        text = text or ""
        for i, question_answers in enumerate(answers):
            substring[i] += bool(answers_in_text(text, question_answers))
            # has_answer would match an answer without tokens everywhere; the count skips those
            token[i] += has_answer(text, [a for a in question_answers if answer_tokens(a)])
    return substring, token


@pytest.fixture(scope="module")
def edge_corpus(tmp_path_factory):
    """3 shards of ~100 documents built from PIECES, and the EDGE_ANSWERS questions file."""
    root = tmp_path_factory.mktemp("count")
    corpus = root / "corpus"
    corpus.mkdir()
    rng = random.Random(14)
    shards = {}
    for shard, rows in ((0, 110), (1, 90), (3, 100)):  # shard 2 absent: numbers need not be contiguous
        shards[shard] = make_docs(rng, rows)
        pq.write_table(pa.table({"text": pa.array(shards[shard], pa.string())}),
                       corpus / f"shard_{shard:05d}.parquet", row_group_size=32)
    questions = root / "questions.jsonl"
    questions.write_text("".join(json.dumps({"qid": qid, "question": f"question {qid}?", "answer": answers}) + "\n"
                                 for qid, answers in EDGE_ANSWERS.items()), encoding="utf-8")
    return corpus, questions, shards


def _count(corpus, questions, out, **kwargs):
    return count_answers(CountSettings(corpus=str(corpus), out=str(out), datasets=("edge",),
                                       questions_file=str(questions), batch_rows=40, progress=False, **kwargs))


@pytest.fixture(scope="module")
def edge_run(edge_corpus, tmp_path_factory):
    corpus, questions, _ = edge_corpus
    out = tmp_path_factory.mktemp("edge-run") / "out"
    summary = _count(corpus, questions, out)
    return out, summary


def test_counts_equal_brute_force_per_shard_and_total(edge_corpus, edge_run):
    corpus, _, shards = edge_corpus
    out, summary = edge_run
    answers = list(EDGE_ANSWERS.values())
    counts = read_counts(out)
    assert list(counts) == list(EDGE_ANSWERS)
    expected_total = [[0] * len(answers), [0] * len(answers)]
    for shard, docs in shards.items():
        substring, token = brute_force(docs, answers)
        for i, qid in enumerate(EDGE_ANSWERS):
            got = counts[qid].shards.get(shard, (0, 0))
            assert got == (substring[i], token[i]), (qid, EDGE_ANSWERS[qid], shard)
            expected_total[0][i] += substring[i]
            expected_total[1][i] += token[i]
    for i, qid in enumerate(EDGE_ANSWERS):
        assert (counts[qid].substring, counts[qid].token) == (expected_total[0][i], expected_total[1][i]), qid
    assert summary["documents"] == sum(len(d) for d in shards.values())
    # the rules disagree where they should: "in" by substring is in "inside", "noon", ...
    assert counts["11"].substring > counts["11"].token > 0
    # "U.S." also matches "u. s." by tokens, not by substring; "café" decomposed matches by tokens only
    assert counts["1"].token > counts["1"].substring > 0
    assert counts["5"].token > counts["5"].substring > 0
    # the same key for two questions, and several answers of one question in a document (counted once)
    assert (counts["2"].substring, counts["2"].token) >= (counts["4"].substring, counts["4"].token)
    assert counts["34"] == counts["4"] and counts["4"].substring > 0
    assert counts["27"].substring <= summary["documents"]
    # an answer of only spaces counts nothing: question 22 counts "zebra" only
    assert counts["22"].substring == sum(brute_force(d, [["zebra"]])[0][0] for d in shards.values())
    lines = (out / "counts.jsonl").read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[0])
    assert set(row) == {"dataset", "qid", "corpus_answer_docs", "shards"}
    assert all(len(pair) == 2 and any(pair) for pair in row["shards"].values())


def test_matcher_random_strings_equal_reference_rules():
    """Random texts over an alphabet of case, whitespace, accents, sigma and punctuation traps."""
    rng = random.Random(7)
    alphabet = list("aAbBoO1 \t\n.,'-()σΣςéÉİıKkßx") + ["e\u0301", "\u00a0", "\u212a", "rå", "in", "  "]
    docs = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(120)]
    answers = []
    for _ in range(100):
        source = rng.choice(docs) or "a"
        start = rng.randrange(len(source))
        answers.append([source[start:start + rng.randint(1, 8)], rng.choice(alphabet)])
    matcher = AnswerMatcher(answers)
    for text in docs:
        substring, token = matcher.match(text)
        assert substring == {i for i, a in enumerate(answers) if answers_in_text(text, a)}, text
        assert token == {i for i, a in enumerate(answers)
                         if has_answer(text, [x for x in a if answer_tokens(x)])}, text
    got_substring, got_token, n = matcher.count(docs)
    want_substring, want_token = brute_force(docs, answers)
    assert (got_substring.tolist(), got_token.tolist(), n) == (want_substring, want_token, len(docs))


def test_document_normalisation_equals_reference_over_every_code_point():
    """The fast tokenisation and whitespace collapse agree with the reference on every assigned
    code point, alone and next to letters, digits, ASCII punctuation, spaces and a capital
    sigma (final-sigma context)."""
    chars = [chr(c) for c in range(sys.maxunicode + 1)
             if unicodedata.category(chr(c)) not in ("Cn", "Co", "Cs")]
    for context in ("{}", "A{}b ", "x{0}.{0}-1{0} ", "ΑΣ{}Β "):
        text = "".join(context.format(c) for c in chars)
        assert document_tokens(text) == answer_tokens(text), context
        assert " ".join(text.lower().split()) == normalize(text).strip(), context


def test_resume_after_partial_run_gives_identical_output(edge_corpus, edge_run, tmp_path):
    corpus, questions, _ = edge_corpus
    out, _ = edge_run
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    # a run killed while shard 3 was being written: its result missing, a partial temp file left
    (copy / "counts.jsonl").unlink()
    (copy / "shards" / "shard_00003.json").unlink()
    (copy / "shards" / "shard_00003.json.tmp").write_text('{"shard": 3, "docu')
    summary = _count(corpus, questions, copy, resume=True)
    assert summary["shards_counted_now"] == 1
    assert (copy / "counts.jsonl").read_bytes() == (out / "counts.jsonl").read_bytes()
    assert (copy / "shards" / "shard_00003.json").read_bytes() == (out / "shards" / "shard_00003.json").read_bytes()
    # finished run: --resume recounts nothing; without --resume the folder is refused
    assert _count(corpus, questions, copy, resume=True)["shards_counted_now"] == 0
    with pytest.raises(NanoKnowInputError, match="--resume"):
        _count(corpus, questions, copy)


def _cli(args: list[str], capsys) -> tuple[int, str]:
    code = nanoknow_main(["count", "--no-progress", *args])
    return code, capsys.readouterr().err


def test_bad_inputs_exit_2_with_file_line_field(edge_corpus, tmp_path, capsys):
    corpus, questions, _ = edge_corpus
    base = ["--dataset", "edge", "--corpus", str(corpus)]

    bad_json = tmp_path / "bad.jsonl"
    bad_json.write_text('{"qid": "1", "question": "q?", "answer": ["a"]}\n{"qid": "2", "question"\n')
    code, err = _cli([*base, "--questions", str(bad_json), "--out", str(tmp_path / "o1")], capsys)
    assert code == 2 and f"{bad_json}:2: not valid JSON" in err

    code, err = _cli([*base, "--questions", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "o2")], capsys)
    assert code == 2 and "missing.jsonl" in err and "--questions" in err

    numbers = tmp_path / "numbers"
    numbers.mkdir()
    pq.write_table(pa.table({"text": [1, 2, 3]}), numbers / "shard_00000.parquet")
    code, err = _cli(["--dataset", "edge", "--corpus", str(numbers), "--questions", str(questions),
                      "--out", str(tmp_path / "o3")], capsys)
    assert code == 2 and "shard_00000.parquet: text: column 'text' holds int64, not text" in err

    code, err = _cli([*base, "--questions", str(questions), "--text-column", "body", "--out", str(tmp_path / "o4")],
                     capsys)
    assert code == 2 and "shard_00000.parquet: body: cannot read shard" in err

    code, err = _cli([*base, "--questions", str(questions), "--shards", "0-2", "--out", str(tmp_path / "o5")], capsys)
    assert code == 2 and "--shards" in err and "shard_00002.parquet" in err

    code, err = _cli([*base, "--questions", str(questions), "--shards", "3-1", "--out", str(tmp_path / "o6")], capsys)
    assert code == 2 and "bad shard range" in err

    code, err = _cli(["--dataset", "nosuch", "--corpus", str(corpus), "--data-dir", str(tmp_path),
                      "--out", str(tmp_path / "o7")], capsys)
    assert code == 2 and "answers.nanoknow-nosuch.jsonl: file not found" in err

    # a resume with other questions is refused, naming the changed parameter
    out = tmp_path / "o8"
    one = tmp_path / "one.jsonl"
    one.write_text('{"qid": "1", "question": "q?", "answer": ["York"]}\n')
    assert _cli([*base, "--questions", str(one), "--shards", "0", "--out", str(out)], capsys)[0] == 0
    two = tmp_path / "two.jsonl"
    two.write_text('{"qid": "1", "question": "q?", "answer": ["Yorkshire"]}\n')
    code, err = _cli([*base, "--questions", str(two), "--shards", "0", "--out", str(out), "--resume"], capsys)
    assert code == 2 and "run.json: questions_sha256: --resume with different parameters" in err

    counts = tmp_path / "counts.jsonl"
    counts.write_text('{"dataset": "nq", "qid": "1", "corpus_answer_docs": {"substring": 1, "token": 0}}\n'
                      '{"dataset": "nq", "qid": "2", "corpus_answer_docs": {"substring": "1", "token": 0}}\n')
    with pytest.raises(NanoKnowInputError, match=r"counts.jsonl:2: corpus_answer_docs"):
        read_counts(counts)


def test_console_script_counts_nanoknow_datasets(nanoknow_data_dir, tmp_path, run):
    """The installed `nanoknow count` over two released datasets on a corpus with planted answers."""
    from projection.count.questions import from_data_dir

    questions = from_data_dir(nanoknow_data_dir, ("nq", "hotpotqa"), "fineweb-edu")
    rng = random.Random(3)
    picked = rng.sample(questions, 40)
    docs = [f"Filler words. {q.answers[0]} appears here, and also {rng.choice(picked).answers[0]}." for q in picked]
    docs += ["Yes, no, 1 or 2: short answers are everywhere in text."] * 5
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    pq.write_table(pa.table({"text": docs}), corpus / "shard_00000.parquet")
    out = tmp_path / "out"
    proc = run(["nanoknow", "count", "--data-dir", str(nanoknow_data_dir), "--dataset", "nq", "hotpotqa",
                "--corpus", str(corpus), "--out", str(out), "--no-progress"])
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["questions"] == len(questions) == 3610 + 7405 and summary["documents"] == len(docs)
    # brute force with the reference normalisation and tokeniser (each text prepared once)
    doc_norms = [normalize(d) for d in docs]
    doc_tokens = [answer_tokens(d) for d in docs]
    doc_token_sets = [set(t) for t in doc_tokens]

    def has_run(tokens, token_set, run_):
        return run_[0] in token_set and any(tokens[j:j + len(run_)] == run_ for j in range(len(tokens)))

    for dataset in ("nq", "hotpotqa"):
        counts = read_counts(out, dataset)
        for q in (q for q in questions if q.dataset == dataset):
            keys = [k for k in (normalize(a).strip() for a in q.answers) if k]
            runs = [r for r in (answer_tokens(a) for a in q.answers) if r]
            substring = sum(any(k in norm for k in keys) for norm in doc_norms)
            token = sum(any(has_run(t, ts, r) for r in runs) for t, ts in zip(doc_tokens, doc_token_sets))
            assert (counts[q.qid].substring, counts[q.qid].token) == (substring, token), (dataset, q)
    with pytest.raises(NanoKnowInputError, match="several datasets"):
        read_counts(out)


def test_ray_local_counts_identical_and_resumes(edge_corpus, edge_run, tmp_path):
    """A real local Ray (2 CPUs): one shard left from a local run, the other two counted by
    Ray Data tasks; every output file is byte-identical to the local run's."""
    ray = pytest.importorskip("ray")
    corpus, questions, _ = edge_corpus
    out, _ = edge_run
    ray_out = tmp_path / "out"
    shutil.copytree(out, ray_out)
    (ray_out / "counts.jsonl").unlink()
    (ray_out / "shards" / "shard_00001.json").unlink()
    (ray_out / "shards" / "shard_00003.json").unlink()
    ray.init(num_cpus=2, include_dashboard=False)
    try:
        summary = _count(corpus, questions, ray_out, resume=True, ray="local", workers=2)
    finally:
        ray.shutdown()
    assert summary["shards_counted_now"] == 2
    for name in ("counts.jsonl", "shards/shard_00001.json", "shards/shard_00003.json"):
        assert (ray_out / name).read_bytes() == (out / name).read_bytes(), name
