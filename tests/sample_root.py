"""Test helper: a NanoKnow data root whose qrels are the sample corpus's planted supporting docs."""

from __future__ import annotations

import json
from pathlib import Path

from projection.data import layout
from nanoknow.demo.sample_corpus import SampleQuestion, load_embedded_questions, make_sample_corpus, read_ground_truth

CORPUS_DIR = "sample"
#: Two supported questions the distractor grid must leave out (see :func:`add_grid_outsiders`):
#: one whose only qrels document lacks its answer (no oracle), one whose answer ("e") occurs
#: in every document (no answer-free distractor).
NO_ORACLE = SampleQuestion("grid-no-oracle", "Which word is planted nowhere?", ["zqxv nowhere"], None)
NO_DISTRACTOR = SampleQuestion("grid-no-distractor", "Which letter is everywhere?", ["e"], None)


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


def filler_doc(corpus: Path, questions) -> str:
    """A document of ``corpus`` that is not planted and holds none of the questions' answers."""
    from projection.corpus.shards import Corpus
    from projection.stage1.answer_match import answers_in_text

    planted = {r["doc_id"] for r in read_ground_truth(Path(corpus) / "ground_truth.jsonl")}
    texts = Corpus(corpus).read_documents([f"shard_00000_{row}" for row in range(50)])
    return next(d for d, t in texts.items() if d not in planted
                and not any(answers_in_text(t, q.answers) for q in questions))


def add_grid_outsiders(corpus: Path, questions, extra_qrels: dict[str, list[str]] | None = None):
    """``questions`` with :data:`NO_ORACLE` and :data:`NO_DISTRACTOR` first (so the last question
    stays a planted one), and ``extra_qrels`` giving both a filler document as their only qrels."""
    filler = filler_doc(corpus, [*questions, NO_ORACLE])
    qrels = {**(extra_qrels or {}), NO_ORACLE.qid: [filler], NO_DISTRACTOR.qid: [filler]}
    return [NO_ORACLE, NO_DISTRACTOR, *questions], qrels, filler
