"""End to end on the sample corpus: real parquet shards, a real Lucene index (built once per
session), stage 1 with BM25, stage 2 with SmolLM2-135M (hf) and with a judge behind a real
HTTP server on 127.0.0.1, resume after SIGKILL, validation by ``nanoknow data verify``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from projection.data import layout
from projection.outputs import final_files as outputs
from tests.conftest import VENV_BIN, run_command
from tests.openai_test_server import FakeOpenAIServer

DATASET, CORPUS_NAME = "sample", "sample-corpus"
COINCIDENCE_MARKERS = ("poster", "crossword", "cafe", "spelling", "pigeon")


@pytest.fixture(scope="session")
def sample(tmp_path_factory):
    """The embedded-question sample corpus and its Lucene index (no raw text stored)."""
    root = tmp_path_factory.mktemp("projection")
    corpus, index = root / "corpus", root / "index"
    run_command(["nanoknow", "make-sample-corpus", "--out", str(corpus), "--embedded"])
    run_command(["nanoknow", "index", "--corpus", str(corpus), "--index", str(index), "--threads", "2"])
    truth = [json.loads(line) for line in open(corpus / "ground_truth.jsonl")]
    return {"root": root, "corpus": corpus, "index": index, "truth": truth,
            "questions": [json.loads(line) for line in open(corpus / "questions.jsonl")]}


def project_args(sample, out, *extra):
    return ["nanoknow", "project", "--questions", str(sample["corpus"] / "questions.jsonl"), "--dataset", DATASET,
            "--corpus", str(sample["corpus"]), "--corpus-name", CORPUS_NAME, "--index", str(sample["index"]),
            "--out", str(out), "--threads", "2", *extra]


def candidates(out) -> list[dict]:
    return pq.read_table(outputs.candidates_path(out, DATASET, CORPUS_NAME)).to_pylist()


def qrels_pairs(out) -> set[tuple[str, str]]:
    lines = layout.qrels_path(out, DATASET, CORPUS_NAME).read_text().splitlines()
    return {(line.split()[0], line.split()[2]) for line in lines}


def precision_recall(found: set, relevant: set) -> tuple[float, float]:
    hit = len(found & relevant)
    return hit / max(1, len(found)), hit / max(1, len(relevant))


def final_files(out) -> dict[str, bytes]:
    base = Path(out) / DATASET
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*"))
            if p.is_file() and ".projection" not in p.parts}


def _supporting(sample, qids=None) -> set[tuple[str, str]]:
    return {(r["qid"], r["doc_id"]) for r in sample["truth"]
            if r["kind"] == "supporting" and (qids is None or r["qid"] in qids)}


@pytest.fixture(scope="session")
def stage1_run(sample):
    out = sample["root"] / "stage1-only"
    run_command(project_args(sample, out, "--verifier", "none"))
    return out


def judge_reply(messages):
    """A judge that knows how the sample corpus plants coincidences (for plumbing and resume)."""
    passage = messages[-1]["content"].split("PASSAGE:\n", 1)[1].split("\n\nDoes this passage", 1)[0].lower()
    if any(m in passage for m in COINCIDENCE_MARKERS):
        return "COINCIDENTAL: the answer string is used in another sense"
    return "<think>The passage states it.</think>TRUE: the passage states the answer"


@pytest.fixture(scope="session")
def openai_run(sample):
    out = sample["root"] / "openai-judge"
    with FakeOpenAIServer(reply=judge_reply) as server:
        run_command(project_args(sample, out, "--verifier", "openai", "--model", "judge", "--base-url",
                                 server.base_url, "--chunk-size", "10"))
    return out


def test_stage1_finds_every_planted_document_bm25_ranks_in_top_k(sample, stage1_run):
    from projection.index import lucene

    searcher = lucene.open_searcher(sample["index"])
    planted: dict[str, set[str]] = {}
    for r in sample["truth"]:
        planted.setdefault(r["qid"], set()).add(r["doc_id"])
    by_qid = {}
    for row in candidates(stage1_run):
        by_qid.setdefault(row["qid"], set()).add(row["doc_id"])
    in_top_k = 0
    for q in sample["questions"]:
        ranked = {h.docid for h in searcher.search(q["question"], k=100)}
        expected = planted.get(q["qid"], set()) & ranked
        in_top_k += len(expected)
        assert expected <= by_qid.get(q["qid"], set()), q["qid"]
    assert in_top_k >= 0.95 * len(sample["truth"])  # a small corpus: BM25 ranks nearly all planted docs
    rows = candidates(stage1_run)
    texts = {}
    from projection.corpus.shards import read_documents

    texts = read_documents(sample["corpus"], [r["doc_id"] for r in rows])
    for row in rows:  # offsets point at the matched answer in the document; passages contain it
        text = texts[row["doc_id"]]
        assert text[row["match_offset"]:].lower().startswith(row["matched_answer"].lower())
        assert text[row["passage_start"]:].startswith(row["passage"])
        assert row["verdict"] is None and row["rank"] >= 1
    p, r = precision_recall(qrels_pairs(stage1_run), _supporting(sample))
    print(f"\nstage 1 (answer match only): precision={p:.3f} recall={r:.3f}")
    # recall: every supporting doc is ranked in the top 100 of this small corpus and contains
    # its answer; precision: the planted coincidences (~35% of planted docs) plus accidental
    # substring matches (e.g. "au" in "because") are kept by stage 1 by design.
    assert r >= 0.95
    assert 0.45 <= p <= 0.9


def test_outputs_validate_with_nanoknow_data_verify(stage1_run, openai_run):
    for out in (stage1_run, openai_run):
        proc = run_command(["nanoknow", "data", "verify", "--data-dir", str(out), "--json"])
        report = json.loads(proc.stdout)
        assert report["ok"], report
        corpus = report["datasets"][DATASET]["corpora"][CORPUS_NAME]
        summary = json.loads(outputs.summary_path(out, DATASET, CORPUS_NAME).read_text())
        assert corpus["supported"] == summary["supported"] and corpus["qrels_lines"] == summary["qrels"]
        assert report["datasets"][DATASET]["answers"] == 100


def test_stage2_with_a_discriminating_judge_over_http(sample, stage1_run, openai_run):
    p1, r1 = precision_recall(qrels_pairs(stage1_run), _supporting(sample))
    p2, r2 = precision_recall(qrels_pairs(openai_run), _supporting(sample))
    print(f"\nstage 2 (rule judge over HTTP): precision={p2:.3f} recall={r2:.3f} (stage 1 {p1:.3f}/{r1:.3f})")
    assert r2 >= 0.95 and p2 >= 0.85 and p2 > p1 + 0.2
    rows = candidates(openai_run)
    assert {r["verdict"] for r in rows} == {"TRUE", "COINCIDENTAL"}
    freq = [json.loads(line) for line in open(outputs.answer_frequency_path(openai_run, DATASET, CORPUS_NAME))]
    qrels_count = {}
    for qid, _ in qrels_pairs(openai_run):
        qrels_count[qid] = qrels_count.get(qid, 0) + 1
    assert all(f["answer_frequency"] == qrels_count.get(f["qid"], 0) for f in freq)


@pytest.mark.slow
def test_stage2_with_smollm2_hf_verifier(sample, stage1_run):
    """SmolLM2-135M as judge on the first 6 questions (CPU).

    Measured: with ``--judge-mode generate`` it almost never writes a TRUE/COINCIDENTAL label
    (77 of 80 outputs unparsed on this corpus, ~10 min on 2 shared cores), so the test uses
    ``--judge-mode choose``: P(TRUE) is ~0.98 for supporting, coincidental and other candidates
    alike, i.e. it keeps nearly everything. Floors: recall >= 0.9 (it keeps supporting docs),
    precision >= stage-1 precision on the same questions - 0.1 (it is no worse than matching).
    """
    out = sample["root"] / "hf-judge"
    proc = run_command(project_args(sample, out, "--verifier", "hf", "--judge-mode", "choose", "--limit", "6",
                                    "--chunk-size", "4", "--batch-size", "8"))
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["questions"] == 6 and summary["unparsed"] == 0 and summary["judged"] == summary["candidates"] > 0
    qids = {q["qid"] for q in sample["questions"][:6]}
    p1, _ = precision_recall({x for x in qrels_pairs(stage1_run) if x[0] in qids}, _supporting(sample, qids))
    p2, r2 = precision_recall(qrels_pairs(out), _supporting(sample, qids))
    print(f"\nstage 2 (SmolLM2-135M, choose): precision={p2:.3f} recall={r2:.3f} (stage 1 precision {p1:.3f})")
    assert r2 >= 0.9
    assert p2 >= p1 - 0.1
    rows = candidates(out)
    assert all("constrained choice" in r["judge_output"] for r in rows)


def test_killed_run_resumes_to_byte_identical_files(sample, openai_run):
    out = sample["root"] / "killed"

    def slow_reply(messages):
        time.sleep(0.05)
        return judge_reply(messages)

    with FakeOpenAIServer(reply=slow_reply) as server:
        args = project_args(sample, out, "--verifier", "openai", "--model", "judge", "--base-url", server.base_url,
                            "--chunk-size", "10", "--concurrency", "2")
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        proc = subprocess.Popen([str(VENV_BIN / "nanoknow"), *args[1:]], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        stage2 = out / DATASET / CORPUS_NAME / ".projection" / "stage2.jsonl"
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            if stage2.exists() and stage2.read_bytes().count(b"\n") >= 3:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        done_before = stage2.read_bytes().count(b"\n")
        assert 3 <= done_before < 10
        assert not layout.qrels_path(out, DATASET, CORPUS_NAME).exists()
        # a torn write: the resumed run must drop it
        with open(stage2, "ab") as handle:
            handle.write(b'{"chunk": 9, "questions": [{"qid"')
        requests_before = len(server.requests)
        run_command([*args, "--resume"])
        judged_after = len(server.requests) - requests_before
    assert final_files(out) == final_files(openai_run)
    total = json.loads(outputs.summary_path(out, DATASET, CORPUS_NAME).read_text())["judged"]
    assert judged_after < total  # finished chunks were not judged again


def test_resume_with_changed_parameters_is_refused(sample, stage1_run):
    proc = run_command([*project_args(sample, stage1_run, "--verifier", "none", "--top-k", "50"), "--resume"],
                       check=False)
    assert proc.returncode == 2 and "top_k" in proc.stderr and "run.json" in proc.stderr
    proc = run_command(project_args(sample, stage1_run, "--verifier", "none"), check=False)
    assert proc.returncode == 2 and "--resume" in proc.stderr


def test_bad_inputs_exit_2_with_file_line_field(sample, tmp_path):
    bad = tmp_path / "questions.jsonl"
    bad.write_text('{"qid": "1", "question": "q", "answer": ["a"]}\n{"qid": "2", "question": "", "answer": ["a"]}\n')
    proc = run_command(project_args(sample, tmp_path / "o", "--verifier", "none")[:3] + [str(bad)] +
                       project_args(sample, tmp_path / "o", "--verifier", "none")[4:], check=False)
    assert proc.returncode == 2 and f"{bad}:2: question: missing or empty" in proc.stderr
    bad.write_text('{"qid": "1", "question": "q", "answer": "a"}\n{"qid": "1", "question": "q", "answer": ["b"]}\n')
    args = project_args(sample, tmp_path / "o", "--verifier", "none")
    args[3] = str(bad)
    proc = run_command(args, check=False)
    assert proc.returncode == 2 and f"{bad}:2: qid: duplicate qid '1'" in proc.stderr
    for index, reason in ((tmp_path / "missing-index", "index directory does not exist"),
                          (sample["corpus"], "not a Lucene index")):
        args = project_args(sample, tmp_path / "o", "--verifier", "none")
        args[args.index("--index") + 1] = str(index)
        proc = run_command(args, check=False)
        assert proc.returncode == 2 and reason in proc.stderr and str(index) in proc.stderr
    proc = run_command(["nanoknow", "index", "--corpus", str(tmp_path), "--index", str(tmp_path / "i")], check=False)
    assert proc.returncode == 2 and "no shard_XXXXX.parquet" in proc.stderr
    proc = run_command(["nanoknow", "index", "--corpus", str(sample["corpus"]), "--index", str(sample["index"])],
                       check=False)
    assert proc.returncode == 2 and "--overwrite" in proc.stderr


def test_sample_corpus_from_a_nanoknow_data_dir(nanoknow_data_dir, tmp_path):
    out = tmp_path / "nq-sample"
    run_command(["nanoknow", "make-sample-corpus", "--out", str(out), "--data-dir", str(nanoknow_data_dir),
                 "--questions", "20", "--filler-docs", "30"])
    from projection.data.files import read_answers

    answers = read_answers(layout.answers_path(nanoknow_data_dir, "nq"))
    questions = [json.loads(line) for line in open(out / "questions.jsonl")]
    assert len(questions) == 20 and all(answers[q["qid"]] == q["answer"] for q in questions)
    truth = [json.loads(line) for line in open(out / "ground_truth.jsonl")]
    from projection.corpus.shards import read_documents

    texts = read_documents(out, [t["doc_id"] for t in truth])
    for t in truth:
        q = next(q for q in questions if q["qid"] == t["qid"])
        assert q["answer"][0] in texts[t["doc_id"]]
    # deterministic: the same seed gives the same bytes
    again = tmp_path / "again"
    run_command(["nanoknow", "make-sample-corpus", "--out", str(again), "--data-dir", str(nanoknow_data_dir),
                 "--questions", "20", "--filler-docs", "30"])
    assert (again / "shard_00000.parquet").read_bytes() == (out / "shard_00000.parquet").read_bytes()


def test_an_index_storing_raw_documents_serves_texts_without_the_corpus(sample, tmp_path):
    """Like the released FineWeb-Edu index: texts come from ``doc(id).raw()`` when no --corpus."""
    from projection.index import lucene
    from projection.corpus.shards import Corpus
    from projection.index.build_index import build_corpus_index
    from projection.data.files import Question
    from projection.stage1.retrieval import CorpusTexts, IndexTexts, stage1

    index = tmp_path / "raw-index"
    assert build_corpus_index(sample["corpus"], index, threads=2, store_raw=True) == \
        sum(Corpus(sample["corpus"]).num_rows(s) for s in (0, 1))
    searcher = lucene.open_searcher(index)
    questions = [Question(q["qid"], q["question"], q["answer"]) for q in sample["questions"][:30]]
    from_index = stage1(searcher, IndexTexts(searcher, threads=2), questions, k=100, threads=2)
    from_parquet = stage1(searcher, CorpusTexts(sample["corpus"]), questions, k=100, threads=2)
    assert from_index == from_parquet and sum(len(r["candidates"]) for r in from_index) > 30
    no_raw = lucene.open_searcher(sample["index"])
    with pytest.raises(Exception, match="no stored raw text"):
        stage1(no_raw, IndexTexts(no_raw), questions[:3], k=5)
