"""The distractor grid on real builds (a real Lucene index for BM25 hard negatives, and a build
without one): answer-free distractors of both kinds, the ``distractors`` switch, and one
question set per grid, read through the loaders the generated task files name."""

import logging

import pyarrow.parquet as pq
import pytest
import yaml

from nanoknow_tasks import loaders
from nanoknow_tasks.contexts import in_grid
from nanoknow_tasks.make_task_files import TASKS_DIR
from nanoknow_tasks.task_specs import MAX_DISTRACTORS
from projection.corpus.shards import Corpus
from projection.datasets import built_layout
from projection.datasets.publish import write_hub_folder
from projection.stage1.answer_match import answers_in_text

from sample_root import CORPUS_DIR, NO_DISTRACTOR, NO_ORACLE


def _rows(build_dir):
    return pq.read_table(built_layout.split_path(build_dir, "nq", CORPUS_DIR, "supported")).to_pylist()


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))


def _grid_task_kwargs() -> dict[str, dict]:
    """``dataset_kwargs`` of every NQ grid task, as its generated YAML file gives them."""
    configs = [yaml.load(p.read_text(), Loader=_Loader) for p in (TASKS_DIR / "distractors").glob("*.yaml")]
    return {c["task"]: c["dataset_kwargs"] for c in configs if c["dataset_kwargs"]["nanoknow_dataset"] == "nq"}


def test_hard_and_random_distractors_are_answer_free(grid_sample, grid_hard_build):
    from projection.index.lucene import open_searcher
    from projection.stage1.retrieval import bm25_batch

    info = built_layout.read_info(grid_hard_build, "nq", CORPUS_DIR)
    assert info["distractor_source"] == "bm25"
    rows, random_rows = _rows(grid_hard_build), _rows(grid_sample.random)
    texts = Corpus(grid_sample.corpus).read_documents(
        {d["doc_id"] for r in rows for d in r["distractors"] + r["random_distractors"]})
    ranked = bm25_batch(open_searcher(grid_hard_build.parent / "index"), grid_sample.questions, k=100)
    for row, random_row in zip(rows, random_rows):
        # seeded random documents do not depend on the index
        assert row["random_distractors"] == random_row["random_distractors"] == random_row["distractors"]
        bm25 = [doc for doc, _ in ranked[row["qid"]]]
        for d in row["distractors"]:  # hard negatives come from the question's own BM25 ranking
            assert d["doc_id"] in bm25
        for d in row["distractors"] + row["random_distractors"]:
            assert d["doc_id"] not in grid_sample.qrels[row["qid"]]
            assert not answers_in_text(texts[d["doc_id"]], row["answers"]), (row["qid"], d["doc_id"])
            assert d["passage"].split() == texts[d["doc_id"]].split()[:100]
    assert sum(r["distractors"] != r["random_distractors"] for r in rows) > len(rows) // 2
    # build_info counts the questions the grid leaves out, per kind
    assert info["grid"]["left_out"] == {
        "no_oracle": 1,
        "short_of_distractors": sum(bool(r["oracle"]) and len(r["distractors"]) < 8 for r in rows),
        "short_of_random_distractors": 1}
    assert info["grid"]["questions"] == {"distractors": sum(in_grid(r, "hard") for r in rows),
                                         "random_distractors": sum(in_grid(r, "random") for r in rows)}
    assert info["grid"]["left_out"]["short_of_distractors"] > 1  # BM25 over a small corpus runs short


@pytest.mark.parametrize("kind", ["hard", "random"])
def test_every_grid_task_runs_on_the_same_questions(grid_hard_build, kind, monkeypatch):
    monkeypatch.delenv("NANOKNOW_DATASET_DIR", raising=False)
    rows = _rows(grid_hard_build)
    field = {"hard": "distractors", "random": "random_distractors"}[kind]
    expected = [r["qid"] for r in rows if r["oracle"] and len(r[field]) >= MAX_DISTRACTORS]
    assert NO_ORACLE.qid not in expected and NO_DISTRACTOR.qid not in expected
    tasks = _grid_task_kwargs()
    assert len(tasks) == 12 and "nanoknow_nq_supported_distractors_k0" in tasks
    by_qid = {r["qid"]: r for r in rows}
    for task, kwargs in tasks.items():
        docs = loaders.load_context_split(**kwargs, dataset_dir=str(grid_hard_build), corpus=CORPUS_DIR,
                                          distractors=kind)["test"]
        assert docs["qid"] == expected, task
        k = kwargs["nanoknow_k"]
        for doc in docs.select(range(3)):
            row = by_qid[doc["qid"]]
            passages = doc["context"].split("\n\n")
            assert len(passages) == k + 1 and row["oracle"]["grid_passage"] in passages
            assert set(passages) - {row["oracle"]["grid_passage"]} == {d["passage"] for d in row[field][:k]}


def test_random_build_warns_once_and_a_bad_kind_is_refused(grid_sample, tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(loaders, "_warned_random", set())
    write_hub_folder(grid_sample.random, tmp_path / "hub")
    kwargs = dict(nanoknow_dataset="nq", nanoknow_split="supported", nanoknow_context="distractors",
                  nanoknow_k=2, nanoknow_position="middle", corpus=CORPUS_DIR)
    with caplog.at_level(logging.WARNING, logger="nanoknow_tasks.loaders"):
        for _ in range(2):
            loaders.load_context_split(**kwargs, dataset_dir=str(grid_sample.random))
        # a published copy has no build_info.json: the two equal columns give it away
        loaders.load_context_split(**kwargs, dataset_repo=str(tmp_path / "hub"))
        loaders.load_context_split(**kwargs, dataset_dir=str(grid_sample.random), distractors="random")
    warnings = [r.getMessage() for r in caplog.records if "built without an index" in r.getMessage()]
    assert len(warnings) == 2 and "nq/sample" in warnings[0]
    with pytest.raises(loaders.NanoKnowInputError, match="distractors: must be one of hard, random"):
        loaders.load_context_split(**kwargs, dataset_dir=str(grid_sample.random), distractors="bm25")
