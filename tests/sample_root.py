"""Test helper: a NanoKnow data root whose qrels are the sample corpus's planted supporting docs."""

from __future__ import annotations

import json
from pathlib import Path

from projection.data import layout
from nanoknow.demo.sample_corpus import load_embedded_questions, make_sample_corpus, read_ground_truth

CORPUS_DIR = "sample"


def write_sample_root(corpus: Path, root: Path, questions, *, dataset: str = "nq",
                      extra_qrels: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    """Write answers/topics/qrels for ``questions``; supported = those with supporting docs.

    ``extra_qrels`` puts further doc ids *before* a question's supporting docs (to test the
    oracle rule "first qrels document that contains an answer"). Returns the qrels written.
    """
    truth = read_ground_truth(Path(corpus) / "ground_truth.jsonl")
    qrels: dict[str, list[str]] = {}
    for row in truth:
        if row["kind"] == "supporting":
            qrels.setdefault(row["qid"], []).append(row["doc_id"])
    for qid, docs in (extra_qrels or {}).items():
        qrels[qid] = docs + qrels.get(qid, [])
    (Path(root) / dataset / CORPUS_DIR).mkdir(parents=True, exist_ok=True)
    with open(layout.answers_path(root, dataset), "w", encoding="utf-8") as handle:
        for q in questions:
            handle.write(json.dumps({"qid": q.qid, "answer": q.answers}) + "\n")
    for split in layout.SPLITS:
        with open(layout.topics_path(root, dataset, CORPUS_DIR, split), "w", encoding="utf-8") as handle:
            for q in questions:
                if (q.qid in qrels) == (split == "supported"):
                    handle.write(f"{q.qid}\t{q.question}\n")
    with open(layout.qrels_path(root, dataset, CORPUS_DIR), "w", encoding="utf-8") as handle:
        for q in questions:
            for doc_id in qrels.get(q.qid, []):
                handle.write(f"{q.qid} Q0 {doc_id} 1\n")
    return qrels


def make_embedded_sample(base: Path, *, filler_docs: int = 800):
    """Sample corpus (embedded questions) under ``base/corpus`` and its data root under ``base/data``."""
    questions = load_embedded_questions()
    make_sample_corpus(base / "corpus", questions, shards=2, filler_docs=filler_docs, seed=0)
    return questions, base / "corpus", base / "data"


def build_nq_sample(base: Path, data_dir: Path, *, questions: int, filler_docs: int,
                    p_supported: float) -> Path:
    """Real NQ questions -> sample corpus -> data root -> built dataset under ``base/build``."""
    from projection.datasets.build import BuildSettings, build
    from nanoknow.demo.sample_corpus import load_data_dir_questions

    chosen = load_data_dir_questions(data_dir, "nq", "fineweb-edu", limit=questions, seed=1)
    make_sample_corpus(base / "corpus", chosen, shards=2, filler_docs=filler_docs, seed=1, p_supported=p_supported)
    write_sample_root(base / "corpus", base / "data", chosen)
    build(base / "data", BuildSettings(dataset="nq", corpus_dir=CORPUS_DIR, corpus=str(base / "corpus")),
          base / "build", progress=False)
    return base / "build"
