"""``nanoknow build`` on a real parquet sample corpus read with DuckDB."""

import hashlib
import json
import shutil

import pyarrow.parquet as pq
import pytest

from projection.data import layout
from projection.datasets import built_layout
from projection.stage1.answer_match import answers_in_text
from projection.datasets.build import BuildSettings, build
from projection.corpus.shards import Corpus
from nanoknow_common.errors import NanoKnowInputError
from nanoknow_tasks.contexts import compose_context, distractor_passages, oracle_slot
from nanoknow_tasks.task_specs import grid_conditions, positions_for

from sample_root import (CORPUS_DIR, NO_DISTRACTOR, NO_ORACLE, add_grid_outsiders, make_embedded_sample,
                         write_sample_root)


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    base = tmp_path_factory.mktemp("build")
    questions, corpus, root = make_embedded_sample(base)
    supported = [q for q in questions if q.qid in _supporting(corpus)]
    # two questions the grid leaves out; and one question's first qrels document no longer
    # contains its answer (a filler document)
    questions, extra, filler = add_grid_outsiders(corpus, questions)
    qrels = write_sample_root(corpus, root, questions, extra_qrels={**extra, supported[0].qid: [filler]})
    return questions, corpus, root, qrels, supported[0].qid, filler


def _supporting(corpus):
    from nanoknow.demo.sample_corpus import read_ground_truth
    return {r["qid"] for r in read_ground_truth(corpus / "ground_truth.jsonl") if r["kind"] == "supporting"}


def _settings(corpus, **kw):
    return BuildSettings(dataset="nq", corpus_dir=CORPUS_DIR, corpus=str(corpus), **kw)


def _digest(out):
    return {s: hashlib.sha256(built_layout.split_path(out, "nq", CORPUS_DIR, s).read_bytes()).hexdigest()
            for s in layout.SPLITS}


def test_oracle_and_distractors(sample, tmp_path):
    questions, corpus, root, qrels, special_qid, filler = sample
    info = build(root, _settings(corpus, chunk_size=7), tmp_path, progress=False)
    rows = pq.read_table(built_layout.split_path(tmp_path, "nq", CORPUS_DIR, "supported")).to_pylist()
    assert len(rows) == info["counts"]["supported"] == len(qrels)
    assert info["distractor_source"] == "random"  # no index: distractors are the random documents
    by_qid = {r["qid"]: r for r in rows}
    assert by_qid[NO_ORACLE.qid]["oracle"] is None
    assert by_qid[NO_DISTRACTOR.qid]["oracle"] is not None and by_qid[NO_DISTRACTOR.qid]["random_distractors"] == []
    texts = Corpus(corpus).read_documents({d for r in rows for d in
                                           ([r["oracle"]["doc_id"]] if r["oracle"] else [])
                                           + [x["doc_id"] for x in r["distractors"] + r["random_distractors"]]})
    for row in rows:
        assert row["answer_frequency"] == len(qrels[row["qid"]])
        # every distractor: not relevant, and no gold answer anywhere in its document (the stage-1
        # normalisation), its passage the first 100 words of the document
        assert row["distractors"] == row["random_distractors"]
        for d in row["random_distractors"]:
            assert d["doc_id"] not in qrels[row["qid"]]
            assert not answers_in_text(texts[d["doc_id"]], row["answers"])
            assert texts[d["doc_id"]].startswith(d["passage"]) and len(d["passage"].split()) <= 100
            assert d["passage"].split() == texts[d["doc_id"]].split()[:100]
        oracle = row["oracle"]
        if oracle is None:
            continue
        # the first qrels document that contains a gold answer
        first = next(d for d in qrels[row["qid"]] if answers_in_text(texts.get(d) or Corpus(corpus).read_document(d),
                                                                    row["answers"]))
        assert oracle["doc_id"] == first
        text = texts[oracle["doc_id"]]
        found = text[oracle["answer_offset"]:oracle["answer_offset"] + len(oracle["answer"])]
        assert found.lower() == oracle["answer"].lower()
        # the oracle task's 200-word passage and the grid's 100-word one, around the same match
        for passage, offset, words in ((oracle["passage"], oracle["passage_offset"], 200),
                                       (oracle["grid_passage"], oracle["grid_passage_offset"], 100)):
            assert passage[offset:].lower().startswith(oracle["answer"].lower())
            assert len(passage.split()) <= words and passage in text
        assert oracle["grid_passage"] in oracle["passage"]
        if row["qid"] != NO_DISTRACTOR.qid:
            assert len(row["distractors"]) == 8
    special = by_qid[special_qid]
    assert qrels[special_qid][0] == filler and special["oracle"]["doc_id"] == qrels[special_qid][1]
    # build_info says how many supported questions the grid leaves out, and why
    assert info["grid"] == {"distractors_needed": 8,
                            "questions": {"distractors": len(rows) - 2, "random_distractors": len(rows) - 2},
                            "left_out": {"no_oracle": 1, "short_of_distractors": 1, "short_of_random_distractors": 1}}
    assert json.loads(built_layout.info_path(tmp_path, "nq", CORPUS_DIR).read_text())["grid"] == info["grid"]
    unsupported = pq.read_table(built_layout.split_path(tmp_path, "nq", CORPUS_DIR, "unsupported")).to_pylist()
    assert unsupported and all(r["oracle"] is None and r["answer_frequency"] == 0 and not r["random_distractors"]
                               for r in unsupported)


def test_grid_passage_length_is_a_setting(sample, tmp_path):
    _, corpus, root, *_ = sample
    info = build(root, _settings(corpus, grid_words=30, window_words=60), tmp_path, progress=False)
    assert info["settings"]["grid_words"] == 30
    rows = pq.read_table(built_layout.split_path(tmp_path, "nq", CORPUS_DIR, "supported")).to_pylist()
    assert max(len(r["oracle"]["grid_passage"].split()) for r in rows if r["oracle"]) == 30
    assert max(len(r["oracle"]["passage"].split()) for r in rows if r["oracle"]) == 60
    assert max(len(d["passage"].split()) for r in rows for d in r["random_distractors"]) == 30


def test_distractor_positions_share_the_k_prefix(sample, tmp_path):
    questions, corpus, root, *_ = sample
    build(root, _settings(corpus), tmp_path, progress=False)
    rows = pq.read_table(built_layout.split_path(tmp_path, "nq", CORPUS_DIR, "supported")).to_pylist()
    row = next(r for r in rows if r["oracle"] and len(r["distractors"]) == 8)
    grid = row["oracle"]["grid_passage"]
    assert distractor_passages(row, 0, None) == [grid] and compose_context(row, "distractors", k=0) == grid
    for k in (1, 2, 4, 8):
        layouts = {p: distractor_passages(row, k, p) for p in positions_for(k)}
        for position, passages in layouts.items():
            assert len(passages) == k + 1
            assert passages[oracle_slot(k, position)] == grid
            others = [p for i, p in enumerate(passages) if i != oracle_slot(k, position)]
            assert others == [d["passage"] for d in row["distractors"][:k]]  # same passages, same order
        assert len({tuple(p) for p in layouts.values()}) == len(layouts)  # every position is a different prompt
        assert compose_context(row, "distractors", k=k, position="last").endswith(grid)
    # rows outside the grid have no grid context at all, for any k
    for qid in (NO_ORACLE.qid, NO_DISTRACTOR.qid):
        outside = next(r for r in rows if r["qid"] == qid)
        assert all(compose_context(outside, "distractors", k=k, position=p) is None for k, p in grid_conditions())


def test_build_is_deterministic(sample, tmp_path):
    _, corpus, root, *_ = sample
    build(root, _settings(corpus, seed=3), tmp_path / "a", progress=False)
    build(root, _settings(corpus, seed=3), tmp_path / "b", progress=False)
    assert _digest(tmp_path / "a") == _digest(tmp_path / "b")
    build(root, _settings(corpus, seed=4), tmp_path / "c", progress=False)
    assert _digest(tmp_path / "c")["supported"] != _digest(tmp_path / "a")["supported"]


def test_bad_qrels_then_resume_gives_identical_bytes(sample, tmp_path):
    questions, corpus, root, qrels, *_ = sample
    clean = tmp_path / "clean"
    build(root, _settings(corpus, chunk_size=5), clean, progress=False)

    broken_root = tmp_path / "broken"
    shutil.copytree(root, broken_root)
    qrels_file = layout.qrels_path(broken_root, "nq", CORPUS_DIR)
    lines = qrels_file.read_text().splitlines(keepends=True)
    last_qid = lines[-1].split()[0]  # the last question: earlier chunks finish first
    victim = next(i for i, line in enumerate(lines) if line.split()[0] == last_qid)  # its first qrels doc
    for bad, message in [("shard_00000_999999", "past the end of the shard"),
                         ("shard_00007_1", "shard_00007.parquet not found")]:
        broken = lines[:victim] + [lines[victim].replace(lines[victim].split()[2], bad)] + lines[victim + 1:]
        qrels_file.write_text("".join(broken))
        with pytest.raises(NanoKnowInputError, match=message) as err:
            build(broken_root, _settings(corpus, chunk_size=5), tmp_path / "resumed", progress=False)
        assert f"{qrels_file}:{victim + 1}: doc_id" in str(err.value)
    work = tmp_path / "resumed" / "nq" / CORPUS_DIR / ".work"
    finished = sorted(p.name for p in work.glob("supported-*.parquet"))
    assert finished, "chunks finished before the bad document must be kept"
    before = {p: (work / p).stat().st_mtime_ns for p in finished}
    qrels_file.write_text("".join(lines))
    build(broken_root, _settings(corpus, chunk_size=5), tmp_path / "resumed", progress=False)
    assert _digest(tmp_path / "resumed") == _digest(clean)
    assert not work.exists()
    assert before  # the resumed run reused them (their files were not rewritten before the merge)


def test_cli_missing_qrels_is_exit_2(run, sample, tmp_path):
    _, corpus, root, *_ = sample
    proc = run(["nanoknow", "build", "--data-dir", str(root), "--dataset", "nq", "--corpus-dir", "nowhere",
                "--corpus", str(corpus), "--out", str(tmp_path)], check=False)
    assert proc.returncode == 2 and "qrels file not found" in proc.stderr


def test_build_carries_whole_corpus_answer_counts(run, sample, tmp_path):
    """``nanoknow count`` then ``nanoknow build --counts``: every row carries its uncapped counts,
    which are at least the verified qrels (the qrels are a subset of the answer documents)."""
    questions, corpus, root, qrels, _, _ = sample
    counts = tmp_path / "counts"
    run(["nanoknow", "count", "--data-dir", str(root), "--dataset", "nq", "--corpus-name", CORPUS_DIR,
         "--corpus", str(corpus), "--out", str(counts)])
    out = tmp_path / "build"
    run(["nanoknow", "build", "--data-dir", str(root), "--dataset", "nq", "--corpus-dir", CORPUS_DIR,
         "--corpus", str(corpus), "--out", str(out), "--counts", str(counts)])
    from projection.count import read_counts

    expected = read_counts(counts, "nq")
    rows = [r for s in layout.SPLITS for r in pq.read_table(built_layout.split_path(out, "nq", CORPUS_DIR, s)).to_pylist()]
    assert {r["qid"] for r in rows} == set(expected)
    for row in rows:
        docs = row["corpus_answer_docs"]
        assert (docs["substring"], docs["token"]) == (expected[row["qid"]].substring, expected[row["qid"]].token)
        with_answer = sum(bool(answers_in_text(t, row["answers"])) for t in Corpus(corpus).read_documents(
            qrels.get(row["qid"], [])).values())
        assert docs["substring"] >= with_answer  # every qrels document holding an answer is counted
    assert any(r["corpus_answer_docs"]["substring"] > (r["answer_frequency"] or 0) for r in rows)


def test_report_shows_capped_and_uncapped_frequency_and_draws_either(tmp_path):
    from nanoknow.report.write_report import write_report
    from test_report_inputs import CLOSEDBOOK, ORACLE, write_lm_eval_folder

    folder = write_lm_eval_folder(tmp_path / "runs" / "m", "m", {CLOSEDBOOK[0]: [True, False, True, False],
                                                                  ORACLE: [True, True, False, True]})
    uncapped = [(3, 2), (150, 40), (25, 25), (0, 0)]
    capped = [3, 100, 20, 1]
    for task in (CLOSEDBOOK[0], ORACLE):
        path = next(folder.glob(f"samples_{task}_*.jsonl"))
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        for line, (sub, tok), freq in zip(lines, uncapped, capped):
            line["doc"]["answer_frequency"] = freq
            line["doc"]["corpus_answer_docs"] = {"substring": sub, "token": tok}
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    report = write_report([folder], tmp_path / "report", frequency_axis="token")
    cap = {r["task"]: r for r in report.answer_counts}
    assert cap[CLOSEDBOOK[0]]["at_cap"] == 1 and cap[CLOSEDBOOK[0]]["above_cap_uncapped"] == 1
    assert cap[ORACLE]["median_uncapped_substring"] == 14 and cap[ORACLE]["median_capped"] == 11.5
    closed = {r["bucket"]: r for r in report.frequency if r["task"] == CLOSEDBOOK[0]}
    # buckets by the token rule: 2 -> 1-5 (correct), 40 -> 21-50 (wrong), 25 -> 21-50 (correct), 0 -> none
    assert (closed["1-5"]["n"], closed["1-5"]["correct"]) == (1, 1)
    assert (closed["21-50"]["n"], closed["21-50"]["correct"]) == (2, 1)
    assert "capped vs whole corpus" in (tmp_path / "report" / "summary.md").read_text()
