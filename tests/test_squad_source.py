"""SQuAD's own paragraph for ``original_context``: joined by row index, checked question by question."""

import json

import pyarrow.parquet as pq
import pytest

from projection.data import layout
from projection.datasets import built_layout
from projection.datasets.build import BuildSettings, build
from nanoknow_common.errors import NanoKnowInputError
from projection.datasets.squad_source import load_squad_contexts, read_squad_rows
from nanoknow_tasks.loaders import load_context_split

from sample_root import CORPUS_DIR, make_embedded_sample, write_sample_root


def _official_json(path, rows):
    """A SQuAD v1.1-shaped file (articles > paragraphs > qas) holding ``rows`` in order."""
    paragraphs = [{"context": r["context"], "qas": [{"id": str(i), "question": r["question"], "answers": []}]}
                  for i, r in enumerate(rows)]
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}))


def test_build_joins_the_paragraph_of_each_qid_and_the_original_tasks_use_it(tmp_path):
    questions, corpus, root = make_embedded_sample(tmp_path, filler_docs=200)
    write_sample_root(corpus, root, questions, dataset="squad")
    rows = [{"question": q.question, "context": f"Paragraph {q.qid}: {q.answers[0]} is the answer."}
            for q in sorted(questions, key=lambda q: int(q.qid))]
    source = tmp_path / "dev-v1.1.json"
    _official_json(source, rows)
    jsonl = tmp_path / "squad.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert read_squad_rows(str(source)) == read_squad_rows(str(jsonl)) == rows
    build(root, BuildSettings(dataset="squad", corpus_dir=CORPUS_DIR, corpus=str(corpus), squad_source=str(source)),
          tmp_path / "build", progress=False)
    for split in layout.SPLITS:
        table = pq.read_table(built_layout.split_path(tmp_path / "build", "squad", CORPUS_DIR, split)).to_pylist()
        assert table and all(r["original_context"] == f"Paragraph {r['qid']}: {r['answers'][0]} is the answer."
                             for r in table)
    task = load_context_split("squad", "unsupported", "original", dataset_dir=str(tmp_path / "build"),
                              corpus=CORPUS_DIR)["test"]
    assert all(r["context"].startswith(f"Paragraph {r['qid']}:") for r in task)


def test_a_source_in_another_order_is_refused(tmp_path):
    questions, *_ = make_embedded_sample(tmp_path, filler_docs=10)
    questions = sorted(questions, key=lambda q: int(q.qid))
    rows = [{"question": q.question, "context": "c"} for q in reversed(questions)]
    source = tmp_path / "squad.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(NanoKnowInputError, match="not the SQuAD v1.1 dev set in its order"):
        load_squad_contexts(str(source), questions)
    in_order = tmp_path / "in_order.jsonl"
    in_order.write_text("".join(json.dumps({"question": q.question, "context": "c"}) + "\n" for q in questions))
    assert len(load_squad_contexts(str(in_order), questions)) == len(questions)
    with pytest.raises(NanoKnowInputError, match="qid '99999' has no row"):
        load_squad_contexts(str(in_order), questions + [type(questions[0])("99999", "q", ["a"])])
